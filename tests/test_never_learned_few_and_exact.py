"""Never learned as a senior engineer reads it (#25, session 23).

- A run of a few points at a chance level from its first point: a BERT fine-tune whose four epoch averages
  are 0.6957, 0.6926, 0.6918, 0.6912 never left ln 2, however few points say so (`_few_at_chance`).
- A loss at ln k for a class count no list holds: a 24-class VGG whose epoch losses are 3.1759, 3.1758,
  3.1757 ... (ln 24 = 3.1781) after an untrained first epoch at 5.57 predicts uniformly; a loss that
  spreads under 0.1% predicts nothing per input, so any ln k up to 100 names its chance (`exact_chance`).
- A noisy per-batch loss whose 16% fall hides in its noise, while the epoch averages the same script prints
  fall in order (0.434, 0.357, 0.353, 0.341, 0.344): the model learned; a note, never an alarm
  (`_other_view_fell`).
The look-alikes stay quiet: a few points that fell from ln 2, a few points at a level that is no ln k, a
spread loss near ln 24 (a model that predicts per input), a flat noisy loss whose other views are flat too.
Written as the console lines such scripts print (a SLURM `.out`, a bracketed-time log, an `Epoch [e/E], Step
[s/S]` printout)."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics


def _report(path):
    with diagnostics.collecting():
        return api.analyze(path)


def _plateaus(path, loud_only: bool = True) -> list:
    return [f for r in _report(path).runs for f in r.findings
            if f.kind == "plateau" and (f.severity != "info" or not loud_only)]


def _slurm(tmp_path, losses, name: str = "slurm-4242.out"):
    lines = ["cuda"] + [f"Epoch {i + 1}: Average Training Loss = {v:.5f}" for i, v in enumerate(losses)]
    path = tmp_path / name
    path.write_text("\n".join(lines + ["Validation Accuracy: 0.5435"]) + "\n")
    return path


def test_four_epochs_at_ln_2_never_learned(tmp_path):
    (f,) = _plateaus(_slurm(tmp_path, [0.69565, 0.69260, 0.69176, 0.69124]))
    assert f.evidence["reading"] == "chance" and f.evidence["chance_classes"] == 2 and f.severity == "warning"


def test_three_epochs_at_ln_3_is_a_note(tmp_path):
    (f,) = _plateaus(_slurm(tmp_path, [1.0991, 1.0979, 1.0984]), loud_only=False)
    assert f.evidence["chance_classes"] == 3 and f.severity == "info"


@pytest.mark.parametrize("losses", [[0.6957, 0.6712, 0.6523, 0.6302],  # fell from ln 2: learning slowly
                                    [0.5403, 0.5399, 0.5402, 0.5398],  # flat, but at no chance level
                                    [0.6931, 0.6931]])  # two points say nothing
def test_a_few_points_that_fell_or_sit_at_no_chance_level_stay_quiet(tmp_path, losses):
    assert _plateaus(_slurm(tmp_path, losses)) == []


def _bracketed(tmp_path, train: list[float], val: float = 3.1755, name: str = "train.log"):
    lines = ["[2025-03-01 10:00:00] 训练模型: VGG16"]
    for i, (e, v) in enumerate(zip([1, 5, 10, 15, 20, 25, 30, 35, 40, 45], train)):
        lines.append(f"[2025-03-01 10:{i + 1:02d}:00] Epoch [{e}/{5 * (len(train) - 1)}] Train Loss: {v:.4f}, "
                     f"Acc: 0.0450 | Val Loss: {val:.4f}, Acc: 0.0472")
    lines.append("[2025-03-01 11:00:00] 训练完成")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_vgg_flat_at_ln_24_after_its_first_epoch_never_learned(tmp_path):
    (f,) = _plateaus(_bracketed(tmp_path, [5.5733, 3.1759, 3.1758, 3.1757, 3.1758, 3.1758, 3.1758]))
    assert f.evidence["chance_classes"] == 24 and f.severity == "warning"


def test_a_longer_run_flat_at_ln_24_never_learned(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "train.log"
    loss = np.log(24) * (0.9993 + 0.0001 * rng.standard_normal(60))
    loss[0] = 5.1
    path.write_text("\n".join(f"[2025-03-01 10:{i // 60:02d}:{i % 60:02d}] Epoch [{i + 1}/60] Train Loss: {v:.5f}"
                              for i, v in enumerate(loss)) + "\n")
    (f,) = _plateaus(path)
    assert f.evidence["chance_classes"] == 24


@pytest.mark.parametrize("level", [3.1758, 3.1000])
def test_a_loss_that_spreads_per_input_is_not_at_an_unlisted_chance(tmp_path, level):
    """A loss near ln 24 whose points spread by percents answers per input: no chance reading; nor does a
    flat level between two ln k (3.10 is ln 22.2)."""
    rng = np.random.default_rng(1)
    spread = 0.03 if level > 3.15 else 0.0
    loss = [5.5733] + list(level * np.exp(spread * rng.standard_normal(6)))
    assert [f for f in _plateaus(_bracketed(tmp_path, loss)) if f.evidence.get("reading") == "chance"] == []


def _steps(tmp_path, batch: np.ndarray, epoch_means: list[float], val: list[float], name: str = "train_log.txt"):
    """`Epoch [e/E], Step [s/S], Loss: x` every 10 steps, an epoch summary line after each epoch."""
    per = batch.size // len(epoch_means)
    lines = ["Using device: cpu"]
    for e, (tl, vl) in enumerate(zip(epoch_means, val)):
        for j in range(per):
            loss = batch[e * per + j]
            lines.append(f"Epoch [{e + 1}/{len(epoch_means)}], Step [{10 * (j + 1)}/99], Loss: {loss:.4f}")
        lines.append(f"Epoch [{e + 1}/{len(epoch_means)}], Train Loss: {tl:.4f}, Train Acc: 0.9400, "
                     f"Val Loss: {vl:.4f}, Val Acc: 0.9300")
    path = tmp_path / name
    path.write_text("\n".join(lines + ["Model saved to models/model.pth"]) + "\n")
    return path


def _noisy(seed: int, fall: float, n: int = 45, swing: float = 0.2) -> np.ndarray:
    """Per-batch losses around 0.4 that swing `swing` batch to batch and fall `fall` (log) over the run."""
    rng = np.random.default_rng(seed)
    return 0.40 * np.exp(-fall * np.arange(n) / n + swing * rng.standard_normal(n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_noisy_loss_whose_epoch_averages_fell_in_order_learned(tmp_path, seed):
    path = _steps(tmp_path, _noisy(seed, 0.15), [0.4342, 0.3574, 0.3525, 0.3414, 0.3435],
                  [0.4097, 0.3692, 0.3514, 0.3475, 0.3517])
    assert _plateaus(path) == []


@pytest.mark.parametrize("seed", [0, 1])
def test_a_noisy_flat_loss_whose_other_views_are_flat_never_learned(tmp_path, seed):
    rng = np.random.default_rng(seed + 10)
    means = list(0.40 * np.exp(0.01 * rng.standard_normal(5)))
    path = _steps(tmp_path, _noisy(seed, 0.0, 100, 0.05), means, list(0.41 * np.exp(0.01 * rng.standard_normal(5))))
    (f,) = _plateaus(path)
    assert f.evidence["reading"] == "never"


def test_a_converged_tail_that_happens_to_sit_near_ln_20_is_not_at_chance(tmp_path):
    """A loss that fell from 6.0 and converged at 2.9957 (ln 20 = 2.9957) with smooth block medians:
    the level of a model that learned, not a uniform prediction (an unlisted ln k only counts from the
    run's first tenth)."""
    rng = np.random.default_rng(4)
    t = np.arange(3000)
    loss = (2.9957 + 3.0 * np.exp(-t / 300)) * np.exp(0.0003 * rng.standard_normal(t.size))
    path = tmp_path / "loss.csv"
    path.write_text("step,loss\n" + "\n".join(f"{i},{v:.6f}" for i, v in enumerate(loss)) + "\n")
    assert [f for f in _plateaus(path, loud_only=False) if f.evidence.get("chance_classes")] == []


def test_another_loss_term_that_fell_is_no_view_of_the_flat_loss(tmp_path):
    """A reconstruction term that falls while the classifier's loss stays flat (a capsule net's decoder
    learns, its classifier does not): the flat loss never learned."""
    rng = np.random.default_rng(5)
    batch = _noisy(0, 0.0, 100, 0.05)
    lines = []
    for e in range(5):
        for j in range(20):
            lines.append(f"Epoch [{e + 1}/5], Step [{10 * (j + 1)}/99], Loss: {batch[e * 20 + j]:.4f}")
        lines.append(f"Epoch [{e + 1}/5], Train Loss: {0.40 * np.exp(0.01 * rng.standard_normal()):.4f}, "
                     f"Recon Loss: {0.9 * np.exp(-0.2 * e):.4f}")
    path = tmp_path / "train_log.txt"
    path.write_text("\n".join(lines) + "\n")
    (f,) = _plateaus(path)
    assert f.evidence["reading"] == "never"
