"""A reinforcement learner whose return was exactly zero on every logged table while its losses
moved never once earned a reward (#25): told however late its log starts (a continuation at 20M
timesteps of a sparse-reward task still at zero is stuck, not converged). Written as SB3's
HumanOutputFormat prints its tables to the console."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _table(values: dict[str, dict[str, object]]) -> str:
    """One SB3 console dump: sections sorted, keys indented, values in a padded column."""
    rows = []
    for section, keys in values.items():
        rows.append((f"{section}/", ""))
        rows += [(f"   {k}", (f"{v:.3g}" if isinstance(v, float) else str(v))) for k, v in keys.items()]
    kw = max(len(k) for k, _ in rows)
    vw = max(len(v) for _, v in rows)
    dash = "-" * (kw + vw + 7)
    return "\n".join([dash, *(f"| {k:<{kw}} | {v:<{vw}} |" for k, v in rows), dash]) + "\n"


def _sb3_console(path, rewards, first_iteration: int = 19519, frozen_losses: bool = False) -> None:
    rng = np.random.default_rng(5)
    text = []
    for k, r in enumerate(rewards):
        it = first_iteration + k
        loss = -0.02 if frozen_losses else float(-0.02 + 0.005 * rng.standard_normal())
        text.append(_table({
            "rollout": {"ep_len_mean": 120, "ep_rew_mean": r},
            "time": {"fps": 4741, "iterations": it, "time_elapsed": 4215 + k, "total_timesteps": 1024 * it},
            "train": {"approx_kl": 0.0015 if frozen_losses else float(0.001 + 0.001 * rng.random()),
                      "entropy_loss": -1.68, "learning_rate": 0.00025, "loss": loss, "n_updates": 4 * it,
                      "value_loss": 2e-9 if frozen_losses else float(2e-9 * (1 + rng.random()))},
        }))
    path.write_text("".join(text))


def _never(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings
            if f.kind == "plateau" and f.evidence.get("never_learned") and f.evidence.get("reading") == "zero"]


def test_a_return_of_zero_on_every_table_of_a_late_log_never_earned_a_reward(tmp_path, no_workers):
    path = tmp_path / "train.log"
    _sb3_console(path, [0] * 14)
    (f,) = _never(path)
    assert f.metric.endswith("ep_rew_mean") and f.start_step == 1024 * 19519 and f.end_step == 1024 * (19519 + 13)
    assert f.severity == "info" and "no episode ever earned a reward" in f.message  # 14 tables: a note
    assert "loss" in f.evidence["other_moved"]


def test_a_return_of_zero_logged_a_hundred_times_is_a_warning(tmp_path, no_workers):
    path = tmp_path / "train.log"
    _sb3_console(path, [0] * 110)
    assert [f.severity for f in _never(path)] == ["warning"]


def test_one_table_with_a_reward_or_a_log_where_nothing_moved_is_quiet(tmp_path, no_workers):
    earned = tmp_path / "earned" / "train.log"
    earned.parent.mkdir()
    _sb3_console(earned, [0] * 9 + [0.0123] + [0] * 4)
    frozen = tmp_path / "frozen" / "train.log"
    frozen.parent.mkdir()
    _sb3_console(frozen, [0] * 14, frozen_losses=True)  # a log that repeats one table: no agent updated
    assert not _never(earned) and not _never(frozen)
