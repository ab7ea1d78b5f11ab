"""The explicit, ordered list of importers: the first that claims a source reads it.

Folder importers (a W&B offline run, an MLflow run) come first so that the files
inside a claimed folder are not read again by a file importer.

The list names each importer by module and class, and each module is imported the first
time discovery reaches its entry: reading one event file loads the TensorBoard reader and
the few tried before it, not SQLite, HTTP and the text readers' pattern tables (~0.1 s of
imports and as much again of interpreter exit, in a process that reads one file). Whether
an entry reads folders is said here too, so that a file's claim skips the folder readers
without importing them (a test checks it against each class's `claims_dirs`).
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from importlib import import_module
from typing import NamedTuple, overload

from .base import Importer


class Entry(NamedTuple):
    """One importer, named where it lives."""

    module: str
    cls: str
    folders: bool = False
    """True for an importer whose unit is a folder (its class's `claims_dirs`)."""


ENTRIES: tuple[Entry, ...] = (
    Entry("wandb_offline", "WandbOfflineRunImporter", True),  # folder: wandb/offline-run-*/ holding run-<id>.wandb
    Entry("mlflow", "MlflowRunImporter", True),  # folder: mlruns/<exp>/<run>/
    Entry("wandb_exports", "WandbLegacyRunImporter", True),  # folder: wandb-history.jsonl + wandb-summary.json
    Entry("dvclive", "DvcLiveImporter", True),  # folder: dvclive/plots/metrics/**.tsv
    Entry("raytune", "RayTuneTrialImporter", True),  # folder: a trial's progress.csv / result.json beside params.json
    Entry("wandb_offline", "WandbOfflineFileImporter"),  # a run-<id>.wandb file named on its own
    # events.out.tfevents.* (or a renamed file starting with an event record)
    Entry("tensorboard", "TensorBoardImporter"),
    Entry("hf", "HfTrainerStateImporter"),
    Entry("swanlab", "SwanLabImporter"),  # run-<id>.swanlab (':SWL' header)
    # mlflow.db (SQLite with MLflow's runs/metrics tables) or a sqlite:// URI
    Entry("mlflow_sql", "MlflowDatabaseImporter"),
    Entry("mlflow_server", "MlflowServerImporter"),  # an http(s):// MLflow server URL (discovery's pointer file)
    Entry("trackio", "TrackioImporter"),  # <project>.db (SQLite with a Trackio metrics table)
    Entry("neptune_parquet", "NeptuneParquetImporter"),  # before W&B history dumps: both are Parquet
    Entry("wandb_exports", "WandbChartCsvImporter"),  # before CsvImporter: a chart export is also a CSV
    Entry("wandb_exports", "WandbHistoryImporter"),  # before CsvImporter: _step/_runtime/_timestamp dumps
    # before the JSON-lines and CSV readers: a timesteps column is the step (SB3 progress.*)
    Entry("sb3", "RlProgressImporter"),
    # before JsonLinesImporter: scalars.json, eval records placed and named apart
    Entry("mmengine", "MmengineScalarsImporter"),
    Entry("llamafactory", "LlamaFactoryImporter"),  # before JsonLinesImporter: trainer_log.jsonl is JSON lines too
    # one JSON object of lists (a Keras history dump): its first value is a list
    Entry("jsonhistory", "JsonHistoryImporter"),
    Entry("jsonhistory", "NumberedJsonImporter"),  # metrics_epoch_N.json: a flat object a numbered file
    Entry("jsonlines", "JsonLinesImporter"),  # after W&B history (its JSON lines have `_step`) and HF
    # before CsvImporter: results.csv (epoch, train/*_loss, metrics/*) and its args.yaml
    Entry("ultralytics", "UltralyticsImporter"),
    Entry("ultralytics", "UltralyticsResultsTxtImporter"),  # before the text reader: YOLOv5 (< v6) / YOLOv7 results.txt
    # before CsvImporter: summary.csv (epoch, train_*, eval_*, lr) and its args.yaml
    Entry("timm", "TimmSummaryImporter"),
    Entry("csvlogs", "CsvImporter"),
    # before the text reader: one number a line, named by the file (loss.txt)
    Entry("spannedheader", "SpannedHeaderImporter"),  # before bare numbers: a # header spanning blocks (DeepXDE)
    Entry("barenumbers", "BareNumbersImporter"),
    Entry("numberlists", "NumberListsImporter"),  # before the text reader: printed lists, `[2.31, 2.10, ...]`
    Entry("numberlists", "PointsImporter"),  # before the text reader: a plot's points, `(0,1.05) (250,0.84)`
    # before the text reader: | key | value | tables, one a record (SB3 console)
    Entry("kvtables", "KeyValueTableImporter"),
    Entry("markdowntables", "MarkdownTableImporter"),  # a file named on its own: Markdown tables with a counter
    Entry("textlogs", "TextLogImporter"),  # keep last: the most permissive (any .log/.txt a pattern matches)
)


class Importers(Sequence[Importer]):
    """The importers in claim order, each built once, when it is first reached.

    A sequence like the tuple it replaces (iterate, index, `len`); iterating stops
    importing where the caller stops asking, so `next(i for i in IMPORTERS if ...)`
    loads only the modules up to the one that answers."""

    def __init__(self, entries: tuple[Entry, ...]):
        self.entries = entries
        self._built: list[Importer | None] = [None] * len(entries)
        self._lock = threading.Lock()  # one instance an entry, whichever thread reaches it first

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, i: int) -> Importer: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Importer, ...]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        imp = self._built[i]
        if imp is None:
            with self._lock:
                imp = self._built[i]
                if imp is None:
                    entry = self.entries[i]
                    imp = self._built[i] = getattr(import_module(f".{entry.module}", __package__), entry.cls)()
        return imp

    def __iter__(self) -> Iterator[Importer]:
        return (self[i] for i in range(len(self)))

    def claimants(self, folders: bool) -> Iterator[Importer]:
        """The importers of folders (or of files), in order, without importing the others."""
        return (self[i] for i, e in enumerate(self.entries) if e.folders == folders)


IMPORTERS = Importers(ENTRIES)
