"""An SB3 `Monitor` table reads the same however it was laid out again (#24, `perturb_tables.py`): saved back by
pandas (its index, `;` or tab separators, upper-case or reordered columns) or with a note a script wrote above
it, the episodes keep their timesteps and the return its name, as the pristine file's do. The file is written by
SB3's own `ResultsWriter` (`fixtures/writers/trainers.write_sb3_monitor`), then rewritten by pandas."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pandas as pd
import pytest

from spikelens import api, diagnostics

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
pytest.importorskip("stable_baselines3.common.monitor", reason="stable-baselines3 (test extra) not installed")
from writers.trainers import write_sb3_monitor  # noqa: E402


def _read(path: Path) -> dict[str, list]:
    with diagnostics.collecting():
        (run,) = api.load_runs(path)
    f = run.frame.sort("metric", "step")
    return {str(m): sorted(zip(g["step"].to_list(), g["value"].to_list()))
            for (m,), g in f.group_by("metric", maintain_order=True)}


def _relaid(src: Path, dst: Path, how: str) -> Path:
    comment, table = src.read_text().split("\n", 1)
    df = pd.read_csv(io.StringIO(table))
    dst.mkdir(parents=True)
    out = dst / "monitor.csv"
    if how == "pandas_index":  # `df.to_csv(path)`: the comment line lost, an unnamed index first
        df.to_csv(out)
    elif how == "semicolon":
        out.write_text(comment + "\n" + df.to_csv(sep=";", index=False))
    elif how == "tab_upper":
        out.write_text(comment + "\n" + df.rename(columns=str.upper).to_csv(sep="\t", index=False))
    elif how == "reversed":
        out.write_text(comment + "\n" + df[df.columns[::-1]].to_csv(index=False))
    elif how == "note_above":
        out.write_text(comment + "\n# PPO CartPole-v1, seed 3\n" + df.to_csv(index=False))
    return out


@pytest.mark.parametrize("how", ["pandas_index", "semicolon", "tab_upper", "reversed", "note_above"])
def test_a_monitor_table_laid_out_again_reads_as_the_monitor(tmp_path, how, no_workers):
    src = write_sb3_monitor(tmp_path / "sb3", episodes=40)
    want = _read(src)
    assert set(want) == {"episode/reward", "episode/length"}
    got = _read(_relaid(src, tmp_path / how, how))
    assert got == want
