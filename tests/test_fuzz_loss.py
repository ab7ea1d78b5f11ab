"""Nothing is lost silently, whatever the reader: a property test over every importer's
own files (the project's fixtures, written by the real libraries or their writers).

k places of a file are damaged in a way a reader can see (junk inserted or written over
a byte of a text or JSON file: NULs, bytes that are not UTF-8, control bytes; a flipped
byte in a checksummed binary file). Then:

- no traceback (only a typed SpikelensError, whose one line names the file), no hang
  (hypothesis runs each example in well under a second), nothing written anywhere but
  the temp folder the damaged copy sits in (the folder's other files are unchanged);
- the points lost are at most the points of the records the damage touches: a line of
  a CSV, JSON-lines or MLflow metric file, an entry of `log_history`, a TFRecord record,
  for a `.wandb` file the records from the damaged chunk to the end of its 32 KiB block
  (LevelDB's framing cannot resynchronise inside a block);
- any loss is counted in a warning that names the file.

Records and their points are found by the test's own reading of each format (lines,
JSON, TFRecord framing with `event_pb2`, LevelDB chunks with spikelens' clean cuts as
the per-record oracle), never by the importer under test.
"""
from __future__ import annotations

import hashlib
import re
import struct
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzz_cases import BLOCK, W_HEADER, fuzz_settings, load, place, unit_of, wandb_chunks

SETTINGS = settings(fuzz_settings(0.5), derandomize=True)  # seeded: the same examples every run
_NUMBER = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", re.I)
JUNK = [b"\x00", b"\x00" * 64, b"\xff", b"\xe9", b"\xc3", b"\x1b", b"\x01\x02\x03", b"\xfe\xff\x00"]
"""Damage a reader of text can see (a digit turned into another digit is another number,
which no reader can tell from the truth; a whole terminal code such as `ESC[2J` is
styling a console capture holds, dropped by design)."""


@dataclass(frozen=True)
class Record:
    start: int
    end: int
    points: int
    """At least the points this record holds (numbers in its text, or exact)."""
    joint: int = 0
    """Where the bytes it shares with the next record start (its newline, the `},` that
    closes an entry): damage there touches both."""


# ------------------------------------------------------------------ records, by the test's own reading


def lines(raw: bytes, skip_header: bool) -> list[Record]:
    """One record a line (its newline included); a CSV header is not damaged (it names
    every column: its damage is a different file)."""
    out, pos = [], 0
    for ln in raw.splitlines(keepends=True):
        body = len(ln.rstrip(b"\r\n"))
        out.append(Record(pos, pos + len(ln), len(_NUMBER.findall(ln)), pos + body))
        pos += len(ln)
    return out[1:] if skip_header else out


def log_history(raw: bytes) -> list[Record]:
    """The entries of trainer_state.json's log_history (HF writes it with indent=2: an
    entry is `    {` ... `    }`)."""
    out, start, pos = [], None, 0
    for ln in raw.splitlines(keepends=True):
        if ln.rstrip() == b"    {":
            start = pos
        elif start is not None and ln.strip() in (b"}", b"},"):
            end = pos + len(ln)
            out.append(Record(start, end, len(_NUMBER.findall(raw[start:end])), pos))
            start = None
        pos += len(ln)
    return out


def tf_records(raw: bytes) -> list[Record]:
    from tensorboard.compat.proto.event_pb2 import Event

    out, pos = [], 0
    while pos + 16 <= len(raw):
        (length,) = struct.unpack_from("<Q", raw, pos)
        end = pos + 12 + length + 4
        ev = Event()
        ev.ParseFromString(raw[pos + 12:end - 4])
        out.append(Record(pos, end, sum(v.WhichOneof("value") is not None for v in ev.summary.value), end))
        pos = end
    return out


def wandb_records(raw: bytes) -> list[Record]:
    """A record a chunk; its points (`wandb_points`) are those of the records from it to
    the end of its block (a damaged chunk costs what follows it in the block)."""
    return [Record(start, end, int(kind in (1, 4)), end)  # points: 1 where a record ends here
            for start, end, kind in wandb_chunks(raw)]


