"""Line shapes a second fresh session-17 sample of logging statements showed unread (#24), each written
here in the layout of its print statement (never copied from a log): a name of several words and its
number with no colon (`Training set accuracy 0.91`), and a counter word after `per`, which names a
rate's unit, not the step (`Average undiscounted return per training episode: 12.5`)."""
from __future__ import annotations

import pytest

from spikelens.importers.linetokens import tokenise
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def test_a_line_of_a_few_words_and_a_number_names_it_by_its_words(tmp_path):
    """JAX's MNIST example: `print(f"Training set accuracy {train_acc}")` under `Epoch 3 in 1.20 sec`."""
    lines = []
    for e in range(1, 31):
        lines += [f"Epoch {e} in 1.{e % 10}2 sec", f"Training set accuracy {1 - loss(e) / 10:.4f}",
                  f"Test set accuracy {1 - loss(e) / 9:.4f}"]
    frame = load(tmp_path, lines)
    assert curve(frame, "Training_set_accuracy") == [(e, pytest.approx(round(1 - loss(e) / 10, 4)))
                                                     for e in range(1, 31)]
    assert [s for s, _ in curve(frame, "test_set_accuracy")] == list(range(1, 31))


@pytest.mark.parametrize("line", [
    "Average loss 2.3",
    "Mean episode reward 12.5",
    "Training set accuracy 0.91",
])
def test_words_ending_in_a_measure_name_their_number(line):
    assert [n for n, _, _ in tokenise(line).values] == ["_".join(line.split()[:-1])]


@pytest.mark.parametrize("line", [
    "Seed set to 42",  # no measure among the words: a sentence
    "checkpoint version 3",
    "cost time  0.123",
    "  stopping_criterion: _valid_mlm_ppl,10",  # a setting's value, parted by a colon from its key
    "From formula 0, F is false.",
])
def test_other_lines_of_words_and_a_number_stay_unread(line):
    assert tokenise(line).values == []


@pytest.mark.parametrize("line,name,value", [
    ("Train loss 2.3 so far", "Train_loss", "2.3"),
    ("Average loss 2.3 so far", "Average_loss", "2.3"),  # a word of how it was summed up names it, as a phase word does
    ("total loss 10.19,  lr: 5e-04", "total_loss", "10.19"),
])
def test_a_measure_after_a_phase_or_aggregate_word_is_read(line, name, value):
    """Session 17 kept 'Average loss 2.3 so far' unread for the words after its number, yet 'Train loss
    2.3 so far' was read all along: what kept it out was 'Average', taken for prose. A person reads both."""
    first, start, width = tokenise(line).values[0]
    assert (first, line[start:start + width]) == (name, value)


def test_a_counter_after_per_is_a_rate_not_the_step(tmp_path):
    """Dopamine's run_experiment: `Starting iteration 3`, then the return per training episode (absl)."""
    lines = []
    for k in range(30):
        head = f"I0501 12:00:{k:02d}.000123 140 run_experiment.py:420] "
        lines += [head + f"Starting iteration {k}",
                  head + f"Average undiscounted return per training episode: {10 - loss(k):.2f}",
                  head + f"Average training steps per second: {120 + k % 3:.2f}"]
    got = curve(load(tmp_path, lines), "return_per_training_episode")
    assert got == [(k, pytest.approx(round(10 - loss(k), 2))) for k in range(30)]


@pytest.mark.parametrize("line, step, epoch", [
    ("Training Epoch 3", None, (15, 1)),  # the counter named last stays the counter
    ("Global Step 10", ("step", 12, 2), None),
    ("return per training episode: 12.5", None, None),
    ("reward per env step: 3.2", None, None),
])
def test_counters_stay_counters_unless_a_rate_names_them(line, step, epoch):
    t = tokenise(line)
    assert (t.step, t.epoch) == (step, epoch)


def test_rows_of_numbers_ending_in_the_same_note_are_read_as_their_numbers(tmp_path):
    """A Keras callback's `f.write('%d\\t%.4f\\t%.4f' % (epoch, loss, ppl)); f.write('\\tBest at epoch %d' %
    best)`: the note after the numbers is the same words on every row, its own number aside."""
    lines = [f"{e}\t{loss(e):.4f}\t{2.7 * loss(e):.4f}\tBest at epoch {max(0, e - 1)}" for e in range(40)]
    got = curve(load(tmp_path, lines, name="loss_log.txt"), "loss_column2")
    assert got == [(e, pytest.approx(round(loss(e), 4))) for e in range(40)]


def test_rows_ending_in_different_words_stay_unclaimed(tmp_path):
    """Notes that differ from row to row are text, not a note each row carries: not bare numbers."""
    from spikelens.importers.barenumbers import BareNumbersImporter
    from spikelens.importers.printedrows import trailed_rows

    lines = [f"{e}\t{loss(e):.4f}\t" + ("Best at epoch 3" if e % 2 else "saved the model") for e in range(40)]
    path = tmp_path / "loss_log.txt"
    path.write_text("\n".join(lines) + "\n")
    assert trailed_rows(lines) is None
    assert not BareNumbersImporter().claims(path, path.read_bytes())
    assert trailed_rows(["0 2.7 ascent", "1 2.6 ascent"]) is None  # one word: a tag naming the series
    assert trailed_rows(["0 loss 1.0", "1 loss 0.9"]) is None  # a text log's key and its value
