"""Segments of one run → one timeline, with the resume findings.

(Placeholder until the stitch issue lands: marks nothing superseded.)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from .detect.finding import Finding
from .discover import Run


@dataclass
class Stitched:
    frame: pl.DataFrame
    """The run's long frame plus `superseded`; steps are the stitched steps."""
    findings: list[Finding] = field(default_factory=list)
    segments: list[dict] = field(default_factory=list)
    segment_starts: list[int] = field(default_factory=list)


def stitch_run(run: Run, **params) -> Stitched:
    frame = run.frame.with_columns(superseded=pl.lit(False))
    return Stitched(frame=frame, segments=run.segments,
                    segment_starts=[s["first_step"] for s in run.segments[1:]])


def merge_runs(runs: list[Run], name: str | None = None) -> Run:
    """Treat every run given to `spikelens stitch` as segments of one run."""
    runs = sorted(runs, key=lambda r: (min((s.get("first_wall_time") or 0) for s in r.segments) if r.segments else 0, r.name))
    frames, segments, offset, seq0 = [], [], 0, 0
    nm = name or runs[0].name
    for r in runs:
        f = r.frame.with_columns(
            run=pl.lit(nm),
            segment=(pl.col("segment") + offset).cast(pl.UInt32),
            seq=(pl.col("seq") + seq0).cast(pl.UInt64),
        )
        frames.append(f)
        for s in r.segments:
            segments.append({**s, "segment": s["segment"] + offset})
        offset += len(r.segments)
        seq0 += r.frame.height
    return Run(name=nm, frame=pl.concat(frames), sources=sorted({s for r in runs for s in r.sources}),
               formats=sorted({f for r in runs for f in r.formats}), segments=segments,
               meta={k: v for r in runs for k, v in r.meta.items()})
