"""How people write training logs by hand (session 12), each habit written here in the layout a
script of that kind prints, never copied from a real log: a CSV header and its rows printed into
a log, a list of pairs whose names are a few words, names glued to their numbers by a hyphen, a
logger's bracketed name before the message, a round counter in brackets opening each line, and
banner numbers that count nothing (`steps per epoch`, an epoch every record shares)."""
from __future__ import annotations

import pytest

from spikelens.importers.linetokens import tokenise

from conftest import curve, read_text_log as read  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def _pairs(line: str) -> dict[str, str]:
    t = tokenise(line)
    return {n: line[s: s + k] for n, s, k in t.values}


def test_a_csv_header_and_its_rows_printed_into_a_log_with_appended_sessions(tmp_path):
    # print("epoch, loss, ppl, accuracy") once per launch, then print(f"{e},  {loss:.5f},  {ppl:.5f}, {acc:.3f}")
    lines = ["epoch, loss, ppl, accuracy"]
    first = [(e, 9.0 - 0.1 * e) for e in range(8)]
    lines += [f"{e},  {v:.5f},  {2.718 ** v:.5f}, {2.0 + e:.3f}" for e, v in first]
    lines += ["epoch, loss, ppl, accuracy"]
    second = [(e, 7.0 - 0.3 * e) for e in range(6)]
    lines += [f"{e},  {v:.5f},  {2.718 ** v:.5f}, {5.0 + 3 * e:.3f}" for e, v in second]
    frame, _ = read(tmp_path, "train.log", lines)
    got = curve(frame, "loss")
    assert [s for s, _ in got] == [e for e, _ in first] + [e for e, _ in second]  # the epoch column, restarting
    assert [v for _, v in got] == pytest.approx([v for _, v in first] + [v for _, v in second], abs=1e-5)
    assert [v for _, v in curve(frame, "accuracy")][-1] == pytest.approx(20.0)
    assert set(frame["metric"].unique()) == {"loss", "ppl", "accuracy"}


