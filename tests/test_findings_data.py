"""`--findings`: the findings as a Parquet dataset a fleet is queried with, and the
incremental sweep it allows (a second sweep reads only the runs whose files changed).

The fleet is written here: CSV runs named by model size, two that spike at the same
step, one whose fp16 loss scale collapses before its loss goes NaN."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import FIXTURES, main_in_process, run_cli

sys.path.insert(0, str(FIXTURES))
from writers._curves import clean_run, plant_spike  # noqa: E402

README = FIXTURES.parent / "README.md"
LAYOUTS = ["fleet.parquet", "fleet"]


def write_csv(path: Path, cols: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(cols)
    lines = [",".join(names)]
    for row in zip(*(cols[n] for n in names)):
        lines.append(",".join(str(int(v)) if n == "step" else f"{float(v):.6f}" for n, v in zip(names, row)))
    path.write_text("\n".join(lines) + "\n")


def write_fleet(root: Path) -> Path:
    for i, (name, spike) in enumerate([("gpt-125M-a", 1200), ("gpt-125M-b", 1200), ("gpt-350M-a", None),
                                       ("gpt-350M-b", 700)]):
        run = clean_run(2000, seed=i)
        write_csv(root / name / "metrics.csv", plant_spike(run, spike, height=3.0) if spike else run)
    run = clean_run(2000, seed=9)
    scale = np.full(run["step"].size, 65536.0)
    for k, s in enumerate(range(1500, 1510)):
        scale[run["step"] >= s] = 65536.0 / 2 ** (k + 1)
    run["loss_scale"] = scale
    run["loss"] = np.where(run["step"] >= 1510, np.nan, run["loss"])
    write_csv(root / "gpt-1B-fp16" / "metrics.csv", run)
    return root


@pytest.fixture()
def fleet(tmp_path: Path) -> Path:
    return write_fleet(tmp_path / "runs")


@pytest.fixture()
def analyze(capsys, monkeypatch):
    """`spikelens analyze ROOT --format json EXTRA...` in this process, its stdout. The
    fleet's five runs are analysed here rather than in spawned workers (starting them is
    most of a sweep this small); the findings dataset and the reuse of unchanged runs are
    this process's work either way. `test_rows_follow_the_json_report` runs a real process
    with its workers."""
    from spikelens.pipeline import executors

    monkeypatch.setattr(executors, "MIN_GROUPS_FOR_WORKERS", 10**9)

    def run(root: Path, *extra) -> str:
        code, out, err = main_in_process(capsys, "analyze", root, "--format", "json", *extra)
        assert code == 0, err
        return out
    return run


def analyze_in_a_process(root: Path, *extra) -> str:
    out = run_cli("analyze", root, "--format", "json", *extra)
    assert out.returncode == 0, out.stderr
    return out.stdout


def readme_queries() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A fleet:"):]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block and "fleet.parquet" in block.group(1)
    return block.group(1)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_readme_queries_answer_the_fleet_questions(analyze, fleet: Path, tmp_path: Path, layout: str):
    data = tmp_path / layout
    analyze(fleet, "--findings", data)
    code = readme_queries()
    if layout == "fleet":  # a folder dataset: the run column comes from the partition names
        assert len(list((data / "run=gpt-125M-a").glob("part-*.parquet"))) == 1
        code = code.replace('pl.scan_parquet("fleet.parquet")',
                            f'pl.scan_parquet({str(data / "**/*.parquet")!r}, hive_partitioning=True)')
    else:
        code = code.replace('"fleet.parquet"', repr(str(data)))
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)

    same = ns["same_step"]
    assert same.get_column("peak_step").to_list() == [1200]
    assert same.get_column("runs").to_list() == [["gpt-125M-a", "gpt-125M-b"]]

    nan = ns["nan_after_overflow"]
    assert nan.get_column("run").to_list() == ["gpt-1B-fp16"]
    assert nan.get_column("overflow_step").to_list() == [1500] and nan.get_column("nan_step").to_list() == [1510]
    assert nan.get_column("top_cause").to_list() == ["fp16_overflow"]

    rate = {r["size"]: r for r in ns["per_1k_steps"].to_dicts()}
    assert set(rate) == {"125M", "350M", "1B"}
    assert (rate["125M"]["runs"], rate["125M"]["spikes"], rate["125M"]["steps"]) == (2, 2, 4000)
    assert rate["125M"]["spikes_per_1k_steps"] == pytest.approx(0.5)
    assert (rate["350M"]["spikes"], rate["1B"]["spikes"]) == (1, 0)


def test_rows_follow_the_json_report(fleet: Path, tmp_path: Path):
    """Every finding of the JSON report is one row, with its evidence as JSON."""
    import json

    report = json.loads(analyze_in_a_process(fleet, "--findings", tmp_path / "f.parquet"))
    table = pl.read_parquet(tmp_path / "f.parquet")
    runs = table.filter(pl.col("row") == "run")
    rows = table.filter(pl.col("row") == "finding")
    assert runs.get_column("run").to_list() == [r["run"] for r in report["runs"]]
    assert rows.height == sum(len(r["findings"]) for r in report["runs"])
    first = next(r for r in report["runs"] if r["findings"])
    f = first["findings"][0]
    row = rows.filter(pl.col("run") == first["run"]).row(0, named=True)
    assert (row["kind"], row["code"], row["severity"], row["peak_step"]) == (f["kind"], f["code"], f["severity"], f["peak_step"])
    assert json.loads(row["evidence"]) == f["evidence"]
    assert row["source"] == first["sources"][0]
    verdicts = dict(zip(runs.get_column("run"), runs.get_column("verdict")))
    assert verdicts["gpt-350M-a"] == "ok" and verdicts["gpt-1B-fp16"] == "error"


def _same_size_edit(path: Path) -> None:
    """Plant a 5x spike at step 1000 without changing the file's size or mtime: only a
    sweep that reads the file again can see it."""
    st = path.stat()
    lines = path.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    i = next(k for k, line in enumerate(lines) if line.startswith("1000,"))
    cells = lines[i].rstrip("\n").split(",")
    li = header.index("loss")
    new = f"{float(cells[li]) * 5:.6f}"[: len(cells[li])].ljust(len(cells[li]), "0")
    cells[li] = new
    lines[i] = ",".join(cells) + "\n"
    path.write_text("".join(lines))
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_incremental_reads_only_changed_runs(analyze, fleet: Path, tmp_path: Path, layout: str):
    data = tmp_path / layout
    first = analyze(fleet, "--findings", data)

    # unchanged size and mtime: not read again, so the planted spike is not seen
    _same_size_edit(fleet / "gpt-350M-a" / "metrics.csv")
    assert analyze(fleet, "--findings", data) == first

    # a changed file is read again: its new spike is in the report, which is what a
    # full sweep of the same files reports, byte for byte
    changed = plant_spike(clean_run(2000, seed=1), 300, height=4.0)
    write_csv(fleet / "gpt-125M-b" / "metrics.csv", changed)
    third = analyze(fleet, "--findings", data)
    assert third != first
    assert '"peak_step": 300' in third
    full = analyze(fleet, "--findings", tmp_path / "fresh.parquet")
    assert '"peak_step": 1000' in full  # the edit was there to be seen by a sweep that reads the file
    assert '"peak_step": 1000' not in third
    table = (pl.read_parquet(data) if layout.endswith(".parquet")
             else pl.scan_parquet(sorted(data.glob("run=*/part-*.parquet")), hive_partitioning=True).collect())
    assert set(table.filter(pl.col("row") == "finding", pl.col("run") == "gpt-125M-b")
               .get_column("peak_step").to_list()) >= {300}
    # every run's rows are a full sweep's, also the reused runs whose cross-run causes
    # changed (gpt-125M-a no longer shares its step-1200 spike)
    cols = ["row", "run", "kind", "peak_step", "top_cause", "causes", "evidence", "verdict", "steps"]
    fresh = pl.read_parquet(tmp_path / "fresh.parquet").filter(pl.col("run") != "gpt-350M-a")
    kept = table.filter(pl.col("run") != "gpt-350M-a")
    assert kept.select(cols).sort(cols).equals(fresh.select(cols).sort(cols))


def test_changed_settings_read_everything(analyze, fleet: Path, tmp_path: Path):
    data = tmp_path / "f.parquet"
    analyze(fleet, "--findings", data)
    _same_size_edit(fleet / "gpt-350M-a" / "metrics.csv")
    out = analyze(fleet, "--findings", data, "--param", "spike.recovery_fast_steps=251")
    assert '"peak_step": 1000' in out


def test_vanished_run_leaves_the_folder_dataset(analyze, fleet: Path, tmp_path: Path):
    data = tmp_path / "fleet"
    analyze(fleet, "--findings", data)
    assert (data / "run=gpt-350M-b").is_dir()
    for p in (fleet / "gpt-350M-b").iterdir():
        p.unlink()
    (fleet / "gpt-350M-b").rmdir()
    analyze(fleet, "--findings", data)
    assert not (data / "run=gpt-350M-b").exists()
    assert (data / "run=gpt-350M-a").is_dir()


def test_copies_of_object_storage_are_known_by_url_and_content(tmp_path: Path):
    """A local copy of s3://... is made afresh (new folder, new mtimes) by every process:
    the same bytes under the same URL are the same group, unchanged; other bytes of the
    same size are a change."""
    import shutil
    import tempfile

    from spikelens import storage
    from spikelens.discover import Source
    from spikelens.importers.csvlogs import CsvImporter
    from spikelens.pipeline import incremental

    def copy(content: bytes, mtime_ns: int) -> Source:
        folder = Path(tempfile.mkdtemp(prefix=storage.MIRROR_PREFIX))
        (folder / storage.MARKER).write_text("s3://bucket/runs\n", encoding="utf-8")
        path = folder / "runs" / "run_a" / "metrics.csv"
        path.parent.mkdir(parents=True)
        path.write_bytes(content)
        os.utime(path, ns=(mtime_ns, mtime_ns))
        return Source(path, CsvImporter(), str(path))

    a = copy(b"step,loss\n0,2.5\n1,2.4\n", 10**18)
    b = copy(b"step,loss\n0,2.5\n1,2.4\n", 2 * 10**18)
    c = copy(b"step,loss\n0,2.5\n1,9.4\n", 10**18)
    try:
        assert incremental.group_key([a]) == incremental.group_key([b]) == "s3://bucket/runs/run_a/metrics.csv"
        assert incremental.fingerprint([a]) == incremental.fingerprint([b])
        assert incremental.fingerprint([a]) != incremental.fingerprint([c])
        local = tmp_path / "metrics.csv"  # a local file: size and mtime, no read
        local.write_bytes(b"step,loss\n0,2.5\n")
        assert str(local.stat().st_mtime_ns) in incremental.fingerprint([Source(local, CsvImporter(), str(local))])
    finally:
        for s in (a, b, c):
            shutil.rmtree(s.path.parents[2], ignore_errors=True)


def test_the_dataset_is_never_written_into_the_logs(fleet: Path, capsys):
    code, _, err = main_in_process(capsys, "analyze", fleet, "--format", "json", "--findings", fleet / "fleet.parquet")
    assert code == 2
    assert "inside" in err and "Traceback" not in err
    assert not (fleet / "fleet.parquet").exists()
