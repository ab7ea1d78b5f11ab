"""CRC-32C checks of TFRecord framing: one at a time, in bulk, or in XOR-folded groups.

TFRecord stores `masked_crc32c(x) = rotr15(crc32c(x)) + 0xA282EAD8` after the 8 length
bytes and after the data. `length_crcs_ok` checks many 8-byte headers at once with a
table-driven CRC in NumPy (the resync scan tests every byte offset), `each_ok` one C
call per record (the `crc32c` extension), `fold_ok` groups of equal-length records
with one call per group (see there), and `span_ok` a whole walk of consecutive records
with one call (its verdict is for the span, not per record).
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


_C_CRC32C = None


def _crc32c():
    """The `crc32c` package's C function. Loaded from its extension module alone: the
    package's `__init__` also imports its command line (argparse, gettext) and reads its
    own version from the installed metadata (importlib.metadata), ~0.03-0.05 s of CPU at
    every start of a process that reads an event file. The package is imported as usual
    if that fails."""
    global _C_CRC32C
    if _C_CRC32C is None:
        _C_CRC32C = _extension_crc32c() or __import__("crc32c").crc32c
    return _C_CRC32C


def _extension_crc32c():
    import importlib.machinery
    import importlib.util
    import sys

    if "crc32c._crc32c" in sys.modules:
        return sys.modules["crc32c._crc32c"].crc32c
    try:
        spec = importlib.util.find_spec("crc32c")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                ext = importlib.util.spec_from_file_location("crc32c._crc32c", f"{folder}/_crc32c{suffix}")
                if ext is None or ext.loader is None:
                    continue
                try:
                    module = importlib.util.module_from_spec(ext)
                    ext.loader.exec_module(module)
                except (ImportError, OSError):
                    continue
                sys.modules["crc32c._crc32c"] = module  # the package, if imported later, uses this one
                return module.crc32c
    except (ImportError, ValueError, AttributeError):
        return None
    return None


def masked_crc32c(data: bytes) -> int:
    """Masked CRC-32C of one buffer (the `crc32c` package does the CRC)."""
    c = _crc32c()(data)
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
    if starts.size == 0:
        return np.zeros(0, dtype=bool)
    pieces = map(buf.__getitem__, map(slice, starts.tolist(), (starts + lengths).tolist()))  # C-level loop
    return np.fromiter(map(_crc32c(), pieces), dtype=np.uint32, count=starts.size) == stored


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
    crc32c = _crc32c()
    k, length = rows.shape
    ok = np.ones(k, dtype=bool)
    if k == 0:
        return ok
    zero = np.uint32(crc32c(bytes(length)))

    def failing(folded: np.ndarray, want: np.ndarray, counts: np.ndarray) -> np.ndarray:
        want = np.where(counts % 2 == 0, want ^ zero, want)
        got = np.fromiter(map(crc32c, map(bytes, folded)), dtype=np.uint32, count=folded.shape[0])
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
        ok[i] = crc32c(bytes(rows[i])) == stored[i]
    return ok


# ------------------------------------------------------------------ a whole span in one call
#
# CRC-32C's register update is linear over GF(2): after the bytes m from state s the register
# is Z_|m|(s) ^ R(0, m), where Z_n (n zero bytes) is a 32x32 bit matrix. So the register over
# a span of records follows from each record's own claimed CRCs: `span_ok` checks the whole
# span with one C call over its bytes and compares it with what the stored CRCs predict.

_BITS = ((np.arange(256, dtype=np.uint32)[:, None] >> np.arange(8, dtype=np.uint32)) & np.uint32(1)).astype(bool)
_POWERS: list[np.ndarray] = []
"""Columns (the images of the 32 unit vectors) of Z_(2**j), j = 0, 1, ..."""
_SHIFTS: dict[int, np.ndarray] = {}
"""Byte tables (4 x 256, flat) of Z_n for the span sizes met so far (bounded)."""
_MAX_SHIFTS = 512
"""(4 KB each)"""
_MAX_DISTINCT = 16
"""More distinct piece sizes than this (or than a 16th of the pairs) on one level of the
combination: each costs a table, so the span is left to `fold_ok`."""


def _tables(cols: np.ndarray) -> np.ndarray:
    """Byte tables of the matrix with these columns: entry [b*256 + v] is its image of v << 8b."""
    out = np.empty(1024, dtype=np.uint32)
    for b in range(4):
        out[b * 256:(b + 1) * 256] = np.bitwise_xor.reduce(np.where(_BITS, cols[8 * b:8 * b + 8], np.uint32(0)), axis=1)
    return out


def _apply(tab: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The matrix of the byte tables `tab` (1024 entries) applied to every uint32 in x."""
    return (tab.take(x & np.uint32(0xFF)) ^ tab.take(((x >> np.uint32(8)) & np.uint32(0xFF)) + np.uint32(256))
            ^ tab.take(((x >> np.uint32(16)) & np.uint32(0xFF)) + np.uint32(512))
            ^ tab.take((x >> np.uint32(24)) + np.uint32(768)))


