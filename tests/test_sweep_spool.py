"""A spooled sweep (issue 28): the parent keeps a summary of each run and reads its report
back from a temporary file when an output asks, with the same output in every format as a
sweep that held its reports, and no report held once the sweep is done.

The sweep holds runs the cross-run work changes: three folders named `run` (renamed
`a/run`...), spikes at one step in three of them (a `data` cause naming the others),
ranks of one training with a spike on one rank only (named by `link_ranks`), and runs
sharing a level shift, one of them confirmed from its own shift profile."""
from __future__ import annotations

import csv
import gc
import io
import json
import os
import shutil
import weakref
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

import detector_cases as cases
from conftest import FIXTURES

from spikelens import api
from spikelens.model.report import RunReport
from spikelens.pipeline import spool as spool_mod
from spikelens.pipeline import sweep
from spikelens.pipeline.runsummary import SpooledRuns


def _write(path: Path, steps: np.ndarray, loss: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", "train_loss"])
        w.writerows([int(a), repr(float(b))] for a, b in zip(steps, loss))


def _curve(seed: int, n: int = 400, noise: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = np.arange(n)
    return s, (2.0 * np.exp(-s / (n / 3)) + 1.0) * np.exp(noise * rng.standard_normal(n))


def _spiked(seed: int, at: int) -> tuple[np.ndarray, np.ndarray]:
    s, v = _curve(seed)
    v[at:at + 3] *= [4.0, 2.0, 1.3]
    return s, v


def _shifted(seed: int, pct: float, at: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    s, v = cases.clean(seed, n=6000, noise=0.005)["train/loss"]  # as test_cross_run_levels
    return s, v * np.where(s >= at, 1 + pct / 100, 1.0)


@pytest.fixture(scope="module")
def linked_sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    for name, seed in (("a", 1), ("b", 2), ("c", 3)):
        _write(root / name / "run" / "metrics.csv", *_spiked(seed, 200))
    _write(root / "d" / "run" / "metrics.csv", *_curve(4))
    for rank in range(3):
        _write(root / "job" / f"rank_{rank}" / "metrics.csv", *(_spiked(10 + rank, 300) if rank == 1
                                                                 else _curve(10 + rank)))
    _write(root / "shift_big" / "metrics.csv", *_shifted(1, 3.0))
    _write(root / "shift_wide" / "metrics.csv", *_shifted(2, 3.0, at=3010))
    _write(root / "shift_more" / "metrics.csv", *_shifted(6, 3.0, at=2995))  # over six runs: three make a quorum
    _write(root / "shift_small" / "metrics.csv", *_shifted(3, 1.0))
    _write(root / "shift_none" / "metrics.csv", *_shifted(4, 0.0))
    shutil.copytree(FIXTURES / "relaunches" / "detectron2_mirror", root / "mirror")  # two writers, one run
    return root


def _analyze(root: Path, monkeypatch, spooled: bool, **kw):
    from spikelens.pipeline import executors

    monkeypatch.setattr(executors, "MIN_GROUPS_FOR_WORKERS", 10**9)  # analysed here (CI time)
    monkeypatch.setattr(sweep, "SPOOL_FROM", 0 if spooled else 10**9)
    return api.analyze(root, spool=True, **kw)


def _outputs(report) -> dict[str, str]:
    from spikelens.report.concise import render_concise
    from spikelens.report.html import render_html
    from spikelens.report.json_report import write_json
    from spikelens.report.markdown import render_markdown
    from spikelens.report.terminal import render_terminal
    from spikelens.remedy import remedy_document

    out = io.StringIO()
    write_json(report, out)
    term = Console(file=io.StringIO(), width=120, color_system=None, force_terminal=False)
    render_terminal(report, term, charts=True)
    return {"json": out.getvalue(), "markdown": render_markdown(report, charts=True),
            "concise": render_concise(report), "rich": term.file.getvalue(),
            "html": render_html(report), "remedy": json.dumps(remedy_document(report), indent=1),
            **_check_outputs(report)}


def _check_outputs(report) -> dict[str, str]:
    """`spikelens check`'s outputs (the gate checks a spooled sweep's runs as it reads them back)."""
    from datetime import datetime, timezone

    from spikelens.check import Policy, evaluate
    from spikelens.cli.check import render_markdown_check
    from spikelens.report.github import render_github
    from spikelens.report.json_report import write_check_json
    from spikelens.report.junit import render_junit

    result = evaluate(report, Policy(fail_on="info", max_fast_spikes=1))
    out = io.StringIO()
    write_check_json(result, out, result.exit_code())
    return {"check json": out.getvalue(), "check markdown": render_markdown_check(result, charts=True),
            "check github": render_github(result),
            "check junit": render_junit(result, elapsed=3.0, timestamp=datetime(2026, 1, 1, tzinfo=timezone.utc))}


@pytest.fixture(scope="module")
def both(linked_sweep, tmp_path_factory):
    """The sweep held and spooled, each also written as a findings dataset."""
    data = tmp_path_factory.mktemp("findings")
    mp = pytest.MonkeyPatch()
    try:
        held = _analyze(linked_sweep, mp, spooled=False, findings=data / "held")
        spooled = _analyze(linked_sweep, mp, spooled=True, findings=data / "spooled")
    finally:
        mp.undo()
    return held, spooled, data


def test_every_output_is_the_same_from_the_spool(both):
    held, spooled, _ = both
    assert isinstance(spooled.runs, SpooledRuns) and isinstance(held.runs, list)
    a, b = _outputs(held), _outputs(spooled)
    for fmt in a:
        assert a[fmt] == b[fmt], fmt
    # the sweep holds what the spool must carry over: renames, links across runs and ranks, a confirmed shift
    runs = {r["run"]: r for r in json.loads(a["json"])["runs"]}
    assert {"a/run", "b/run", "c/run", "d/run"} <= set(runs)
    assert len(runs) == 13 and any("hold(s) the same curves" in w for w in spooled.warnings)
    spike = next(f for f in runs["a/run"]["findings"] if f["kind"] == "spike")
    assert spike["causes"][0]["cause"] == "data" and spike["causes"][0]["numbers"]["runs"] == ["b/run", "c/run"]
    ranked = [f for r in runs.values() for f in r["findings"] if "ranks" in f.get("evidence", {})]
    assert ranked and ranked[0]["evidence"]["ranks"]["on"] == [1]
    small = [f for f in runs["shift_small"]["findings"] if f["kind"] == "level_shift"]
    assert small and "other run(s) analysed with it shifted too" in small[0]["message"]


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("small")
    for i in range(N_SMALL):
        _write(root / f"run_{i:02d}" / "metrics.csv", *_curve(i, n=60))
    return root


N_SMALL = 10


def test_no_report_is_held_after_a_spooled_sweep(small_sweep, monkeypatch):
    """O(1) in the number of runs: the reports wait on disk, the parent keeps summaries;
    during the sweep at most the group just analysed is alive (a held sweep: all of them)."""
    alive_during: list[int] = []
    made: list[weakref.ref] = []  # every RunReport built or unpickled

    init = RunReport.__init__

    def built(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    def unpickled(self, state):
        self.__dict__.update(state)
        made.append(weakref.ref(self))

    def alive() -> int:
        return sum(r() is not None for r in made)

    monkeypatch.setattr(RunReport, "__init__", built)
    monkeypatch.setattr(RunReport, "__setstate__", unpickled, raising=False)
    _count_reports(small_sweep, monkeypatch, alive, alive_during)


def _count_reports(small_sweep, monkeypatch, alive, alive_during) -> None:
    class Count:
        def start(self, total):
            pass

        def advance(self, runs, warnings):
            alive_during.append(alive())

    base = alive()
    report = _analyze(small_sweep, monkeypatch, spooled=True, keep_frames=False, progress=Count())
    assert len(report.runs) == len(alive_during) == N_SMALL
    assert alive() - base == 0
    assert max(alive_during) - base <= 1  # the group just analysed (one run)
    folder = report.runs.spool.folder
    assert os.path.isdir(folder) and os.stat(folder).st_mode & 0o077 == 0  # private to this user
    for run in report.runs:  # read back one at a time
        assert alive() - base == 1 and run.run.startswith("run_")
    del run, report
    gc.collect()
    assert not os.path.exists(folder)  # removed with the spool
    alive_during.clear()
    held = _analyze(small_sweep, monkeypatch, spooled=False, keep_frames=False, progress=Count())
    assert alive_during[-1] - base == N_SMALL and len(held.runs) == N_SMALL  # the test can fail: held, all


def test_the_findings_dataset_is_the_same_from_the_spool(both, linked_sweep, monkeypatch):
    held, spooled, data = both
    tables = [pl.read_parquet(data / name / "run=*" / "*.parquet", hive_partitioning=True)
              .drop("rows_hash").sort("run", "row", "kind", "peak_step", nulls_last=True)
              for name in ("held", "spooled")]
    assert tables[0].equals(tables[1])
    assert tables[0].filter(pl.col("top_cause") == "data").height >= 3
    # a second sweep into the same dataset reuses every group, from the spool as from memory
    again = _analyze(linked_sweep, monkeypatch, spooled=True, keep_frames=False, findings=data / "spooled")
    assert _json(again) == _json(held)


def _json(report) -> str:
    from spikelens.report.json_report import write_json

    out = io.StringIO()
    write_json(report, out)
    return out.getvalue()


def test_a_spool_reads_back_what_it_was_given_and_is_removed():
    s = spool_mod.Spool()
    first = s.append({"a": np.arange(3)})
    s.append("two")
    s.replace(first, [1, 2])
    assert len(s) == 2 and s[0] == [1, 2] and s[1] == "two"
    folder = s.folder
    s.close()
    assert not os.path.exists(folder)


def test_a_dataset_file_written_in_chunks_is_the_table(both, tmp_path):
    """Dataset rows are built and written a few runs at a time (a file: a row group each)."""
    from spikelens import findings_data

    held, spooled, _ = both
    whole = pl.concat(list(findings_data.row_chunks(spooled)))  # one chunk: 13 runs
    findings_data.write(tmp_path / "chunked.parquet", findings_data.row_chunks(spooled, runs_per_chunk=3))
    back = pl.read_parquet(tmp_path / "chunked.parquet")
    assert back.equals(whole) and whole.height > len(held.runs)
    # the spooled runs know their group's state (on disk, as the sweep kept it): the rest is the held report's
    group = ["group_key", "fingerprint", "settings", "state"]
    assert whole.drop(group).equals(findings_data.rows(held).drop(group))
    runs = whole.filter(pl.col("row") == "run")
    assert runs.get_column("group_key").null_count() == 0 and runs.get_column("state").null_count() < runs.height
    findings_data.write(tmp_path / "folder", findings_data.row_chunks(spooled, runs_per_chunk=3))
    cols = [c for c in whole.columns if c != "rows_hash"]
    assert findings_data.read(tmp_path / "folder").select(cols).sort("run", maintain_order=True).equals(
        whole.select(cols).sort("run", maintain_order=True))


def test_a_group_whose_state_cannot_be_kept_leaves_the_other_runs_their_own(linked_sweep, tmp_path, monkeypatch):
    """`incremental.keep` gives no state for a group holding a value its JSON cannot spell (the group
    is read again next time); the spooled sweep's runs after it still find their own group's state
    (each run keeps its place in the table), as the held sweep's do."""
    from spikelens.pipeline import incremental

    real_keep, skipped = incremental.keep, []

    def keep_all_but_first(key, *args):
        if not skipped:
            skipped.append(key)
            return None
        return real_keep(key, *args)

    monkeypatch.setattr(incremental, "keep", keep_all_but_first)
    held = _analyze(linked_sweep, monkeypatch, spooled=False, findings=tmp_path / "held")
    skipped.clear()
    spooled = _analyze(linked_sweep, monkeypatch, spooled=True, findings=tmp_path / "spooled")
    tables = [pl.read_parquet(tmp_path / name / "run=*" / "*.parquet", hive_partitioning=True)
              .drop("rows_hash").sort("run", "row", "kind", "peak_step", nulls_last=True)
              for name in ("held", "spooled")]
    runs = tables[1].filter(pl.col("row") == "run")
    assert runs.get_column("group_key").null_count() >= 1  # the skipped group's runs: no state
    assert runs.get_column("group_key").null_count() < runs.height
    assert tables[0].equals(tables[1])
    assert _json(held) == _json(spooled)
