"""CRC-32C checks of TFRecord framing: one at a time, in bulk, or in XOR-folded groups.

TFRecord stores `masked_crc32c(x) = rotr15(crc32c(x)) + 0xA282EAD8` after the 8 length
bytes and after the data. `length_crcs_ok` checks many 8-byte headers at once with a
table-driven CRC in NumPy (the resync scan tests every byte offset), `each_ok` one C
call per record (the `crc32c` extension), and `fold_ok` groups of equal-length records
with one call per group (see there).
"""
from __future__ import annotations

import numpy as np

_MASK_DELTA = 0xA282EAD8


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
    rows = byte_rows(u8, header_at, 12)
    crc = np.full(header_at.size, 0xFFFFFFFF, dtype=np.uint32)
    for j in range(8):
        crc = _TABLE[(crc ^ rows[:, j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    stored = np.ascontiguousarray(rows[:, 8:12]).view("<u4").ravel()
    return mask(crc) == stored


def unmask(masked: np.ndarray) -> np.ndarray:
    """The plain CRC-32C behind TFRecord's masked CRC, element-wise on uint32."""
    r = (masked.astype(np.uint32) - np.uint32(_MASK_DELTA)).astype(np.uint32)
    return ((r << np.uint32(15)) | (r >> np.uint32(17))).astype(np.uint32)


def byte_rows(u8: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """`width` bytes from every offset in `at`, as rows of a contiguous uint8 matrix."""
    return np.ascontiguousarray(u8[at[:, None] + np.arange(width, dtype=np.int64)])


def plain_crcs(stored: np.ndarray) -> np.ndarray:
    """The plain CRC-32Cs behind rows of 4 stored (masked, little-endian) bytes."""
    return unmask(np.ascontiguousarray(stored).view("<u4").ravel())


def stored_crcs(u8: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The plain CRC-32Cs stored (masked) at every offset in `at`."""
    return plain_crcs(byte_rows(u8, at, 4))


_GROUP = 63
"""Records whose CRCs are checked together (see `fold_ok`). Odd: the same damage in
every record of a group does not cancel out."""


def each_ok(buf: bytes, starts: np.ndarray, lengths: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Per record, is crc32c(buf[start:start+length]) the plain CRC `stored`? (one C call each)"""
    import crc32c

    if starts.size == 0:
        return np.zeros(0, dtype=bool)
    pieces = map(buf.__getitem__, map(slice, starts.tolist(), (starts + lengths).tolist()))  # C-level loop
    return np.fromiter(map(crc32c.crc32c, pieces), dtype=np.uint32, count=starts.size) == stored


def fold_ok(rows: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Per row of `rows` (k records of one length, a uint8 view), is its CRC-32C the
    plain CRC `stored`?

    A C call per record costs more than the rest of the read, so records are checked in
    groups. CRC-32C is affine over GF(2): for records d1..dk of one length L,
    crc(d1) ^ ... ^ crc(dk) == crc(d1 ^ ... ^ dk) ^ (crc of L zero bytes if k is even),
    so a group passes with one call when the XOR of its stored CRCs matches the CRC of
    its XOR-ed records. One damaged record always fails its group. Two records damaged
    the same way (the same bit of a repeating layout) would cancel in one group, so
    every record is in two groups, 63 consecutive rows and every 63rd row, and no two
    rows share both; the same damage in every record of an (odd-sized) group does
    not cancel either. What still cancels is identical damage in four records at the
    corners of a 2 x 63 rectangle (rows i, i+1, i+63, i+64), which no real corruption
    looks like; other damage slips through with odds of 2**-32, as with per-record
    checks. A row in any failing group is checked on its own.
    """
    import crc32c

    k, length = rows.shape
    ok = np.ones(k, dtype=bool)
    if k == 0:
        return ok
    zero = np.uint32(crc32c.crc32c(bytes(length)))

    def failing(folded: np.ndarray, want: np.ndarray, counts: np.ndarray) -> np.ndarray:
        want = np.where(counts % 2 == 0, want ^ zero, want)
        got = np.fromiter(map(crc32c.crc32c, map(bytes, folded)), dtype=np.uint32, count=folded.shape[0])
        return np.flatnonzero(got != want)

    heads = np.arange(0, k, _GROUP)
    bad_runs = failing(np.bitwise_xor.reduceat(rows, heads, axis=0), np.bitwise_xor.reduceat(stored, heads),
                       np.diff(np.append(heads, k)))
    full = k // _GROUP * _GROUP
    lanes = min(k, _GROUP)
    folded = np.zeros((lanes, length), dtype=np.uint8)
    want = np.zeros(lanes, dtype=np.uint32)
    if full:
        r0, r1 = rows.strides
        cube = np.lib.stride_tricks.as_strided(rows, shape=(full // _GROUP, _GROUP, length),
                                               strides=(_GROUP * r0, r0, r1), writeable=False)
        folded ^= np.bitwise_xor.reduce(cube, axis=0)
        want ^= np.bitwise_xor.reduce(stored[:full].reshape(-1, _GROUP), axis=0)
    folded[:k - full] ^= rows[full:]
    want[:k - full] ^= stored[full:]
    counts = np.full(lanes, full // _GROUP) + (np.arange(lanes) < k - full)
    bad_lanes = failing(folded, want, counts)
    suspects = np.zeros(k, dtype=bool)
    for g in bad_runs.tolist():
        suspects[g * _GROUP:(g + 1) * _GROUP] = True
    for lane in bad_lanes.tolist():
        suspects[lane::_GROUP] = True
    for i in np.flatnonzero(suspects).tolist():
        ok[i] = crc32c.crc32c(bytes(rows[i])) == stored[i]
    return ok
