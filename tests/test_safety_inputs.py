"""Damaged text keeps every readable line: a byte-order mark, UTF-16 (PowerShell's `>`),
NULs anywhere (the zero-filled tail a crash leaves, a hole in the first 4 KiB), a line
longer than the sniff window, a Latin-1 byte in a JSON-lines file, garbage appended to a
Keras or Lightning CSV. Each is read, and each loss is counted in one warning naming the
file (`spikelens.importers.decoding`).

The logs are the project's own fixtures (fixtures/writers: Megatron-like and llm.c-like
text, a Keras `CSVLogger` file, a Lightning `CSVLogger` folder, detectron2 JSON lines),
copied and damaged here.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from spikelens import api, diagnostics

MEGATRON = FIXTURES / "text" / "megatron" / "megatron_lm.log"
LLMC = FIXTURES / "text" / "llmc_main" / "main.log"
KERAS = FIXTURES / "csv" / "keras" / "training.log"
DETECTRON = FIXTURES / "jsonl" / "detectron2" / "metrics.json"


def read(path: Path) -> tuple[int, list[str]]:
    """(points read, warning lines)."""
    with diagnostics.collecting() as diag:
        frame = api.load(path)
    return frame.height, diag.lines


def damaged_copy(tmp_path: Path, src: Path, change) -> Path:
    out = tmp_path / src.parent.name / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(change(src.read_bytes()))
    return out


@pytest.mark.parametrize("src", [MEGATRON, LLMC], ids=["megatron", "llmc"])
@pytest.mark.parametrize("encode", [
    pytest.param(lambda b: b"\xef\xbb\xbf" + b, id="utf8-bom"),
    pytest.param(lambda b: b.decode().encode("utf-16"), id="utf16-le-bom"),
    pytest.param(lambda b: b"\xfe\xff" + b.decode().encode("utf-16-be"), id="utf16-be-bom"),
    pytest.param(lambda b: b.decode().encode("utf-16-le"), id="utf16-le-no-bom"),
])
def test_an_encoded_text_log_reads_every_point(tmp_path, src, encode):
    """A UTF-8 BOM glued to line 1 used to hide its step (llm.c 1514 -> 1513 points);
    UTF-16 was refused as binary."""
    base, _ = read(src)
    got, warnings = read(damaged_copy(tmp_path, src, encode))
    assert got == base
    assert warnings == []  # an encoding is no damage


def test_a_nul_tail_keeps_every_line_before_it_and_says_so(tmp_path):
    """What a crash leaves: the file's last blocks filled with zeros."""
    raw = LLMC.read_bytes()
    cut = raw.rindex(b"\n", 0, 3000) + 1
    before, _ = read(damaged_copy(tmp_path / "a", LLMC, lambda b: b[:cut]))
    assert before > 0
    got, warnings = read(damaged_copy(tmp_path / "b", LLMC, lambda b: b[:cut] + b"\x00" * 4000))
    assert got == before
    assert any("main.log" in w and "4000 NUL byte(s)" in w and f"byte {cut}" in w for w in warnings), warnings


def test_nul_bytes_in_the_first_4k_cost_only_the_line_they_sit_in(tmp_path):
    raw = LLMC.read_bytes()
    lines = raw.splitlines(keepends=True)
    at = len(b"".join(lines[:5])) + 3  # inside line 6
    base, _ = read(LLMC)
    got, warnings = read(damaged_copy(tmp_path, LLMC, lambda b: b[:at] + b"\x00" * 100 + b[at:]))
    per_line = max(ln.count(b"=") + ln.count(b":") for ln in lines[:10])
    assert base - per_line <= got <= base
    assert any("100 NUL byte(s)" in w for w in warnings), warnings


