"""`crc.span_ok`: a span of TFRecord records checked with one CRC-32C call, against
records framed by TensorBoard's own RecordWriter."""
from __future__ import annotations

import io

import numpy as np
import pytest
from tensorboard.summary.writer.record_writer import RecordWriter

from spikelens.importers import crc, tfrecord


def _framed(payloads: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    out = io.BytesIO()
    w = RecordWriter(out)
    for p in payloads:
        w.write(p)
    buf = out.getvalue()
    lengths = np.array([len(p) for p in payloads], dtype=np.int64)
    headers = np.concatenate([[0], np.cumsum(lengths + 16)[:-1]]).astype(np.int64)
    return buf, headers, lengths


def _payloads(n: int, seed: int, sizes=(0, 3, 30, 41, 47, 52, 300)) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(int(rng.choice(sizes))) for _ in range(n)]


def _logged(n_steps: int, seed: int) -> list[bytes]:
    """The layout of a training log: the same tags every step (one record each), the step's
    varint one byte longer from step 128 on, an odd record now and then."""
    rng = np.random.default_rng(seed)
    out = [rng.bytes(24)]  # the file_version record
    for step in range(n_steps):
        out += [rng.bytes(n + (step >= 128)) for n in (30, 35, 28, 36)]
        if step % 97 == 5:
            out.append(rng.bytes(int(rng.integers(0, 400))))
    return out


@pytest.fixture(scope="module")
def span():
    return _framed(_logged(400, 0))


def test_a_span_of_good_records_passes_whole_and_in_parts(span):
    buf, headers, lengths = span
    u8 = np.frombuffer(buf, np.uint8)
    for a, b in [(0, headers.size), (0, 1), (7, 8), (3, 700), (699, headers.size)]:
        assert crc.span_ok(buf, u8, headers[a:b], lengths[a:b]) is True
    few = _framed(_payloads(40, 3))  # no layout, but few records: checked one by one at the top levels
    assert crc.span_ok(few[0], np.frombuffer(few[0], np.uint8), few[1], few[2]) is True


def test_any_flipped_bit_fails_the_span(span):
    """Every byte of the first records (lengths, their CRCs, data, data CRCs) and bytes
    anywhere in the span: one flipped bit each, the span fails."""
    buf, headers, lengths = span
    rng = np.random.default_rng(1)
    offsets = list(range(int(headers[2]))) + rng.integers(0, len(buf), 60).tolist()
    for off in offsets:
        damaged = bytearray(buf)
        damaged[off] ^= 1 << int(rng.integers(8))
        damaged = bytes(damaged)
        assert crc.span_ok(damaged, np.frombuffer(damaged, np.uint8), headers, lengths) is False, off


def test_the_same_damage_in_two_records_of_one_length_fails():
    """What cancels in an XOR fold (the same bit of two records of one length) does not
    cancel in a CRC of the span."""
    buf, headers, lengths = _framed([b"x" * 40] * 64)
    damaged = bytearray(buf)
    for i in (5, 6):
        damaged[int(headers[i]) + 12 + 17] ^= 0x04
    damaged = bytes(damaged)
    assert crc.span_ok(damaged, np.frombuffer(damaged, np.uint8), headers, lengths) is False


def test_an_irregular_layout_is_left_to_the_folded_check():
    buf, headers, lengths = _framed(_payloads(1000, 2, sizes=tuple(range(300))))  # no layout repeats
    u8 = np.frombuffer(buf, np.uint8)
    assert crc.span_ok(buf, u8, headers, lengths) is None
    ok_len, ok_data = tfrecord.check_records(buf, u8, headers, lengths, [])
    assert ok_len.all() and ok_data.all()


def test_check_records_still_names_the_damaged_record(span):
    buf, headers, lengths = span
    damaged = bytearray(buf)
    i = int(np.flatnonzero(lengths > 0)[400])
    damaged[int(headers[i]) + 12] ^= 0x80
    damaged = bytes(damaged)
    ok_len, ok_data = tfrecord.check_records(damaged, np.frombuffer(damaged, np.uint8), headers, lengths, [])
    assert ok_len.all()
    assert np.flatnonzero(~ok_data).tolist() == [i]
