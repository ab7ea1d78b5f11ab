"""TensorBoard importer: framing and CRCs, the bulk decoder against upb, scalar layouts,
run/segment grouping, damage recovery, and the README example.

Expected values are recomputed from the fixture writers (`fixtures/writers/tensorboard.py`,
`fixtures/writers/example.py`), never copied from the importer's output.
"""
from __future__ import annotations

import io
import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.record_writer import RecordWriter

from conftest import FIXTURES, load, ls_without_writing, metric, run_cli, tree_hashes
from spikelens import api
from spikelens.errors import FormatError
from spikelens.importers import crc, tb_events, tfrecord
from spikelens.importers.tb_events import decode_events
from spikelens.importers.tensorboard import TensorBoardImporter, child_metric, parse_name
from spikelens.importers.tfrecord import HEADER as HEADER_BYTES

sys.path.insert(0, str(FIXTURES))
from writers import example as E  # noqa: E402
from writers import tensorboard as W  # noqa: E402

TB = FIXTURES / "tensorboard"
EXAMPLE = FIXTURES / "example"


def f32(a) -> list[float]:
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def same_floats(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))


def event_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*tfevents*") if p.is_file())


# ------------------------------------------------------------------ fixtures and names


def test_fixtures_are_what_the_writers_write(tmp_path):
    W.make(tmp_path)
    E.make(tmp_path)
    assert tree_hashes(tmp_path / "tensorboard") == tree_hashes(TB)
    assert tree_hashes(tmp_path / "example") == tree_hashes(EXAMPLE)


@pytest.mark.parametrize("name, want", [
    ("events.out.tfevents.1714550400.gpu-node-1.4242.0", ("", 1714550400, "gpu-node-1", "4242")),
    ("events.out.tfevents.1795347579.vm.18506.0.v2", ("", 1795347579, "vm", "18506")),
    ("events.out.tfevents.1700000000.ip-10.0.0.1.ec2.internal.77.3", ("", 1700000000, "ip-10.0.0.1.ec2.internal", "77")),
    ("events.out.tfevents.1795346504.vm", ("", 1795346504, "vm", None)),
    ("tb_logs__LatentMAE__v0.2__events.out.tfevents.1707341369.bool5.43805.0",
     ("tb_logs__LatentMAE__v0.2", 1707341369, "bool5", "43805")),
])
def test_event_file_names_are_split_into_writer_parts(name, want):
    got = parse_name(name)
    assert (got.prefix, got.timestamp, got.host, got.pid) == want


def test_add_scalars_child_metric_names():
    assert child_metric("loss", "loss_train") == "loss/train"
    assert child_metric("train/loss", "train_loss_val") == "train/loss/val"
    assert child_metric("loss", "other") == "loss/other"


def test_claims_by_name_and_by_content(tmp_path):
    imp = TensorBoardImporter()
    src = event_files(TB / "simple")[0]
    renamed = tmp_path / "renamed.bin"
    shutil.copy(src, renamed)
    assert imp.claims(src, src.read_bytes()[:4096])
    assert imp.claims(renamed, renamed.read_bytes()[:4096])
    csv = TB / "twin" / "csv" / "metrics.csv"
    assert not imp.claims(csv, csv.read_bytes()[:4096])


# ------------------------------------------------------------------ values


def test_simple_values_are_read_exactly_with_nan_and_inf():
    (run,), warnings = load(TB / "simple")
    s = W.simple_series()
    assert warnings == []
    assert set(run.frame["metric"]) == {"train/loss", "train/lr", "train/grad_norm", "eval/loss",
                                        "perf/tokens_per_sec", "perf/mfu"}  # no histogram, no text
    loss = metric(run, "train/loss")
    assert loss["step"].to_list() == s["step"].tolist()
    assert same_floats(loss["value"].to_list(), f32(s["loss"]))
    assert math.isnan(loss["value"][W.NAN_STEP]) and loss["value"][W.INF_STEP] == math.inf
    assert loss["wall_time"].to_list() == (W.T0 + 0.5 * s["step"]).tolist()
    ev = metric(run, "eval/loss")
    assert ev["step"].to_list() == list(range(W.EVAL_EVERY - 1, W.N_SIMPLE, W.EVAL_EVERY))
    mfu = metric(run, "perf/mfu")  # a TF1 merged summary (two values in one event)
    assert mfu["step"].to_list() == list(range(0, W.N_SIMPLE, W.MERGED_EVERY))
    assert mfu.filter(pl.col("step") == W.NEG_INF_STEP)["value"].to_list() == [-math.inf]
    assert metric(run, "perf/tokens_per_sec")["value"].to_list() == f32(s["tokens_per_sec"][::W.MERGED_EVERY])