@pytest.mark.parametrize("size, where", [(200_000, "start"), (3 << 20, "middle")])
def test_a_line_longer_than_the_sniff_window_is_skipped_not_the_file(tmp_path, size, where):
    raw = LLMC.read_bytes()
    at = 0 if where == "start" else raw.index(b"\n", len(raw) // 2) + 1
    long_line = b"x" * size + b"\n"
    base, _ = read(LLMC)
    got, _ = read(damaged_copy(tmp_path, LLMC, lambda b: b[:at] + long_line + b[at:]))
    assert got == base


@pytest.mark.parametrize("where", [b'"data_time"', b'"lr": 0.0003'])
def test_a_latin1_byte_on_line_1_of_json_lines(tmp_path, where):
    base, _ = read(DETECTRON)
    latin = where[:2] + b"\xe9" + where[2:]
    got, warnings = read(damaged_copy(tmp_path, DETECTRON, lambda b: b.replace(where, latin, 1)))
    assert got >= base - 1
    bad = [w for w in warnings if "not UTF-8" in w]
    assert len(bad) == 1 and "metrics.json" in bad[0] and "1 byte(s)" in bad[0], warnings  # once, counted


def _garbage(seed: int, n: int = 1024) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_garbage_after_a_keras_csv_keeps_every_row(tmp_path, seed):
    """1 KB of random bytes after the text made the whole (small) file look binary."""
    base, _ = read(KERAS)
    got, warnings = read(damaged_copy(tmp_path, KERAS, lambda b: b + _garbage(seed)))
    assert got >= base
    assert any("training.log" in w and ("byte(s)" in w or "line(s)" in w) for w in warnings), warnings


def test_garbage_after_a_lightning_csv_keeps_every_row(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(FIXTURES / "csv" / "lightning" / "exp", exp)
    base, _ = read(exp)
    last = exp / "version_1" / "metrics.csv"
    last.write_bytes(last.read_bytes() + _garbage(7))
    got, warnings = read(exp)
    assert got >= base
    assert any("version_1/metrics.csv" in w for w in warnings), warnings
    assert not any("binary" in w for w in warnings), warnings


def test_binary_files_stay_binary():
    """The looser test still refuses what is not text (event files, SQLite, random bytes)."""
    from spikelens.importers.decoding import looks_binary

    events = next((FIXTURES / "tensorboard").rglob("events.out.tfevents.*")).read_bytes()[:4096]
    assert looks_binary(events)
    assert looks_binary(b"SQLite format 3\x00\x10\x00\x01\x01\x00\x40\x20\x20" + bytes(range(64)) * 8)
    assert looks_binary(_garbage(3, 4096))
    assert not looks_binary(b"step 1 | loss 2.5\n" * 3 + _garbage(3, 2000))
    assert not looks_binary(b"step 1 | loss 2.5\n" + b"\x00" * 4000)


# ------------------------------------------------------------------ TensorBoard: a bad length whose CRC holds


def _summary_writer_file(folder: Path, steps: int = 200) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder))
    for s in range(steps):
        w.add_scalar("train/loss", 3.0 - s * 0.01, s)
    w.close()
    return next(folder.glob("events.out.tfevents.*"))


def _record_headers(raw: bytes) -> list[int]:
    import struct

    out, pos = [], 0
    while pos + 12 <= len(raw):
        out.append(pos)
        pos += 12 + struct.unpack_from("<Q", raw, pos)[0] + 4
    return out


