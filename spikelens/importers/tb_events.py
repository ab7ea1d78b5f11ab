"""Decode the records of one event file into scalar points (tag, step, wall time, value).

Two paths, one result:

- **Bulk path (NumPy, no per-event Python).** Almost every record of a training log is
  one layout: `Event{wall_time, step, summary{value{tag, simple_value}}}` as written by
  PyTorch's `add_scalar`, tensorboardX, Lightning, Megatron and TF1. Its wire bytes are
  checked and decoded for all records at once with array gathers (varints included).
  A record that deviates by one byte from that exact layout is not guessed at: it goes
  to the second path.
- **upb path.** Everything else is parsed with `tensorboard.compat.proto.event_pb2`
  into one reused `Event`: tensor scalars (`float_val`, `double_val`, `tensor_content`
  as `<f`/`<d`, also half and integer dtypes) counted only when the tag's plugin is
  `scalars` and the shape is [] (the plugin is remembered per tag, since TF1 strips
  metadata after a tag's first value), multi-value summaries, `SessionLog` START steps
  (kept for the stitcher), and records with no scalar at all (file version, graphs,
  histograms, images, text), which are skipped.

Points come out in file order (record, then value inside the record). NaN and ±inf
are kept. Tests check the bulk path against upb on the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .base import TABLE_SCHEMA
from .protowire import WireError, varint
from .tfrecord import Records

BULK_CHUNK = 1 << 14
"""Records decoded per NumPy pass (bounds the gather matrices: ~8 bytes per byte of tag)."""
MAX_FAST_TAG = 256
"""Tags longer than this take the upb path (keeps the padded tag matrix small)."""

_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64, _DT_HALF, _DT_BFLOAT16 = 1, 2, 3, 9, 19, 14


@dataclass
class EventScalars:
    """Scalar points of one event file, plus what the stitcher and warnings need."""

    frame: pl.DataFrame
    """`step, wall_time, metric, value` (TABLE_SCHEMA), file order; `value` is Float32 when every
    value of the file is a float32 (`simple_value`, float32 tensors: frame.NARROW), else Float64."""
    purge_steps: list[int] = field(default_factory=list)
    """Steps of SessionLog START events (a writer opened with purge_step)."""
    undecodable: int = 0
    """Records with valid checksums that are not Event protos."""
    events: int = 0


# ------------------------------------------------------------------ bulk path


def _at(u8: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Bytes at `idx`, kept inside the buffer (positions are never negative; rows that
    would overrun are already marked not ok)."""
    return u8.take(idx, mode="clip")


