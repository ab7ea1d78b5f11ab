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
