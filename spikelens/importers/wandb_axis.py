"""The step a W&B run is read on: the step metric its integration defined, else `_step`.

HF's Trainer and Lightning's WandbLogger call `define_metric("*", step_metric="train/global_step")`
(`trainer/global_step`) and log the optimizer step in every row, while `_step` counts `log` calls (a
train row and an eval row: two `_step`s for one optimizer step; one `_step` per 500 optimizer steps).
The W&B UI plots such a run on the defined step and its users read its events there, so the readers
take the same axis: the `metric` records of a `.wandb` file, a run's `config.yaml` (`_wandb.m`), or, in
a history dump that kept neither, the step metric those integrations always define.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

import polars as pl

INTEGRATION_AXES = ("train/global_step", "trainer/global_step")
"""The step metrics HF's Trainer and Lightning's WandbLogger define for every metric they log."""


def defined_axis(definitions: Mapping[str, str]) -> str | None:
    """The step metric every metric is plotted on: the one the `*` glob names, else the one every
    named definition shares (`define_metric("train/loss", step_metric="step")`, `eval/loss` the same);
    None when the definitions name none or several (`batch/*` on batches, `epoch/*` on epochs)."""
    if definitions.get("*"):
        return definitions["*"]
    named = {v for v in definitions.values() if v}
    return named.pop() if len(named) == 1 else None


def config_definitions(folder: Path) -> dict[str, str]:
    """The step metrics a run's `config.yaml` (in `folder` or its `files/`) records for its metrics:
    `_wandb.value.m` lists `{1: name, 5: index of its step metric in that list (from 1)}`. Empty when
    there is none or it cannot be parsed (PyYAML is optional)."""
    path = next((p for p in (folder / "config.yaml", folder / "files" / "config.yaml") if p.is_file()), None)
    if path is None:
        return {}
    try:
        import yaml

        doc = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
        listed: list[Any] = doc["_wandb"]["value"]["m"]
        names = [e.get(1) for e in listed]
        return {str(e[1]): str(names[e[5] - 1]) for e in listed
                if isinstance(e, dict) and e.get(1) and isinstance(e.get(5), int) and 0 < e[5] <= len(names)}
    except Exception:  # noqa: BLE001 - no PyYAML, another layout, a damaged file: `_step` stays the axis
        return {}


def history_axis(metrics: Iterable[str], definitions: Mapping[str, str]) -> str | None:
    """The axis of a history dump logging `metrics`: the defined step metric, else the one an integration
    always defines when the dump logs it."""
    axis = defined_axis(definitions)
    if axis:
        return axis
    logged = {str(m) for m in metrics}
    return next((a for a in INTEGRATION_AXES if a in logged), None)


def on_axis(long: pl.DataFrame, axis: str | None) -> pl.DataFrame:
    """A history's long table (stepped by `_step`, one W&B row per `_step`, whatever order the values were
    read in) on the defined axis: each row's step is the axis metric's value in that row, else in the row
    before it (W&B's `step_sync` carries the last one), else in the next row; the axis itself is then no
    metric. Unchanged when there is no axis, it is never logged, or it holds other than whole numbers (an
    epoch fraction is no step)."""
    if not axis or long.height == 0:
        return long
    is_axis = pl.col("metric").cast(pl.String) == axis
    vals = long.filter(is_axis).group_by("step").agg(pl.col("value").last().alias("_axis"))
    value = vals.get_column("_axis")
    if value.len() == 0 or not (value.is_finite() & (value == value.round())).all():
        return long
    steps = (long.select("step").unique().join(vals, on="step", how="left").sort("step")
             .with_columns(pl.col("_axis").forward_fill().backward_fill().cast(pl.Int64)))
    return (long.filter(~is_axis).join(steps, on="step", how="left", maintain_order="left")
            .with_columns(step=pl.col("_axis")).select(long.columns))