def _power(j: int) -> np.ndarray:
    if not _POWERS:
        unit = np.uint32(1) << np.arange(32, dtype=np.uint32)
        _POWERS.append(_TABLE[unit & np.uint32(0xFF)] ^ (unit >> np.uint32(8)))  # one zero byte
    while len(_POWERS) <= j:
        last = _POWERS[-1]
        _POWERS.append(_apply(_tables(last), last))  # Z_2m = Z_m Z_m
    return _POWERS[j]


_POWER_TABLES: list[np.ndarray] = []


def _power_tables(j: int) -> np.ndarray:
    while len(_POWER_TABLES) <= j:
        _POWER_TABLES.append(_tables(_power(len(_POWER_TABLES))))
    return _POWER_TABLES[j]


def _shift(n: int) -> np.ndarray:
    """Byte tables of Z_n (the register after n zero bytes)."""
    tab = _SHIFTS.get(n)
    if tab is None:
        tab = _tables(_shift_bits(n, np.uint32(1) << np.arange(32, dtype=np.uint32)))
        if len(_SHIFTS) >= _MAX_SHIFTS:
            _SHIFTS.clear()
        _SHIFTS[n] = tab
    return tab


def _shift_bits(n: int, x: np.ndarray) -> np.ndarray:
    """Z_n applied to x a power of two at a time (for a few values: no table to build)."""
    j = 0
    while n >> j:
        if (n >> j) & 1:
            x = _apply(_power_tables(j), x)
        j += 1
    return x


def _shifted(n: int, x: np.ndarray) -> np.ndarray:
    """Z_n applied to every uint32 in x."""
    if n in _SHIFTS or x.size > 4:
        return _apply(_shift(n), x)
    return np.array([_shift_int(n, int(v)) for v in x.tolist()], dtype=np.uint32)


_POWER_LISTS: list[list[int]] = []


def _shift_int(n: int, x: int) -> int:
    """Z_n applied to one register, in Python ints (a power of two at a time)."""
    j = 0
    while n >> j:
        if (n >> j) & 1:
            while len(_POWER_LISTS) <= j:
                _POWER_LISTS.append(_power_tables(len(_POWER_LISTS)).tolist())
            t = _POWER_LISTS[j]
            x = t[x & 0xFF] ^ t[256 + ((x >> 8) & 0xFF)] ^ t[512 + ((x >> 16) & 0xFF)] ^ t[768 + (x >> 24)]
        j += 1
    return x


