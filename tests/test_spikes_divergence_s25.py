"""Spikes, short-run divergence and oscillation judged as an engineer reads them (#25, session 25), each
with a case that must fire and one that must stay silent. Written as Lightning's CSVLogger writes
metrics.csv and as Keras' CSVLogger writes its log.

- A one-step jump is a bad batch only where it stands out of the run's own point-to-point moves
  (`spikes.bad_batch_z`): a converged classifier's per-batch cross-entropy near zero moves by factors
  from batch to batch, and one hard batch 15-30x its median is four of those moves.
- A short run's eval loss that rose while its training loss did not fall over the same steps diverged
  (it is not overfitting: nothing was fitted); a small validation set that swings back up after one
  low evaluation did not (`divergence.short_rise` measures the rise from the minimum and its neighbours).
- A spike that came most of the way down before the loss's trend later turned up is its own event,
  not the divergence's first swing (`reconcile._fell_back_before`).
- A stalled oscillation of a loss at its floor, whose swings are a sliver of what it fell, is a note
  (`oscillation.floor_share`)."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _lightning(tmp_path, loss, name: str = "train_loss") -> list:
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text(f"epoch,step,{name}\n" + "\n".join(f"0,{i},{v:.6g}" for i, v in enumerate(loss)) + "\n")
    return _findings(path.parent)


def _keras(tmp_path, loss, val_loss) -> list:
    path = tmp_path / "training.log"  # tf.keras.callbacks.CSVLogger
    path.write_text("epoch,loss,val_loss\n" + "\n".join(f"{i},{a:.6g},{b:.6g}" for i, (a, b) in enumerate(zip(loss, val_loss)))
                    + "\n")
    return _findings(path)


def _findings(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings]


def _loud(findings, kind: str) -> list:
    return [f for f in findings if f.kind == kind and f.severity in ("warning", "error")]


def _converged_classifier(n: int, seed: int) -> np.ndarray:
    """Per-batch cross-entropy of a classifier at its floor: lognormal around 0.006, moving 2x batch to batch."""
    return 0.006 * np.exp(0.8 * np.random.default_rng(seed).standard_normal(n))


def test_SL101_hard_batches_of_a_converged_classifier_are_its_noise(tmp_path):
    """One late epoch of a converged classifier (46 batches) and a longer stretch (300): batches at
    15-30x the median are the floor's own moves, not bad batches."""
    for n, sub in ((46, "a"), (300, "b")):
        loss = _converged_classifier(n, 4)
        loss[[9, n - 15]] = [0.1, 0.056]
        (tmp_path / sub).mkdir()
        fs = _lightning(tmp_path / sub, loss)
        assert _loud(fs, "spike") == []
        if n == 46:  # still listed, as a note that says why
            (f,) = [f for f in fs if f.kind == "spike"]
            assert f.evidence["note_because"] == "within_its_moves" and 9 in f.evidence["steps"]


def test_SL101_a_bad_batch_in_a_smooth_run_is_listed(tmp_path):
    """The same 17x jump in a run whose batches move 4% is a bad batch, listed with its step."""
    loss = 0.6 * np.exp(-np.arange(300) / 400) * (1 + 0.04 * np.random.default_rng(5).standard_normal(300))
    loss[180] *= 17.0
    (f,) = _loud(_lightning(tmp_path, loss), "spike")
    assert f.evidence["bad_batch"] and f.evidence["steps"] == [180]


def test_SL202_eval_loss_rising_while_training_loss_never_fell_diverged(tmp_path):
    """14 epochs: a training loss far above any cross-entropy after a wild first epoch, never settling,
    and a validation loss that climbs 32 -> 70: the run diverged (nothing was fitted to overfit)."""
    loss = [3.74e6, 133.4, 2005, 187.2, 2732, 646.7, 1574, 963.8, 601.7, 2422, 659.4, 1360, 1040, 957.2]
    val = [41.39, 32.41, 35.53, 36.59, 42.2, 46.33, 47.94, 48.77, 49.49, 54.63, 56.35, 61.84, 70.63, 68.5]
    (f,) = _loud(_keras(tmp_path, loss, val), "divergence")
    assert f.metric == "val_loss" and f.start_step <= 2
    assert "did not fall over the same steps" in f.message and "not overfitting" in f.message


