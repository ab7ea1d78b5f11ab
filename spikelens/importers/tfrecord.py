"""TFRecord framing of TensorBoard event files: find the records, check them, survive damage.

Each record is `uint64 length | uint32 masked_crc32c(length bytes) | data | uint32
masked_crc32c(data)`, little-endian, no file header (formats README §1.1). The whole
file is read once; one Python loop walks the lengths (a record's position depends on
the previous length, so that walk is serial), and the checks run in bulk afterwards:
the CRC of every length field at once in NumPy, the CRC of every payload through the
`crc32c` C extension.

Damage policy (formats README §1.5; TensorBoard's own loader silently stops at the
first bad record):

- data CRC mismatch: the length was verified, so only that record is skipped;
- length CRC mismatch: nothing after it can be trusted; scan forward to the next
  offset where both the length CRC and the data CRC validate (resync);
- a short tail (a record cut off by a crash or a live writer): stop there.

CRC checks are on by default. `verify=False` skips them (about a third faster);
`SPIKELENS_NO_VERIFY=1` in the environment or `tfrecord.VERIFY = False` turns them
off for every read that does not say otherwise (the CLI's `--no-verify`).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

HEADER = 12
"""uint64 length + uint32 masked CRC of the length."""
FOOTER = 4
"""uint32 masked CRC of the data."""
_MASK_DELTA = 0xA282EAD8
_RESYNC_WINDOW = 1 << 16

VERIFY: bool | None = None
"""Process-wide default for CRC checks; None means 'ask SPIKELENS_NO_VERIFY'."""


def verify_default() -> bool:
    """Whether reads check CRCs when the caller does not say (module setting, then env)."""
    if VERIFY is not None:
        return bool(VERIFY)
    return os.environ.get("SPIKELENS_NO_VERIFY", "").strip().lower() not in ("1", "true", "yes", "on")


def _crc32c_table() -> np.ndarray:
    poly = 0x82F63B78
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ poly, table >> 1).astype(np.uint32)
    return table


_TABLE = _crc32c_table()


def mask(crc: np.ndarray) -> np.ndarray:
    """TFRecord's masked CRC, element-wise on uint32."""
    crc = crc.astype(np.uint32)
    return (((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)).astype(np.uint32)


def masked_crc32c(data: bytes) -> int:
    """Masked CRC-32C of one buffer (the `crc32c` package does the CRC)."""
    import crc32c

    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def length_crcs_ok(u8: np.ndarray, header_at: np.ndarray) -> np.ndarray:
    """For every header offset, does the stored masked CRC match the 8 length bytes?

    Vectorised table-driven CRC-32C: 8 rounds over all records at once.
    """
    if header_at.size == 0:
        return np.zeros(0, dtype=bool)
    rows = u8[header_at[:, None] + np.arange(HEADER, dtype=np.int64)]
    crc = np.full(header_at.size, 0xFFFFFFFF, dtype=np.uint32)
    for j in range(8):
        crc = _TABLE[(crc ^ rows[:, j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    stored = np.ascontiguousarray(rows[:, 8:12]).view("<u4").ravel()
    return mask(crc) == stored


def data_crcs_ok(buf: bytes, u8: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For every record, does the stored masked CRC match its data? (one C call per record)"""
    if starts.size == 0:
        return np.zeros(0, dtype=bool)
    import crc32c

    ends = starts + lengths
    pieces = map(buf.__getitem__, map(slice, starts.tolist(), ends.tolist()))  # C-level loop, no Python frame
    got = np.fromiter(map(crc32c.crc32c, pieces), dtype=np.uint32, count=starts.size)
    stored = np.ascontiguousarray(u8[ends[:, None] + np.arange(FOOTER, dtype=np.int64)]).view("<u4").ravel()
    return mask(got) == stored


@dataclass
class Damage:
    """What could not be read from one file, for a one-line warning."""

    corrupt_records: int = 0
    """Records whose data CRC failed (skipped; the records around them are kept)."""
    resyncs: int = 0
    """Places where a length CRC failed and the reader scanned forward to the next record."""
    skipped_bytes: int = 0
    """Bytes passed over by those scans."""
    truncated_bytes: int = 0
    """Bytes of an incomplete last record (ignored)."""

    @property
    def any(self) -> bool:
        return bool(self.corrupt_records or self.resyncs or self.truncated_bytes)

    def describe(self) -> str:
        parts = []
        if self.corrupt_records:
            parts.append(f"{self.corrupt_records} record(s) with a bad data checksum skipped")
        if self.resyncs:
            parts.append(f"{self.resyncs} damaged region(s) with a bad length checksum "
                         f"({self.skipped_bytes} bytes) skipped")
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


def _walk(buf: bytes, pos: int, limit: int) -> tuple[list[int], int]:
    """Follow lengths from `pos` without checking anything; stop at the first record that
    would run past the end. Returns the header offsets and where it stopped (the lengths
    are gathered afterwards in bulk)."""
    unpack = struct.Struct("<Q").unpack_from
    headers: list[int] = []
    add = headers.append
    n = len(buf)
    last = n - HEADER - FOOTER
    for _ in range(limit):
        if pos > last:
            break
        end = pos + unpack(buf, pos)[0] + HEADER + FOOTER
        if end > n:
            break
        add(pos)
        pos = end
    return headers, pos


def _lengths(u8: np.ndarray, headers: np.ndarray) -> np.ndarray:
    if headers.size == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.ascontiguousarray(u8[headers[:, None] + np.arange(8, dtype=np.int64)])
    return rows.view("<u8").ravel().astype(np.int64)


def _resync(buf: bytes, u8: np.ndarray, start: int) -> int | None:
    """First offset >= start where a whole record validates (length and data CRC)."""
    n = len(buf)
    pos = start
    while pos + HEADER + FOOTER <= n:
        stop = min(pos + _RESYNC_WINDOW, n - HEADER - FOOTER + 1)
        cand = np.arange(pos, stop, dtype=np.int64)
        hits = cand[length_crcs_ok(u8, cand)]
        for h in hits.tolist():
            (length,) = struct.unpack_from("<Q", buf, h)
            end = h + HEADER + length + FOOTER
            if end > n:
                continue
            if masked_crc32c(buf[h + HEADER:h + HEADER + length]) == struct.unpack_from("<I", buf, end - FOOTER)[0]:
                return h
        pos = stop
    return None


def scan(buf: bytes, *, verify: bool | None = None, chunk: int = 1 << 18) -> Records:
    """Locate every good record of an event file held in `buf`."""
    if verify is None:
        verify = verify_default()
    n = len(buf)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    damage = Damage()
    all_starts: list[np.ndarray] = []
    all_lengths: list[np.ndarray] = []
    looks = n < HEADER or first_record_ok(buf[:HEADER])  # a few bytes: a cut file, not another format
    pos = 0
    while pos < n:
        h_list, stop = _walk(buf, pos, chunk)
        headers = np.asarray(h_list, dtype=np.int64)
        starts = headers + HEADER
        lengths = _lengths(u8, headers)
        bad_from: int | None = None
        if verify and starts.size:
            ok_len = length_crcs_ok(u8, starts - HEADER)
            if not ok_len.all():
                first_bad = int(np.argmin(ok_len))
                bad_from = int(starts[first_bad] - HEADER)
                starts, lengths = starts[:first_bad], lengths[:first_bad]
            ok_data = data_crcs_ok(buf, u8, starts, lengths)
            if not ok_data.all():
                damage.corrupt_records += int((~ok_data).sum())
                starts, lengths = starts[ok_data], lengths[ok_data]
        all_starts.append(starts)
        all_lengths.append(lengths)
        if bad_from is None:
            if stop >= n:
                break
            if len(h_list) >= chunk:  # only the chunk limit stopped the walk
                pos = stop
                continue
            # the walk stopped at a record that runs past the end (or a short header)
            header_ok = stop + HEADER <= n and length_crcs_ok(u8, np.array([stop], dtype=np.int64))[0]
            if not verify or stop + HEADER > n or header_ok:
                damage.truncated_bytes = n - stop
                break
            bad_from = stop
        nxt = _resync(buf, u8, bad_from + 1) if verify else None
        if nxt is None:
            damage.resyncs += 1
            damage.skipped_bytes += n - bad_from
            break
        damage.resyncs += 1
        damage.skipped_bytes += nxt - bad_from
        pos = nxt
    starts = np.concatenate(all_starts) if all_starts else np.zeros(0, dtype=np.int64)
    lengths = np.concatenate(all_lengths) if all_lengths else np.zeros(0, dtype=np.int64)
    if not looks and starts.size:
        looks = True
    return Records(starts=starts, lengths=lengths, damage=damage, looks_like_tfrecord=looks)
