"""TFRecord framing of TensorBoard event files: find the records, check them, survive damage.

Each record is `uint64 length | uint32 masked_crc32c(length bytes) | data | uint32
masked_crc32c(data)`, little-endian, no file header (formats README §1.1). The file is
read once, front to back, a block at a time (`RecordStream`): memory holds one block
and the record that crosses its end, never the whole file. A record's position depends
on the previous length, so the walk is serial, but event files repeat one layout, so
`walk` predicts runs of records from the repeating lengths and confirms them in bulk.
CRCs are checked a walk at a time with one C call over the walk's bytes, against what
the stored CRCs predict for them (`crc.span_ok`; CRC-32C is linear); a walk that fails
is checked in XOR-folded groups (`crc.fold_ok`: every record sits in two groups that
share no other record), record by record only where a group fails.

Damage policy (formats README §1.5; TensorBoard's own loader silently stops at the
first bad record): a record that does not validate is skipped by scanning forward,
from the byte after its header, to the next offset where both the length CRC and the
data CRC hold (resync), and the bytes passed over are counted:

- length CRC mismatch: nothing after it can be trusted;
- data CRC mismatch: the length's own checksum held, but the length may still be
  wrong (damage that kept the checksum, a writer bug): following it could jump over
  good records, so the scan starts inside the record. In the common case (a damaged
  payload) no record hides in its bytes and the next record is where the length said:
  the bulk walk keeps everything after it (`_record_hidden_in`);
- a length that runs past the end of the file while valid records follow its header:
  likewise (a file whose last record is cut by a crash or a live writer keeps no
  record after it: a truncated tail, where the read stops).

CRC checks are on by default. `verify=False` skips them;
`SPIKELENS_NO_VERIFY=1` in the environment or `tfrecord.VERIFY = False` turns them
off for every read that does not say otherwise (the CLI's `--no-verify`).
"""
from __future__ import annotations

import io
import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import numpy as np

from .crc import byte_rows, each_ok, fold_ok, length_crcs_ok, masked_crc32c, plain_crcs, span_ok, stored_crcs

HEADER = 12
"""uint64 length + uint32 masked CRC of the length."""
FOOTER = 4
"""uint32 masked CRC of the data."""
_RESYNC_WINDOW = 1 << 16

VERIFY: bool | None = None
"""Process-wide default for CRC checks; None means 'ask SPIKELENS_NO_VERIFY'."""


def verify_default() -> bool:
    """Whether reads check CRCs when the caller does not say (module setting, then env)."""
    if VERIFY is not None:
        return bool(VERIFY)
    return os.environ.get("SPIKELENS_NO_VERIFY", "").strip().lower() not in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Run:
    """`k` repeats of one cycle of `period` records found by `walk`: record j of repeat t
    is `headers[first + t * period + j]` at `headers[first + j] + t * stride`."""

    first: int
    k: int
    period: int
    stride: int


_CHECK_CHUNK = 1 << 13
"""Records gathered per folded check (bounds the gather matrices' memory)."""
_STRIDED_PERIOD = 16
"""Cycles up to this many records have their length fields checked per position."""


