"""The record framing of W&B `.wandb` files: a 7-byte header, then LevelDB-log chunks.

Layout (formats README §2c; wandb's `sdk/internal/datastore.py` up to 0.20 and the Go
`core/pkg/leveldb` since):

- header `":W&B"`, uint16 0xBEE1, uint8 version 0, at the start of block 0;
- 32 KiB blocks; a block tail shorter than a chunk header (7 bytes) is zero padding;
- chunk = uint32 crc, uint16 length, uint8 type (1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST),
  payload; a record longer than a block spans FIRST, MIDDLE..., LAST chunks;
- crc = plain (unmasked) zlib CRC-32 over the type byte and the payload. This is not
  LevelDB's masked CRC-32C, so a LevelDB reader cannot be reused.

Recovery, as LevelDB's own reader does it: a chunk with a bad checksum, an unknown
type or a length that crosses its block drops the record being assembled and the
rest of that block (counted); an incomplete chunk or record at the end of the file
is a truncated tail (a crashed or killed run): reading stops there quietly (counted).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}


@dataclass
class LogDamage:
    """What could not be read from one `.wandb` file."""

    bad_chunks: int = 0
    """Chunks with a bad checksum, type or length (the rest of their block skipped)."""
    skipped_bytes: int = 0
    dropped_records: int = 0
    """Records lost because one of their chunks was bad or missing."""
    truncated_bytes: int = 0
    """Bytes of an incomplete chunk or record at the end of the file."""

    @property
    def any(self) -> bool:
        return bool(self.bad_chunks or self.dropped_records or self.truncated_bytes)

    def describe(self) -> str:
        parts = []
        if self.bad_chunks:
            parts.append(f"{self.bad_chunks} bad chunk(s) ({self.skipped_bytes} bytes) skipped")
        if self.dropped_records:
            parts.append(f"{self.dropped_records} record(s) lost")
        if self.truncated_bytes:
            parts.append(f"truncated at the end ({self.truncated_bytes} bytes of an incomplete record ignored)")
        return ", ".join(parts)


@dataclass
class LogRecords:
    payloads: list[bytes] = field(default_factory=list)
    damage: LogDamage = field(default_factory=LogDamage)
    end: int = 0
    """Offset in the buffer just after the last whole record (where a reader following a
    file being written resumes: `spikelens watch`)."""


def has_header(head: bytes) -> bool:
    return head[: len(HEADER)] == HEADER


def read_records(buf: bytes, start: int | None = None) -> LogRecords:
    """Every intact record payload of a `.wandb` file, in order (header already checked).
    `start`: read from this offset, a record boundary, instead of after the header (`buf`
    must then begin on a block boundary of the file: the tail of a file being written)."""
    out = LogRecords()
    dmg = out.damage
    add = out.payloads.append
    unpack = struct.Struct("<IHB").unpack_from
    crc32 = zlib.crc32
    type_crc = _TYPE_CRC
    n = len(buf)
    pos = len(HEADER) if start is None else start
    out.end = pos
    parts: list[bytes] | None = None  # chunks of a record spanning blocks
    parts_start = 0
    while pos < n:
        block_end = (pos // BLOCK + 1) * BLOCK
        if block_end - pos < CHUNK_HEADER:
            pos = block_end  # zero padding at a block's tail
            continue
        if pos + CHUNK_HEADER > n:
            dmg.truncated_bytes = n - (parts_start if parts is not None else pos)
            parts = None
            break
        crc, length, kind = unpack(buf, pos)
        start = pos + CHUNK_HEADER
        end = start + length
        if kind == 0 and length == 0 and crc == 0:
            # zero-filled space (preallocated, or never written before a crash): skip the block
            if parts is not None:
                dmg.dropped_records += 1
                parts = None
            pos = block_end
            continue
        if end > n and kind in type_crc and end <= block_end:
            dmg.truncated_bytes = n - (parts_start if parts is not None else pos)
            parts = None
            break
        if kind not in type_crc or end > block_end or crc32(buf[start:end], type_crc[kind]) != crc:
            dmg.bad_chunks += 1
            dmg.skipped_bytes += min(block_end, n) - pos
            if parts is not None:
                dmg.dropped_records += 1
                parts = None
            pos = block_end
            continue
        payload = buf[start:end]
        pos = end
        if kind == FULL:
            if parts is not None:
                dmg.dropped_records += 1
                parts = None
            add(payload)
            out.end = pos
        elif kind == FIRST:
            if parts is not None:
                dmg.dropped_records += 1
            parts = [payload]
            parts_start = start - CHUNK_HEADER
        elif kind == MIDDLE:
            if parts is None:
                dmg.dropped_records += 1  # the FIRST chunk was in a skipped block
            else:
                parts.append(payload)
        else:  # LAST
            if parts is None:
                dmg.dropped_records += 1
            else:
                parts.append(payload)
                add(b"".join(parts))
                parts = None
                out.end = pos
    if parts is not None:
        dmg.truncated_bytes = n - parts_start
    return out
