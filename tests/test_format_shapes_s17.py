"""Line shapes the fresh session-17 harvest of logging statements showed unread, each written here in
the layout of its print statement (never copied from a log): records printed as Python sequences
(`print([epoch, i, loss.item()])`, a tuple, quoted numbers, a tensor's repr), read as the bare
numbers inside them and named by their columns' shape (`columnshapes`), as `0 10 2.71` is."""
from __future__ import annotations

import pytest

from spikelens import api, diagnostics
from spikelens.errors import SpikelensError
from spikelens.importers.barenumbers import BareNumbersImporter
from spikelens.importers.linetokens import tokenise
from spikelens.importers.printedrows import unwrap_line
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


@pytest.mark.parametrize("line, bare", [
    ("[3, 40, 2.71]", "3, 40, 2.71"),
    ("(3, 2.75, 2.9)", "3, 2.75, 2.9"),
    ("[3, '2.74232', '1.65190', '0.301']", "3, 2.74232, 1.65190, 0.301"),
    ("3 tensor(2.7066, device='cuda:0', grad_fn=<NllLossBackward0>)", "3 2.7066"),
    ("3 [2.7544847]", "3 2.7544847"),
    ("3 np.float64(0.25)", "3 0.25"),
    ("epoch 3 loss 2.5", "epoch 3 loss 2.5"),  # nothing printed around its numbers: kept as it is
])
def test_a_printers_wrapping_comes_off_and_nothing_else(line, bare):
    assert unwrap_line(line) == bare


