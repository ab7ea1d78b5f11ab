"""The step a W&B run is read on: the step metric its integration defined, else `_step`.

HF's Trainer and Lightning's WandbLogger call `define_metric("*", step_metric="train/global_step")`
(`trainer/global_step`) and log the optimizer step in every row, while `_step` counts `log` calls (a
train row and an eval row: two `_step`s for one optimizer step; one `_step` per 500 optimizer steps).
The W&B UI plots such a run on the defined step and its users read its events there, so the reader
takes the same axis (the `metric` records of a `.wandb` file hold the definitions).
"""
from __future__ import annotations

from typing import Mapping

import polars as pl


def defined_axis(definitions: Mapping[str, str]) -> str | None:
    """The step metric every metric is plotted on: the one the `*` glob names, else the one every
    named definition shares (`define_metric("train/loss", step_metric="step")`, `eval/loss` the same);
    None when the definitions name none or several (`batch/*` on batches, `epoch/*` on epochs)."""
    if definitions.get("*"):
        return definitions["*"]
    named = {v for v in definitions.values() if v}
    return named.pop() if len(named) == 1 else None


def axis_steps(items: pl.DataFrame, rows: int, axis: str) -> pl.Series | None:
    """Each history row's step on the defined axis (`items`: `row`, `metric`, `value` of every logged
    value): the axis metric's value in that row, else in the row before it (W&B's `step_sync` carries the
    last one), else in the next row; None when the axis is never logged or holds other than whole
    numbers (an epoch fraction is no step)."""
    vals = items.filter(pl.col("metric") == axis).select("row", "value").unique("row", keep="last")
    value = vals.get_column("value")
    if value.len() == 0 or not (value.is_finite() & (value == value.round())).all():
        return None
    per_row = pl.DataFrame({"row": pl.arange(0, rows, eager=True, dtype=pl.UInt32)}).join(vals, on="row", how="left")
    return per_row.get_column("value").forward_fill().backward_fill().cast(pl.Int64).rename("step")