def test_rows_keep_file_order():
    (run,), _ = load(TB / "simple")
    first = run.frame.head(4)
    assert first["metric"].to_list()[:3] == ["train/loss", "train/lr", "train/grad_norm"]
    assert first["step"].to_list()[:3] == [0, 0, 0]
    assert run.frame["seq"].to_list() == list(range(run.frame.height))


def test_tensor_scalars_only_for_the_scalars_plugin_and_shape_empty():
    (run,), _ = load(TB / "tensor")
    s = W.tensor_series()
    assert set(run.frame["metric"]) == {"train/loss", "train/loss_f64", "train/lr", "eval/acc"}
    steps = s["step"].tolist()
    assert metric(run, "train/loss")["value"].to_list() == f32(s["loss"])  # tensor_content <f
    f64 = metric(run, "train/loss_f64")  # double_val, metadata only on the first value
    assert f64["step"].to_list() == steps and f64["value"].to_list() == s["loss_f64"].tolist()
    assert metric(run, "train/lr")["value"].to_list() == f32(s["lr"])  # float_val
    assert metric(run, "eval/acc")["value"].to_list() == f32(s["acc"])  # scalar_pb


def test_bulk_decoder_agrees_with_upb_on_every_fixture(monkeypatch):
    files = event_files(TB) + event_files(EXAMPLE)
    checked = 0
    for f in files:
        buf = f.read_bytes()
        rec = tfrecord.scan(buf)
        if not rec.looks_like_tfrecord:
            continue
        fast, slow = decode_events(buf, rec), decode_events(buf, rec, bulk=False)
        assert fast.frame.equals(slow.frame), f
        assert fast.purge_steps == slow.purge_steps
        # small blocks of the file and few records per block give the same records
        small = tfrecord.scan(buf, block_size=97, block_records=7)
        assert np.array_equal(small.starts, rec.starts) and small.damage == rec.damage
        monkeypatch.setattr(tb_events, "BULK_CHUNK", 5)
        assert decode_events(buf, small).frame.equals(fast.frame), f
        monkeypatch.undo()
        checked += 1
    assert checked >= 12


def _frame(events: list[Event]) -> bytes:
    out = io.BytesIO()
    w = RecordWriter(out)
    for ev in events:
        w.write(ev.SerializeToString())
    return out.getvalue()


_tags = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
_floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
_steps = st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
_walls = st.one_of(st.just(0.0), st.floats(min_value=0, max_value=4e9))


@st.composite
def _events(draw):
    kind = draw(st.sampled_from(["simple", "simple", "two", "empty", "text"]))
    step, wall = draw(_steps), draw(_walls)
    if kind == "simple":
        return Event(step=step, wall_time=wall, summary=Summary(value=[Summary.Value(tag=draw(_tags),
                                                                                     simple_value=draw(_floats))]))
    if kind == "two":
        return Event(step=step, wall_time=wall, summary=Summary(value=[
            Summary.Value(tag=draw(_tags), simple_value=draw(_floats)),
            Summary.Value(tag=draw(_tags), simple_value=draw(_floats))]))
    if kind == "text":
        return Event(step=step, wall_time=wall, file_version="brain.Event:2")
    return Event(step=step, wall_time=wall, summary=Summary())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_events(), max_size=30))
def test_bulk_decoder_equals_upb_and_the_events_written(events):
    buf = _frame(events)
    rec = tfrecord.scan(buf)
    assert len(rec) == len(events) and not rec.damage.any
    fast = decode_events(buf, rec).frame
    assert fast.equals(decode_events(buf, rec, bulk=False).frame)
    want = [(e.step, e.wall_time, v.tag, float(np.float32(v.simple_value)))
            for e in events for v in e.summary.value]
    got = fast.rows()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g[:3] == w[:3] and ((math.isnan(g[3]) and math.isnan(w[3])) or g[3] == w[3])


