"""What the line-shape tests share: a decaying loss to print, a log written and read as a user's
file, and one metric's (step, value) curve in read order."""
from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from spikelens import api, diagnostics


def loss(k: int) -> float:
    return 2.4 * math.exp(-k / 60) + 0.3 + 0.01 * ((k * 37) % 7)


def load(tmp_path: Path, lines: list[str], name: str = "train.log") -> pl.DataFrame:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with diagnostics.collecting():
        return api.load(path)


def curve(frame: pl.DataFrame, metric: str) -> list[tuple[int, float]]:
    return frame.filter(pl.col("metric") == metric).sort("seq").select("step", "value").rows()
