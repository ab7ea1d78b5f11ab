"""Discovery's groups past `groupindex.SPILL` sources (issue 28): kept in an SQLite file of a
private folder, read back in the order and grouping the lists gave, the sweep reading them
as it hands them out; the folder removed after use and when discovery is interrupted."""
from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import tracemalloc
from io import StringIO
from pathlib import Path

import pytest

from spikelens import groupindex
from spikelens.config import Config
from spikelens.pipeline import sweep
from spikelens.pipeline.spool import PREFIX
from spikelens.report.json_report import write_json

discover = importlib.import_module("spikelens.discover")  # `spikelens.discover` is also a function's name
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from writers import _sweep_reports as sweep_reports  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _runs(root: Path, n: int, steps: int = 3) -> Path:
    """`n` runs, a metrics.csv each (written here: step and loss)."""
    for i in range(n):
        (root / f"run_{i:04d}").mkdir(parents=True)
        rows = "".join(f"{s},{2.0 - s / (steps + 1) + 0.01 * ((s * 7 + i) % 3):.4f}\n" for s in range(steps))
        (root / f"run_{i:04d}" / "metrics.csv").write_text("step,train/loss\n" + rows)
    return root


def _groups(roots: list[Path], spill: int, monkeypatch, spool: Path | None = None) -> tuple[list, bool]:
    monkeypatch.setattr(groupindex, "SPILL", spill)
    found = discover.source_groups(roots, spool=spool)
    try:
        return [[(str(s.path), id(s.importer), s.group) for s in g] for g in found], found.on_disk
    finally:
        found.close()


def test_groups_read_back_from_disk_are_the_groups_held(monkeypatch, tmp_path):
    logs = _runs(tmp_path / "logs", 8)
    (logs / "latest").symlink_to(logs / "run_0003")  # a run reached twice: kept once, where first found
    roots = [logs, logs / "run_0002", FIXTURES]  # a folder inside another given too; every fixture family
    spilled, on_disk = _groups(roots, 5, monkeypatch, spool=tmp_path / "spool")
    held = [[(str(s.path), id(s.importer), s.group) for s in g] for g in discover.groups(discover.find_sources(roots))]
    assert on_disk and len(held) > 100 and spilled == held  # the lists' order and grouping, importers the same
    twice = (logs / "run_0003" / "metrics.csv").resolve()
    assert sum(1 for g in held for s in g if Path(s[0]).resolve() == twice) == 1
    assert os.listdir(tmp_path / "spool") == []  # closed: removed


def _held_after_discovery(root: Path, spill: int, monkeypatch) -> int:
    monkeypatch.setattr(groupindex, "SPILL", spill)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        found = discover.source_groups([root], spool=root.parent / "spool")
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(found) == len(list(root.iterdir()))
    found.close()
    return held


def test_discovery_holds_nothing_a_source_past_the_spill(monkeypatch, tmp_path):
    from spikelens.importers.registry import IMPORTERS

    csv = next(imp for imp in IMPORTERS if imp.name == "csv")
    monkeypatch.setattr(discover, "_claim", lambda path, is_dir: csv if path.suffix == ".csv" else None)  # fast
    small, large = _runs(tmp_path / "a" / "logs", 20, steps=1), _runs(tmp_path / "b" / "logs", 80, steps=1)
    _held_after_discovery(small, 8, monkeypatch)  # first-use imports and caches are not the sources'
    slope = (_held_after_discovery(large, 8, monkeypatch) - _held_after_discovery(small, 8, monkeypatch)) / 60
    held_slope = (_held_after_discovery(large, 10**6, monkeypatch)
                  - _held_after_discovery(small, 10**6, monkeypatch)) / 60
    assert held_slope > 200, held_slope  # the measure sees the sources when they are held (~400)
    assert slope < 20, f"{slope:.0f} bytes a source held past the spill"