def _varint(u8: np.ndarray, pos: np.ndarray, end: np.ndarray, ok: np.ndarray, max_bytes: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode one varint at `pos` for every row where `ok`; rows that run past `end` or
    past `max_bytes` become not ok. Returns (value as uint64, position after, ok)."""
    value = np.zeros(pos.size, dtype=np.uint64)
    cur = pos.copy()
    pending = ok.copy()  # rows still reading bytes of this varint
    for k in range(max_bytes):
        if not pending.any():
            break
        past = pending & (cur >= end)
        ok = ok & ~past
        pending = pending & ~past
        b = _at(u8, cur)
        value |= np.where(pending, (b & 0x7F).astype(np.uint64) << np.uint64(7 * k), np.uint64(0))
        cur = np.where(pending, cur + 1, cur)
        pending = pending & (b >= 0x80)
    ok = ok & ~pending  # still continuing after max_bytes: not a varint we accept
    return value, cur, ok


def _expect(u8: np.ndarray, pos: np.ndarray, end: np.ndarray, ok: np.ndarray, byte: int) -> np.ndarray:
    return ok & (pos < end) & (_at(u8, pos) == byte)


def _index_type(u8: np.ndarray) -> type:
    return np.int32 if u8.size < 2 ** 31 else np.int64


def _gather(u8: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    index = _index_type(u8)
    return _at(u8, pos.astype(index)[:, None] + np.arange(width, dtype=index))


def bulk_simple_values(u8: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
    """Decode every record that is exactly `Event{wall_time, [step], summary{value{tag,
    simple_value}}}`. Returns (ok mask, step, wall_time, value, tag_start, tag_len), the
    arrays restricted to ok rows; `value` is the float32 the record holds."""
    end = starts + lengths
    ok = (lengths >= 9 + 2 + 2 + 2 + 5) & (_at(u8, starts) == 0x09)  # field 1, fixed64
    wall = np.ascontiguousarray(_gather(u8, starts + 1, 8)).view("<f8").ravel()
    p = starts + 9
    has_step = _expect(u8, p, end, ok, 0x10)  # field 2, varint
    step, after_step, step_ok = _varint(u8, p + 1, end, has_step, 10)
    ok &= ~has_step | step_ok
    p = np.where(has_step, after_step, p)
    ok = _expect(u8, p, end, ok, 0x2A)  # field 5 (summary), length-delimited
    slen, p, ok = _varint(u8, p + 1, end, ok, 5)
    ok &= p + slen.astype(np.int64) == end
    ok = _expect(u8, p, end, ok, 0x0A)  # Summary.value (one)
    vlen, p, ok = _varint(u8, p + 1, end, ok, 5)
    ok &= p + vlen.astype(np.int64) == end
    ok = _expect(u8, p, end, ok, 0x0A)  # Value.tag
    tlen, p, ok = _varint(u8, p + 1, end, ok, 2)
    tlen = tlen.astype(np.int64)
    ok &= (tlen > 0) & (tlen <= MAX_FAST_TAG)
    tag_start = p
    p = p + tlen
    ok &= p + 5 == end
    ok = _expect(u8, p, end, ok, 0x15)  # Value.simple_value, fixed32
    value = np.ascontiguousarray(_gather(u8, p + 1, 4)).view("<f4").ravel()
    return (ok, step[ok].view(np.int64), wall[ok], value[ok], tag_start[ok], tlen[ok])


def unique_tags(u8: np.ndarray, tag_start: np.ndarray, tag_len: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Distinct tag byte strings and each row's index into them, without a Python loop:
    tags are gathered into a zero-padded matrix, hashed per row as 8-byte words, uniqued
    by hash, and the hash grouping is checked word for word (the words and the length
    determine the tag's bytes exactly; a collision falls back to sorting rows)."""
    if tag_start.size == 0:
        return [], np.zeros(0, dtype=np.int64)
    words = _tag_words(u8, tag_start, tag_len)
    return _group_tags(u8, tag_start, tag_len, words, _tag_hash(tag_len, words))


_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
"""The low k bytes of a little-endian word (k = 0..8)."""


def _tag_words(u8: np.ndarray, tag_start: np.ndarray, tag_len: np.ndarray) -> np.ndarray:
    """Each row's tag as zero-padded little-endian 8-byte words (rows x words)."""
    width = int(-(-int(tag_len.max()) // 8) * 8)
    index = _index_type(u8)  # int32 where it fits: half the memory of the index matrix
    idx = tag_start.astype(index)[:, None] + np.arange(width, dtype=index)
    words = np.ascontiguousarray(_at(u8, idx)).view("<u8")
    for j in range(words.shape[1]):  # the bytes past each tag's end (the value's) are zeroed
        words[:, j] &= _BYTE_MASKS.take(np.clip(tag_len - 8 * j, 0, 8))
    return words


_WORD_KEYS = (np.arange(MAX_FAST_TAG // 8, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C16)
              + np.uint64(0x100000001B3)) | np.uint64(1)
"""An odd multiplier per word: a hash of the words that zero padding does not change, so a
tag hashes alike in a block of short tags and in one of long tags (equal hashes are checked)."""


def _tag_hash(tag_len: np.ndarray, words: np.ndarray) -> np.ndarray:
    h = tag_len.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for j in range(words.shape[1]):
        h += words[:, j] * _WORD_KEYS[j]
    return h


class _KnownTags:
    """The tags of one file seen so far, by hash, with their words: a block whose tags are all
    known (almost every block after the first) is coded by a binary search of its hashes and
    a check of its words against the known ones, with no sort. Rows that miss (a new tag, or
    a hash two tags share) go to `unique_tags`' grouping."""

    WORDS = MAX_FAST_TAG // 8

    def __init__(self) -> None:
        self.hashes = np.zeros(0, dtype=np.uint64)  # sorted
        self.codes = np.zeros(0, dtype=np.int64)
        self.lens = np.zeros(0, dtype=np.int64)
        self.words = np.zeros((0, self.WORDS), dtype=np.uint64)

    def codes_of(self, u8: np.ndarray, tag_start: np.ndarray, tag_len: np.ndarray, names: dict[str, int]
                 ) -> np.ndarray:
        if tag_start.size == 0:
            return np.zeros(0, dtype=np.int64)
        words = _tag_words(u8, tag_start, tag_len)
        h = _tag_hash(tag_len, words)
        out = np.empty(tag_start.size, dtype=np.int64)
        miss = np.ones(tag_start.size, dtype=bool)
        if self.hashes.size:
            at = np.minimum(np.searchsorted(self.hashes, h), self.hashes.size - 1)
            miss = ((self.hashes[at] != h) | (self.lens[at] != tag_len)
                    | (self.words[at, :words.shape[1]] != words).any(axis=1))
            out[~miss] = self.codes[at[~miss]]
        if miss.any():
            rows = np.flatnonzero(miss)
            tags, local = _group_tags(u8, tag_start[rows], tag_len[rows], words[rows], h[rows])
            code = np.array([names.setdefault(t.decode("utf-8", errors="replace"), len(names)) for t in tags],
                            dtype=np.int64)
            out[rows] = code[local]
            self._learn(tags, code)
        return out

    def _learn(self, tags: list[bytes], codes: np.ndarray) -> None:
        """Remember new tags (a hash already known for another tag is not: its rows keep missing)."""
        lens = np.array([len(t) for t in tags], dtype=np.int64)
        words = np.zeros((len(tags), self.WORDS), dtype=np.uint64)
        for i, t in enumerate(tags):
            words[i].view(np.uint8)[:len(t)] = np.frombuffer(t, dtype=np.uint8)
        h = _tag_hash(lens, words)
        new = ~np.isin(h, self.hashes)
        if not new.any():
            return
        hashes = np.concatenate([self.hashes, h[new]])
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        self.codes = np.concatenate([self.codes, codes[new]])[order]
        self.lens = np.concatenate([self.lens, lens[new]])[order]
        self.words = np.concatenate([self.words, words[new]])[order]


def _group_tags(u8: np.ndarray, tag_start: np.ndarray, tag_len: np.ndarray,
                words: np.ndarray, h: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not ((words == words[first[inverse]]).all() and (tag_len == tag_len[first[inverse]]).all()):
        rows = np.ascontiguousarray(words).view(f"V{8 * words.shape[1]}").ravel()
        keyed = np.rec.fromarrays([tag_len, rows])
        _, first, inverse = np.unique(keyed, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    starts, lens = tag_start[first].tolist(), tag_len[first].tolist()
    tags = [u8[a:a + b].tobytes() for a, b in zip(starts, lens)]
    return tags, inverse.astype(np.int64)


# ------------------------------------------------------------------ upb path


def _may_hold_scalars(buf: bytes, start: int, length: int) -> bool:
    """False for an Event record that certainly holds no scalar: it starts with
    `wall_time` and its top-level fields, read off the wire, include neither `summary`
    (5) nor `session_log` (7) (the file-version record, graphs, run metadata). Such
    records need no protobuf parse, so a plain scalar file never imports protobuf.
    Anything else, malformed records included, goes to upb, which decides."""
    end = start + length
    if length < 9 or buf[start] != 0x09:
        return True
    pos = start
    while pos < end:
        key, pos = _varint_at(buf, pos, end)
        if key is None:
            return True
        field, wire = key >> 3, key & 7
        if field in (5, 7):
            return True
        if wire == 0:
            value, pos = _varint_at(buf, pos, end)
            if value is None:
                return True
        elif wire == 1:
            pos += 8
        elif wire == 2:
            size, pos = _varint_at(buf, pos, end)
            if size is None:
                return True
            pos += size
        elif wire == 5:
            pos += 4
        else:
            return True
    return pos != end


def _varint_at(buf: bytes, pos: int, end: int) -> tuple[int | None, int]:
    try:
        return varint(buf, pos, end)
    except WireError:
        return None, end


def _tensor_scalar(tensor) -> float | None:
    """The value of a shape-[] tensor of a float or integer dtype, else None."""
    if len(tensor.tensor_shape.dim):
        return None
    dt = tensor.dtype
    content = tensor.tensor_content
    if dt == _DT_FLOAT:
        if tensor.float_val:
            return float(tensor.float_val[0])
        return float(np.frombuffer(content, "<f4")[0]) if len(content) == 4 else None
    if dt == _DT_DOUBLE:
        if tensor.double_val:
            return float(tensor.double_val[0])
        return float(np.frombuffer(content, "<f8")[0]) if len(content) == 8 else None
    if dt in (_DT_HALF, _DT_BFLOAT16):
        if tensor.half_val:
            bits = np.uint16(tensor.half_val[0])
        elif len(content) == 2:
            bits = np.frombuffer(content, "<u2")[0]
        else:
            return None
        if dt == _DT_HALF:
            return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])
        return float(np.array([np.uint32(bits) << np.uint32(16)], dtype=np.uint32).view(np.float32)[0])
    if dt == _DT_INT32:
        if tensor.int_val:
            return float(tensor.int_val[0])
        return float(np.frombuffer(content, "<i4")[0]) if len(content) == 4 else None
    if dt == _DT_INT64:
        if tensor.int64_val:
            return float(tensor.int64_val[0])
        return float(np.frombuffer(content, "<i8")[0]) if len(content) == 8 else None
    return None


@dataclass
class _Collected:
    record: list[int] = field(default_factory=list)
    step: list[int] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    tag: list[str] = field(default_factory=list)
    value: list[float] = field(default_factory=list)


def decode_with_upb(buf: bytes, starts: np.ndarray, lengths: np.ndarray, record_ids: np.ndarray,
                    plugins: dict[str, str], purge_steps: list[int]) -> tuple[_Collected, int]:
    """Parse the given records with event_pb2; returns the scalar points and the number
    of records that are not Event protos. `plugins` (tag → plugin name) is updated."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2

    out = _Collected()
    ev = event_pb2.Event()
    parse = ev.ParseFromString
    which = ev.WhichOneof
    start_status = event_pb2.SessionLog.START
    bad = 0
    for rid, s, n in zip(record_ids.tolist(), starts.tolist(), lengths.tolist()):
        try:
            parse(buf[s:s + n])
        except DecodeError:
            bad += 1
            continue
        what = which("what")
        if what == "summary":
            step, wall = ev.step, ev.wall_time
            for v in ev.summary.value:
                tag = v.tag
                if v.HasField("metadata") and v.metadata.plugin_data.plugin_name and tag not in plugins:
                    plugins[tag] = v.metadata.plugin_data.plugin_name
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    val = v.simple_value
                elif kind == "tensor" and plugins.get(tag) == "scalars":
                    val = _tensor_scalar(v.tensor)
                    if val is None:
                        continue
                else:
                    continue
                out.record.append(rid)
                out.step.append(step)
                out.wall.append(wall)
                out.tag.append(tag)
                out.value.append(val)
        elif what == "session_log" and ev.session_log.status == start_status:
            purge_steps.append(int(ev.step))
    return out, bad


# ------------------------------------------------------------------ one file


def _all_float32(value: np.ndarray) -> bool:
    """Is every value exactly a float32 (upb's simple values and float32 tensors are; a double
    tensor's value may not be)? NaN counts as one (its payload is no number a report shows)."""
    if value.dtype == np.float32:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        back = value.astype(np.float32).astype(np.float64)
    return bool(((back == value) | np.isnan(value)).all())


class EventDecoder:
    """Scalar points of one event file, fed a block of records at a time.

    `plugins` carries the tag → plugin memory across the files of one run (a restart
    file may hold tensor values whose metadata was written in an earlier file).
    `bulk=False` parses everything with upb (the tests compare both). Each block's points
    are written into one array per column, sized from `size_hint` (the file's bytes) after
    the first block and grown when that falls short; `result()` builds the frame on those
    arrays without a copy, one chunk per column (every later `to_numpy` is a view). Pages
    of the estimate that are never written are never resident. Before, each block became
    a small frame and the frames were joined: two copies of the points at the end of a
    read, and 25 chunks a column for a 1M-point file.
    """

    def __init__(self, plugins: dict[str, str] | None = None, *, bulk: bool = True, size_hint: int | None = None):
        self.plugins = {} if plugins is None else plugins
        self.bulk = bulk
        self.size_hint = size_hint
        self.names: dict[str, int] = {}
        """Tag → code, for the whole file (the metric column is built from the codes at the end)."""
        self._tags = _KnownTags()
        self._cols: tuple[np.ndarray, ...] | None = None  # step, wall, value, code
        self._value = np.dtype(np.float32)
        """float32 while every value so far is one (4 bytes a point), float64 from the first that is not."""
        self._n = 0
        self._bytes = 0
        self.purge_steps: list[int] = []
        self.undecodable = 0
        self.events = 0

    def add(self, buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> None:
        """Decode the records at `starts` (data offsets into `buf`), BULK_CHUNK records at a
        time (chunks bound the gather matrices' memory), and append their points."""
        self.events += starts.size
        self._bytes += int(lengths.sum()) + 16 * starts.size  # each record's length, CRCs and data
        parts: list[tuple[np.ndarray, ...]] = []
        for lo in range(0, starts.size, BULK_CHUNK):
            parts.extend(self._decode(buf, starts[lo:lo + BULK_CHUNK], lengths[lo:lo + BULK_CHUNK], lo, self.names))
        if not parts:
            return
        record, step, wall, value, code = (np.concatenate(cols) if len(parts) > 1 else cols[0] for cols in zip(*parts))
        if value.dtype != self._value and not _all_float32(value):
            self._widen()
        if record.size > 1 and (np.diff(record) < 0).any():  # upb's records sit between bulk ones
            order = np.argsort(record, kind="stable")
            step, wall, value, code = step[order], wall[order], value[order], code[order]
        if step.size:
            self._append(step, wall, value, code)

    def _append(self, *block: np.ndarray) -> None:
        n, k = self._n, block[0].size
        if self._cols is None or n + k > self._cols[0].size:
            need = n + k
            if self.size_hint and self._bytes:  # the points a byte so far, over the whole file
                need = max(need, int(need * self.size_hint / self._bytes * 1.05) + 1024)
            cap = max(need, 2 * self._cols[0].size if self._cols is not None else 0)
            dtypes = (np.int64, np.float64, self._value, np.uint32)
            grown = tuple(np.empty(cap, dtype=t) for t in dtypes)
            if self._cols is not None:
                for new, old in zip(grown, self._cols):
                    new[:n] = old[:n]
            self._cols = grown
        for col, part in zip(self._cols, block):
            col[n:n + k] = part
        self._n = n + k

    def _widen(self) -> None:
        """Values from here on need float64: the column read so far becomes float64 (exact)."""
        self._value = np.dtype(np.float64)
        if self._cols is not None:
            step, wall, value, code = self._cols
            self._cols = (step, wall, value.astype(np.float64), code)

    def _decode(self, buf: bytes, starts: np.ndarray, lengths: np.ndarray, first: int,
                names: dict[str, int]) -> list[tuple[np.ndarray, ...]]:
        """(record, step, wall, value, tag code) arrays of some records, bulk then upb;
        `first` numbers the records, `names` collects the tags."""
        u8 = np.frombuffer(buf, dtype=np.uint8)
        parts = []
        if self.bulk:
            ok, step, wall, value, tag_start, tag_len = bulk_simple_values(u8, starts, lengths)
            parts.append((first + np.flatnonzero(ok), step, wall, value,
                          self._tags.codes_of(u8, tag_start, tag_len, names)))
            rest = np.flatnonzero(~ok)
            rest = rest[[_may_hold_scalars(buf, a, b) for a, b in zip(starts[rest].tolist(), lengths[rest].tolist())]]
        else:
            rest = np.arange(starts.size, dtype=np.int64)
        if rest.size:
            slow, bad = decode_with_upb(buf, starts[rest], lengths[rest], first + rest, self.plugins,
                                        self.purge_steps)
            self.undecodable += bad
            parts.append((np.asarray(slow.record, dtype=np.int64), np.asarray(slow.step, dtype=np.int64),
                          np.asarray(slow.wall, dtype=np.float64), np.asarray(slow.value, dtype=np.float64),
                          np.fromiter((names.setdefault(t, len(names)) for t in slow.tag), dtype=np.int64,
                                      count=len(slow.tag))))
        return parts

    def result(self) -> EventScalars:
        if self._cols is None:
            frame = pl.DataFrame(schema=TABLE_SCHEMA)
        else:
            step, wall, value, code = (c[:self._n] for c in self._cols)
            metric = pl.Series("metric", list(self.names), dtype=pl.Categorical).gather(pl.Series(code))
            frame = pl.DataFrame({"step": step, "wall_time": wall, "metric": metric, "value": value},
                                 schema={**TABLE_SCHEMA, "value": pl.Float32 if value.dtype == np.float32 else pl.Float64})
        return EventScalars(frame=frame, purge_steps=self.purge_steps, undecodable=self.undecodable,
                            events=self.events)


def decode_events(buf: bytes, records: Records, plugins: dict[str, str] | None = None, *,
                  bulk: bool = True) -> EventScalars:
    """Scalar points of every record found by `tfrecord.scan` in a whole-file buffer."""
    decoder = EventDecoder(plugins, bulk=bulk)
    decoder.add(buf, records.starts, records.lengths)
    return decoder.result()
