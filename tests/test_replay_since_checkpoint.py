"""Replay from the checkpoint users have: a real `transformers.Trainer` saving every 10 steps with
the capture callback at its defaults, a planted NaN batch at step 25, and
`spikelens replay out/checkpoint-20 --step 25`. The callback keeps every step since the last
save, so the replay is exact; with captures that do not reach back to the checkpoint the flagged
batch is replayed on the checkpoint's weights and the report says it is approximate."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from replay_targets import hf_run  # noqa: E402

from conftest import main_in_process  # noqa: E402
from spikelens import diagnostics  # noqa: E402
from spikelens.replay import captured_steps  # noqa: E402
from spikelens.replay.callbacks import _Capturer  # noqa: E402

BAD, STEPS, SAVES = 25, 28, (10, 20)


def _replay(out, capsys):
    """The CLI's entry point in this process (a process start imports torch and transformers
    again: CI time; test_replay_hf's zero-code replay runs a real one)."""
    capsys.readouterr()  # the Trainer's own log lines, printed by the training above
    code, stdout, err = main_in_process(capsys, "replay", out / "checkpoint-20", "--step", str(BAD),
                                        "--captures", out / "spikelens-captures", "--device", "cpu", "--format", "json")
    assert code == 1, err  # the NaN is found
    return json.loads(stdout)


def test_default_callback_keeps_every_step_since_the_checkpoint_and_the_replay_is_exact(tmp_path, capsys):
    out = hf_run.train(tmp_path / "out", steps=STEPS, bad_step=BAD, save_at=SAVES, capture={})
    # 21..25 since checkpoint-20, one after, and the default `before`=1 step before the window (20)
    assert captured_steps(out / "spikelens-captures") == list(range(20, BAD + 2))
    data = _replay(out, capsys)
    assert data["replayed"]["approximate"] is False and data["replayed"]["plain_steps"] == 4
    assert data["nonfinite"]["module"] and data["replayed_step"] == BAD
    assert not any("approximate" in w for w in data["warnings"])


def test_captures_that_miss_the_gap_give_an_approximate_replay_said_plainly(tmp_path, capsys):
    out = hf_run.train(tmp_path / "out", steps=STEPS, bad_step=BAD, save_at=SAVES,
                       capture={"since_checkpoint": False})
    assert captured_steps(out / "spikelens-captures") == [BAD - 1, BAD, BAD + 1]
    data = _replay(out, capsys)
    assert data["replayed"]["approximate"] is True and data["replayed"]["skipped_updates"] == 3
    assert data["nonfinite"]["module"]  # the all-masked batch is still named on older weights
    assert any("approximate replay: steps 21-23" in w for w in data["warnings"])


def test_batches_past_the_memory_bound_are_dropped_with_one_warning(tmp_path):
    cap = _Capturer(tmp_path, keep_mib=1 / 1024, before=1)  # 1 KiB
    cap.checkpoint_saved(0)
    with diagnostics.collecting() as diag:
        for step in range(1, 7):
            cap.observe(step, {"x": torch.zeros(64)}, 1.0)  # 256 bytes each
    assert [s for s, *_ in cap.recent] == [3, 4, 5, 6]
    assert sum("keep_mib" in line for line in diag.lines) == 1
    cap.checkpoint_saved(6)  # the trainer saves after step 6, before step 7 begins
    assert [s for s, *_ in cap.recent] == [6]  # `before` (1) step kept for the trigger's context
    cap.observe(7, {"x": torch.zeros(64)}, 1.0)
    assert [s for s, *_ in cap.recent] == [6, 7]
