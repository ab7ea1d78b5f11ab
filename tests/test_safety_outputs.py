"""What users hand us is never lost, overwritten or run (#23, the output side).

- `--findings DIR`, export, stitch and report paths that are, hold or lie inside an
  input are refused (one line, exit 2), before anything is read or written;
- a folder findings dataset removes only partitions it wrote (its manifest), is
  committed as a whole (a sweep killed midway leaves the last committed one, and its
  leftovers are removed by the next), sweeps into one dataset at once take turns (its
  lock), and a damaged partition is a warning and written anew;
- the incremental state is validated JSON: a planted pickle is never run;
- every file output is replaced in one rename (a writer that fails midway leaves the
  previous good file), and CSV export quotes text cells a spreadsheet would run.

Logs are Lightning CSVLogger-style `version_0/metrics.csv` files written here (the
header and rows CSVLogger writes) and TensorBoard event files from PyTorch's own
SummaryWriter."""
from __future__ import annotations

import csv
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import main_in_process, tree_hashes

from spikelens import findings_data
from spikelens.errors import OutputOverlap
from spikelens.outputs import atomic_write, atomic_write_text, is_temp_name, refuse_overlap


def lightning_run(folder: Path, seed: int, steps: int = 300, spike_at: int | None = None) -> Path:
    """`folder/version_0/metrics.csv` as Lightning's CSVLogger writes it (sorted header,
    one row per log_metrics call)."""
    rng = np.random.default_rng(seed)
    s = np.arange(steps)
    loss = 2.0 * np.exp(-s / 150) + 1.0 + 0.02 * rng.standard_normal(steps)
    if spike_at is not None:
        loss[spike_at] *= 4
    path = folder / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epoch", "step", "train_loss"])
        for step, v in zip(s, loss):
            w.writerow([int(step) // 100, int(step), repr(float(v))])
    return path


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture()
def cli(capsys, tmp_path, monkeypatch):
    """The real entry point, in this process (fast), from an empty working folder."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)

    def run(*args) -> Ran:
        code, out, err = main_in_process(capsys, *args)
        return Ran(code or 0, out, err)

    return run


@pytest.fixture()
def analyze(cli):
    return lambda *args: cli("analyze", *args, "--format", "json", "--no-charts")


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- refused outputs

def test_findings_holding_the_logs_it_reads_is_refused_and_deletes_nothing(tmp_path: Path, analyze):
    """The audit's reproducer: `analyze "w/run=a" "w/run=b" --findings w` deleted both."""
    w = tmp_path / "w"
    lightning_run(w / "run=a", 1)
    lightning_run(w / "run=b", 2)
    (w / "run=keep").mkdir()
    (w / "run=keep" / "notes.txt").write_text("mine\n")
    before = tree_hashes(w)
    res = analyze(w / "run=a", w / "run=b", "--findings", w)
    assert res.returncode == 2
    assert "holds" in one_line(res.stderr) and str(w) in res.stderr
    assert tree_hashes(w) == before


@pytest.mark.parametrize("case", ["same file", "inside a folder read", "export folder inside"])
def test_export_never_writes_over_or_into_its_inputs(tmp_path: Path, case: str, cli):
    exp = tmp_path / "exp"
    log = lightning_run(exp, 3)
    before = tree_hashes(exp)
    if case == "same file":  # exit 0 and the log overwritten, before
        res = cli("export", log, "-o", log)
    elif case == "inside a folder read":  # written into the logs and read back as a run, before
        res = cli("export", exp, "-o", exp / "all.csv")
    else:
        res = cli("export", exp, "-o", exp / "fixed")
    assert res.returncode == 2
    assert "is being read" in one_line(res.stderr) or "inside the logs" in res.stderr
    assert tree_hashes(exp) == before


@pytest.mark.parametrize("option", ["--html", "--plot", "--junit", "--summary", "--update-baseline"])
def test_reports_are_never_written_into_the_logs(tmp_path: Path, option: str, cli):
    runs = tmp_path / "runs"
    lightning_run(runs / "a", 4)
    before = tree_hashes(runs)
    if option in ("--html", "--plot"):
        res = cli("analyze", runs, option, runs / "out", "--no-charts")
    elif option == "--update-baseline":
        res = cli("check", runs, "--baseline", runs / "base.json", option)
    else:
        res = cli("check", runs, option, runs / "out")
    assert res.returncode == 2
    assert "inside the logs being read" in one_line(res.stderr)
    assert tree_hashes(runs) == before


def test_refuse_overlap_cases(tmp_path: Path):
    logs = tmp_path / "logs"
    log = lightning_run(logs / "a", 5)
    for out, inputs, says in [(log, [log], "is "), (logs / "a" / "x.html", [logs / "a"], "inside"),
                              (tmp_path, [logs / "a"], "holds"), (logs / "a", [logs / "a"], "is ")]:
        with pytest.raises(OutputOverlap, match=says):
            refuse_overlap(out, inputs, "-o")
    refuse_overlap(log.parent / "beside.csv", [log], "-o")  # beside a file read: only data outputs mind
    with pytest.raises(OutputOverlap, match="inside"):
        refuse_overlap(log.parent / "beside.csv", [log], "-o", near_files=True)
    refuse_overlap(tmp_path / "out.csv", ["s3://bucket/logs", logs], "-o")  # URLs are never local paths


# ---------------------------------------------------------------- the folder dataset

@pytest.fixture()
def fleet(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for i in range(3):  # fewer groups than start worker processes: fast, and the same code path
        lightning_run(root / f"r{i}", 10 + i, spike_at=150 if i % 2 else None)
    return root


def _committed(data: Path) -> dict[str, str]:
    return json.loads((data / findings_data.MANIFEST).read_text())["partitions"]


def test_a_folder_dataset_removes_only_partitions_it_wrote(fleet: Path, tmp_path: Path, analyze):
    data = tmp_path / "data"
    (data / "run=keep").mkdir(parents=True)
    (data / "run=keep" / "notes.txt").write_text("mine\n")
    (data / "run=r2").mkdir()
    (data / "run=r2" / "part-0.parquet").write_text("a file spikelens did not write\n")
    assert analyze(fleet, "--findings", data).returncode == 0
    listed = _committed(data)
    assert set(listed) == {f"run=r{i}" for i in range(3)}
    # r2 disappears from the logs: its partition goes, what the user put there stays
    for p in (fleet / "r2" / "version_0").iterdir():
        p.unlink()
    (fleet / "r2" / "version_0").rmdir()
    (fleet / "r2").rmdir()
    res = analyze(fleet, "--findings", data)
    assert res.returncode == 0, res.stderr
    assert "run=r2" not in _committed(data)
    assert not (data / "run=r2" / listed["run=r2"]).exists()
    assert (data / "run=r2" / "part-0.parquet").read_text() == "a file spikelens did not write\n"
    assert (data / "run=keep" / "notes.txt").read_text() == "mine\n"
    table = findings_data.read(data)
    assert set(table.get_column("run").unique()) == {"r0", "r1"}


def test_a_sweep_killed_midway_leaves_the_last_commit_and_its_leftovers_go(fleet: Path, tmp_path: Path, monkeypatch):
    """The write of the third partition fails (as a kill would stop it): the manifest is
    the previous sweep's, a reader sees that sweep whole; the next sweep removes the
    killed one's files and nothing else."""
    from spikelens import api

    data = tmp_path / "data"
    api.analyze(fleet, findings=data, keep_frames=False)
    manifest = (data / findings_data.MANIFEST).read_bytes()
    committed = findings_data.read(data)
    lightning_run(fleet / "r0", 99, spike_at=100)  # every run changed: every partition rewritten
    for i in range(1, 3):
        lightning_run(fleet / f"r{i}", 100 + i)
    (data / "run=r1" / "user.txt").write_text("mine\n")

    calls = {"n": 0}
    real = findings_data.atomic_write

    def dies_on_the_third(path, writer):
        calls["n"] += 1
        if calls["n"] == 3:  # two partitions written, the third dies
            def half(tmp):
                tmp.write_bytes(b"PAR1 half a partition")
                raise KeyboardInterrupt
            return real(path, half)
        return real(path, writer)

    monkeypatch.setattr(findings_data, "atomic_write", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        api.analyze(fleet, findings=data, keep_frames=False)
    monkeypatch.undo()
    assert (data / findings_data.MANIFEST).read_bytes() == manifest
    assert findings_data.read(data).sort("run", "row").equals(committed.sort("run", "row"))
    leftovers = [p for p in data.glob("run=*/*") if p.name not in _committed(data).values() and p.name != "user.txt"]
    assert len(leftovers) == 2  # the two partitions the killed sweep finished
    assert not [p for p in data.rglob("*") if is_temp_name(p.name)]

    fresh = api.analyze(fleet, findings=data, keep_frames=False)
    after = [p.relative_to(data).as_posix() for p in data.glob("run=*/*")]
    assert sorted(after) == sorted([f"{k}/{v}" for k, v in _committed(data).items()] + ["run=r1/user.txt"])
    assert not (data / findings_data.PENDING).exists()
    assert {r.run for r in fresh.runs} == set(findings_data.read(data).get_column("run").unique())


def _waits_for_a_lock(pid: int) -> bool:
    """/proc/locks marks a process blocked on a lock with '->'."""
    with open("/proc/locks") as fh:
        return any("->" in line and f" {pid} " in line for line in fh)


def test_a_sweep_waits_for_the_one_writing_the_dataset(fleet: Path, tmp_path: Path):
    """Before the lock, two sweeps at once left 68 of 400 partitions: here a sweep started
    while another holds the dataset waits, writes nothing meanwhile, then commits whole."""
    data = tmp_path / "data"
    assert findings_data.read(data).height == 0
    with findings_data.locked(data):  # another sweep, under way
        proc = subprocess.Popen([sys.executable, "-m", "spikelens", "analyze", str(fleet), "--format", "json",
                                 "--no-charts", "--findings", str(data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while proc.poll() is None and not _waits_for_a_lock(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep did not wait for the dataset's lock"
        assert not (data / findings_data.MANIFEST).exists() and not list(data.glob("run=*"))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    listed = _committed(data)
    assert set(listed) == {f"run=r{i}" for i in range(3)}
    files = sorted(p.relative_to(data).as_posix() for p in data.glob("run=*/*"))
    assert files == sorted(f"{k}/{v}" for k, v in listed.items())
    assert findings_data.read(data).filter(pl.col("row") == "run").height == 3


def test_a_damaged_partition_is_a_warning_and_written_anew(fleet: Path, tmp_path: Path, analyze):
    data = tmp_path / "data"
    first = analyze(fleet, "--findings", data)
    part = data / "run=r1" / _committed(data)["run=r1"]
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])  # cut, as a full disk or a kill leaves it
    res = analyze(fleet, "--findings", data)
    assert res.returncode == 0, res.stderr
    assert "damaged findings partition" in res.stderr and "Traceback" not in res.stderr
    assert json.loads(res.stdout)["runs"] == json.loads(first.stdout)["runs"]
    again = data / "run=r1" / _committed(data)["run=r1"]
    assert again != part and not part.exists()
    assert pl.read_parquet(again).filter(pl.col("row") == "run").height == 1


def test_a_damaged_manifest_is_a_warning_and_the_dataset_rebuilt(fleet: Path, tmp_path: Path, analyze):
    data = tmp_path / "data"
    first = analyze(fleet, "--findings", data)
    old = {f"{k}/{v}" for k, v in _committed(data).items()}
    (data / findings_data.MANIFEST).write_text('{"schema": "spikelens.findings-dataset/1", "partitions": ')
    res = analyze(fleet, "--findings", data)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("damaged findings dataset manifest") == 1 and "Traceback" not in res.stderr
    assert json.loads(res.stdout)["runs"] == json.loads(first.stdout)["runs"]
    assert set(_committed(data)) == {f"run=r{i}" for i in range(3)}
    # the partitions the damaged manifest listed are no longer known as this dataset's: kept, not removed
    assert all((data / p).exists() for p in old)


def test_a_damaged_single_file_dataset_is_rebuilt_and_a_foreign_file_refused(fleet: Path, tmp_path: Path, analyze):
    data = tmp_path / "fleet.parquet"
    first = analyze(fleet, "--findings", data)
    data.write_bytes(data.read_bytes()[:200])  # cut
    res = analyze(fleet, "--findings", data)
    assert res.returncode == 0 and "damaged findings dataset" in res.stderr, res.stderr
    assert json.loads(res.stdout)["runs"] == json.loads(first.stdout)["runs"]
    assert pl.read_parquet(data).filter(pl.col("row") == "run").height == 3
    # a file that is not one (the user's own table, a text file): refused, untouched
    for content in (b"step,loss\n1,2\n", None):
        mine = tmp_path / "mine.parquet"
        if content is None:
            pl.DataFrame({"step": [1, 2], "loss": [2.0, 1.9]}).write_parquet(mine)
        else:
            mine.write_bytes(content)
        before = mine.read_bytes()
        res = analyze(fleet, "--findings", mine)
        assert res.returncode == 2 and "not a spikelens findings dataset" in one_line(res.stderr)
        assert mine.read_bytes() == before


# ---------------------------------------------------------------- the incremental state

class _Planted:
    """What a hostile writer of a shared dataset would put in a state: unpickling it
    creates a file (it could run anything)."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("payload", ["pickle", "garbage", "wrong json"])
def test_a_planted_or_damaged_state_is_never_run_and_only_costs_a_reread(fleet: Path, tmp_path: Path, payload: str,
                                                                       analyze):
    data = tmp_path / "fleet.parquet"
    first = analyze(fleet, "--findings", data)
    assert first.returncode == 0
    pwned = tmp_path / "PWNED"
    bad = {"pickle": pickle.dumps(_Planted(str(pwned))),
           "garbage": os.urandom(64),
           "wrong json": json.dumps({"schema": "spikelens.state/1", "reports": [{"$c": "os.system", "f": {}}],
                                     "warnings": []}).encode()}[payload]
    table = pl.read_parquet(data)
    table = table.with_columns(state=pl.when(pl.col("state").is_not_null()).then(pl.lit(bad)).otherwise(None))
    table.write_parquet(data)
    res = analyze(fleet, "--findings", data)
    assert res.returncode == 0, res.stderr
    assert not pwned.exists()
    assert "could not be loaded" in res.stderr and "Traceback" not in res.stderr
    assert json.loads(res.stdout)["runs"] == json.loads(first.stdout)["runs"]  # every group read again
    states = pl.read_parquet(data).get_column("state").drop_nulls().to_list()
    assert states and all(s.startswith(b'{"schema":"spikelens.state/1"') for s in states)


def test_the_state_round_trips_the_reports_exactly(fleet: Path):
    from spikelens import api
    from spikelens.pipeline import statejson

    report = api.analyze(fleet, keep_frames=False)
    reports, warnings = statejson.loads(statejson.dumps(report.runs, ["w"]))
    assert warnings == ["w"]
    assert [r.findings for r in reports] == [r.findings for r in report.runs]
    assert [(r.run, r.sources, r.segments, r.metrics, r.stats) for r in reports] == \
        [(r.run, r.sources, r.segments, r.metrics, r.stats) for r in report.runs]
    for got, want in zip(reports, report.runs):
        if want.shift_profile is not None:
            assert np.array_equal(got.shift_profile.z, want.shift_profile.z)
    # values JSON has no spelling for: non-finite floats, tuples, non-string keys, arrays with NaN
    from dataclasses import replace

    from spikelens.model.finding import Finding

    odd = Finding(kind="spike", code="SL101", run="r", metric="loss", severity="warning", message="m",
                  magnitude=float("inf"), evidence={"x": float("nan"), "by": {3: (1, float("-inf"))}, "$f": "text"})
    run = replace(report.runs[0], findings=[odd], stats={"a": np.float64(2.5), "n": np.int64(3)})
    if run.shift_profile is not None:
        run = replace(run, shift_profile=replace(run.shift_profile, z=np.array([1.0, np.nan, np.inf])))
    (back,), _ = statejson.loads(statejson.dumps([run], []))
    (f,) = back.findings
    assert np.isnan(f.evidence["x"]) and f.evidence["by"] == {3: (1, float("-inf"))} and f.evidence["$f"] == "text"
    assert f.magnitude == float("inf") and back.stats == {"a": 2.5, "n": 3}
    if run.shift_profile is not None:
        assert np.array_equal(back.shift_profile.z, run.shift_profile.z, equal_nan=True)


# ---------------------------------------------------------------- atomic files

def test_a_writer_that_fails_midway_leaves_the_previous_file(tmp_path: Path):
    out = tmp_path / "report.html"
    out.write_text("previous good\n")
    os.chmod(out, 0o640)

    def dies(tmp: Path) -> None:
        tmp.write_text("half of the new one")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(out, dies)
    assert out.read_text() == "previous good\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    atomic_write_text(out, "new\n")
    assert out.read_text() == "new\n" and (out.stat().st_mode & 0o777) == 0o640


def test_links_are_followed_and_streams_written_directly(tmp_path: Path):
    real = tmp_path / "real.xml"
    real.write_text("old")
    link = tmp_path / "link.xml"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo) as fh:
            got["text"] = fh.read()

    import threading

    t = threading.Thread(target=reader)
    t.start()
    atomic_write_text(fifo, "through the pipe")
    t.join(10)
    assert got["text"] == "through the pipe" and stat_is_fifo(fifo)


def stat_is_fifo(path: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.stat(path).st_mode)


def test_a_killed_csv_export_leaves_the_previous_file(tmp_path: Path, cli):
    """A real export process killed (SIGKILL) while it writes: the old file stays whole."""
    logs = tmp_path / "logs"
    for i in range(3):
        lightning_run(logs / f"r{i}", i, steps=4000)
    out = tmp_path / "all.csv"
    out.write_text("step,value\n1,2.0\n")
    code = (
        "import os, signal, polars as pl, sys\n"
        "real = pl.DataFrame.write_csv\n"
        "def killed(self, file, *a, **k):\n"
        "    with open(file, 'w') as fh: fh.write('run,metric\\n' * 1000)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "pl.DataFrame.write_csv = killed\n"
        "from spikelens.cli import main\n"
        f"main(['export', {str(logs)!r}, '-o', {str(out)!r}, '--force'])\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == -9, res.stderr
    assert out.read_text() == "step,value\n1,2.0\n"
    (left,) = [p.name for p in tmp_path.iterdir() if p.is_file() and p.name != "all.csv"]
    assert is_temp_name(left)  # what a kill -9 leaves: spikelens' own temporary name, never the real one
    ok = cli("export", logs, "-o", out, "--force")  # an existing output is replaced only when told to
    assert ok.returncode == 0, ok.stderr
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["all.csv"]  # the dead writer's temp removed
    assert pl.read_csv(out).height == 3 * 4000 * 2  # train_loss and epoch of every step


# ---------------------------------------------------------------- CSV injection

def test_csv_export_quotes_formula_cells_and_leaves_numbers(tmp_path: Path, cli):
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "logs" / "=1+1"
    writer = SummaryWriter(str(run))
    for step in range(20):
        writer.add_scalar('=HYPERLINK("http://evil.example","x")', 1.0 + step, step)
        writer.add_scalar("+cmd", -2.5, step)
        writer.add_scalar("@SUM(A1)", 3.0, step)
        writer.add_scalar("train/loss", 2.0 - step / 100, step)
    writer.close()
    out = tmp_path / "all.csv"
    res = cli("export", run.parent, "-o", out)
    assert res.returncode == 0, res.stderr
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    metrics = {r["metric"] for r in rows}
    assert metrics == {"'=HYPERLINK(\"http://evil.example\",\"x\")", "'+cmd", "'@SUM(A1)", "train/loss"}
    assert {r["run"] for r in rows} == {"'=1+1"}
    assert {r["value"] for r in rows if r["metric"] == "'+cmd"} == {"-2.5"}  # numbers untouched
    starts = {c[:1] for r in rows for k, c in r.items() if k in ("run", "metric", "source")}
    assert not starts & set("=+-@\t\r")
