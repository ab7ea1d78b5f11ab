"""Keys of several words written without a colon (#24): `Batch Loss 4.59 Tokens per Sec 8992 LR 3e-4`,
`Epoch 3 Train Loss 0.512 Val Acc 91.2`. A line that is only names and their numbers is read as pairs,
the words before a number its name; a sentence (`Loaded 3 shards in 12 seconds`) stays unread. Fixtures
are written here as the scripts' own print statements."""
from __future__ import annotations

import math

import pytest

from spikelens.frame import roles_of
from spikelens.importers.linetokens import tokenise

from conftest import curve, read_text_log as read  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def _named(line: str) -> list[tuple[str, str]]:
    t = tokenise(line)
    return [(n, line[s:s + k]) for n, s, k in t.values]


def test_the_words_before_a_number_name_it():
    assert _named("Batch Loss 4.59 Tokens per Sec 8992 LR 3e-4") == [
        ("Batch_Loss", "4.59"), ("Tokens_per_Sec", "8992"), ("LR", "3e-4")]
    assert _named("[0 :   9300] loss G -2.197 loss D 57.525") == [("loss_G", "-2.197"), ("loss_D", "57.525")]
    assert _named("Global Step 10 Avg Loss 2.3 Grad Norm 1.2") == [("Avg_Loss", "2.3"), ("Grad_Norm", "1.2")]
    # parts of a list set apart by bars (fairseq, nanochat), one holding two pairs
    assert _named("| recon loss 5.681  ppl 293.15 | style loss 0.965 | cycle loss 5.682 |") == [
        ("recon_loss", "5.681"), ("ppl", "293.15"), ("style_loss", "0.965"), ("cycle_loss", "5.682")]


def test_sentences_and_lines_naming_no_measure_stay_unread():
    assert _named("Using 8 GPUs with batch size 32") == []
    assert _named("Loaded 3 shards in 12 seconds") == [("Loaded", "3")]  # as before: one word, one number
    assert _named("Num Images 1200 Num Classes 10") == []  # no measure among the names


def test_a_log_of_spaced_keys_is_read_with_values_steps_roles_and_plan(tmp_path):
    # print(f"Step {s}/{total} Batch Loss {loss:.4f} Tokens per Sec {tps} LR {lr:.1e}")
    total = 400
    lines = [f"Training for {total} steps"]
    want = []
    for s in range(10, total + 1, 10):
        loss = 5.0 * math.exp(-s / 150) + 1.2
        want.append((s, round(loss, 4)))
        lines.append(f"Step {s}/{total} Batch Loss {loss:.4f} Tokens per Sec {8900 + s} LR {3e-4 * (1 - s / 1000):.1e}")
    frame, meta = read(tmp_path, "train.log", lines)
    got = curve(frame, "Batch_Loss")
    assert [s for s, _ in got] == [s for s, _ in want]
    assert [v for _, v in got] == pytest.approx([v for _, v in want])
    assert curve(frame, "Tokens_per_Sec")[0] == (10, 8910.0)
    assert curve(frame, "LR")[0] == (10, pytest.approx(3.0e-4))
    roles = roles_of(frame)
    assert roles["Batch_Loss"] == "loss" and roles["LR"] == "lr" and roles["Tokens_per_Sec"] == "throughput"
    assert meta.get("plan.steps") == total


def test_an_epoch_log_of_spaced_keys_reads_train_and_validation(tmp_path):
    # print(f"Epoch {e} Train Loss {tl:.3f} Val Loss {vl:.3f} Val Top1 Acc {acc:.1f}"), max_epochs in the banner
    lines = ["max_epochs: 30"]
    for e in range(1, 21):
        lines.append(f"Epoch {e} Train Loss {2.0 / e:.3f} Val Loss {2.2 / e + 0.1:.3f} Val Top1 Acc {50 + e:.1f}")
    frame, meta = read(tmp_path, "train.log", lines)
    assert [s for s, _ in curve(frame, "Train_Loss")] == list(range(1, 21))
    assert curve(frame, "Train_Loss")[2] == (3, pytest.approx(0.667))
    assert curve(frame, "val_Loss")[-1] == (20, pytest.approx(0.21))
    assert curve(frame, "val_Top1_Acc")[-1] == (20, pytest.approx(70.0))
    roles = roles_of(frame)
    assert roles["Train_Loss"] == "loss" and roles["val_Loss"] == "eval_loss" and roles["val_Top1_Acc"] == "accuracy"
    assert meta.get("plan.steps") == 30


def test_the_same_log_with_and_without_colons_reads_the_same(tmp_path):
    colons, spaced = [], []
    for s in range(1, 60):
        loss, ppl = 4.0 * math.exp(-s / 20) + 0.5, math.exp(4.0 * math.exp(-s / 20) + 0.5)
        colons.append(f"iter {s} Train Loss: {loss:.5f} Train PPL: {ppl:.3f} Grad Norm: {1 + s % 3:.2f}")
        spaced.append(f"iter {s} Train Loss {loss:.5f} Train PPL {ppl:.3f} Grad Norm {1 + s % 3:.2f}")
    a, _ = read(tmp_path, "colons.log", colons)
    b, _ = read(tmp_path, "spaced.log", spaced)
    for name in ("Train_Loss", "Train_PPL", "Grad_Norm"):
        assert curve(a, name) == curve(b, name) and len(curve(a, name)) == 59