def test_SL202_a_small_validation_set_swinging_back_after_one_low_epoch_did_not_diverge(tmp_path):
    """16 epochs at chance: the validation loss wanders 1.44-2.15, dips to 1.33 once and is back at
    2.1 the next epoch: that is where it had been, not a divergence."""
    loss = [0.744, 0.679, 0.759, 0.704, 0.681, 0.677, 0.689, 0.803, 0.768, 0.725, 0.734, 0.737, 0.798, 0.717, 0.759, 0.696]
    val = [1.44, 1.609, 1.689, 1.719, 1.601, 1.554, 2.15, 1.989, 1.492, 1.527, 1.334, 2.106, 1.887, 1.692, 1.691, 1.917]
    assert _loud(_keras(tmp_path, loss, val), "divergence") == []


def _spike_then_creep(seed: int) -> np.ndarray:
    """1.0 +- 5% for 14 points, 76 at the 15th, 5-8 for 17 points, back near 1.2-1.7, then a creep to ~5."""
    rng = np.random.default_rng(seed)
    n = 1500
    loss = 1.0 * (1 + 0.05 * rng.standard_normal(n))
    loss[14] = 76.4
    loss[15:32] = rng.uniform(5.0, 8.5, 17)
    loss[32:75] = 1.5 * (1 + 0.08 * rng.standard_normal(43))
    loss[75:] = np.exp(np.linspace(np.log(1.5), np.log(5.0), n - 75)) * (1 + 0.08 * rng.standard_normal(n - 75))
    return loss


def test_SL101_SL202_a_spike_that_came_down_before_the_loss_turned_up_is_its_own_event(tmp_path):
    fs = _lightning(tmp_path, _spike_then_creep(6), "loss")
    (spike,) = _loud(fs, "spike")
    assert spike.peak_step == 14 and spike.recovery == "slow" and "came most of the way down" in spike.message
    (div,) = _loud(fs, "divergence")
    assert div.start_step > 32


def test_SL101_a_jump_that_climbs_on_never_came_back(tmp_path):
    """A loss that jumps 4x and keeps climbing from there never came down: one event, the jump that
    stayed (`stayed.py`), never a spike that 'came most of the way down'."""
    rng = np.random.default_rng(7)
    n = 1500
    loss = 1.0 * (1 + 0.05 * rng.standard_normal(n))
    loss[400:] = 4.0 * np.exp(np.linspace(0, np.log(3.0), n - 400)) * (1 + 0.05 * rng.standard_normal(n - 400))
    fs = _lightning(tmp_path, loss, "loss")
    (spike,) = _loud(fs, "spike")
    assert spike.recovery == "none" and "came most of the way down" not in spike.message


def _floor_then_swings(start: float, level: float, seed: int) -> np.ndarray:
    """A loss falling from `start` to `level` over 300 steps, then 1,500 steps at it whose steps
    800-1100 swing 4x wider than elsewhere."""
    rng = np.random.default_rng(seed)
    fall = np.exp(np.linspace(np.log(start), np.log(level), 300))
    noise = 0.03 * rng.standard_normal(1500)
    noise[500:800] *= 4.0
    return np.concatenate([fall * (1 + 0.03 * rng.standard_normal(300)), level * np.exp(noise)])


def test_SL203_swings_of_a_loss_at_its_floor_are_a_note(tmp_path):
    """0.09 -> 0.004, then swings of about 0.0005 (a twentieth of its level, 0.6% of its fall): its
    peaks still stand over 2% of where it started, so only the share of the fall tells them apart."""
    fs = _lightning(tmp_path, _floor_then_swings(0.09, 0.004, 8))
    (f,) = [f for f in fs if f.kind == "oscillation"]
    assert f.severity == "info" and f.evidence["note_because"] == "swings_at_floor"


def test_SL203_swings_of_a_loss_that_stalled_high_are_an_alarm(tmp_path):
    """The same swings on a loss that fell only from 3.3 to 2.4 and stalled there cost its progress."""
    (f,) = _loud(_lightning(tmp_path, _floor_then_swings(3.3, 2.4, 8)), "oscillation")
    assert f.evidence["stalled"] and "note_because" not in f.evidence


def _few_shot_job(tmp_path, loss) -> list:
    """A few-shot fine-tune's job.out: one `LR: x, Acc: y, Loss: z` line per iteration, printed to 4 decimals."""
    path = tmp_path / "job.out"
    lr = np.geomspace(2e-4, 1e-6, len(loss))
    path.write_text("**** Zero-shot CLIP's test accuracy: 54.53. ****\n" + "".join(
        f"LR: {a:.6f}, Acc: {100.0 if v < 0.1 else 50.0:.4f}, Loss: {v:.4f}\n" for a, v in zip(lr, loss)))
    return _findings(path)


