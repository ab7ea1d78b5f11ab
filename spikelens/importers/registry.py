"""The explicit, ordered list of importers: the first that claims a source reads it.

Folder importers (a W&B offline run, an MLflow run) come first so that the files
inside a claimed folder are not read again by a file importer.
"""
from __future__ import annotations

from .base import Importer
from .csvlogs import CsvImporter
from .hf import HfTrainerStateImporter
from .jsonlines import JsonLinesImporter
from .mlflow import MlflowRunImporter
from .tensorboard import TensorBoardImporter
from .textlogs import TextLogImporter
from .wandb_offline import WandbOfflineFileImporter, WandbOfflineRunImporter
from .wandb_exports import WandbChartCsvImporter, WandbHistoryImporter, WandbLegacyRunImporter

IMPORTERS: tuple[Importer, ...] = (
    WandbOfflineRunImporter(),  # folder: wandb/offline-run-*/ holding run-<id>.wandb
    MlflowRunImporter(),  # folder: mlruns/<exp>/<run>/
    WandbLegacyRunImporter(),  # folder: wandb-history.jsonl + wandb-summary.json
    WandbOfflineFileImporter(),  # a run-<id>.wandb file named on its own
    TensorBoardImporter(),  # events.out.tfevents.* (or a renamed file starting with an event record)
    HfTrainerStateImporter(),
    WandbChartCsvImporter(),  # before CsvImporter: a chart export is also a CSV
    WandbHistoryImporter(),  # before CsvImporter: _step/_runtime/_timestamp dumps
    JsonLinesImporter(),  # after W&B history (its JSON lines have `_step`) and HF
    CsvImporter(),
    TextLogImporter(),  # keep last: the most permissive (any .log/.txt a pattern matches)
)
