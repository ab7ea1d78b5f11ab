"""Fuzz the framed, checksummed formats record by record: every record before the
damage is kept, and the damage is counted in a warning naming the file.

The record boundaries come from the test's own reading of the framing (TFRecord:
`uint64 length | crc | data | crc`; W&B `.wandb`: LevelDB-log chunks in 32 KiB blocks),
and TensorBoard's scalars per record from `event_pb2`, not from spikelens.

- TensorBoard: cut inside record k → exactly the points of records 0..k-1, a warning
  when a partial record is left; one byte flipped anywhere in record k (length,
  either checksum, data) → every point of every other record, in order (the reader
  skips a bad record or resyncs after a bad length), and a warning.
- W&B offline: cut anywhere → exactly the history of the complete records before the
  cut, a warning when a partial chunk is left; a byte flipped in a chunk → the history
  of every record that ended before that chunk is kept, and a warning.
"""
from __future__ import annotations

import struct
import tempfile
from functools import lru_cache
from pathlib import Path

import polars as pl
from hypothesis import event, given
from hypothesis import strategies as st
from tensorboard.compat.proto.event_pb2 import Event

from conftest import FIXTURES
from fuzz_cases import BLOCK, CHUNK, W_HEADER, fuzz_settings, load, per_metric, wandb_chunks

SETTINGS = fuzz_settings()
COLUMNS = ["step", "wall_time", "metric", "value"]


# ------------------------------------------------------------------ TensorBoard


def tf_records(buf: bytes) -> list[tuple[int, int]]:
    """(start, end) of every whole record, header and footer included."""
    out, pos = [], 0
    while pos + 16 <= len(buf):
        (length,) = struct.unpack_from("<Q", buf, pos)
        end = pos + 12 + length + 4
        if end > len(buf):
            break
        out.append((pos, end))
        pos = end
    return out


def simple_values(buf: bytes, start: int, end: int) -> int:
    ev = Event()
    ev.ParseFromString(buf[start + 12:end - 4])
    return sum(v.WhichOneof("value") == "simple_value" for v in ev.summary.value)


def intact_event_files() -> list[Path]:
    """Undamaged event files whose scalars are all `simple_value` (per-record counts are exact)."""
    out = []
    for p in sorted(FIXTURES.rglob("*tfevents*")):
        buf = p.read_bytes()
        recs = tf_records(buf)
        if "damaged" in p.parts or not recs or recs[-1][1] != len(buf):
            continue
        if any(v.WhichOneof("value") == "tensor" for s, e in recs for v in _event(buf, s, e).summary.value
               if v.metadata.plugin_data.plugin_name == "scalars"):
            continue
        out.append(p)
    return out


def _event(buf: bytes, s: int, e: int) -> Event:
    ev = Event()
    ev.ParseFromString(buf[s + 12:e - 4])
    return ev


EVENT_FILES = intact_event_files()


@lru_cache(maxsize=None)
def tb_reference(path: Path) -> tuple[pl.DataFrame, tuple[int, ...]]:
    """The undamaged file's points, and the number of scalar points in each record."""
    buf = path.read_bytes()
    counts = tuple(simple_values(buf, s, e) for s, e in tf_records(buf))
    with tempfile.TemporaryDirectory() as tmp:
        out = load(_write(Path(tmp), path, buf))
    # a launch file that logged no scalar, read alone, is named as giving nothing (check fails on it)
    said = [w for w in out.warnings if not (sum(counts) == 0 and w.endswith("nothing was read from it"))]
    assert out.error is None and said == []
    assert out.frame.height == sum(counts)  # spikelens reads what event_pb2 sees
    return out.frame.select(COLUMNS), counts


def _write(tmp: Path, original: Path, data: bytes) -> Path:
    dest = tmp / original.parent.name / original.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return dest


def test_the_tensorboard_corpus_is_not_empty():
    assert len(EVENT_FILES) >= 8 and any("simple" in p.parts for p in EVENT_FILES)


@SETTINGS
@given(data=st.data())
def test_tensorboard_cut_inside_record_k_keeps_records_before_k(data):
    path = data.draw(st.sampled_from(EVENT_FILES), label="file")
    buf = path.read_bytes()
    recs = tf_records(buf)
    k = data.draw(st.sampled_from(range(len(recs))), label="record k")
    start, end = recs[k]
    cut = data.draw(st.integers(start, end - 1), label="cut at")
    ref, counts = tb_reference(path)
    kept = sum(counts[:k])
    with tempfile.TemporaryDirectory() as tmp:
        out = load(_write(Path(tmp), path, buf[:cut]))
    event("clean boundary" if cut == start else "partial record")
    if kept == 0:
        assert out.error is not None or out.frame.height == 0
        return
    assert out.error is None, out.error
    assert out.frame.select(COLUMNS).equals(ref.head(kept), null_equal=True)
    if cut > start:
        assert len(out.warnings) == 1 and path.name in out.warnings[0] and "truncated" in out.warnings[0]
    else:
        assert out.warnings == []