def wandb_points(rel: Path, rec: Record, recs: tuple[Record, ...]) -> int:
    """Points of the records from the one `rec` belongs to up to the end of its block, from
    clean cuts of the file (a cut after a whole record is what a killed run leaves)."""
    ends = [r.end for r in recs if r.points]
    block_end = (rec.start // BLOCK + 1) * BLOCK
    before = max([W_HEADER] + [e for e in ends if e <= rec.start])
    after = min([e for e in ends if e >= block_end] or [ends[-1]])
    return _points_before(rel, after) - _points_before(rel, before)


# ------------------------------------------------------------------ the formats


@dataclass(frozen=True)
class Format:
    name: str
    files: tuple[str, ...]
    records: str
    binary: bool = False


FORMATS = [
    Format("tensorboard", ("tensorboard/simple", "tensorboard/restart", "example/gpt-small"), "tf"),
    Format("wandb", ("wandb/runs/wandb/offline-run-20240501_090000-fxbase01/run-fxbase01.wandb",), "wandb", True),
    Format("hf", ("hf/run_clean/trainer_state.json",), "log_history"),
    Format("mlflow", ("mlflow/mlruns/192909879989629222/3f1c2a9be4d54c7a8f0e6b1d2c3a4b5c/metrics/train/loss",
                      "mlflow/mlruns/192909879989629222/3f1c2a9be4d54c7a8f0e6b1d2c3a4b5c/metrics/grad_norm"), "lines"),
    Format("ultralytics", ("trainers/ultralytics_v8/train/results.csv", "trainers/ultralytics_v5/exp/results.csv"),
           "csv"),
    Format("sb3", ("trainers/sb3/PPO_1/progress.csv",), "csv"),
    Format("timm", ("trainers/timm/20240101-120000-resnet50-224/summary.csv",), "csv"),
    Format("mmengine", ("trainers/mmengine/20240101_120000/vis_data/scalars.json",), "lines"),
]


def _file(spec: str) -> Path:
    """A fixture path, or the first event file under a fixture folder."""
    p = FIXTURES / spec
    if p.is_dir():
        p = sorted(x for x in p.rglob("*tfevents*") if x.is_file())[0]
    return p.relative_to(FIXTURES)


def _values(frame) -> Counter:
    """(metric, value) of every point: a damaged line may move a point's step."""
    if frame is None or frame.height == 0:
        return Counter()
    return Counter(zip(frame["metric"].cast(str).to_list(),
                       ("nan" if v != v else v for v in frame["value"].to_list())))


def _load_copy(rel: Path, data: bytes | None) -> tuple[object, Path, str, dict[str, str]]:
    """Load a copy of `rel` (its case folder beside it), `data` written over it; returns
    (outcome, the copy, the temp root, hashes of every other file after the load)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy, root = place(Path(tmp), rel)
        if data is not None:
            copy.write_bytes(data)
        before = _tree(Path(tmp))
        started = time.monotonic()
        out = load(unit_of(copy, root))
        assert time.monotonic() - started < 20, "the load hung on a damaged file"
        after = _tree(Path(tmp))
        assert after == before, "the load wrote into the input's folder"
        return out, copy, tmp, after


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@lru_cache(maxsize=None)
def intact(rel: Path) -> Counter:
    out, *_ = _load_copy(rel, None)
    assert out.error is None and out.frame.height > 0, (rel, out.error)
    return _values(out.frame)


@lru_cache(maxsize=None)
def _points_before(rel: Path, end: int) -> int:
    out, *_ = _load_copy(rel, (FIXTURES / rel).read_bytes()[:end])
    return 0 if out.error is not None or out.frame is None else out.frame.height


@lru_cache(maxsize=None)
def records_of(rel: Path, kind: str) -> tuple[Record, ...]:
    raw = (FIXTURES / rel).read_bytes()
    if kind == "tf":
        return tuple(tf_records(raw))
    if kind == "wandb":
        return tuple(wandb_records(raw))
    if kind == "log_history":
        return tuple(log_history(raw))
    return tuple(lines(raw, skip_header=kind == "csv"))


def records_bound(rel: Path, kind: str, i: int) -> int:
    """Points record i may hold: its numbers, scaled for a CSV whose reader derives metrics
    from its columns (Ultralytics' `train/loss`, the sum of its three loss terms)."""
    recs = records_of(rel, kind)
    if kind == "wandb":
        return wandb_points(rel, recs[i], recs)
    if kind != "csv":
        return recs[i].points
    numbers = sum(r.points for r in recs)
    return -(-recs[i].points * max(sum(intact(rel).values()), numbers) // numbers)


def test_every_format_has_records_with_points():
    for fmt in FORMATS:
        for spec in fmt.files:
            rel = _file(spec)
            recs = records_of(rel, fmt.records)
            assert len(recs) >= 5 and sum(r.points for r in recs) > 0, rel
            assert sum(intact(rel).values()) > 0


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
@SETTINGS
@given(data=st.data())
def test_damage_loses_at_most_the_records_it_touches_and_says_so(fmt, data):
    rel = _file(data.draw(st.sampled_from(fmt.files), label="file"))
    raw = (FIXTURES / rel).read_bytes()
    recs = records_of(rel, fmt.records)
    k = data.draw(st.integers(1, 3), label="k")
    hit = sorted(set(data.draw(st.lists(st.sampled_from(range(len(recs))), min_size=k, max_size=k), label="records")))
    edits = []  # (offset, bytes removed, bytes put there)
    for i in hit:
        r = recs[i]
        at = data.draw(st.integers(r.start, r.end - 1), label="byte")
        if fmt.records in ("tf", "wandb"):  # a checksummed binary record: flip a byte
            edits.append((at, 1, bytes([raw[at] ^ data.draw(st.integers(1, 255), label="xor")])))
        else:
            junk = data.draw(st.sampled_from(JUNK), label="junk")
            edits.append((at, data.draw(st.sampled_from([0, 1]), label="over"), junk))
    damaged = bytearray(raw)
    for at, removed, put in reversed(edits):
        damaged[at:at + removed] = put
    # damage where one record meets the next touches both (two lines may join)
    touched = set(hit) | {i + 1 for i, (at, _, _) in zip(hit, edits) if at >= recs[i].joint and i + 1 < len(recs)}
    bound = sum(records_bound(rel, fmt.records, i) for i in touched)
    out, copy, tmp, _ = _load_copy(rel, bytes(damaged))
    if out.error is not None:  # refused: one line naming the file, and only when nothing was left to read
        msg = str(out.error)
        assert "\n" not in msg and tmp in msg, msg
        assert sum(intact(rel).values()) <= bound, f"the whole file was refused for damage in {len(touched)} record(s)"
        return
    lost = intact(rel) - _values(out.frame)
    assert sum(lost.values()) <= bound, (sorted(touched), bound, lost.most_common(5))
    if lost:
        assert any(copy.name in w for w in out.warnings), (sum(lost.values()), out.warnings)


def run_main(*args: str) -> tuple[int, str, str]:
    """`spikelens ARGS` in this process: (exit code, stdout, stderr); any other exception
    escapes (a user would have seen a traceback)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from spikelens.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()


@settings(fuzz_settings(0.15), derandomize=True)
@given(data=st.data())
def test_the_cli_on_a_damaged_file_writes_only_its_outputs(data):
    """`spikelens analyze` with a findings dataset and an HTML report on a damaged copy:
    exit 0, 1 or 2 with no traceback, and the only files that appear are its outputs,
    outside the logs (nothing beside the input, no temporary file left)."""
    fmt = data.draw(st.sampled_from(FORMATS), label="format")
    rel = _file(data.draw(st.sampled_from(fmt.files), label="file"))
    raw = bytearray((FIXTURES / rel).read_bytes())
    recs = records_of(rel, fmt.records)
    r = recs[data.draw(st.integers(0, len(recs) - 1), label="record")]
    at = data.draw(st.integers(r.start, r.end - 1), label="byte")
    raw[at] ^= data.draw(st.integers(1, 255), label="xor")
    with tempfile.TemporaryDirectory() as tmp:
        copy, root = place(Path(tmp) / "logs", rel)
        copy.write_bytes(bytes(raw))
        before = _tree(Path(tmp))
        out = Path(tmp) / "out"
        code, _, err = run_main("analyze", str(unit_of(copy, root)), "--format", "json", "-q", "--no-charts",
                                "--html", str(out / "report.html"), "--findings", str(out / "fleet"))
        assert code in (0, 1, 2), (code, err)
        after = _tree(Path(tmp))
        new = {p for p in after if p not in before}
        assert {p for p in before if after.get(p) != before[p]} == set(), "an input changed"
        assert all(p.startswith("out/") for p in new), sorted(new)
        assert not [p for p in new if "tmp" in Path(p).name.lower()], sorted(new)
        if code != 2:
            assert "out/report.html" in new and any(p.startswith("out/fleet/") for p in new), sorted(new)