@pytest.mark.parametrize("fmt, column, digits", [
    ("[{e}, {i}, {v}]", 3, None),  # print([epoch, i, loss.item()])
    ("({e}, {i}, {v}, {w})", 3, None),  # print((epoch, i, loss, val_loss)): the first column that falls
    ("[{e}, {i}, '{v:.5f}', '{t:.3f}']", 3, 5),  # print([epoch, i, f'{loss:.5f}', f'{dt:.3f}'])
    ("{e} {i} tensor({v:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)", 3, 4),  # print(epoch, i, loss)
])
def test_records_printed_as_sequences_are_read_by_their_columns_shape(tmp_path, fmt, column, digits):
    """An epoch, a batch counter starting again each epoch, then the values: one timeline in the rows'
    order, the falling column named the loss by its shape and place (the file names nothing)."""
    rows = [(e, i, loss(10 * e + i // 10)) for e in range(4) for i in range(0, 100, 10)]
    lines = [fmt.format(e=e, i=i, v=v, w=v * 1.1, t=0.3) for e, i, v in rows]
    frame = load(tmp_path, lines, name="run.log")
    got = curve(frame, f"run_loss_column{column}")
    assert [s for s, _ in got] == list(range(len(rows)))
    assert [v for _, v in got] == pytest.approx([round(v, digits) if digits else v for _, _, v in rows])


def test_a_last_column_rising_by_one_stride_after_the_values_is_the_step(tmp_path):
    """`print([epoch, _loss, _global_step])`: the epoch leads, the global step (every 10) ends the row."""
    lines = [f"[{k // 10}, {loss(k)}, {10 * (k + 1)}]" for k in range(40)]
    got = curve(load(tmp_path, lines, name="run.log"), "run_loss_column2")
    assert [s for s, _ in got] == [10 * (k + 1) for k in range(40)]


def test_a_last_whole_column_with_no_stride_is_no_step(tmp_path):
    """`print([epoch, loss, elapsed_seconds])`: whole seconds rise with no stride; the epoch stays the step."""
    lines = [f"[{k}, {loss(k)}, {12 * k + (k * k) % 5}]" for k in range(40)]
    got = curve(load(tmp_path, lines, name="run.log"), "run_loss_column2")
    assert [s for s, _ in got] == list(range(40))


def test_sequences_with_words_or_no_falling_column_are_not_read(tmp_path):
    """Words inside the printed lists (`['cat', 0.91]`) are no row of numbers: not claimed; numbers with a
    counter but no column that falls as a loss does are refused with the shape's reason."""
    words = tmp_path / "preds.log"
    words.write_text("\n".join(f"['cat', {0.5 + k / 100}]" for k in range(40)) + "\n")
    assert not BareNumbersImporter().claims(words, words.read_bytes())
    flat = tmp_path / "run.log"
    flat.write_text("\n".join(f"[{k}, {0.5 + 0.01 * (k % 3)}]" for k in range(40)) + "\n")
    assert BareNumbersImporter().claims(flat, flat.read_bytes())
    with diagnostics.collecting(), pytest.raises(SpikelensError) as err:
        api.load(flat)
    assert "no column falls as a loss does" in str(err.value) and "\n" not in str(err.value)


def test_a_curve_printed_whole_on_each_line_stays_with_the_list_reader(tmp_path):
    """Lists of ten numbers or more are a curve each (`numberlists`), not a record a line."""
    path = tmp_path / "loss.txt"
    path.write_text("\n".join(str([round(loss(10 * r + k), 4) for k in range(12)]) for r in range(3)) + "\n")
    assert not BareNumbersImporter().claims(path, path.read_bytes())
    frame = api.load(path)
    assert frame.get_column("metric").unique().sort().to_list() == ["loss", "loss_list2", "loss_list3"]


# ------------------------------------------------------------------ numbers inside sentences


@pytest.mark.parametrize("fmt, metric", [
    ("The loss at epoch {e} is {v}", "loss"),  # print(f"The loss at epoch {idx} is {loss.item()}")
    ("The loss after epoch {e} was {v:.4f}", "loss"),
    ("12:00:00.123 [main] INFO  o.d.o.l.ScoreIterationListener - Score at iteration {e} is {v}", "Score"),  # DL4J
])
def test_a_value_a_sentence_links_to_its_counter_is_read_at_that_counter(tmp_path, fmt, metric):
    """`<name> at <counter> N is V`: the copula stands where a log line has its `:` (as `Loss after epoch
    3: 2.1` is read), so the name before the joining word names the value, the counter is its step."""
    counts = list(range(0, 500, 50))
    lines = [fmt.format(e=e, v=loss(k)) for k, e in enumerate(counts)]
    got = curve(load(tmp_path, lines), metric)
    assert [s for s, _ in got] == counts
    assert [v for _, v in got] == pytest.approx([float(f"{loss(k):.4f}") if ":.4f" in fmt else loss(k)
                                                 for k in range(len(counts))])


def test_two_sentences_an_epoch_each_name_their_own_value(tmp_path):
    """`The accuracy at epoch N is A` then `The loss at epoch N is L`: two curves, one step each epoch."""
    lines = [s for e in range(12) for s in (f"The accuracy at epoch {e} is {0.5 + e / 40:g}",
                                            f"The loss at epoch {e} is {loss(e):g}")]
    frame = load(tmp_path, lines)
    assert [s for s, _ in curve(frame, "loss")] == list(range(12))
    assert [v for _, v in curve(frame, "accuracy")] == pytest.approx([float(f"{0.5 + e / 40:g}") for e in range(12)])


@pytest.mark.parametrize("line", [
    "The model at epoch {e} is saved to ckpt/model.pt",  # no number after the copula
    "Epoch {e} is done and the lr is reduced",
])
def test_a_sentence_with_no_value_after_its_copula_names_nothing(line):
    t = tokenise(line.format(e=3))
    assert t.values == []


# ------------------------------------------------------------------ outer loops


@pytest.mark.parametrize("fmt", [
    "Stage {o} Epoch {i}: Train Loss: {v:.4f}, Val Loss: {w:.4f}",  # a curriculum, epochs counted per stage
    "scale {o} iter {i} loss {v:.4f}",  # a GAN trained scale by scale, its iterations per scale
    "round {o} epoch {i} loss={v:.4f}",  # federated rounds, local epochs
    "[{o}] [{i}/50] time: 0:01:23, [d_loss: {w:.4f}, g_loss: {v:.4f}]",  # Keras GAN: epoch, then batch of 50
])
def test_a_count_that_starts_again_within_an_outer_count_is_one_timeline(tmp_path, fmt):
    """The inner count restarts each time the outer one (printed before it) goes up: one timeline in
    the records' order, never a relaunch of the run."""
    rows = [(o, i) for o in range(1, 4) for i in range(10, 51, 10)]
    lines = [fmt.format(o=o, i=i, v=loss(k), w=loss(k) * 1.1) for k, (o, i) in enumerate(rows)]
    frame = load(tmp_path, lines)
    name = next(m for m in ("Train_Loss", "loss", "g_loss") if m in set(frame.get_column("metric")))
    got = curve(frame, name)
    steps = [s for s, _ in got]
    assert len(steps) == len(rows) and all(b > a for a, b in zip(steps, steps[1:]))
    assert frame.get_column("segment").n_unique() == 1
    assert [v for _, v in got] == pytest.approx([round(loss(k), 4) for k in range(len(rows))])
    assert "Stage" not in set(frame.get_column("metric")) and "scale" not in set(frame.get_column("metric"))


def test_an_outer_count_beside_a_global_step_leaves_the_step_as_printed(tmp_path):
    """`[Stage 2 Epoch 5] step 340 loss=...`: the global step is the step; nothing is composed."""
    lines = [f"[Stage {1 + k // 10} Epoch {k % 10}] step {10 * k} loss={loss(k):.4f}" for k in range(30)]
    assert [s for s, _ in curve(load(tmp_path, lines), "loss")] == [10 * k for k in range(30)]


def test_a_count_after_the_epoch_is_no_outer_count(tmp_path):
    """`Epoch 3 round 2`: a word after the epoch is no loop around it (only a count printed before it is)."""
    t = tokenise("Epoch 3 round 2 loss 2.5")
    assert t.inner is None and [n for n, _, _ in t.values] == ["round", "loss"]


# ------------------------------------------------------------------ a count opening the line


@pytest.mark.parametrize("lead", ["", " "])
def test_a_count_opening_a_list_of_named_numbers_is_its_step(tmp_path, lead):
    """darknet's `printf("%ld: %f, %f avg, %f rate, ...")`: the count before the `:` is the batch, the step
    (a rank's prefix `0: ` has the same shape but opens no such list)."""
    lines = [f"{lead}{10 * (k + 1)}: {loss(k) * 1.1:f}, {loss(k):f} avg, 0.001000 rate, 0.31 seconds, "
             f"{640 * (k + 1)} images" for k in range(12)]
    got = curve(load(tmp_path, lines), "avg")
    assert [s for s, _ in got] == [10 * (k + 1) for k in range(12)]
    assert [v for _, v in got] == [round(loss(k), 6) for k in range(12)]


def test_a_ranks_prefix_is_still_no_step():
    t = tokenise("0: step 10 loss 2.5 lr 0.1")
    assert t.step[0] == "step" and [n for n, _, _ in t.values] == ["loss", "lr"]


# ------------------------------------------------------------------ result blocks, one key a line


def _result_block(k: int, counter: bool = True) -> list[str]:
    """What `print(pretty_print(algo.train()))` prints for iteration k+1 (RLlib's layout, written here)."""
    out = [f"agent_timesteps_total: {4000 * (k + 1)}", "custom_metrics: {}", "date: 2024-05-01_12-00-00",
           "done: false", "env_runners:", "  episode_len_mean: 200.0", f"  episode_return_mean: {20 + k * 1.5:.3f}",
           "info:", "  learner:", "    default_policy:", "      learner_stats:", f"        total_loss: {loss(k):.4f}",
           f"        vf_loss: {loss(k) * 0.6:.4f}", f"  num_env_steps_sampled: {4000 * (k + 1)}"]
    return out + ([f"training_iteration: {k + 1}"] if counter else [])


def test_result_blocks_one_key_a_line_are_a_record_each(tmp_path):
    """A block begins where the file's first key comes back at the left margin; values are named by
    their sections, the step is the block's iteration."""
    frame = load(tmp_path, [ln for k in range(20) for ln in _result_block(k)])
    ret = curve(frame, "env_runners/episode_return_mean")
    assert [s for s, _ in ret] == list(range(1, 21)) and [v for _, v in ret] == pytest.approx(
        [20 + k * 1.5 for k in range(20)])
    assert [v for _, v in curve(frame, "info/learner/default_policy/learner_stats/total_loss")] == pytest.approx(
        [round(loss(k), 4) for k in range(20)])
    assert [s for s, _ in curve(frame, "info/num_env_steps_sampled")] == list(range(1, 21))


def test_result_blocks_without_a_counter_take_their_order(tmp_path):
    frame = load(tmp_path, [ln for k in range(12) for ln in _result_block(k, counter=False)])
    # no block counter among `STEP_KEYS` at the left margin: the blocks count in order
    assert [s for s, _ in curve(frame, "env_runners/episode_return_mean")] == list(range(12))


def test_a_settings_dump_of_one_block_is_no_log_of_blocks(tmp_path):
    """A YAML config printed once (its first key never comes back) is not read as records."""
    from spikelens.importers.keyblocks import claims_text

    settings = ["model:", "  hidden: 256", "  layers: 4", "optim:", "  lr: 0.001", "  betas: 0.9",
                *[f"  p{k}: {k / 10}" for k in range(20)]]
    assert not claims_text("\n".join(settings))
    assert claims_text("\n".join(ln for k in range(4) for ln in _result_block(k)))


# ------------------------------------------------------------------ pairs printed as tuples


def test_name_and_value_pairs_printed_as_tuples_are_keyed_numbers(tmp_path):
    """PFRL's `logger.info('statistics:%s', agent.get_statistics())`: `[('average_q', 0.1), ('average_loss',
    2.7)]` after each `step:N episode:E R:r` line; the tuple's comma links its name as a dict's `:` does."""
    lines = [s for k in range(20) for s in (
        f"INFO:pfrl.experiments.train_agent:outdir:results step:{100 * (k + 1)} episode:{k} R:{10 + k}",
        f"INFO:pfrl.experiments.train_agent:statistics:[('average_q', {0.1 * k:.3f}), ('average_loss', {loss(k)}), "
        f"('n_updates', {100 * k})]")]
    got = curve(load(tmp_path, lines), "average_loss")
    assert [s for s, _ in got] == [100 * (k + 1) for k in range(20)]
    assert [v for _, v in got] == pytest.approx([loss(k) for k in range(20)])


@pytest.mark.parametrize("line", [
    '    self._optimizer_step(kwargs.get("batch_idx", 0), closure)',  # a call's arguments, in a traceback
    "print('loss', 2.5)",  # a call, not a tuple printed
])
def test_a_call_with_a_string_and_a_number_is_no_pair(line):
    assert tokenise(line).values == [] or all(n != "batch_idx" and n != "loss" for n, _, _ in tokenise(line).values)
