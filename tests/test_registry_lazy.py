"""The importer registry is lazy (an importer's module loads when discovery reaches its
entry) and claims exactly as the eager tuple did: same order, same winner for every
fixture file and folder."""
from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import spikelens.importers
from spikelens.importers.base import Importer, read_head
from spikelens.importers.registry import ENTRIES, IMPORTERS, Importers

discovery = importlib.import_module("spikelens.discover")  # `spikelens.discover` is also an API function
ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def test_entries_name_real_importers_and_their_folder_flag_is_the_class_s():
    for entry, imp in zip(ENTRIES, IMPORTERS):
        assert type(imp).__name__ == entry.cls and type(imp).__module__.endswith("." + entry.module)
        assert imp.claims_dirs == entry.folders, entry


def test_every_importer_class_is_listed():
    """Explicit registry: a concrete Importer subclass left out of ENTRIES would never be tried."""
    listed = {(e.module, e.cls) for e in ENTRIES}
    found = set()
    for info in pkgutil.iter_modules(spikelens.importers.__path__):
        mod = importlib.import_module(f"spikelens.importers.{info.name}")
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, Importer) and not inspect.isabstract(obj)
                    and obj.__module__ == mod.__name__):
                found.add((info.name, name))
    assert found - listed == set()


def test_one_instance_per_entry_and_tuple_like_access():
    fresh = Importers(ENTRIES)
    assert len(fresh) == len(ENTRIES)
    first = list(fresh)
    assert [id(i) for i in fresh] == [id(i) for i in first]  # built once
    assert fresh[-1] is first[-1] and fresh[1:3] == tuple(first[1:3])
    assert [i.name for i in fresh.claimants(folders=True)] == [i.name for i in first if i.claims_dirs]


def _eager_claim(path: Path, is_dir: bool) -> str | None:
    """The claim as the eager tuple made it: every importer in order, the wrong kind skipped."""
    head = b"" if is_dir else read_head(path)
    for imp in list(IMPORTERS):
        if imp.claims_dirs != is_dir:
            continue
        try:
            if imp.claims(path, head):
                return type(imp).__name__
        except OSError:
            return None
    return None


def test_every_fixture_is_claimed_by_the_same_importer_as_before():
    checked = 0
    for path in sorted(FIXTURES.rglob("*")):
        is_dir = path.is_dir()
        got = discovery._claim(path, is_dir)
        assert (type(got).__name__ if got else None) == _eager_claim(path, is_dir), path
        checked += 1
    assert checked > 100


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


HEAVY = {"sqlite3", "ssl", "urllib.request", "http.client", "spikelens.importers.textlogs",
         "spikelens.importers.csvlogs", "spikelens.importers.mlflow_sql", "spikelens.importers.hf"}


@pytest.fixture(scope="module")
def event_file() -> Path:
    files = sorted(FIXTURES.rglob("events.out.tfevents.*"))
    assert files
    return files[0]


def test_reading_an_event_file_loads_neither_sqlite_nor_http_nor_the_text_readers(event_file):
    loaded = _modules_after("import spikelens.importers.registry as r\n"
                            "assert not any(m.startswith('spikelens.importers.') and m not in "
                            "('spikelens.importers.base', 'spikelens.importers.registry') for m in __import__('sys').modules)\n"
                            f"import spikelens; assert spikelens.load({str(event_file)!r}).height > 0")
    assert "spikelens.importers.tensorboard" in loaded
    assert HEAVY & loaded == set()


def test_claim_order_is_unchanged():
    """The order of the eager tuple this registry replaced (the first claimer reads a file)."""
    assert [e.cls for e in ENTRIES] == [
        "WandbOfflineRunImporter", "MlflowRunImporter", "WandbLegacyRunImporter", "DvcLiveImporter",
        "RayTuneTrialImporter", "WandbOfflineFileImporter", "TensorBoardImporter", "HfTrainerStateImporter",
        "SwanLabImporter", "MlflowDatabaseImporter", "MlflowServerImporter", "TrackioImporter",
        "NeptuneParquetImporter", "WandbChartCsvImporter", "WandbHistoryImporter", "RlProgressImporter",
        "MmengineScalarsImporter", "LlamaFactoryImporter", "JsonHistoryImporter", "NumberedJsonImporter",
        "JsonLinesImporter",
        "UltralyticsImporter", "UltralyticsResultsTxtImporter", "TimmSummaryImporter", "CsvImporter",
        "SpannedHeaderImporter", "BareNumbersImporter", "NumberListsImporter", "PointsImporter", "KeyValueTableImporter",
        "MarkdownTableImporter", "TextLogImporter"]