def test_a_sentence_with_commas_is_no_csv_header(tmp_path):
    # the numbers under it are not its columns: a banner naming things, then lines of a table of other widths
    lines = ["Loading model, tokenizer, dataset"] + [f"{i}, {i * 2}" for i in range(6)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    from spikelens.importers.linerecords import sniff

    verdict = sniff(path.read_text(), whole=True)
    assert verdict is None or not verdict.readable


@pytest.mark.parametrize("line, values", [
    # print(f"epoch {e:3d}, content loss {c:.2f}, style loss {s:.2f}, TV loss {tv:.2f}, {dt:.2f} sec")
    ("epoch  50, content loss 5.55, style loss 46.15, TV loss 3.80, 0.03 sec",
     {"content_loss": "5.55", "style_loss": "46.15", "TV_loss": "3.80"}),
    ("Iteration 100, learning rate 0.001, loss 2.3", {"learning_rate": "0.001", "loss": "2.3"}),
    ("step 5 | train loss 2.1 | val loss 2.3", {"train_loss": "2.1", "val_loss": "2.3"}),
])
def test_a_part_of_a_list_of_pairs_is_one_name_and_its_value(line, values):
    assert _pairs(line) == values


@pytest.mark.parametrize("line", [
    "Saved model, it has 3 layers",  # a sentence's number, followed by its noun, names no metric
    "Done, waited for 3.5 seconds",
])
def test_words_before_a_number_inside_a_sentence_still_name_nothing(line):
    assert _pairs(line) == {}


def test_a_list_of_pairs_with_names_of_several_words_is_read_along_the_file(tmp_path):
    lines = ["Training started"]
    for stage in range(2):  # each stage counts its iterations from 50 again
        for k in range(1, 6):
            lines.append(f"epoch {50 * k:3d}, content loss {9 - k + stage:.2f}, style loss {40 / k:.2f}, "
                         f"TV loss {3 + 0.1 * k:.2f}, 0.03 sec")
        lines.append("change lr to 1.0e-03")
    frame, _ = read(tmp_path, "training_log.log", lines)
    got = curve(frame, "style_loss")
    assert [s for s, _ in got] == [50, 100, 150, 200, 250] * 2
    assert [v for _, v in got][:2] == pytest.approx([40.0, 20.0])


@pytest.mark.parametrize("line, values", [
    # print(f"[Train][{e:2d}][{i}/{n}]   NLL-{nll:.3f}   ACC-{acc:.3f}   LOSS-{loss:.3f}")
    ("[Train][ 1][1/22]   NLL-36.105   ACC-0.000   LOSS-36.105   TIME-2.03",
     {"NLL": "36.105", "ACC": "0.000", "LOSS": "36.105", "TIME": "2.03"}),
    ("loss: 2.5, model: gpt-3.5", {"loss": "2.5"}),  # one hyphenated word is a name, not a pair
    ("lr-1e-3 warmup-100", {}),  # no decimal number: names of settings
])
def test_names_glued_to_their_numbers_by_a_hyphen(line, values):
    assert _pairs(line) == values


def test_a_run_killed_after_one_record_of_hyphen_glued_pairs_is_read(tmp_path):
    lines = ["Seq2Seq(", "  (embedding): Embedding(2004, 300)", ")", "Number of parameters: 11657604", "",
             "Training starts ...", "[Train][ 1][1/22]   NLL-36.105   ACC-0.000   PPL-4786647.000   LOSS-36.105   TIME-2.03"]
    frame, _ = read(tmp_path, "train.log", lines)
    assert curve(frame, "LOSS") == [(1, pytest.approx(36.105))]


def test_a_loggers_bracketed_name_before_the_message_is_no_prose(tmp_path):
    # a Lua logger: `os.date() .. "[" .. opt.name .. "]: " .. msg`
    prefix = "[outputs/lstm Deep Head Motion Control]:  "
    lines = []
    for e in range(1, 9):
        lines.append(f"2016-06-20 10:{e:02d}:18{prefix}<trainer> on training set:  ")
        lines.append(f"2016-06-20 10:{e:02d}:51{prefix}Epoch {e},  Loss = {1.0 / e:.6f}  ")
        lines.append(f"2016-06-20 10:{e:02d}:59{prefix}avg. prediction errors on test data {10.0 / e:.6f}")
    frame, _ = read(tmp_path, "log.txt", lines)
    assert curve(frame, "Loss") == [(e, pytest.approx(1.0 / e, abs=1e-6)) for e in range(1, 9)]
    # a phase tag is not a logger's name: its phase stays
    assert _pairs("[valid]: loss 2.5, acc 0.5") == {"val_loss": "2.5", "val_acc": "0.5"}


def test_a_round_counter_in_brackets_opening_each_line_is_the_step(tmp_path):
    # xgboost's callback: `[{i}]\ttrain-rmse:{a:.6f}\tvalidation-rmse:{b:.6f}`; two models appended
    lines = []
    for model in range(2):
        lines.append("Will train until validation_rmse hasn't improved in 50 rounds.")
        lines += [f"[{i}]\ttrain-rmse:{7 - 0.01 * i - model:.6f}\tvalidation-rmse:{7.1 - 0.01 * i - model:.6f} "
                  for i in range(1, 31)]
    frame, _ = read(tmp_path, "train.log", lines)
    got = curve(frame, "validation-rmse")
    assert [s for s, _ in got] == list(range(1, 31)) * 2
    assert got[0][1] == pytest.approx(7.09) and got[30][1] == pytest.approx(6.09)


def test_an_r_vector_index_counts_nothing(tmp_path):
    # R's print of a one-element vector: `[1] 0.53` on every line is no counter
    lines = [f"[1] loss: {1 / (i + 1):.4f}" for i in range(8)]
    frame, _ = read(tmp_path, "train.log", lines)
    assert [s for s, _ in curve(frame, "loss")] == list(range(8))


def test_a_size_per_epoch_is_no_epoch_and_a_shared_epoch_counts_nothing(tmp_path):
    # HF Trainer's banner, then one console dict a step printed after the bar
    lines = ["***** Running training *****", "  Num examples = 7,473", "  Num Epochs = 1",
             "  Num update steps per epoch = 1,869", "  Total optimization steps = 12"]
    lines += [f"{{'loss': '{0.5 / (i + 1):.4g}', 'reward': '{0.1 * i:.3g}', 'epoch': '{0.0005 * (i + 1):.4g}'}}"
              for i in range(12)]
    frame, _ = read(tmp_path, "train.log", lines)
    assert [s for s, _ in curve(frame, "reward")] == list(range(12))
    assert _pairs("  Num update steps per epoch = 1,869") == {"update_steps_per_epoch": "1,869"}
    assert tokenise("  Num update steps per epoch = 1,869").epoch is None


def _lightning_bar(epochs: int, batches: int, frozen: bool = False) -> list[str]:
    """Lightning's progress bar as a captured log: each batch's line shows the running per-batch
    `loss` and the last epoch's results (`val_loss`, `train_loss`) until the next epoch ends."""
    lines, shown = [], ""
    for e in range(epochs):
        for b in range(1, batches + 1):
            loss = 0.5 if frozen else 1.0 / (e * batches + b)
            lines.append(f"Epoch {e}:  {100 * b // batches}%|####| {b}/{batches} [00:01<00:00,  5.30it/s, "
                         f"loss={loss:.4f}, v_num=48{shown}]")
        val, train = 0.9 - 0.01 * e, 0.8 - 0.02 * e
        lines.append(f"Epoch {e}: 100%|####| {batches}/{batches} [00:05<00:00,  5.30it/s, loss={loss:.4f}, "
                     f"v_num=48{shown}, val_loss={val:.3f}]")
        shown = f", val_loss={val:.3f}, train_loss={train:.3f}"
        lines.append(f"Epoch {e}: 100%|####| {batches}/{batches} [00:05<00:00,  5.30it/s, loss={loss:.4f}, v_num=48{shown}]")
    return lines


def test_values_a_progress_bar_shows_again_on_every_batch_are_one_value_an_epoch(tmp_path):
    frame, _ = read(tmp_path, "train.log", _lightning_bar(epochs=6, batches=10))
    train = curve(frame, "train_loss")
    assert [v for _, v in train] == pytest.approx([0.8 - 0.02 * e for e in range(6)])
    assert len({s for s, _ in train}) == 6
    assert [v for _, v in curve(frame, "val_loss")] == pytest.approx([0.9 - 0.01 * e for e in range(6)])
    assert len(curve(frame, "loss")) >= 6 * 10  # the per-batch loss changes within its epoch: kept per batch


def test_a_frozen_per_batch_value_is_kept_on_every_batch(tmp_path):
    frame, _ = read(tmp_path, "train.log", _lightning_bar(epochs=5, batches=8, frozen=True))
    assert len(curve(frame, "loss")) >= 5 * 8  # never changes: a frozen loss, not a reprinted result


def test_a_checkpoints_path_is_no_value_and_a_best_model_summary_is_no_record(tmp_path):
    # a batch evaluation of saved checkpoints: `Epoch 0001 : models\0001.pt` then its Dice, and at the
    # end the best one named again
    lines = ["Found 12 models, testing..."]
    dice = [0.60 + 0.01 * e for e in range(1, 13)]
    for e, d in enumerate(dice, 1):
        lines += [f"  Epoch {e:04d} : models\\{e:04d}.pt", f"           Dice = {d:.4f} ± 0.0759  |  Neg-Jac = 0.000%"]
    lines += ["=" * 70, f"  Best model: Epoch 0007  Dice = {dice[6]:.4f}", "Done!"]
    frame, _ = read(tmp_path, "train.log", lines)
    assert curve(frame, "Dice") == [(e, pytest.approx(d)) for e, d in enumerate(dice, 1)]
    assert "models" not in set(frame["metric"].unique())
    assert _pairs("saved to ckpt/epoch_3.pth loss 0.5") == {"loss": "0.5"}
    assert _pairs("train/loss.avg: 0.5") == {"train/loss.avg": "0.5"}  # a dotted key is no file


def test_a_relaunch_at_an_earlier_step_with_a_new_value_is_kept(tmp_path):
    lines = [f"epoch {e} loss {1.0 / e:.4f}" for e in range(1, 9)] + ["epoch 3 loss 0.9000"]
    frame, _ = read(tmp_path, "train.log", lines)
    assert curve(frame, "loss")[-1] == (3, pytest.approx(0.9))


def test_a_kill_messages_signal_is_no_metric():
    assert _pairs("[rank: 0] Received SIGTERM: 15") == {}
    assert _pairs("Process exited with signal 9") == {}
    assert _pairs("signal: 0.53, loss 2.1") == {"signal": "0.53", "loss": "2.1"}  # a metric named so stays


@pytest.mark.parametrize("banner", ["Starting training — 50 epochs, batch=256", "Training for 50 epochs"])
def test_a_banner_stating_the_epochs_is_the_plan_of_a_table_of_epochs(tmp_path, banner):
    lines = ["Device: cuda", banner, " Epoch | TrainLoss |  TrainAcc |  ValLoss"]
    lines += [f"    {e:2d} |    {1 / e:.4f} |   {50 + e:.2f}% |   {1.2 / e:.4f}" for e in range(1, 23)]
    frame, meta = read(tmp_path, "train.log", lines)
    assert [s for s, _ in curve(frame, "TrainLoss")] == list(range(1, 23))
    assert meta.get("plan.steps") == 50
    # a patience or a warm-up is no plan
    frame, meta = read(tmp_path, "other.log", ["Stop when no gain for 10 epochs", *lines[2:]])
    assert "plan.steps" not in meta


def test_an_rl_log_counts_its_episodes_and_a_relaunch_counts_again(tmp_path):
    # logging.info(f"Episode {ep} | Avg Reward: {r:.2f} | Epsilon: {eps:.3f} | Win Rate: {w:.2f}%"), two sessions appended
    lines = []
    for session, last in ((0, 60), (1, 40)):
        lines += [f"INFO:root:Episode {ep} | Avg Reward: {5 + ep / 10 + session:.2f} | Epsilon: {1 - ep / 100:.3f} | "
                  f"Win Rate: {ep / 100:.2f}%" for ep in range(0, last + 1, 10)]
    frame, _ = read(tmp_path, "training.log", lines)
    assert [s for s, _ in curve(frame, "Avg_Reward")] == list(range(0, 61, 10)) + list(range(0, 41, 10))


def test_models_trained_one_after_another_each_count_their_own_epochs(tmp_path):
    # a sweep script: for each model, print(f"[{e}/{E}] Training loss: {t:.4f}\t Validation loss: {v:.4f}")
    lines, want = [], []
    for model, (total, every) in enumerate([(6, 1), (30, 5), (6, 1), (30, 5)]):
        lines += ["", f"model: net{model}"]
        for e in range(every, total + 1, every):
            lines.append(f"[{e}/{total}] Training loss: {20 - e / 10 - model:.4f}\t Validation loss: {40 - e / 10:.4f}")
            want.append(e)
        lines.append(f"smape score:  {30 - model:.4f}")
    frame, _ = read(tmp_path, "train_log.txt", lines)
    assert [s for s, _ in curve(frame, "Training_loss")] == want


def test_an_evaluation_bar_between_training_lines_is_not_the_training_count(tmp_path):
    lines = []
    for e in range(1, 4):
        for i in range(10, 101, 10):
            lines.append(f"[{(e - 1) * 100 + i}/300] loss: {3 - e / 10 - i / 1000:.4f}")
            if i == 50:  # an evaluation bar half way, with the same key
                lines += [f"[{k}/5] loss: {2.5:.4f}" for k in range(1, 6)]
    frame, _ = read(tmp_path, "train.log", lines)
    steps = [s for s, _ in curve(frame, "loss")]
    assert steps == sorted(steps) and set(steps) == set(range(10, 301, 10))  # the eval bar's counts are no steps


def test_the_epoch_of_a_file_counted_by_batches_is_kept_one_point_an_epoch(tmp_path):
    # Keras' console: `Epoch e/E` banners over `i/N ... - loss: x` lines; the step is the batch count
    lines = []
    for e in range(1, 5):
        lines.append(f"Epoch {e}/4")
        lines += [f"{i}/5 [====] - ETA: 0s - loss: {2 - e / 10 - i / 100:.4f}" for i in range(1, 6)]
    frame, _ = read(tmp_path, "train.log", lines)
    assert [s for s, _ in curve(frame, "loss")] == list(range(1, 21))
    assert curve(frame, "epoch") == [(1, 1.0), (6, 2.0), (11, 3.0), (16, 4.0)]
    # a file counted by its epoch needs none
    frame, _ = read(tmp_path, "epochs.log", [f"Epoch {e}, loss {1 / e:.4f}" for e in range(1, 9)])
    assert "epoch" not in set(frame["metric"].unique())


def test_hf_dicts_flushed_in_bursts_after_the_bar_count_by_their_order(tmp_path):
    # stdout is buffered, stderr (the bar) is not: a bar line, then the dicts of many steps at once,
    # the first glued to the bar's line; `Epochs: 3` in the banner says how many epochs, not which
    lines = ["INFO:__main__:   Epochs: 3", "INFO:__main__:   Batch size: 8"]
    n = 0
    for burst in range(4):
        at = 50 * (burst + 1)
        lines.append(f" {at // 4}%|##        | {at}/200 [1:11:26<8:59:28, 20.82s/it]")
        for k in range(8):
            glued = lines.pop() if k == 0 else ""
            lines.append(f"{glued}{{'loss': {2 - n / 100:.4f}, 'grad_norm': 0.5, 'learning_rate': 3e-05, "
                         f"'epoch': {0.02 * (n + 1):.2f}}}")
            n += 1
    frame, meta = read(tmp_path, "training.log", lines)
    got = curve(frame, "loss")
    assert [s for s, _ in got] == list(range(32))
    assert [v for _, v in got] == pytest.approx([2 - i / 100 for i in range(32)])


def test_a_saved_checkpoints_reason_is_no_record_and_a_protocols_version_no_value(tmp_path):
    lines = []
    for e in range(1, 21):  # the best-so-far checkpoint every epoch, the record every 5
        lines.append(f"[2026-03-22 22:13:38,314][src.transfer][INFO] - Checkpoint saved → outputs/ckpt_best.pt  "
                     f"(epoch {e}, loss {10.0 / e:.4e})")
        if e % 5 == 0:
            lines.append(f"[2026-03-22 22:14:58,251][__main__][INFO] - epoch {e:6d} | loss {1.0 / e:.4e} | lr 1.00e-04")
    frame, _ = read(tmp_path, "pretrain.log", lines)
    assert curve(frame, "loss") == [(e, pytest.approx(1.0 / e, rel=1e-4)) for e in (5, 10, 15, 20)]
    assert _pairs("Saved best model at epoch 5 with val loss 0.0809") == {}
    assert _pairs('HTTP Request: GET https://huggingface.co/api/models "HTTP/1.1 200 OK"') == {}
