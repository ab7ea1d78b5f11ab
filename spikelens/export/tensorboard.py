"""The stitched run as one TensorBoard event file, written with TensorBoard's own writer:
one `Event` per step holding every metric logged at it (scalar `simple_value`s, as
`SummaryWriter.add_scalar` writes them), steps strictly increasing, so
`tensorboard --logdir out/` draws one curve per metric with no step twice.

`EventFileWriter` creates the file (its name and `file_version` header); the events go
through the `RecordWriter` framing it uses, called directly: its background queue costs
tens of microseconds of lock hand-offs per event (benchmarks/_bench.py measured it)."""
from __future__ import annotations

from pathlib import Path

import polars as pl

SUFFIX = ".spikelens"


def write_events(points: pl.DataFrame, folder: Path) -> Path:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.summary.writer.record_writer import RecordWriter

    before = set(folder.iterdir())
    EventFileWriter(str(folder), filename_suffix=SUFFIX).close()
    (path,) = set(folder.iterdir()) - before
    by_step = points.group_by("step", maintain_order=True).agg(
        pl.col("wall_time").min(), pl.col("metric"), pl.col("value"))
    with open(path, "ab") as fh:
        records = RecordWriter(fh)
        for step, wall, metrics, values in by_step.iter_rows():
            summary = Summary(value=[Summary.Value(tag=m, simple_value=v) for m, v in zip(metrics, values)])
            records.write(Event(step=step, wall_time=wall if wall is not None else 0.0,
                                summary=summary).SerializeToString())
    return path
