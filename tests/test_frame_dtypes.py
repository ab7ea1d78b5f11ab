"""The frame's narrow columns (frame.NARROW): which dtype each reader's values and `seq` get,
that no number changes on the way, and that outputs write the public types (SCHEMA).

Event files are written by TensorBoard's own EventFileWriter (`fixtures/writers/tensorboard.py`),
the CSV by the test as a training script prints it; expected values are what was written.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import polars as pl
import pytest
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from conftest import FIXTURES, load
from spikelens import api, frame as F
from spikelens.errors import SchemaError

sys.path.insert(0, str(FIXTURES))
from writers import tensorboard as W  # noqa: E402

NAME = "events.out.tfevents.1700000000.host.7.0"


def _scalars(tmp_path, steps, values, tag="train/loss"):
    return W.write_events(tmp_path / "run" / NAME, [W.scalar_event(int(s), 1.7e9 + i, tag, float(v))
                                                     for i, (s, v) in enumerate(zip(steps, values))])


def _same(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))


def test_a_float32_tensorboard_source_keeps_float32_values(tmp_path):
    values = np.array([2.5, 0.1, float("nan"), float("inf"), 1e-30, -3.25])
    _scalars(tmp_path, range(6), values)
    (run,), _ = load(tmp_path / "run")
    assert run.frame.schema["value"] == pl.Float32 and run.frame.schema["seq"] == pl.UInt32
    assert _same(run.frame["value"].cast(pl.Float64).to_list(), values.astype(np.float32).astype(np.float64).tolist())
    wide = api.load(tmp_path / "run")  # the Python API hands out SCHEMA's types, the same numbers
    assert dict(wide.schema) == F.SCHEMA
    assert _same(wide["value"].to_list(), values.astype(np.float32).astype(np.float64).tolist())


def test_a_double_tensor_in_a_float32_file_makes_the_file_float64(tmp_path):
    """A value no float32 holds (a double tensor) widens the whole file, values read before it too."""
    shape = TensorShapeProto()
    meta = Summary.Value(tag="loss64", tensor=TensorProto(dtype=2, tensor_shape=shape, double_val=[0.1]))
    meta.metadata.plugin_data.plugin_name = "scalars"
    events = [W.scalar_event(s, 1.7e9 + s, "loss", 0.5 + s) for s in range(5)]
    events.append(Event(step=5, wall_time=1.7e9 + 5, summary=Summary(value=[meta])))
    W.write_events(tmp_path / "run" / NAME, events)
    (run,), _ = load(tmp_path / "run")
    assert run.frame.schema["value"] == pl.Float64
    assert run.frame["value"].to_list() == [0.5, 1.5, 2.5, 3.5, 4.5, 0.1]  # 0.1 as the double it was


def test_a_csv_with_float64_precision_keeps_float64(tmp_path):
    values = [0.123456789012345, 1e-300, 2.0000000000000004]
    (tmp_path / "metrics.csv").write_text("step,loss\n" + "".join(f"{i},{v!r}\n" for i, v in enumerate(values)))
    (run,), _ = load(tmp_path / "metrics.csv")
    assert run.frame.schema["value"] == pl.Float64
    assert run.frame["value"].to_list() == values


def test_a_step_above_2_to_the_31_keeps_int64(tmp_path):
    steps = [2 ** 31 - 1, 2 ** 31, 2 ** 33 + 7]
    _scalars(tmp_path, steps, [1.0, 2.0, 3.0])
    (run,), _ = load(tmp_path / "run")
    assert run.frame.schema["step"] == pl.Int64
    assert run.frame["step"].to_list() == steps


def test_seq_is_uint32_up_to_2_to_the_32_rows():
    assert F.seq_dtype(0) == pl.UInt32 and F.seq_dtype(2 ** 32) == pl.UInt32
    assert F.seq_dtype(2 ** 32 + 1) == pl.UInt64


def test_validate_accepts_narrow_and_wide_columns_and_nothing_else():
    base = {"run": ["r"], "source": ["s"], "segment": [0], "seq": [0], "step": [1], "wall_time": [0.0],
            "metric": ["loss"], "value": [1.0]}
    wide = pl.DataFrame(base, schema=F.SCHEMA)
    narrow = wide.with_columns(pl.col("seq").cast(pl.UInt32), pl.col("value").cast(pl.Float32))
    assert F.validate(wide, "t") is wide and F.validate(narrow, "t") is narrow
    assert dict(F.conform(narrow).schema) == {**F.SCHEMA, "seq": pl.UInt32, "value": pl.Float32}
    with pytest.raises(SchemaError, match="step is Int32"):
        F.validate(wide.with_columns(pl.col("step").cast(pl.Int32)), "t")
    with pytest.raises(SchemaError, match="value is Float16|value is Int64"):
        F.validate(wide.with_columns(pl.col("value").cast(pl.Int64)), "t")


def test_validate_names_a_key_column_with_nulls():
    base = {"run": ["r", "r"], "source": ["s", "s"], "segment": [0, 0], "seq": [0, 1], "step": [1, 2],
            "wall_time": [0.0, 1.0], "metric": ["loss", "loss"], "value": [1.0, None]}
    assert F.validate(pl.DataFrame(base, schema=F.SCHEMA), "t").height == 2  # a null value is "not logged"
    for col in ("run", "source", "segment", "seq", "step", "metric"):
        holed = pl.DataFrame(base, schema=F.SCHEMA).with_columns(
            pl.when(pl.col("seq") == 1).then(None).otherwise(pl.col(col)).alias(col))
        with pytest.raises(SchemaError, match=f"column '{col}' has nulls"):
            F.validate(holed, "t")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_validate_leaves_constant_columns_constant():
    """A run's constant columns (`pl.lit`: its name, its file) cost no memory a row until something
    writes them out; validating the frame must not (16 MB a column here, kept as long as the frame)."""
    def rss() -> int:  # anonymous memory only: code pages Polars maps on first use are not the frame's
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("RssAnon:"))

    n = 4_000_000
    frame = pl.DataFrame({"seq": np.arange(n, dtype=np.uint32), "step": np.arange(n, dtype=np.int64),
                          "wall_time": np.zeros(n), "value": np.zeros(n, dtype=np.float32)}).with_columns(
        run=pl.lit("r", dtype=pl.Categorical()), source=pl.lit("s", dtype=pl.Categorical()),
        segment=pl.lit(0, dtype=pl.UInt32), metric=pl.lit("loss", dtype=pl.Categorical()))
    before = rss()
    F.validate(frame, "t")
    assert rss() - before < 16_000_000


def test_concat_widens_a_column_only_where_frames_disagree():
    a = pl.DataFrame({"value": np.array([0.1], dtype=np.float32), "seq": np.array([0], dtype=np.uint32)})
    b = pl.DataFrame({"value": np.array([0.1], dtype=np.float64), "seq": np.array([1], dtype=np.uint32)})
    both = F.concat([a, b])
    assert both.schema["value"] == pl.Float64 and both.schema["seq"] == pl.UInt32
    assert both["value"].to_list() == [float(np.float32(0.1)), 0.1]
    assert F.concat([a, a]).schema["value"] == pl.Float32


def test_exports_write_the_public_types_and_the_same_numbers(tmp_path):
    """`-o FILE.csv/.parquet` (ls.write_frame) and the run exports (timeline.live_points) write
    SCHEMA's Float64: the text of a float32 value is what it was before the narrow frame."""
    from spikelens.cli.ls import write_frame
    from spikelens.export.timeline import live_points

    values = np.float32([0.1, 0.2, 1 / 3, 7.0])
    _scalars(tmp_path, range(4), values)
    (run,), _ = load(tmp_path / "run")
    assert run.frame.schema["value"] == pl.Float32
    out = tmp_path / "out.csv"
    write_frame(run.frame, out, force=False)
    assert out.read_text() == run.frame.with_columns(pl.col("value").cast(pl.Float64),
                                                     pl.col("seq").cast(pl.UInt64)).write_csv()
    assert str(float(values[0])) in out.read_text()  # 0.10000000149011612
    write_frame(run.frame, tmp_path / "out.parquet", force=False)
    assert dict(pl.read_parquet(tmp_path / "out.parquet").schema) == F.SCHEMA
    points = live_points(run.frame)
    assert points.schema["value"] == pl.Float64 and points["value"].to_list() == values.astype(np.float64).tolist()
