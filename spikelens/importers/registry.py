"""The explicit, ordered list of importers: the first that claims a source reads it.

Folder importers (a W&B offline run, an MLflow run) come first so that the files
inside a claimed folder are not read again by a file importer.
"""
from __future__ import annotations

from .barenumbers import BareNumbersImporter
from .base import Importer
from .csvlogs import CsvImporter
from .dvclive import DvcLiveImporter
from .hf import HfTrainerStateImporter
from .jsonhistory import JsonHistoryImporter
from .jsonlines import JsonLinesImporter
from .kvtables import KeyValueTableImporter
from .llamafactory import LlamaFactoryImporter
from .mlflow import MlflowRunImporter
from .mmengine import MmengineScalarsImporter
from .mlflow_server import MlflowServerImporter
from .mlflow_sql import MlflowDatabaseImporter
from .neptune_parquet import NeptuneParquetImporter
from .raytune import RayTuneTrialImporter
from .sb3 import RlProgressImporter
from .swanlab import SwanLabImporter
from .tensorboard import TensorBoardImporter
from .timm import TimmSummaryImporter
from .textlogs import TextLogImporter
from .trackio import TrackioImporter
from .ultralytics import UltralyticsImporter, UltralyticsResultsTxtImporter
from .wandb_offline import WandbOfflineFileImporter, WandbOfflineRunImporter
from .wandb_exports import WandbChartCsvImporter, WandbHistoryImporter, WandbLegacyRunImporter

IMPORTERS: tuple[Importer, ...] = (
    WandbOfflineRunImporter(),  # folder: wandb/offline-run-*/ holding run-<id>.wandb
    MlflowRunImporter(),  # folder: mlruns/<exp>/<run>/
    WandbLegacyRunImporter(),  # folder: wandb-history.jsonl + wandb-summary.json
    DvcLiveImporter(),  # folder: dvclive/plots/metrics/**.tsv
    RayTuneTrialImporter(),  # folder: a trial's progress.csv / result.json beside params.json
    WandbOfflineFileImporter(),  # a run-<id>.wandb file named on its own
    TensorBoardImporter(),  # events.out.tfevents.* (or a renamed file starting with an event record)
    HfTrainerStateImporter(),
    SwanLabImporter(),  # run-<id>.swanlab (':SWL' header)
    MlflowDatabaseImporter(),  # mlflow.db (SQLite with MLflow's runs/metrics tables) or a sqlite:// URI
    MlflowServerImporter(),  # an http(s):// MLflow server URL (discovery's pointer file)
    TrackioImporter(),  # <project>.db (SQLite with a Trackio metrics table)
    NeptuneParquetImporter(),  # before W&B history dumps: both are Parquet
    WandbChartCsvImporter(),  # before CsvImporter: a chart export is also a CSV
    WandbHistoryImporter(),  # before CsvImporter: _step/_runtime/_timestamp dumps
    RlProgressImporter(),  # before the JSON-lines and CSV readers: a timesteps column is the step (SB3 progress.*)
    MmengineScalarsImporter(),  # before JsonLinesImporter: scalars.json, eval records placed and named apart
    LlamaFactoryImporter(),  # before JsonLinesImporter: trainer_log.jsonl is JSON lines too
    JsonHistoryImporter(),  # one JSON object of lists (a Keras history dump): its first value is a list
    JsonLinesImporter(),  # after W&B history (its JSON lines have `_step`) and HF
    UltralyticsImporter(),  # before CsvImporter: results.csv (epoch, train/*_loss, metrics/*) and its args.yaml
    UltralyticsResultsTxtImporter(),  # before the text reader: YOLOv5 (< v6) / YOLOv7 results.txt
    TimmSummaryImporter(),  # before CsvImporter: summary.csv (epoch, train_*, eval_*, lr) and its args.yaml
    CsvImporter(),
    BareNumbersImporter(),  # before the text reader: one number a line, named by the file (loss.txt)
    KeyValueTableImporter(),  # before the text reader: | key | value | tables, one a record (SB3 console)
    TextLogImporter(),  # keep last: the most permissive (any .log/.txt a pattern matches)
)
