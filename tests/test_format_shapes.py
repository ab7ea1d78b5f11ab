"""Line shapes the harvested logging statements showed the general reader missed (#24, session
13's format-string corpus, `benchmarks/format_strings.py`), each written here in the layout of
its print statement (never copied from a log): counters side by side (`[e/E][i/I]`, `Train: 0 [
10/100]`), a counter that counts the whole run beside an epoch, an epoch several records share,
numbers named by the words after them, a table with a duration column, a key table's
timesteps inside a group; the epoch kept as a metric and findings told in epochs; and the one
placement of a table cell for both kinds of table (`linetokens._place`)."""
from __future__ import annotations

import pytest

from spikelens import api, diagnostics
from spikelens.importers.linetokens import header_cells, table_row
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def test_counters_side_by_side_give_epoch_and_step(tmp_path):
    """DCGAN's `[e/E][i/I]`: the first counter is the epoch the second runs within."""
    lines = [f"[{e}/5][{i}/300]\tLoss_D: {loss(3 * e + i // 100) * 0.5:.4f}\tLoss_G: {loss(3 * e + i // 100):.4f}"
             for e in range(5) for i in (0, 100, 200)]
    got = curve(load(tmp_path, lines), "Loss_G")
    assert [s for s, _ in got] == [e * 300 + i for e in range(5) for i in (0, 100, 200)]
    assert [v for _, v in got] == [round(loss(k), 4) for k in range(15)]


def test_a_whole_number_right_before_a_bracketed_counter_is_its_epoch(tmp_path):
    """timm's `Train: 0 [  50/1251 (  4%)]`: `Train: 0` is the epoch, not a metric `Train`."""
    lines = [f"Train: {e} [{i:>4d}/1251 ({100 * i // 1251:>3d}%)]  Loss: {loss(2 * e + i // 1000):#.3g} "
             f"({loss(2 * e):#.3g})  LR: 1.000e-03" for e in range(4) for i in (0, 1000)]
    frame = load(tmp_path, lines)
    assert "Train" not in frame.get_column("metric").to_list()
    steps = [s for s, _ in curve(frame, "Loss")]
    assert steps == sorted(steps) and len(set(steps)) == 8
    assert [v for _, v in curve(frame, "epoch")] == [0.0, 1.0, 2.0, 3.0]


def test_a_counter_that_keeps_rising_across_epochs_counts_the_whole_run(tmp_path):
    """PaddleSeg's `epoch: 2, iter: 110/3000`: the iteration is the step as printed."""
    lines = [f"2024-05-01 12:00:00 [INFO]\t[TRAIN] epoch: {k // 5 + 1}, iter: {10 * (k + 1)}/3000, "
             f"loss: {loss(k):.4f}, lr: 0.010000, batch_cost: 0.2345 | ETA 05:12:34" for k in range(20)]
    assert [s for s, _ in curve(load(tmp_path, lines), "loss")] == [10 * (k + 1) for k in range(20)]


def test_an_epoch_several_records_share_gives_way_to_a_key_that_rises(tmp_path):
    """Marian's `Ep. 1 : Up. 500 : ... Cost`, tianshou's `Epoch #1: ... env_step=1000, loss=`:
    the epoch repeats over its records, the updates count them."""
    marian = [f"[2024-05-01 12:00:00] Ep. {k // 10 + 1} : Up. {500 * (k + 1)} : Sen. {12345 * (k + 1) + 7 * k * k:,} : "
              f"Cost {loss(k):.8f} : Time 30.00s : 12345.67 words/s" for k in range(30)]
    frame = load(tmp_path, marian)
    assert [s for s, _ in curve(frame, "Cost")] == [500 * (k + 1) for k in range(30)]


def test_numbers_named_by_the_words_after_them(tmp_path):
    """darknet's ` 10: 1.65, 2.74 avg loss, 0.001 rate, 0.31 seconds, 640 images`."""
    lines = [f" {10 * (k + 1)}: {loss(k) * 1.1:f}, {loss(k):f} avg loss, 0.001000 rate, 0.310358 seconds, "
             f"{640 * (k + 1)} images, {12.3 - k / 10:f} hours left" for k in range(12)]
    frame = load(tmp_path, lines)
    assert [v for _, v in curve(frame, "avg_loss")] == [round(loss(k), 6) for k in range(12)]
    assert {"rate", "seconds", "hours_left"} <= set(frame.get_column("metric").to_list())


def test_a_table_whose_time_column_holds_durations(tmp_path):
    """fastai's table: `00:12` under `time` is no word that ends the row."""
    lines = ["epoch     train_loss  valid_loss  accuracy  time    "]
    lines += [f"{e:<10}{loss(e):<12.6f}{loss(e) + 0.1:<12.6f}{0.5 + e / 100:<10.6f}00:12     " for e in range(10)]
    frame = load(tmp_path, lines)
    assert curve(frame, "train_loss") == [(e, round(loss(e), 6)) for e in range(10)]


def test_a_key_table_counts_by_the_timesteps_inside_a_group(tmp_path):
    """OpenAI baselines' box: `misc/total_timesteps` is the step, as SB3's `time/total_timesteps` is."""
    lines = []
    for k in range(6):
        rows = [("eprewmean", f"{20 + 5 * k}"), ("fps", "1234"), ("loss/policy_loss", f"{-0.01 * (k + 1):.3g}"),
                ("loss/value_loss", f"{loss(k):.3g}"), ("misc/nupdates", str(k + 1)),
                ("misc/total_timesteps", str(2048 * (k + 1)))]
        lines += ["-" * 36] + [f"| {a:<20} | {b:<9}|" for a, b in rows] + ["-" * 36]
    frame = load(tmp_path, lines, "log.txt")
    assert [s for s, _ in curve(frame, "loss/value_loss")] == [2048 * (k + 1) for k in range(6)]