def check_records(buf: bytes, u8: np.ndarray, headers: np.ndarray, lengths: np.ndarray,
                  runs: list[Run]) -> tuple[np.ndarray, np.ndarray]:
    """Length-CRC and data-CRC verdicts for every walked record: all good when the walk's
    bytes pass as one span (`crc.span_ok`, the common case); else checked in XOR-folded
    groups (`crc.fold_ok`), which name the records that fail. In a run of the walk, each cycle position is a strided view
    of the buffer (no copy): its length fields are checked that way when the cycle is
    short, its data when no other position has its length. Everything else is gathered
    8 bytes at a time and checked together, per length (a step that logs a hundred tags
    of one name length is a few such calls, not a hundred)."""
    n = headers.size
    ok_len = np.ones(n, dtype=bool)
    ok_data = np.ones(n, dtype=bool)
    if span_ok(buf, u8, headers, lengths):
        return ok_len, ok_data
    len_done = np.zeros(n, dtype=bool)
    data_done = np.zeros(n, dtype=bool)
    starts = headers + HEADER
    strided = np.lib.stride_tricks.as_strided
    for run in runs:
        cycle = lengths[run.first:run.first + run.period].tolist()
        shared = Counter(cycle)
        for j, length in enumerate(cycle):
            i = run.first + j
            pick = slice(i, i + run.k * run.period, run.period)
            if run.period <= _STRIDED_PERIOD:
                head = strided(u8[int(headers[i]):], shape=(run.k, HEADER), strides=(run.stride, 1), writeable=False)
                ok_len[pick] = fold_ok(head[:, :8], plain_crcs(head[:, 8:]))
                len_done[pick] = True
            if shared[length] == 1:
                body = strided(u8[int(starts[i]):], shape=(run.k, length + FOOTER), strides=(run.stride, 1),
                               writeable=False)
                ok_data[pick] = fold_ok(body[:, :length], plain_crcs(body[:, length:]))
                data_done[pick] = True
    rest = np.flatnonzero(~len_done)
    for lo in range(0, rest.size, _CHECK_CHUNK):  # chunks bound the gather matrices' memory
        part = rest[lo:lo + _CHECK_CHUNK]
        h = headers[part]
        ok_len[part] = fold_ok(byte_rows(u8, h, 8), stored_crcs(u8, h + 8))
    rest = np.flatnonzero(~data_done)
    rest_lengths = lengths[rest]
    stored = stored_crcs(u8, starts[rest] + rest_lengths)
    words_end = starts[rest] + (-(-rest_lengths // 8)) * 8  # gather_rows reads whole words
    for length in np.unique(rest_lengths).tolist():
        sel = np.flatnonzero(rest_lengths == length)
        fits = words_end[sel] <= len(buf)  # else the last words would reach past the buffer
        alone, sel = sel[~fits], sel[fits]
        if length == 0 or sel.size < 4:
            alone, sel = np.concatenate([alone, sel]), sel[:0]
        if alone.size:
            ok_data[rest[alone]] = each_ok(buf, starts[rest[alone]], rest_lengths[alone], stored[alone])
        for lo in range(0, sel.size, _CHECK_CHUNK):
            part = sel[lo:lo + _CHECK_CHUNK]
            ok_data[rest[part]] = fold_ok(gather_rows(buf, starts[rest[part]], length), stored[part])
    return ok_len, ok_data


def gather_rows(buf: bytes, starts: np.ndarray, length: int) -> np.ndarray:
    """`buf[s:s+length]` for every start, as rows of a uint8 matrix, read 8 bytes at a time
    from eight offset views of the buffer (an index per word, not per byte)."""
    width = -(-length // 8)
    out = np.empty((starts.size, width), dtype=np.uint64)
    cols = np.arange(width, dtype=np.int64)
    phase = starts % 8
    for r in np.unique(phase).tolist():
        view = np.frombuffer(buf, dtype="<u8", count=(len(buf) - r) // 8, offset=r)
        rows = np.flatnonzero(phase == r)
        # fancy indexing, not `take`: `take` is slow on unaligned views. The caller keeps
        # the records whose last word would reach past the buffer out of here.
        out[rows] = view[((starts[rows] - r) // 8)[:, None] + cols]
    return out.view(np.uint8).reshape(starts.size, width * 8)[:, :length]


@dataclass
class Damage:
    """What could not be read from one file, for a one-line warning."""

    corrupt_records: int = 0
    """Records whose data CRC failed: each is skipped by a scan from the byte after its
    header to the next valid record (the records around it are kept)."""
    resyncs: int = 0
    """Places where a length CRC failed and the reader scanned forward to the next record."""
    skipped_bytes: int = 0
    """Bytes passed over by all those scans (the damaged records' own bytes included)."""
    truncated_bytes: int = 0
    """Bytes of an incomplete last record (ignored)."""
    overlong: int = 0
    """Records whose length (its checksum right) runs past the end of the file while valid
    records follow: the reader went on from the next one (their bytes in `skipped_bytes`)."""

    @property
    def any(self) -> bool:
        return bool(self.corrupt_records or self.resyncs or self.truncated_bytes or self.overlong)

    @property
    def lost_records(self) -> int:
        """Records lost to the scans, at least: one a place (a damaged region with a bad
        length checksum may have held more than one record; its bytes are counted)."""
        return self.corrupt_records + self.resyncs + self.overlong

    def describe(self) -> str:
        parts = []
        if self.corrupt_records:
            parts.append(f"{self.corrupt_records} record(s) with a bad data checksum skipped")
        if self.resyncs:
            parts.append(f"{self.resyncs} damaged region(s) with a bad length checksum skipped")
        if self.overlong:
            parts.append(f"{self.overlong} record(s) whose length runs past the end of the file skipped")
        if self.lost_records:
            parts.append(f"{self.skipped_bytes} bytes passed over to the next valid record "
                         f"(at least {self.lost_records} record(s) lost)")
        if self.truncated_bytes:
            parts.append(f"truncated last record ({self.truncated_bytes} bytes) ignored")
        return ", ".join(parts)


@dataclass
class Records:
    """Where the good records of one file are."""

    starts: np.ndarray
    """Offset of each record's data (int64), in file order."""
    lengths: np.ndarray
    """Length of each record's data (int64)."""
    damage: Damage = field(default_factory=Damage)
    looks_like_tfrecord: bool = True
    """False when the file does not start with a valid record and none was found later."""

    def __len__(self) -> int:
        return int(self.starts.size)


def first_record_ok(head: bytes) -> bool:
    """Does this buffer start with a TFRecord header whose length checksum is right
    (and, when the whole first record is there, whose data checksum is right too)?"""
    if len(head) < HEADER:
        return False
    (length,) = struct.unpack_from("<Q", head, 0)
    if masked_crc32c(head[:8]) != struct.unpack_from("<I", head, 8)[0]:
        return False
    end = HEADER + length + FOOTER
    if end <= len(head):
        return masked_crc32c(head[HEADER:HEADER + length]) == struct.unpack_from("<I", head, end - FOOTER)[0]
    return True


# ------------------------------------------------------------------ walking the lengths

_PROBE = 64
"""Records walked one by one before guessing the layout repeats."""
_MAX_PROBE = 4096
"""A probe that finds no repeat doubles, up to this: a step that logs many tags (one
record each) repeats only every few hundred records."""


def _serial(buf: bytes, pos: int, limit: int) -> tuple[list[int], list[int], int]:
    """Follow lengths from `pos` one record at a time; stop at the first record that
    would run past the end of `buf`. Returns header offsets, lengths and where it stopped."""
    unpack = struct.Struct("<Q").unpack_from
    headers: list[int] = []
    lengths: list[int] = []
    n = len(buf)
    last = n - HEADER - FOOTER
    for _ in range(limit):
        if pos > last:
            break
        length = unpack(buf, pos)[0]
        end = pos + length + HEADER + FOOTER
        if end > n:
            break
        headers.append(pos)
        lengths.append(length)
        pos = end
    return headers, lengths, pos


def _period(lengths: list[int]) -> int | None:
    """Smallest p such that the walked lengths repeat with period p (seen at least twice)."""
    n = len(lengths)
    first = lengths[0] if lengths else None
    for p in range(1, n // 2 + 1):
        if lengths[p] == first and lengths[p:] == lengths[:-p]:
            return p
    return None


def _add_run(runs: list[Run], first: int, k: int, period: int, stride: int) -> None:
    """Record k predicted cycles, extending the last run when they continue it."""
    if k == 0:
        return
    last = runs[-1] if runs else None
    if last is not None and (last.period, last.stride) == (period, stride) and last.first + last.k * period == first:
        runs[-1] = Run(first=last.first, k=last.k + k, period=period, stride=stride)
    else:
        runs.append(Run(first=first, k=k, period=period, stride=stride))


def _read_u64(u8: np.ndarray, at: np.ndarray) -> np.ndarray:
    return byte_rows(u8, at, 8).view("<u8").ravel()


def walk(buf: bytes, u8: np.ndarray, pos: int, limit: int) -> tuple[np.ndarray, np.ndarray, int, list[Run]]:
    """Header offsets and data lengths of the records from `pos`, at most `limit`, where
    the walk stopped (the first record that is not wholly inside `buf`), and the runs of
    records it predicted (which `check_records` reads as strided views).

    A record's position depends on the previous length, so the walk is serial; but
    event files repeat one layout (the same tags, one record each, every step), so
    after a short serial probe the next records are *predicted* from the repeating
    lengths and all predictions are checked at once: each predicted header is accepted
    only if every record before it had exactly the predicted length, which is what a
    serial walk would have found. The first wrong guess hands back to the serial walk.
    """
    n = len(buf)
    heads: list[np.ndarray] = []
    lens: list[np.ndarray] = []
    runs: list[Run] = []
    count = 0
    probe = _PROBE
    while count < limit:
        asked = min(probe, limit - count)
        h, ln, stop = _serial(buf, pos, asked)
        heads.append(np.asarray(h, dtype=np.int64))
        lens.append(np.asarray(ln, dtype=np.int64))
        count += len(h)
        pos = stop
        if len(h) < asked or count >= limit:
            break  # the end of the buffer (or of the budget)
        p = _period(ln)
        if p is None:
            probe = min(2 * probe, _MAX_PROBE)
            continue
        cycle = np.asarray(ln[-p:], dtype=np.int64)
        sizes = cycle + HEADER + FOOTER
        stride = int(sizes.sum())
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        left = min((limit - count) // p, (n - pos) // stride)  # whole cycles that fit
        chunk = max(1, _PROBE // p)
        predicted = 0
        while left > 0:  # growing chunks: a guess that fails early costs little
            k = min(chunk, left)
            cand = (pos + np.arange(k, dtype=np.int64)[:, None] * stride + offsets).ravel()
            expected = np.tile(cycle, k)
            wrong = np.flatnonzero(_read_u64(u8, cand) != expected.astype(np.uint64))
            m = int(wrong[0]) if wrong.size else cand.size
            _add_run(runs, count, m // p, p, stride)
            heads.append(cand[:m])
            lens.append(expected[:m])
            count += m
            predicted += m
            if m < cand.size:
                pos = int(cand[m])
                break
            pos += k * stride
            left -= k
            chunk *= 2
        probe = _PROBE if predicted >= probe else min(2 * probe, _MAX_PROBE)
    return np.concatenate(heads), np.concatenate(lens), pos, runs


# ------------------------------------------------------------------ damage


def _resync(buf: bytes, u8: np.ndarray, start: int, file_left: int, stop: int | None = None
            ) -> tuple[int | None, int]:
    """Search `buf` from `start` for an offset where a whole record validates (length
    and data CRC). Returns (offset, _) when found, else (None, keep): the first offset
    that could not be tested with the bytes at hand (a record running past the end of
    the buffer, or too few bytes for a header), from which more data must be read.
    `file_left` is how many bytes of the file follow the buffer (candidates whose record
    would run past the end of the file cannot be records). `stop`: test only offsets
    before it (keep is then `stop` when every one was tested and none validates)."""
    n = len(buf)
    last = n - HEADER - FOOTER if stop is None else min(n - HEADER - FOOTER, stop - 1)
    pos = start
    window = 512  # the next record is usually near: test a few offsets first, then more
    while pos <= last:
        stop = min(pos + window, last + 1)
        window = min(2 * window, _RESYNC_WINDOW)
        cand = np.arange(pos, stop, dtype=np.int64)
        hits = cand[length_crcs_ok(u8, cand)]
        for h in hits.tolist():
            (length,) = struct.unpack_from("<Q", buf, h)
            end = h + HEADER + length + FOOTER
            if end > n:
                if end <= n + file_left:
                    return None, h  # might be a record; its data is not read yet
                continue
            if masked_crc32c(buf[h + HEADER:h + HEADER + length]) == struct.unpack_from("<I", buf, end - FOOTER)[0]:
                return h, h
        pos = stop
    return None, max(start, last + 1)


def _record_hidden_in(buf: bytes, u8: np.ndarray, header: int, end: int, file_left: int) -> bool:
    """Could a valid record start inside the record at `header` (whose data CRC failed;
    it ends at `end` if its length is right)? Yes when one validates there, or one
    there runs past the buffer and cannot be told yet. No is the common case (damaged
    data, a right length): the next record is then the one at `end`."""
    hit, keep = _resync(buf, u8, header + 1, file_left, stop=end)
    return hit is not None or keep < end


def _first_bad(buf: bytes, u8: np.ndarray, headers: np.ndarray, lengths: np.ndarray, ok_len: np.ndarray,
               ok_data: np.ndarray, file_left: int) -> tuple[np.ndarray, int, int]:
    """Which walked records to keep, and where a scan must start. A record whose data CRC
    failed costs only itself (no record hides in its bytes, and the record right after
    it validates: where a scan from inside it would stop); otherwise the records from it
    on are dropped and the stream scans from it. Returns (keep mask, index of the first
    record to scan from or len(headers), bytes of the records skipped alone)."""
    good = ok_len & ok_data
    keep = good.copy()
    cut = int(np.argmin(ok_len)) if not ok_len.all() else headers.size
    skipped = 0
    for i in np.flatnonzero(~ok_data[:cut]).tolist():
        end = int(headers[i] + HEADER + lengths[i] + FOOTER)
        if i + 1 >= headers.size or not good[i + 1] or _record_hidden_in(buf, u8, int(headers[i]), end, file_left):
            cut = i
            break
        skipped += end - int(headers[i])
    keep[cut:] = False
    return keep, cut, skipped


# ------------------------------------------------------------------ reading a file


BLOCK_SIZE = 1 << 21
"""Bytes read at a time: memory holds one block (plus a record longer than that). 2 MB:
each block costs a fixed ~5 ms (the walk's probe, the span check's top levels, one small
frame): 1 MB blocks spent ~0.1 CPU-s more on a 52 MB file, 4 MB ones 2-3 MB more memory."""
BLOCK_RECORDS = 1 << 16
"""Records walked, checked and handed on at a time."""
_AFTER_DAMAGE = 64
"""Records walked after a resync, growing 4x a walk that ends clean: damage drops the rest
of its walk, so a file damaged in thousands of places must not walk (and check) a full
block again after each (5,000 damaged payloads in 100k records: 275 s -> about a second)."""


@dataclass
class Block:
    """Good records of one stretch of the file; offsets are into `buf`."""

    buf: bytes
    starts: np.ndarray
    """Offset of each record's data in `buf` (int64)."""
    lengths: np.ndarray
    offset: int
    """File offset of `buf[0]`."""


class RecordStream:
    """The good records of one event file, a block at a time, read once front to back.

    Iterating yields `Block`s; afterwards `damage`, `records` and
    `looks_like_tfrecord` describe the whole file. Memory holds one block of the file,
    never all of it.
    """

    def __init__(self, fh: BinaryIO, *, size: int | None = None, verify: bool | None = None,
                 block_size: int = BLOCK_SIZE, block_records: int = BLOCK_RECORDS):
        self.fh = fh
        self.size = size
        """Bytes in the file (None: unknown; only bounds how far a damaged length may point)."""
        self.verify = verify_default() if verify is None else verify
        self.block_size = max(1, block_size)
        self.block_records = max(1, block_records)
        self.damage = Damage()
        self.records = 0
        self.looks_like_tfrecord = True

    def __iter__(self) -> Iterator[Block]:
        buf = b""
        base = 0  # file offset of buf[0]
        eof = False

        def refill(keep_from: int, need: int) -> None:
            """Drop buf[:keep_from] and read at least `need` more bytes (or up to EOF)."""
            nonlocal buf, base, eof
            parts = [buf[keep_from:]]
            got = 0
            while not eof and got < max(need, 1):
                chunk = self.fh.read(min(max(self.block_size, need - got), 1 << 26))
                if not chunk:
                    eof = True
                    break
                parts.append(chunk)
                got += len(chunk)
            base += keep_from
            buf = b"".join(parts)

        def left() -> int:
            """Bytes of the file after the buffer (unknown size: as many as may come)."""
            if eof:
                return 0
            return max(self.size - base - len(buf), 0) if self.size is not None else 1 << 62

        refill(0, max(self.block_size, HEADER))  # enough to judge the first header
        self.looks_like_tfrecord = len(buf) < HEADER or first_record_ok(buf[:HEADER])
        pos = 0
        bad_at: int | None = None  # file offset where damage began while resyncing
        # that damage: "length" (its CRC failed), "data" (the data CRC failed), "overlong"
        # (a record running past the end of the file: a cut, or a bad length)
        bad_kind = ""
        limit = self.block_records  # records walked at a time: small again after damage (see _AFTER_DAMAGE)
        while True:
            u8 = np.frombuffer(buf, dtype=np.uint8)
            if bad_at is not None:
                hit, keep = _resync(buf, u8, pos, left())
                if hit is None and not eof:
                    refill(keep, HEADER + FOOTER)
                    pos = 0
                    continue
                if hit is None and bad_kind == "overlong":  # no record after it: the last record was cut
                    self.damage.truncated_bytes = base + len(buf) - bad_at
                    break
                if bad_kind == "overlong":
                    self.damage.overlong += 1
                elif bad_kind == "data":
                    self.damage.corrupt_records += 1
                else:
                    self.damage.resyncs += 1
                if hit is None:
                    self.damage.skipped_bytes += base + len(buf) - bad_at
                    break
                self.damage.skipped_bytes += base + hit - bad_at
                bad_at, pos, bad_kind = None, hit, ""
                limit = min(_AFTER_DAMAGE, self.block_records)
            headers, lengths, stop, runs = walk(buf, u8, pos, limit)
            starts = headers + HEADER
            bad_from: int | None = None
            if self.verify and starts.size:
                ok_len, ok_data = check_records(buf, u8, headers, lengths, runs)
                if not (ok_len.all() and ok_data.all()):
                    keep, cut, skipped = _first_bad(buf, u8, headers, lengths, ok_len, ok_data, left())
                    self.damage.corrupt_records += int((~ok_data[:cut]).sum())
                    self.damage.skipped_bytes += skipped
                    if cut < headers.size:
                        bad_from, bad_kind = int(headers[cut]), "length" if not ok_len[cut] else "data"
                    starts, lengths = starts[keep], lengths[keep]
            if starts.size:
                self.records += int(starts.size)
                yield Block(buf=buf, starts=starts, lengths=lengths, offset=base)
            if bad_from is not None:
                bad_at, pos = base + bad_from, bad_from + 1
                continue
            if headers.size >= limit:
                pos = stop  # only the budget stopped the walk
                limit = min(4 * limit, self.block_records)
                continue
            # the walk stopped at the end of the buffer or at a record that runs past it
            if stop + HEADER <= len(buf):
                if self.verify and not length_crcs_ok(u8, np.array([stop], dtype=np.int64))[0]:
                    bad_at, pos, bad_kind = base + stop, stop + 1, "length"
                    continue
                need = stop + HEADER + int(struct.unpack_from("<Q", buf, stop)[0]) + FOOTER - len(buf)
            else:
                need = HEADER - (len(buf) - stop)  # the header first: its CRC decides
            if need > left() and len(buf) - stop + left() > HEADER + HEADER + FOOTER:
                # the file ends inside this record: cut by a crash, or a damaged length whose
                # checksum holds; records after its header mean the latter: read on from them
                bad_at, pos, bad_kind = base + stop, stop + 1, "overlong"
                continue
            if need > left():  # the file ends inside this record: it was cut
                rest = left() if self.size is not None or eof else self._drain()
                cut = len(buf) - stop + rest
                if cut:
                    self.damage.truncated_bytes = cut
                break
            refill(stop, max(need, self.block_size))
            pos = 0
        if not self.looks_like_tfrecord and self.records:
            self.looks_like_tfrecord = True

    def _drain(self) -> int:
        """Read a stream of unknown size to its end; how many bytes were left."""
        total = 0
        while chunk := self.fh.read(self.block_size):
            total += len(chunk)
        return total


def scan(buf: bytes, *, verify: bool | None = None, block_size: int | None = None,
         block_records: int = BLOCK_RECORDS) -> Records:
    """Locate every good record of an event file held in `buf` (offsets into `buf`)."""
    stream = RecordStream(io.BytesIO(buf), size=len(buf), verify=verify,
                          block_size=block_size or max(len(buf), 1), block_records=block_records)
    starts: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    for block in stream:
        starts.append(block.starts + block.offset)
        lengths.append(block.lengths)
    empty = np.zeros(0, dtype=np.int64)
    return Records(starts=np.concatenate(starts) if starts else empty,
                   lengths=np.concatenate(lengths) if lengths else empty,
                   damage=stream.damage, looks_like_tfrecord=stream.looks_like_tfrecord)
