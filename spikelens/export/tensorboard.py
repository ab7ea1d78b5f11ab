"""The stitched run as one TensorBoard event file, written with TensorBoard's own
`EventFileWriter`: one `Event` per step holding every metric logged at it (scalar
`simple_value`s, as `SummaryWriter.add_scalar` writes them), steps strictly increasing,
so `tensorboard --logdir out/` draws one curve per metric with no step twice."""
from __future__ import annotations

from pathlib import Path

import polars as pl

SUFFIX = ".spikelens"


def write_events(points: pl.DataFrame, folder: Path) -> Path:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder), max_queue_size=1000, flush_secs=120, filename_suffix=SUFFIX)
    try:
        by_step = points.group_by("step", maintain_order=True).agg(
            pl.col("wall_time").min(), pl.col("metric"), pl.col("value"))
        for step, wall, metrics, values in by_step.iter_rows():
            summary = Summary(value=[Summary.Value(tag=m, simple_value=v) for m, v in zip(metrics, values)])
            writer.add_event(Event(step=step, wall_time=wall if wall is not None else 0.0, summary=summary))
    finally:
        writer.close()
    return Path(writer.get_logdir())