# ------------------------------------------------------------------ grouping


def test_keras_train_and_validation_folders_are_one_run():
    """`<run>/train/` and `<run>/validation/` (same tags) load as one run named after
    `<run>`, tags prefixed by the folder; each process's pair of files is one launch."""
    (run,), warnings = load(TB / "keras")
    s = W.keras_series()
    assert run.name == "20240501-080000" and warnings == []
    assert set(run.frame["metric"]) == {"train/epoch_loss", "train/epoch_accuracy", "validation/epoch_loss"}
    assert metric(run, "train/epoch_loss")["value"].to_list() == f32(s["train"])
    assert metric(run, "validation/epoch_loss")["value"].to_list() == f32(s["val"])
    assert len(run.segments) == 2
    by_segment = (run.frame.group_by("segment").agg(pl.col("step").min().alias("first"),
                                                    pl.col("step").max().alias("last")).sort("segment"))
    assert by_segment.rows() == [(0, 0, W.KERAS_RESUME - 1), (1, W.KERAS_RESUME, W.KERAS_EPOCHS - 1)]
    roles = api.roles_of(run.frame)
    assert roles["train/epoch_loss"] == "loss" and roles["validation/epoch_loss"] == "eval_loss"


def test_a_lone_train_folder_is_still_its_own_run(tmp_path):
    shutil.copytree(TB / "keras" / "20240501-080000" / "train", tmp_path / "fit" / "train")
    (run,), _ = load(tmp_path / "fit")
    assert run.name == "train" and set(run.frame["metric"]) == {"epoch_loss", "epoch_accuracy"}


def test_add_scalars_children_join_the_parent_run_and_segment():
    runs, _ = load(TB / "add_scalars")
    by_name = {r.name: r for r in runs}
    assert set(by_name) == {"add_scalars", "nested_run"}  # another process's folder stays apart
    run = by_name["add_scalars"]
    s = W.add_scalars_series()
    assert len(run.segments) == 1 and set(run.frame["segment"]) == {0}
    assert metric(run, "loss/train")["value"].to_list() == f32(s["train"])
    assert metric(run, "loss/val")["step"].to_list() == list(range(0, W.N_ADD, W.VAL_EVERY))
    assert metric(run, "lr")["value"].to_list() == f32(s["lr"])


def test_add_scalars_child_file_named_alone_is_keyed_to_its_parent():
    child = event_files(TB / "add_scalars" / "loss_val")[0]
    imp = TensorBoardImporter()
    (table,) = imp.read(child)
    assert table.run_key == str(TB / "add_scalars")
    assert table.segment_key == str(event_files(TB / "add_scalars")[0].parent / W.name(W.T0, 4243, 0))
    assert imp.group_key(child) == imp.group_key(event_files(TB / "add_scalars")[0])


def test_restart_files_are_segments_in_launch_order_with_purge_steps():
    (run,), _ = load(TB / "restart")
    first, second = W.restart_series()
    seg = [(s["segment"], s["first_step"], s["last_step"]) for s in run.segments]
    assert seg == [(0, 0, W.N_RESTART - 1), (1, W.RESTART_AT, W.N_RESTART + 49)]
    assert run.frame.filter(pl.col("segment") == 1)["value"].to_list() == f32(second["loss"])
    per_segment = run.meta["segment_meta"]
    assert per_segment[1]["purge_steps"] == [W.RESTART_AT]
    assert "purge_steps" not in per_segment.get(0, {})


def test_flattened_prefixes_make_separate_runs(tmp_path):
    for prefix, src in (("a__", TB / "simple"), ("b__", TB / "restart")):
        for f in event_files(src):
            shutil.copy(f, tmp_path / (prefix + f.name))
    runs, _ = load(tmp_path)
    assert sorted(r.name for r in runs) == ["a", "b"]
    assert len({r.name: r for r in runs}["b"].segments) == 2


# ------------------------------------------------------------------ damage