def test_the_sweep_reads_the_groups_as_it_hands_them_out(monkeypatch, tmp_path):
    """The parent takes a group from discovery only when an executor asks for the next one."""
    made, analysed, ahead = [0], [0], [0]

    class Counted(sweep_reports.Groups):
        def __iter__(self):
            for i in range(self.n):
                made[0] += 1
                yield [i]

    def execute(executor, fn, items, shared, jobs):
        assert len(items) == 60
        for (i,) in items:
            ahead[0] = max(ahead[0], made[0] - analysed[0])
            analysed[0] += 1
            yield [sweep_reports.synthetic_report(i)], []

    monkeypatch.setattr(sweep, "source_groups", lambda roots, spool=None: Counted(60))
    monkeypatch.setattr(sweep, "execute", execute)
    monkeypatch.setattr(sweep, "SPOOL_FROM", 2)
    (tmp_path / "logs").mkdir()
    report = sweep.analyze_roots([tmp_path / "logs"], Config(), keep_frames=False, spool=tmp_path / "spool")
    assert len(report.runs) == 60 and made[0] == 60
    assert ahead[0] == 1, ahead[0]  # a list of the groups made first: 60
    report.runs.spool.close()


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_discovery_leaves_no_index(monkeypatch, tmp_path, error):
    logs = _runs(tmp_path / "logs", 12)
    monkeypatch.setattr(groupindex, "SPILL", 2)
    monkeypatch.setenv("SPIKELENS_SPOOL_DIR", str(tmp_path / "named"))
    real, calls = discover._claim, [0]

    def claim(path, is_dir):
        calls[0] += 1
        if calls[0] == 20:  # past the spill: the index is on disk
            assert [p for p in os.listdir(tmp_path / "named") if p.startswith(PREFIX)]
            raise error("stopped")
        return real(path, is_dir)

    monkeypatch.setattr(discover, "_claim", claim)
    with pytest.raises(error):
        discover.source_groups([logs])
    assert calls[0] == 20 and os.listdir(tmp_path / "named") == []


def test_the_index_is_never_made_in_the_logs(monkeypatch, tmp_path):
    logs = _runs(tmp_path / "logs", 6)
    monkeypatch.setattr(groupindex, "SPILL", 2)
    monkeypatch.setenv("SPIKELENS_SPOOL_DIR", str(logs / "spool"))  # inside the logs: passed over
    found = discover.source_groups([logs], spool=logs)  # beside them, as named: passed over too
    assert found.on_disk and not Path(found.folder).is_relative_to(logs)
    found.close()
    assert sorted(p.name for p in logs.iterdir()) == [f"run_{i:04d}" for i in range(6)]


def _report(logs: Path, tmp_path: Path, findings: Path | None = None) -> str:
    report = sweep.analyze_roots([logs], Config(), keep_frames=False, spool=tmp_path / "spool", findings=findings)
    out = StringIO()
    write_json(report, out)
    return out.getvalue()


def test_a_sweep_over_groups_on_disk_reports_what_it_reports_held(monkeypatch, tmp_path, no_workers):
    """The whole sweep, a findings dataset written and then reused (its states and hashes on disk
    too, `incremental.Kept`): the same JSON as with every group held."""
    logs = _runs(tmp_path / "logs", 6, steps=20)
    monkeypatch.setattr(sweep, "SPOOL_FROM", 10**6)
    held = json.loads(_report(logs, tmp_path))
    monkeypatch.setattr(sweep, "SPOOL_FROM", 2)
    monkeypatch.setattr(groupindex, "SPILL", 2)
    first = json.loads(_report(logs, tmp_path, tmp_path / "findings"))
    again = json.loads(_report(logs, tmp_path, tmp_path / "findings"))  # every group reused from the dataset
    assert len(held["runs"]) == 6 and first["runs"] == held["runs"] == again["runs"]
    assert os.listdir(tmp_path / "spool") == []