@pytest.mark.parametrize("length", [1 << 40, None])
def test_a_tb_record_with_a_huge_checksummed_length_costs_only_itself(tmp_path, length):
    """A length past the end of the file whose length CRC is right (damage that kept the
    checksum, or a writer bug) used to end the read there: the rest of the file was lost
    as a 'truncated last record'."""
    import struct

    from spikelens.importers.crc import masked_crc32c

    f = _summary_writer_file(tmp_path / "run")
    raw = f.read_bytes()
    base, _ = read(f)
    assert base == 200
    headers = _record_headers(raw)
    at = headers[len(headers) // 2]
    huge = length if length is not None else len(raw)  # just past the end of the file
    header = struct.pack("<Q", huge)
    f.write_bytes(raw[:at] + header + struct.pack("<I", masked_crc32c(header)) + raw[at + 12:])
    got, warnings = read(f)
    assert got == base - 1  # the one record whose length was damaged
    assert any("runs past the end of the file" in w and f.name in w for w in warnings), warnings


def _with_length(raw: bytes, at: int, length: int) -> bytes:
    """`raw` with the record header at `at` rewritten to `length`, its length CRC made valid."""
    import struct

    from spikelens.importers.crc import masked_crc32c

    header = struct.pack("<Q", length)
    return raw[:at] + header + struct.pack("<I", masked_crc32c(header)) + raw[at + 12:]


@pytest.mark.parametrize("shift", ["onto a later record", "into a later record", "shorter", "zero"])
def test_a_tb_record_with_a_wrong_checksummed_length_inside_the_file_costs_only_itself(tmp_path, shift):
    """A length whose checksum holds but which is wrong while still fitting in the file
    used to be followed: the data CRC failed, the record was skipped, and every record
    its wrong length jumped over was lost with it (all of them, silently, when it landed
    on a later record's header). The reader now scans from inside the bad record."""
    import struct

    f = _summary_writer_file(tmp_path / "run")
    raw = f.read_bytes()
    headers = _record_headers(raw)
    k = len(headers) // 3
    at, size = headers[k], headers[k + 1] - headers[k]
    true_length = struct.unpack_from("<Q", raw, at)[0]
    length = {"onto a later record": true_length + 7 * size, "into a later record": true_length + 7 * size + 5,
              "shorter": true_length - 3, "zero": 0}[shift]
    f.write_bytes(_with_length(raw, at, length))
    got, warnings = read(f)
    assert got == 199  # only the damaged record (one point) is lost
    (w,) = [w for w in warnings if f.name in w]
    assert "1 record(s) with a bad data checksum skipped" in w and "at least 1 record(s) lost" in w, w
    assert f"{size} bytes passed over" in w, w


def test_tb_records_with_wrong_lengths_through_the_block_reader(tmp_path):
    """Several such records, read in small blocks: the same records as one buffer."""
    import struct

    from spikelens.importers import tfrecord

    f = _summary_writer_file(tmp_path / "run")
    raw = f.read_bytes()
    headers = _record_headers(raw)
    for k, extra in ((20, 3), (60, 1), (61, 0), (150, 40)):
        size = headers[k + 1] - headers[k]
        raw = _with_length(raw, headers[k], struct.unpack_from("<Q", raw, headers[k])[0] + extra * size + 1)
    whole = tfrecord.scan(raw)
    # 60 and 61 are next to each other: one scan passes over both (one place, 'at least 1 record')
    assert len(whole) == len(headers) - 4 and whole.damage.corrupt_records == 3
    for block_size, block_records in ((97, 7), (1000, 3), (1 << 20, 1 << 15)):
        part = tfrecord.scan(raw, block_size=block_size, block_records=block_records)
        assert part.starts.tolist() == whole.starts.tolist() and part.damage == whole.damage


def test_a_tb_file_cut_by_a_crash_is_still_a_truncated_tail(tmp_path):
    f = _summary_writer_file(tmp_path / "run")
    raw = f.read_bytes()
    headers = _record_headers(raw)
    f.write_bytes(raw[:headers[-1] + 20])
    got, warnings = read(f)
    assert got == 199
    assert any("truncated last record" in w for w in warnings), warnings


# ------------------------------------------------------------------ property: k damaged bytes cost their records

from collections import Counter  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz_cases import EXAMPLES, load as load_outcome, place, unit_of  # noqa: E402

_NUMBER = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", re.I)
DAMAGE_FILES = [
    Path("text/llmc_main/main.log"), Path("text/megatron/megatron_lm.log"), Path("text/nanogpt/train.log"),
    Path("csv/generic/metrics.csv"), Path("csv/keras/training.log"), Path("csv/lightning/exp/version_0/metrics.csv"),
    Path("jsonl/detectron2/metrics.json"), Path("jsonl/custom/metrics.jsonl"),
]
DAMAGE_FILES = [p for p in DAMAGE_FILES if (FIXTURES / p).is_file()] + sorted(
    p.relative_to(FIXTURES) for p in (FIXTURES / "text" / "deepspeed").glob("*.log"))[:1]
JUNK = st.sampled_from([b"\x00", b"\x00" * 64, b"\xff", b"\xe9", b"\xc3", b"\x1b[2J", b"\x01\x02\x03", b"\xfe\xff\x00"])
"""Damage a reader can see: NULs, bytes that are not UTF-8, control bytes (a flip of one
digit into another is another number, which no reader can tell from the truth)."""


def _values(frame) -> Counter:
    """(metric, value) of every point: steps may move (a context line takes the next step line's step)."""
    if frame is None or frame.height == 0:
        return Counter()
    return Counter(zip(frame["metric"].cast(str).to_list(),
                       ("nan" if v != v else v for v in frame["value"].to_list())))


def _lines_at(data: bytes, positions: list[int]) -> set[int]:
    return {data.count(b"\n", 0, p) for p in positions}


@settings(max_examples=max(4, EXAMPLES // 2), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_k_damaged_bytes_cost_at_most_the_records_they_touch_and_are_reported(data):
    rel = data.draw(st.sampled_from(DAMAGE_FILES), label="file")
    raw = (FIXTURES / rel).read_bytes()
    lines = raw.split(b"\n")
    first_body = len(lines[0]) + 1  # the header (CSV) or first line decides the format: damage after it
    k = data.draw(st.integers(1, 6), label="k")
    cuts = sorted(data.draw(st.lists(st.integers(first_body, len(raw) - 1), min_size=k, max_size=k), label="at"))
    junks = [data.draw(JUNK, label="junk") for _ in cuts]
    damaged, shift = bytearray(raw), 0
    for at, junk in zip(cuts, junks):
        damaged[at + shift:at + shift] = junk
        shift += len(junk)
    with tempfile.TemporaryDirectory() as tmp:
        base_copy, root = place(Path(tmp) / "a", rel)
        intact = load_outcome(unit_of(base_copy, root))
        copy, root = place(Path(tmp) / "b", rel)
        copy.write_bytes(bytes(damaged))
        got = load_outcome(unit_of(copy, root))
    assert intact.error is None
    assert got.error is None, got.error  # partial damage never refuses the file
    lost = _values(intact.frame) - _values(got.frame)
    touched = _lines_at(raw, cuts)
    bound = sum(len(_NUMBER.findall(lines[i])) for i in touched)
    assert sum(lost.values()) <= bound, (sorted(touched), lost)
    if lost:  # every point lost is reported in a warning naming the file
        assert any(rel.name in w for w in got.warnings), (lost, got.warnings)


@pytest.mark.parametrize("encode", [
    pytest.param(lambda b: b.decode().encode("utf-16"), id="utf16"),
    pytest.param(lambda b: b"\xef\xbb\xbf" + b + b"\x00" * 3000, id="bom-and-nul-tail"),
])
def test_a_console_log_of_no_known_framework_decodes_as_well(tmp_path, encode):
    """The general line reader's sniff sees the file as the reader does (decoding)."""
    lines = [f"2024-05-01 12:00:{i % 60:02d} | INFO | train | step={i * 10} loss={3 - i * 0.01:.4f} lr=0.001"
             for i in range(1, 80)]
    plain = tmp_path / "a" / "console.log"
    plain.parent.mkdir()
    plain.write_text("\n".join(lines) + "\n")
    base, _ = read(plain)
    assert base > 0
    got, _ = read(damaged_copy(tmp_path / "b", plain, encode))
    assert got == base


def test_control_bytes_glued_to_a_line_cost_no_record_and_are_counted(tmp_path):
    """A flipped byte that became a C0 control at the front of a log line (0x01-0x1f but tab,
    newlines, form feed, ESC) used to hide the line's record silently; it is dropped and counted."""
    lines = [f"step {s:5d}/100 | train loss {5 - s * 0.01:.6f} | norm 1.0000 | lr 6.00e-04 | (100.00 ms | "
             f"50000 tok/s)" for s in range(1, 101)]
    clean = tmp_path / "clean" / "main.log"
    damaged = tmp_path / "damaged" / "main.log"
    for path in (clean, damaged):
        path.parent.mkdir()
    clean.write_text("\n".join(lines) + "\n")
    bad = list(lines)
    bad[40] = "\x01\x02" + bad[40]
    bad[70] = bad[70][:20] + "\x7f" + bad[70][20:]
    damaged.write_text("\n".join(bad) + "\n")
    with diagnostics.collecting() as diag:
        got = api.load(damaged)
    want = api.load(clean)
    assert got.height == want.height
    assert any("3 control byte(s) dropped" in w and "main.log" in w for w in diag.lines), diag.lines