def _one(sub: str):
    (run,), warnings = load(TB / "damaged" / sub)
    return run, warnings


@pytest.mark.parametrize("sub, missing, words", [
    ("crc_data", W.CORRUPT_RECORD, "1 record(s) with a bad data checksum skipped"),
    ("crc_length", W.CORRUPT_RECORD, "1 damaged region(s) with a bad length checksum"),
    ("truncated_tail", W.N_DAMAGED - 1, "truncated last record"),
])
def test_damaged_files_keep_every_other_value_and_warn_once(sub, missing, words):
    run, warnings = _one(sub)
    want = [st for st in range(W.N_DAMAGED) if st != missing]
    loss = metric(run, "loss")
    assert loss["step"].to_list() == want
    assert loss["value"].to_list() == f32(W.damaged_values()[want])
    (w,) = warnings
    assert words in w and str(event_files(TB / "damaged" / sub)[0]) in w and "99 value(s)" in w


def test_empty_and_header_only_files_give_no_points_and_no_error():
    for sub in ("empty", "header_only"):
        runs, warnings = load(TB / "damaged" / sub)
        # alone, a writer that logged nothing is named (check fails on it), but is no damage
        assert runs == [] and len(warnings) == 1 and warnings[0].endswith("no data points — nothing was read from it")


def test_a_file_that_is_not_tfrecord_is_a_format_error_when_named(tmp_path):
    bad = event_files(TB / "damaged" / "not_tfrecord")[0]
    with pytest.raises(FormatError, match="not a TensorBoard event file"):
        TensorBoardImporter().read(bad)
    res = run_cli("ls", bad)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "not a TensorBoard event file" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    runs, warnings = load(TB / "damaged")  # found by walking: skipped with a warning, the rest read
    assert {r.name for r in runs} == {"crc_data", "crc_length", "truncated_tail"}
    assert any("not_tfrecord" in w and "skipped" in w for w in warnings)


def test_verify_switch_skips_crc_checks(monkeypatch):
    f = event_files(TB / "damaged" / "crc_data")[0]
    monkeypatch.setenv("SPIKELENS_NO_VERIFY", "1")
    assert not tfrecord.verify_default()
    (run,), warnings = load(f)
    assert metric(run, "loss").height == W.N_DAMAGED and warnings == []  # the flipped value is read as is
    monkeypatch.delenv("SPIKELENS_NO_VERIFY")
    monkeypatch.setattr(tfrecord, "VERIFY", False)
    assert len(tfrecord.scan(f.read_bytes())) == W.N_DAMAGED + 1
    monkeypatch.setattr(tfrecord, "VERIFY", None)
    assert tfrecord.verify_default() and len(tfrecord.scan(f.read_bytes())) == W.N_DAMAGED


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), max_size=4),
       st.integers(min_value=0, max_value=200))
def test_any_byte_damage_keeps_only_true_points(flips, cut):
    """Random flipped bytes and a cut tail never raise, and every point read is one the
    writer wrote (the CRCs catch the rest)."""
    data = bytearray(event_files(TB / "restart")[0].read_bytes())
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    buf = bytes(data[: len(data) - cut])
    rec = tfrecord.scan(buf)
    frame = decode_events(buf, rec).frame
    first, _ = W.restart_series()
    truth = dict(zip(first["step"].tolist(), f32(first["loss"])))
    for step, value in zip(frame["step"].to_list(), frame["value"].to_list()):
        assert truth.get(step) == value
    if not flips and cut == 0:
        assert frame.height == W.N_RESTART


def _records_equal(a: tfrecord.Records, b: tfrecord.Records) -> bool:
    return (np.array_equal(a.starts, b.starts) and np.array_equal(a.lengths, b.lengths)
            and a.damage == b.damage and a.looks_like_tfrecord == b.looks_like_tfrecord)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), max_size=4),
       st.integers(min_value=0, max_value=200), st.integers(min_value=1, max_value=600),
       st.integers(min_value=1, max_value=40), st.booleans(),
       st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=100)), max_size=2))