def _rounds(state: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The registers after feeding each row's bytes (a uint8 matrix) from `state`."""
    for j in range(rows.shape[1]):
        state = _TABLE[(state ^ rows[:, j]) & np.uint32(0xFF)] ^ (state >> np.uint32(8))
    return state


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of x (non-negative ints) and each element's index into them
    (uint32), by counting where their range is small (no sort)."""
    lo, hi = int(x.min()), int(x.max())
    if hi - lo > 1 << 16:
        sizes, inverse = np.unique(x, return_inverse=True)
        return sizes, inverse.ravel().astype(np.uint32)
    offset = x - lo
    present = np.bincount(offset, minlength=hi - lo + 1) > 0
    rank = np.cumsum(present, dtype=np.uint32) - np.uint32(1)
    return np.flatnonzero(present) + lo, rank[offset]


def _combine(value: np.ndarray, size: np.ndarray) -> int | None:
    """R(0, p_1 ... p_k) from R(0, p_i) and the sizes of consecutive pieces, pairwise
    (log2 k levels); None when a level has too many distinct sizes to be worth it."""
    while value.size > 1:
        m = value.size // 2
        right = size[1:2 * m:2]
        merged = _merge(value[0:2 * m:2], right, value[1:2 * m:2])
        if merged is None:
            return None
        joined = size[0:2 * m:2] + right
        if value.size % 2:
            merged = np.append(merged, value[-1])
            joined = np.append(joined, size[-1])
        value, size = merged, joined
    return int(value[0]) if value.size else 0


def _merge(left: np.ndarray, right: np.ndarray, after: np.ndarray) -> np.ndarray | None:
    """Z_right(left) ^ after, element-wise, where `right` holds the sizes of the right pieces."""
    m = left.size
    odd = np.flatnonzero(right != right[0])
    if odd.size <= 16:  # the common case above the first levels: one size, a few others
        merged = _shifted(int(right[0]), left) ^ after
        for i in odd.tolist():
            n = int(right[i])
            merged[i] = (_apply(_SHIFTS[n], left[i:i + 1])[0] if n in _SHIFTS
                         else _shift_int(n, int(left[i]))) ^ after[i]
        return merged
    sizes, which = _distinct(right)
    if sizes.size > max(_MAX_DISTINCT, m // 16):  # a table each would cost more than they save
        if m > 64:
            return None
        return np.array([_shift_int(n, a) ^ b for n, a, b in zip(right.tolist(), left.tolist(), after.tolist())],
                        dtype=np.uint32)
    tabs = np.concatenate([_shift(int(n)) for n in sizes.tolist()])
    base = which * np.uint32(1024)
    return (tabs.take(base + (left & np.uint32(0xFF)))
            ^ tabs.take(base + ((left >> np.uint32(8)) & np.uint32(0xFF)) + np.uint32(256))
            ^ tabs.take(base + ((left >> np.uint32(16)) & np.uint32(0xFF)) + np.uint32(512))
            ^ tabs.take(base + (left >> np.uint32(24)) + np.uint32(768))
            ^ after)


def span_ok(buf: bytes, u8: np.ndarray, headers: np.ndarray, lengths: np.ndarray) -> bool | None:
    """Do all these consecutive records (header offsets, data lengths; each record right
    after the one before) hold both their CRCs? One C call over the span's bytes against
    what the stored CRCs predict for it: a span passes when every length and every data
    block matches its stored CRC; damage anywhere changes the span's CRC, except with odds
    of 2**-32. False does not say which record failed (`fold_ok` does); None: not checked
    (too irregular a layout for the combination to pay).

    The span is cut into pieces `length`, then `data | data CRC | next length | its
    CRC` for each record (the last ends with its data CRC). A block whose CRC is c holds
    R(0, block) = ~c ^ Z_|block|(~0), and feeding the 4 bytes w of a stored CRC to a
    register s gives Z_4(s ^ w): so each piece's register follows from the stored CRCs
    alone, and the pieces' registers combine as R(0, a b) = Z_|b| R(0, a) ^ R(0, b).
    """
    k = headers.size
    if k == 0:
        return True
    len_word = byte_rows(u8, headers + 8, 4).view("<u4").ravel()
    data_word = byte_rows(u8, headers + 12 + lengths, 4).view("<u4").ravel()
    distinct, which = _distinct(lengths)
    zeros = np.array([_shift_int(int(n), 0xFFFFFFFF) for n in distinct.tolist()], dtype=np.uint32)
    # registers before the 4 stored bytes are fed, xor-ed with them: R(0, x | crc) = Z_4(that)
    head = ~unmask(len_word) ^ np.uint32(_shift_int(8, 0xFFFFFFFF)) ^ len_word
    body = ~unmask(data_word) ^ zeros[which] ^ data_word
    value = np.empty(k + 1, dtype=np.uint32)
    value[0] = _shift_int(4, int(head[0]))
    value[1:k] = _apply(_shift(16), body[:-1]) ^ _apply(_shift(4), head[1:])
    value[k] = _shift_int(4, int(body[-1]))
    size = np.empty(k + 1, dtype=np.int64)
    size[0] = 12
    size[1:k] = lengths[:-1] + 16
    size[k] = lengths[-1] + 4
    combined = _combine(value, size)
    if combined is None:
        return None
    first, end = int(headers[0]), int(headers[-1] + 16 + lengths[-1])
    expected = _shift_int(end - first, 0xFFFFFFFF) ^ combined ^ 0xFFFFFFFF
    return _crc32c()(memoryview(buf)[first:end]) == expected