def test_SL101_a_memorised_set_printing_zeros_has_no_spike(tmp_path):
    """1.2 -> 1e-4 within 60 iterations, then 0.0000-0.01 with one hard augmentation at 0.25: the
    zeros are what the log prints of a loss under 5e-5, and the 0.25 is its floor's noise."""
    rng = np.random.default_rng(9)
    loss = np.concatenate([np.geomspace(1.2, 0.005, 60), 1e-4 * np.exp(2.0 * rng.standard_normal(440))])
    loss[232] = 0.2522
    assert _loud(_few_shot_job(tmp_path, loss), "spike") == []


def test_SL101_a_jump_of_a_loss_printed_to_4_decimals_is_a_spike(tmp_path):
    """A loss falling 1.2 -> 0.5 (+- 3%) printed the same way, one batch at 9x: a bad batch."""
    loss = (0.5 + 0.7 * np.exp(-np.arange(500) / 100)) * (1 + 0.03 * np.random.default_rng(10).standard_normal(500))
    loss[232] = 4.5
    (f,) = _loud(_few_shot_job(tmp_path, loss), "spike")
    assert f.peak_step is not None and f.evidence.get("bad_batch")


def _selfplay(tmp_path, wins: np.ndarray) -> list:
    """A PPO self-play agent's metrics.jsonl: one row per game with its outcome (+0.999 won, -1.001 lost),
    and a train row every 20 games."""
    import json

    rows, step = [], 0
    for i, won in enumerate(wins):
        step += 90 + i % 37
        rows.append({"global_step": step, "episode": i, "metrics/ep_length": 40 + i % 11,
                     "metrics/ep_reward": 0.999 if won else -1.001})
        if i % 20 == 19:
            rows.append({"global_step": step, "train/pg_loss": -0.01 * (1 + i % 3), "train/v_loss": 0.09 + 0.001 * (i % 5),
                         "train/entropy": 1.2 - i / 1e4})
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return _findings(path)


def _reward_reading(tmp_path, wins: np.ndarray) -> list:
    """The divergence detector's own reading of the games' outcomes (the report may fold it into a
    flat-reward reading of the same curve)."""
    from spikelens.api import load_runs
    from spikelens.detect.base import RunContext
    from spikelens.detect.divergence import DivergenceDetector
    from spikelens.detect.engine import series_of
    from spikelens.frame import roles_of
    from spikelens.stitching import stitch_run

    _selfplay(tmp_path, wins)
    (run,) = load_runs(tmp_path / "metrics.jsonl")
    stitched = stitch_run(run)
    roles = roles_of(stitched.frame)
    ctx = RunContext(run=run.name, roles=roles, series=series_of(stitched.frame, roles), frame=stitched.frame)
    return DivergenceDetector().detect(ctx.series["metrics/ep_reward"], ctx)


def test_SL202_games_won_at_a_steady_rate_did_not_collapse(tmp_path):
    """5,000 games won 45% of the time throughout: outcomes of +-1 whose running medians flip between
    'won' and 'lost' (a lucky stretch reads 'won') are a steady win rate, no collapse."""
    assert _reward_reading(tmp_path, np.random.default_rng(11).random(5000) < 0.45) == []


def test_SL202_a_win_rate_that_fell_from_70_to_5_percent_collapsed(tmp_path):
    rng = np.random.default_rng(12)
    (f,) = _reward_reading(tmp_path, rng.random(5000) < np.where(np.arange(5000) < 3000, 0.7, 0.05))
    assert f.severity == "warning" and 2800 * 90 < f.start_step < 3100 * 130 and "collapsed" in f.message


def test_SL202_eval_loss_rising_while_training_loss_sat_at_its_floor_is_no_divergence(tmp_path):
    """16 epochs: the training loss reached its floor by epoch 6 and stays there (memorised, drifting up
    a little in its noise), the validation loss bottoms at epoch 6 and climbs: overfitting's reading,
    not a divergence."""
    loss = [0.74, 0.52, 0.3, 0.12, 0.03, 0.0048, 0.0047, 0.0052, 0.0055, 0.0049, 0.0061, 0.0058, 0.0053, 0.006, 0.0057, 0.0062]
    val = [0.9, 0.8, 0.72, 0.68, 0.66, 0.65, 0.7, 0.78, 0.84, 0.9, 0.99, 1.05, 1.12, 1.2, 1.26, 1.31]
    assert _loud(_keras(tmp_path, loss, val), "divergence") == []