def test_reading_in_blocks_finds_what_reading_the_whole_file_finds(flips, cut, block_size, block_records, verify,
                                                                  deletions):
    """The file is read a block at a time; damage (a record cut by a block edge, a
    resync that runs over several blocks, a header cut at the end) must give the same
    records and the same damage counts as one buffer holding the whole file."""
    data = bytearray(event_files(TB / "restart")[0].read_bytes())
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    for pos, size in deletions:
        del data[pos % len(data):pos % len(data) + size]
    buf = bytes(data[: len(data) - cut])
    whole = tfrecord.scan(buf, verify=verify)
    blocks = tfrecord.scan(buf, verify=verify, block_size=block_size, block_records=block_records)
    assert _records_equal(whole, blocks)
    with io.BytesIO(buf) as fh:  # a stream of unknown size (a pipe) reads the same
        stream = tfrecord.RecordStream(fh, verify=verify, block_size=block_size, block_records=block_records)
        starts = [b.starts + b.offset for b in stream]
    got = np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)
    assert np.array_equal(got, whole.starts) and stream.damage == whole.damage


def _reference_scan(buf: bytes) -> tuple[list[int], tfrecord.Damage]:
    """The damage policy written the plain way: one record at a time, one CRC call each.
    A record that does not validate (bad length CRC, bad data CRC, or a checksummed
    length running past the end of the file with more than a header's worth of bytes
    after it) is skipped by a scan from the byte after its header to the first offset
    where a whole record validates; the scanned bytes are counted. A record that runs
    past the end of the file with no valid record after it is a truncated tail."""
    import struct

    from spikelens.importers.crc import masked_crc32c

    def header_ok(at: int) -> bool:
        return masked_crc32c(buf[at:at + 8]) == struct.unpack_from("<I", buf, at + 8)[0]

    def whole_ok(at: int) -> bool:
        (length,) = struct.unpack_from("<Q", buf, at)
        end = at + 12 + length + 4
        return end <= len(buf) and masked_crc32c(buf[at + 12:end - 4]) == struct.unpack_from("<I", buf, end - 4)[0]

    n, pos, starts, damage = len(buf), 0, [], tfrecord.Damage()
    while pos < n:
        if pos + 12 > n:
            damage.truncated_bytes = n - pos
            break
        if not header_ok(pos):
            kind = "resyncs"
        else:
            (length,) = struct.unpack_from("<Q", buf, pos)
            end = pos + 12 + length + 4
            if end > n and n - pos <= 12 + 12 + 4:  # no room for a record after it: cut
                damage.truncated_bytes = n - pos
                break
            if end > n:
                kind = "overlong"
            elif whole_ok(pos):
                starts.append(pos + 12)
                pos = end
                continue
            else:
                kind = "corrupt_records"
        nxt = next((h for h in range(pos + 1, n - 15) if header_ok(h) and whole_ok(h)), None)
        if nxt is None and kind == "overlong":
            damage.truncated_bytes = n - pos
            break
        setattr(damage, kind, getattr(damage, kind) + 1)
        damage.skipped_bytes += (nxt if nxt is not None else n) - pos
        if nxt is None:
            break
        pos = nxt
    return starts, damage


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), max_size=4),
       st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=60)), max_size=2),
       st.integers(min_value=0, max_value=100), st.sampled_from(["restart", "simple", "tensor"]))
def test_the_fast_reader_keeps_and_counts_what_a_plain_reader_does(flips, deletions, cut, fixture):
    """Differential test: predicted walks, folded CRC groups and gathered rows must keep
    exactly the records, and count exactly the damage, of a record-by-record reader."""
    data = bytearray(event_files(TB / fixture)[0].read_bytes())
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    for pos, size in deletions:
        del data[pos % len(data):pos % len(data) + size]
    buf = bytes(data[:max(len(data) - cut, 0)])
    got = tfrecord.scan(buf)
    want_starts, want_damage = _reference_scan(buf)
    assert got.starts.tolist() == want_starts and got.damage == want_damage


