"""Protocol-buffer wire format, read field by field without the message classes.

For formats whose `.proto` ships only inside a package that cannot be a dependency
(SwanLab pins a protobuf that TensorBoard and wandb do not accept): the few fields a
reader needs are taken by number. https://protobuf.dev/programming-guides/encoding/
"""
from __future__ import annotations

import struct
from typing import Iterator

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not a protobuf message."""


def varint(buf: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """The varint at `pos` (read no further than `end`) and the position after it."""
    value = shift = 0
    end = len(buf) if end is None else end
    while pos < end and shift < 70:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise WireError("varint runs past the message")


def fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) in order: ints for varints, bytes otherwise."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, pos = varint(buf, pos)
            yield number, wire, value
        elif wire == FIXED64:
            if pos + 8 > end:
                raise WireError("fixed64 field runs past the message")
            yield number, wire, buf[pos:pos + 8]
            pos += 8
        elif wire == LENGTH:
            size, pos = varint(buf, pos)
            if pos + size > end:
                raise WireError("length-delimited field runs past the message")
            yield number, wire, buf[pos:pos + size]
            pos += size
        elif wire == FIXED32:
            if pos + 4 > end:
                raise WireError("fixed32 field runs past the message")
            yield number, wire, buf[pos:pos + 4]
            pos += 4
        else:
            raise WireError(f"wire type {wire} is not used by proto3")


def as_dict(buf: bytes) -> dict[int, int | bytes]:
    """Last value of each field (proto3 semantics for singular fields)."""
    return {number: value for number, _, value in fields(buf)}


def double(raw: int | bytes | None) -> float | None:
    return struct.unpack("<d", raw)[0] if isinstance(raw, bytes) and len(raw) == 8 else None


def signed(raw: int | bytes | None) -> int | None:
    """An int64 varint (two's complement on the wire)."""
    if not isinstance(raw, int):
        return None
    return raw - (1 << 64) if raw >= 1 << 63 else raw


def text(raw: int | bytes | None) -> str | None:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else None


def timestamp(raw: int | bytes | None) -> float | None:
    """A google.protobuf.Timestamp (seconds 1, nanos 2) as Unix seconds."""
    if not isinstance(raw, bytes):
        return None
    ts = as_dict(raw)
    return float(signed(ts.get(1, 0)) or 0) + float(ts.get(2, 0) or 0) / 1e9