@SETTINGS
@given(data=st.data())
def test_tensorboard_byte_flipped_in_record_k_loses_only_record_k(data):
    path = data.draw(st.sampled_from(EVENT_FILES), label="file")
    buf = bytearray(path.read_bytes())
    recs = tf_records(bytes(buf))
    k = data.draw(st.sampled_from(range(len(recs))), label="record k")
    start, end = recs[k]
    part = data.draw(st.sampled_from(["length", "length crc", "data", "data crc"]), label="part")
    lo, hi = {"length": (start, start + 8), "length crc": (start + 8, start + 12),
              "data": (start + 12, end - 4), "data crc": (end - 4, end)}[part]
    if lo >= hi:  # an empty payload
        lo, hi = start, end
    at = data.draw(st.integers(lo, hi - 1), label="byte")
    buf[at] ^= data.draw(st.integers(1, 255), label="xor mask")
    event(f"flip in {part}")
    ref, counts = tb_reference(path)
    before, lost = sum(counts[:k]), counts[k]
    with tempfile.TemporaryDirectory() as tmp:
        out = load(_write(Path(tmp), path, bytes(buf)))
    expect = pl.concat([ref.head(before), ref.slice(before + lost)])
    if out.error is not None:  # nothing readable left (a header-only file whose one record broke)
        assert expect.height == 0 and path.name in str(out.error), out.error
        return
    assert out.frame.select(COLUMNS).equals(expect, null_equal=True)
    assert len(out.warnings) >= 1 and any(path.name in w and "damaged" in w for w in out.warnings), out.warnings


# ------------------------------------------------------------------ W&B offline

def record_ends(chunks: list[tuple[int, int, int]]) -> list[int]:
    """Where each record ends: its FULL (1) or LAST (4) chunk."""
    return [end for _, end, kind in chunks if kind in (1, 4)]


WANDB_FILES = [p for p in sorted((FIXTURES / "wandb").rglob("*.wandb"))
               if "damaged" not in p.parts and record_ends(wandb_chunks(p.read_bytes()))]


@lru_cache(maxsize=None)
def wandb_prefix(path: Path, end: int) -> dict:
    """History read from the file cut cleanly after a record (what a killed run leaves)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = load(_write(Path(tmp), path, path.read_bytes()[:end]))
    if out.error is not None or out.frame.height == 0:
        return {}
    return per_metric(out.frame)


def test_the_wandb_corpus_is_not_empty():
    assert len(WANDB_FILES) >= 3
    full = WANDB_FILES[0].read_bytes()
    ends = record_ends(wandb_chunks(full))
    assert ends[-1] == len(full)  # the test's framing covers the whole intact file
    assert wandb_prefix(WANDB_FILES[0], ends[-1])  # and spikelens reads it


def _is_padding(buf_len: int, last_end: int, cut: int) -> bool:
    """Is [last_end, cut) only the zero padding at a block's tail?"""
    block_end = (last_end // BLOCK + 1) * BLOCK
    return block_end - last_end < CHUNK and cut <= block_end


@SETTINGS
@given(data=st.data())
def test_wandb_cut_anywhere_keeps_every_complete_record(data):
    path = data.draw(st.sampled_from(WANDB_FILES), label="file")
    buf = path.read_bytes()
    ends = record_ends(wandb_chunks(buf))
    cut = data.draw(st.integers(W_HEADER, len(buf)), label="cut at")
    last = max([W_HEADER] + [e for e in ends if e <= cut])
    with tempfile.TemporaryDirectory() as tmp:
        out = load(_write(Path(tmp), path, buf[:cut]))
    kept = wandb_prefix(path, last)
    got = {} if out.error is not None or out.frame.height == 0 else per_metric(out.frame)
    assert got == kept
    partial = cut > last and not _is_padding(len(buf), last, cut)
    event("partial record" if partial else "clean cut")
    if partial:
        assert any(path.name in w and "truncated" in w for w in out.warnings), out.warnings


@SETTINGS
@given(data=st.data())
def test_wandb_byte_flipped_in_a_chunk_keeps_the_records_before_it(data):
    path = data.draw(st.sampled_from(WANDB_FILES), label="file")
    buf = bytearray(path.read_bytes())
    chunks = wandb_chunks(bytes(buf))
    c_start, c_end, _ = data.draw(st.sampled_from(chunks), label="chunk")
    part = data.draw(st.sampled_from(["crc", "length", "type", "payload"]), label="part")
    lo, hi = {"crc": (c_start, c_start + 4), "length": (c_start + 4, c_start + 6), "type": (c_start + 6, c_start + 7),
              "payload": (c_start + 7, c_end)}[part]
    if lo >= hi:
        lo, hi = c_start, c_end
    at = data.draw(st.integers(lo, hi - 1), label="byte")
    buf[at] ^= data.draw(st.integers(1, 255), label="xor mask")
    event(f"flip in {part}")
    last = max([W_HEADER] + [e for e in record_ends(chunks) if e <= c_start])
    with tempfile.TemporaryDirectory() as tmp:
        out = load(_write(Path(tmp), path, bytes(buf)))
    kept = wandb_prefix(path, last)
    got = {} if out.error is not None or out.frame.height == 0 else per_metric(out.frame)
    for key, points in kept.items():
        assert got.get(key, [])[: len(points)] == points, key
    assert any(path.name in w and "damaged" in w for w in out.warnings), out.warnings