def test_a_damaged_header_at_the_end_reads_the_same_whatever_the_block_edges():
    """A last header with a bad checksum and one byte after it: every block size must
    see the whole header before judging it (a damaged region, not a cut record)."""
    good = event_files(TB / "restart")[0].read_bytes()
    header = bytearray(good[:HEADER_BYTES])
    header[9] ^= 0x40  # the length's checksum
    buf = good + bytes(header) + b"\x00"
    whole = tfrecord.scan(buf)
    assert whole.damage.resyncs == 1 and whole.damage.skipped_bytes == HEADER_BYTES + 1
    for block_size in range(1, 200, 3):
        assert _records_equal(whole, tfrecord.scan(buf, block_size=block_size)), block_size


@pytest.mark.parametrize("tags", [1, 4, 101, 700])
def test_the_walk_predicts_steps_that_log_many_tags(tags):
    """A step that logs hundreds of tags repeats only every few hundred records: the
    probe grows until it sees the repeat, and the prediction still equals a serial walk."""
    cycle = [20 + (i * 7) % 13 for i in range(tags)]
    lengths = cycle * max(3, 6000 // tags) + [5, 9]
    out = io.BytesIO()
    w = RecordWriter(out)
    for n in lengths:
        w.write(bytes(n))
    buf = out.getvalue()
    u8 = np.frombuffer(buf, dtype=np.uint8)
    heads, lens, stop, runs = tfrecord.walk(buf, u8, 0, len(lengths))
    want_heads, want_lens, want_stop = tfrecord._serial(buf, 0, len(lengths))
    assert heads.tolist() == want_heads and lens.tolist() == want_lens and stop == want_stop
    predicted = sum(r.k * r.period for r in runs)
    assert predicted >= 0.5 * len(lengths), predicted  # most records were predicted, not walked


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), min_size=0, max_size=400),
       st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=30))
def test_the_predicting_walk_finds_what_a_serial_walk_finds(lengths, limit, cut):
    """Lengths that repeat for a while and then change (a new tag, a longer step varint)
    are where the walk's predictions must hand back to the serial walk exactly."""
    lengths = [lengths[i % 7] if i < len(lengths) // 2 else n for i, n in enumerate(lengths)]
    out = io.BytesIO()
    w = RecordWriter(out)
    for n in lengths:
        w.write(bytes(n))
    buf = out.getvalue()
    buf = buf[: len(buf) - cut]
    u8 = np.frombuffer(buf, dtype=np.uint8)
    heads, lens, stop, _ = tfrecord.walk(buf, u8, 0, limit)
    want_heads, want_lens, want_stop = tfrecord._serial(buf, 0, limit)
    assert heads.tolist() == want_heads and lens.tolist() == want_lens and stop == want_stop


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=300), st.integers(min_value=1, max_value=40),
       st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
                max_size=5), st.integers(min_value=0, max_value=2 ** 32 - 1))
def test_grouped_crc_check_flags_exactly_the_records_a_per_record_check_flags(k, length, flips, seed):
    """Checking CRCs in XOR-folded groups must give the per-record verdicts: damaged
    data or a damaged stored CRC, one or several per group, odd and even group sizes,
    the same damage in two records (which would cancel in one group)."""
    import crc32c

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 256, size=(k, length), dtype=np.uint8)
    stored = np.array([crc32c.crc32c(r.tobytes()) for r in rows], dtype=np.uint32)
    for row, col, bit in flips:
        if col % 3 == 0:
            stored[row % k] ^= np.uint32(bit)
        else:
            rows[row % k, col % length] ^= np.uint8(bit)
    want = np.array([crc32c.crc32c(r.tobytes()) for r in rows], dtype=np.uint32) == stored
    assert crc.fold_ok(rows, stored).tolist() == want.tolist()


@pytest.mark.parametrize("damaged", [[0, 1], [5, 5 + 63], [0, 2, 4, 6], [1, 64, 127, 190], list(range(200)),
                                     list(range(126))])
def test_grouped_crc_check_catches_the_same_damage_in_many_records(damaged):
    """Repeating damage (the same bit in several records of one layout) must not cancel
    out in the XOR-folded groups: pairs, pairs one group apart, every record."""
    import crc32c

    rows = np.random.default_rng(3).integers(0, 256, size=(200, 24), dtype=np.uint8)
    stored = np.array([crc32c.crc32c(r.tobytes()) for r in rows], dtype=np.uint32)
    rows[damaged, 7] ^= np.uint8(0x10)
    ok = crc.fold_ok(rows, stored)
    assert np.flatnonzero(~ok).tolist() == sorted(set(damaged))


