"""Memory standing near the device's capacity (#27), where the log gives the capacity: a share
(`memory: 30.7GiB(97.9%)`), a used metric beside a logged total (`mem_used`/`mem_total`,
`max_memory_allocated` beside `total_memory`) or beside the free memory. A capacity is never
guessed: 97-99% of a logged total for a sustained stretch is a warning, 60% is nothing."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import write_csv
from spikelens.api import analyze

GIB = 1024 ** 3


def _memory(path: Path):
    rep = analyze(str(path), jobs=1)
    return [f for r in rep.runs for f in r.findings if f.kind == "memory_growth"]


def _used(n: int, share: float, *, hot: tuple[int, int] | None = None, seed: int = 0) -> np.ndarray:
    """A used share of the device at each step: `share` with a little noise, 0.98 over `hot`."""
    rng = np.random.default_rng(seed)
    out = share + rng.normal(0, 0.004, n)
    if hot:
        out[hot[0]:hot[1]] = 0.98 + rng.normal(0, 0.004, hot[1] - hot[0])
    return np.clip(out, 0, 0.999)


def _used_total_csv(path: Path, share: np.ndarray, total: float = 80.0) -> Path:
    rows = [(10 * i, f"{3 + math.exp(-i / 50):.4f}", f"{total * u:.3f}", f"{total:.1f}") for i, u in enumerate(share)]
    return write_csv(path, ["step", "loss", "mem_used", "mem_total"], rows)


def test_a_stretch_at_98_percent_of_a_logged_total_is_a_warning(tmp_path):
    found = _memory(_used_total_csv(tmp_path / "hot" / "metrics.csv", _used(600, 0.7, hot=(250, 400))))
    assert len(found) == 1, found
    f = found[0]
    assert f.severity == "warning" and f.evidence["at_capacity"] and not f.evidence["leak"]
    assert 97 <= f.evidence["capacity_percent"] <= 99 and f.evidence["capacity_from"].startswith("of mem_total")
    lo, hi = f.evidence["capacity_steps"]
    assert abs(lo - 2500) <= 30 and abs(hi - 3990) <= 30
    assert "of the device's memory (of mem_total (80))" in f.message


def test_sixty_percent_of_a_logged_total_is_nothing(tmp_path):
    assert _memory(_used_total_csv(tmp_path / "cool" / "metrics.csv", _used(600, 0.6))) == []


def test_a_single_step_at_capacity_is_no_stretch(tmp_path):
    share = _used(600, 0.6)
    share[300:303] = 0.99  # one large batch
    assert _memory(_used_total_csv(tmp_path / "blip" / "metrics.csv", share)) == []


def test_max_memory_allocated_beside_total_memory_in_bytes(tmp_path):
    """torch.cuda.max_memory_allocated() and the device's total_memory, in bytes, in JSON lines."""
    total = 79.1 * GIB
    log = tmp_path / "jl" / "train_log.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps({"step": i, "loss": 3 + math.exp(-i / 50), "gpu/max_memory_allocated": u * total,
                                       "gpu/total_memory": total}) + "\n"
                           for i, u in enumerate(_used(400, 0.975, seed=2))))
    found = _memory(log)
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].evidence["capacity_metric"] == "gpu/max_memory_allocated"
    assert 97 <= found[0].evidence["capacity_percent"] <= 98.5


@pytest.mark.parametrize("share,expected", [(0.985, 1), (0.6, 0)])
def test_used_beside_free_memory_gives_the_share(tmp_path, share, expected):
    """nvidia-smi's `memory.used (MB)` and `memory.free (MB)` (Lightning's GPU stats): used + free."""
    cap = 81920.0
    rows = [(i, f"{3 + math.exp(-i / 50):.4f}", f"{cap * u:.0f}", f"{cap * (1 - u):.0f}")
            for i, u in enumerate(_used(300, share, seed=3))]
    found = _memory(write_csv(tmp_path / "smi" / "metrics.csv", ["step", "loss", "memory.used (MB)", "memory.free (MB)"],
                         rows))
    assert len(found) == expected, found
    if expected:
        assert found[0].evidence["capacity_from"] == "of memory.used (MB) + memory.free (MB)"


def test_a_logged_share_standing_at_98_percent_is_a_warning(tmp_path):
    """torchtitan's `memory: 30.70GiB(97.93%)` on every step: the share it prints."""
    rng = np.random.default_rng(4)
    lines = [f"[rank0]:[titan] 2025-01-01 10:00:00,000 - root - INFO - step: {s:2d}  loss: {3 + 5 * math.exp(-s / 50):7.4f}"
             f"  memory: {30.7 + rng.normal(0, 0.05):5.2f}GiB({97.93 + rng.normal(0, 0.1):.2f}%)  tps: 7,233"
             for s in range(1, 401)]
    log = tmp_path / "titan" / "train.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    found = _memory(log)
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].evidence["capacity_metric"] == "memory_pct" and found[0].evidence["capacity_from"] == "logged share"


def test_memory_bandwidth_utilization_is_no_share_of_capacity(tmp_path):
    """nvidia-smi's `utilization.memory (%)` at 99% says the memory is busy, not full."""
    rows = [(i, f"{3 + math.exp(-i / 50):.4f}", f"{99 + 0.3 * math.sin(i):.1f}") for i in range(300)]
    assert _memory(write_csv(tmp_path / "bw" / "metrics.csv", ["step", "loss", "utilization.memory (%)"], rows)) == []


def test_no_total_logged_no_capacity_guessed(tmp_path):
    """`mem_used` alone at 78 GB: the device's size is not in the log, so nothing is said."""
    rows = [(10 * i, f"{3 + math.exp(-i / 50):.4f}", f"{78 + 0.1 * math.sin(i):.2f}") for i in range(400)]
    assert _memory(write_csv(tmp_path / "alone" / "metrics.csv", ["step", "loss", "mem_used"], rows)) == []


def test_a_logged_fraction_of_the_device_is_read_as_a_share(tmp_path):
    rows = [(10 * i, f"{3 + math.exp(-i / 50):.4f}", f"{u:.4f}") for i, u in enumerate(_used(300, 0.985, seed=5))]
    found = _memory(write_csv(tmp_path / "frac" / "metrics.csv", ["step", "loss", "gpu_mem_frac"], rows))
    assert len(found) == 1 and 97 <= found[0].evidence["capacity_percent"] <= 99.9