@pytest.mark.parametrize("header, row, epoch, step, values", [
    # a whitespace-aligned table: columns told by their edges
    ("  iter   train_epoch   loss    iters_per_epoch", "    10             3    2.5                500",
     "3", ("iter", "10"), {"loss": "2.5", "iters_per_epoch": "500"}),
    # a table of `|` groups: cells told by their order in each group
    ("lr iter train_epoch | loss top-1 | iters_per_epoch", "0.1 10 3 | 2.5 0.9 | 500",
     "3", ("iter", "10"), {"lr": "0.1", "loss": "2.5", "top-1": "0.9", "iters_per_epoch": "500"}),
])
def test_both_kinds_of_table_place_a_cell_alike(header, row, epoch, step, values):
    """One placement (`_place`): a name whose last word is an epoch's is the epoch (not when a rate
    word makes it a size: `iters_per_epoch`), a step's name the step, anything else a value."""
    t = table_row(row, header_cells(header))
    assert t is not None
    assert row[t.epoch[0]: sum(t.epoch)] == epoch
    assert (t.step[0], row[t.step[1]: sum(t.step[1:])]) == step
    assert {n: row[a: a + k] for n, a, k in t.values} == values


def test_findings_in_a_log_counted_by_steps_say_their_epoch(tmp_path, no_workers):
    """`Epoch [e/E], Step [s/S], Loss:` with a spike in epoch 14: the epoch is kept as a metric,
    so the finding says the epoch a person counts in."""
    lines, k = [], 0
    for e in range(1, 21):
        for s in range(1, 16):
            value = loss(k) * (4.0 if (e, s) == (14, 8) else 1.0)
            lines.append(f"Epoch [{e}/20], Step [{s * 10}/150], Loss: {value:.4f}")
            k += 1
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    assert [v for _, v in curve(api.load(path), "epoch")] == [float(e) for e in range(1, 21)]
    spikes = [f for f in run.findings if f.kind == "spike" and f.metric == "Loss"]
    assert spikes and all(f.evidence.get("epoch") == 14 for f in spikes)


def test_evaluations_after_a_bar_that_only_says_its_speed(tmp_path):
    """A tqdm bar over epochs prints only its speed (`35.3s/it`), the script an evaluation each
    epoch (`Epoch 3: Validation Accuracy: 12.73%`), the first glued to the bar: the evaluations
    are the run's curve, counted by their epoch, not by the bar's stalled counter."""
    bar = [f"\r{100 * i // 1000:3d}%|          | {i}/1000 [00:35<9:53:28, {35 + i / 100:.2f}s/it]" for i in range(6)]
    lines = ["".join(bar) + f"Epoch 1: Validation Accuracy: {10.0:.2f}%"]
    lines += [f"Epoch {e}: Validation Accuracy: {10 + e / 2:.2f}%" for e in range(2, 41)]
    frame = load(tmp_path, lines, "nohup_train.out")
    got = curve(frame, "val_Accuracy_pct")
    assert [s for s, _ in got] == list(range(1, 41))
    assert got[-1][1] == 30.0


def _keras() -> list[str]:
    out = []
    for e in range(1, 7):
        out += [f"Epoch {e}/40", f"485/485 [==============================] - 3s 6ms/step - loss: {loss(e):.4f} - accuracy: 0.9"]
    return out


def _fairseq() -> list[str]:
    return [f"2021-01-01 12:00:00 | INFO | train_inner | epoch {e:03d}:    {i * 100} / 300 loss={loss(3 * e + i):.3f}, "
            f"ppl=12.3, wps=12345.6, num_updates={300 * (e - 1) + 100 * i}, lr=0.0001" for e in range(1, 7) for i in (1, 2, 3)]


def _epoch_step() -> list[str]:
    return [f"Epoch [{e}/6], Step [{s * 100}/300], Loss: {loss(3 * e + s):.4f}" for e in range(1, 7) for s in (1, 2, 3)]


def _lightning() -> list[str]:
    return ["".join(f"\rEpoch {e}: {int(100 * n / 28):3d}%|████      | {n}/28 [00:01<00:00, 20.1it/s, v_num=0, "
                    f"train_loss={loss(3 * e + n // 10):.3f}]" for n in (1, 10, 19, 28)) for e in range(6)]


@pytest.mark.parametrize("lines, first", [(_keras, 1.0), (_fairseq, 1.0), (_epoch_step, 1.0), (_lightning, 0.0)])
def test_the_epoch_beside_the_step_is_kept(tmp_path, lines, first):
    """Keras' `Epoch 5/40` over `485/485` lines, fairseq's `epoch 005:`, `Epoch [e/E], Step [s/S]`,
    Lightning's `Epoch 3: 100%|..| 28/28`: counted by steps, with the epoch kept one point an epoch."""
    frame = load(tmp_path, lines())
    epochs = curve(frame, "epoch")
    assert [v for _, v in epochs] == [first + i for i in range(6)]
    assert [s for s, _ in epochs] == sorted({s for s, _ in epochs}) and epochs[1][0] > epochs[0][0]