# ------------------------------------------------------------------ cross-checks


def test_tensorboard_and_csv_twins_load_to_the_same_values():
    (tb,), _ = load(TB / "twin" / "tb")
    (csv,), _ = load(TB / "twin" / "csv")
    key = ["metric", "step", "value"]
    assert tb.frame.height == csv.frame.height > 0
    assert tb.frame.select(key).sort(key).equals(csv.frame.select(key).sort(key))


def test_the_cli_reads_without_writing_into_the_input(tmp_path):
    runs = {r["run"]: r for r in ls_without_writing(TB, tmp_path)}
    assert runs["simple"]["metrics"]["train/loss"] == "loss"
    assert len(runs["restart"]["segments"]) == 2


# ------------------------------------------------------------------ the README example


def test_example_runs_hold_the_planted_curves():
    runs, warnings = load(EXAMPLE)
    assert warnings == [] and sorted(r.name for r in runs) == ["gpt-small", "gpt-small-nan"]
    by = {r.name: r for r in runs}
    spike = E.spike_run()
    loss = metric(by["gpt-small"], "train/loss")
    assert loss["step"].to_list() == list(range(E.N_STEPS))
    assert loss["value"].to_list() == f32(spike["loss"])
    assert metric(by["gpt-small"], "train/lr")["step"].to_list() == list(range(0, E.N_STEPS, E.LR_EVERY))
    nan = metric(by["gpt-small-nan"], "train/loss")["value"].to_numpy()
    assert np.isnan(nan[E.NAN_STEP:]).all() and np.isfinite(nan[: E.NAN_STEP]).all()
    assert all(p.stat().st_size < 330_000 for p in event_files(EXAMPLE))


def test_example_report_finds_the_spike_and_the_nan():
    res = run_cli("analyze", EXAMPLE, "--format", "json")
    assert res.returncode == 0, res.stderr
    runs = {r["run"]: r for r in json.loads(res.stdout)["runs"]}
    spikes = [f for f in runs["gpt-small"]["findings"] if f["kind"] == "spike"]
    assert [f["start_step"] for f in spikes] == [E.SPIKE_STEP]
    assert spikes[0]["recovery"] == "fast" and spikes[0]["causes"][0]["cause"] == "grad_explosion"
    nans = [f for f in runs["gpt-small-nan"]["findings"] if f["kind"] == "nan" and f["metric"] == "train/loss"]
    assert [f["start_step"] for f in nans] == [E.NAN_STEP]


def test_a_file_of_a_few_bytes_is_a_truncated_file_not_an_error(tmp_path):
    f = tmp_path / W.name(W.T0, 1, 0)
    f.write_bytes(event_files(TB / "simple")[0].read_bytes()[:5])
    runs, warnings = load(f)
    assert runs == [] and len(warnings) == 1 and "truncated last record (5 bytes)" in warnings[0]


def test_known_tags_code_blocks_of_any_tag_width_and_survive_hash_collisions(monkeypatch):
    """Blocks after the first are coded against the tags already seen (`_KnownTags`): a long
    tag first met in a later block, short tags in a block of long ones, and every hash equal
    (each row then misses and is grouped word for word) give the tags that were written."""
    long_tag = "model/layers.11/attention/" + "x" * 60
    tags = ["loss", "lr", long_tag, "é/ü", "loss2"]
    events = [Event(step=i, wall_time=float(i), summary=Summary(value=[Summary.Value(
        tag=tags[0 if i < 10 else i % len(tags)], simple_value=float(i))])) for i in range(40)]
    buf = _frame(events)
    rec = tfrecord.scan(buf)
    want = [v.tag for e in events for v in e.summary.value]
    monkeypatch.setattr(tb_events, "BULK_CHUNK", 7)
    assert decode_events(buf, rec).frame["metric"].to_list() == want
    monkeypatch.setattr(tb_events, "_tag_hash", lambda tag_len, words: np.zeros(tag_len.size, dtype=np.uint64))
    assert decode_events(buf, rec).frame["metric"].to_list() == want
