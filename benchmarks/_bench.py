"""Shared pieces of the benchmarks: inputs written by the real writers, fresh-process
measurements, and the tables they print.

Every measurement runs a command in a fresh Python process and reads that process's
own resource usage back through `os.wait4` (wall seconds, user+system CPU seconds,
peak resident set size). On a shared machine wall time swings with the load, so CPU
seconds and the load average are printed beside it.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
T0 = 1_714_550_400
"""Unix time of the first generated event (2024-05-01 08:00 UTC)."""
TRIPLE_BYTES = 24
"""One point as a float64 (step, wall_time, value) triple: the memory yardstick."""

TB_TAGS = ("train/loss", "train/grad_norm", "train/lr", "train/loss_scale")


# ------------------------------------------------------------------ inputs


def curves(n_steps: int, seed: int = 0) -> dict:
    """The synthetic curves the fixtures use (`fixtures/writers/_curves.py`), with one
    planted loss spike so that analyze has something to find, and a loss scale."""
    import numpy as np

    sys.path.insert(0, str(FIXTURES))
    from writers._curves import clean_run, plant_spike

    run = clean_run(n_steps=n_steps, seed=seed)
    if n_steps >= 400:
        with np.errstate(over="ignore", invalid="ignore"):  # the masked-out side of a np.where
            run = plant_spike(run, at=int(n_steps * 0.6), recover=min(200, n_steps // 10))
    scale = np.full(run["step"].size, 65536.0)
    scale[run["step"] >= n_steps // 2] = 32768.0
    run["loss_scale"] = scale
    return run


def write_event_file(folder: Path, n_points: int, seed: int = 0, extra_tags: int = 0) -> Path:
    """One TensorBoard event file of `n_points` scalars (4 tags × n/4 steps, one
    `simple_value` per event, as PyTorch's `add_scalar` writes them; `extra_tags` adds
    per-layer grad norms `layers/NNN/grad_norm` logged every step, as LLM runs do).

    TensorBoard's `EventFileWriter` creates the file (its name, its `file_version`
    header event); the scalar events are appended through the same `RecordWriter`
    framing it uses, called directly: the writer's background queue costs ~60-90 µs
    of lock hand-offs per event here (over a minute per million points) and writes
    the same bytes.
    """
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.summary.writer.record_writer import RecordWriter

    folder.mkdir(parents=True, exist_ok=True)
    before = set(folder.iterdir())
    EventFileWriter(str(folder)).close()
    (path,) = set(folder.iterdir()) - before
    tags = list(TB_TAGS) + [f"layers/{i:03d}/grad_norm" for i in range(extra_tags)]
    n_steps = n_points // len(tags)
    run = curves(n_steps, seed)
    columns = {"train/loss": run["loss"], "train/grad_norm": run["grad_norm"], "train/lr": run["lr"],
               "train/loss_scale": run["loss_scale"]}
    columns.update({t: run["grad_norm"] * (1 + i / 100) for i, t in enumerate(tags[len(TB_TAGS):])})
    steps = run["step"].tolist()
    values = [columns[t].tolist() for t in tags]
    with open(path, "ab") as fh:
        rec = RecordWriter(fh)
        for i, step in enumerate(steps):
            wall = T0 + 0.25 * step
            for tag, vals in zip(tags, values):
                ev = Event(wall_time=wall, step=step,
                           summary=Summary(value=[Summary.Value(tag=tag, simple_value=vals[i])]))
                rec.write(ev.SerializeToString())
    return path


def write_csv_run(folder: Path, n_steps: int, seed: int) -> Path:
    """One run as `metrics.csv` in the generic layout (`step,train/loss,lr,grad_norm`)."""
    import polars as pl

    run = curves(n_steps, seed)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "metrics.csv"
    pl.DataFrame({"step": run["step"], "train/loss": run["loss"], "lr": run["lr"],
                  "grad_norm": run["grad_norm"]}).write_csv(path, float_precision=6)
    return path


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temp folder outside the repo, removed afterwards whatever happens."""
    path = Path(tempfile.mkdtemp(prefix=f"spikelens-bench-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------ measuring


@dataclass
class Sample:
    """One fresh process: what it cost and what it printed."""

    wall_s: float
    cpu_s: float
    maxrss_bytes: int
    """Peak RSS of the process (and of any workers it waited for)."""
    rc: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        for line in reversed(self.stdout.strip().splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"no JSON line in the output (rc {self.rc}): {self.stderr.strip()[-500:]}")


@dataclass
class Measured:
    """Medians over the repeats (and the raw samples)."""

    samples: list[Sample] = field(default_factory=list)

    @property
    def wall_s(self) -> float:
        return statistics.median(s.wall_s for s in self.samples)

    @property
    def cpu_s(self) -> float:
        return statistics.median(s.cpu_s for s in self.samples)

    @property
    def maxrss_bytes(self) -> int:
        return int(statistics.median(s.maxrss_bytes for s in self.samples))

    def median_of(self, key: str) -> float:
        return statistics.median(s.json()[key] for s in self.samples)


def run_process(argv: Sequence[str], cwd: Path | None = None, env: dict | None = None,
                timeout: float = 1800) -> Sample:
    """Run argv in a fresh process; wall time, CPU time and peak RSS of that process.

    The child may write byte-code caches even where the shell sets
    PYTHONDONTWRITEBYTECODE: installed packages (tbparse, TensorBoard, an installed
    spikelens) have theirs, and an editable checkout without them would recompile every
    module in every process (~70 ms here), which no user pays."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, stdout=out, stderr=err, env={**base, **(env or {})})
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Sample(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime,
                      maxrss_bytes=usage.ru_maxrss * 1024, rc=proc.returncode,
                      stdout=out.read(), stderr=err.read())


def repeat(argv: Sequence[str], times: int, **kw) -> Measured:
    m = Measured()
    for _ in range(times):
        s = run_process(argv, **kw)
        if s.rc not in (0, 1):
            raise RuntimeError(f"{' '.join(map(str, argv))} exited {s.rc}: {s.stderr.strip()[-800:]}")
        m.samples.append(s)
    return m


def proc_status_bytes(field: str) -> int | None:
    """A memory field of /proc/self/status (`VmRSS`, `VmHWM`) in bytes; None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def rss_now() -> int:
    """Resident set size of this process now, in bytes (Linux /proc)."""
    return proc_status_bytes("VmRSS") or 0


def peak_rss() -> int:
    """Peak RSS of this process so far, in bytes: the address space's high-water mark
    (VmHWM). Not `ru_maxrss`: on Linux a child started by fork+exec inherits the
    parent's high-water mark there, so a benchmark parent that had grown (writing a
    1M-point input) would show up as the child's peak."""
    hwm = proc_status_bytes("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ------------------------------------------------------------------ printing


def load_avg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def machine() -> str:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 0
    return f"{cores} cores, Python {sys.version.split()[0]}"


def mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:,.0f}"


def rate(points: float, seconds: float) -> str:
    if seconds <= 0:
        return "-"
    r = points / seconds
    return f"{r / 1e6:.2f}M" if r >= 1e6 else f"{r / 1e3:.0f}k"


def _numeric(cell: str) -> bool:
    return cell[:1].isdigit() or (cell[:1] == "-" and len(cell) > 1)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain-text table: the first column and text left-aligned, numbers right-aligned."""
    cols = list(zip(header, *rows))
    widths = [max(len(str(c)) for c in col) for col in cols]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(map(str, cells), widths)):
            out.append(c.rjust(w) if i and _numeric(c) else c.ljust(w))
        return "  ".join(out).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def report(run, args, *run_args) -> int:
    """Print the machine line, run the benchmark, print its table, save its numbers."""
    import json

    print(f"machine: {machine()}; load avg {load_avg()}", flush=True)
    text, numbers = run(*run_args)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2))
    return 0


def analyze_in_process_script(tag: str, imports: str) -> str:
    """`python -c` text that runs `spikelens analyze ARGV[1] --format json` and prints, on exit,
    `TAG base=RSS peak=VmHWM` on stderr: the RSS once `imports` are loaded and the peak, so
    memory growth is measured net of what importing costs."""
    return (
        "import atexit, sys\n"
        "def _status(field):\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith(field + ':'):\n"
        "            return int(line.split()[1]) * 1024\n"
        "    return 0\n"
        f"import {imports}\n"
        "base = _status('VmRSS')\n"
        f"atexit.register(lambda: print(f'{tag} base={{base}} peak={{_status(\"VmHWM\")}}', file=sys.stderr, flush=True))\n"
        "sys.argv = ['spikelens', 'analyze', sys.argv[1], '--format', 'json']\n"
        "spikelens.cli.main()\n"
    )

