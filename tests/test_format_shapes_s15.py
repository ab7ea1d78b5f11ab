"""Line shapes of the statements harvested in session 15 (half A of `benchmarks/format_strings.py`),
each written here in the layout of its print statement (never copied from a log): counters named
in Japanese, Korean or Chinese and numbers glued to CJK words (`エポック 1/30, バッチ 10/100,
損失: 2.78`, `第3轮, loss为2.1`), one loss named line after line with no counter (`Loss is: 2.8`), a count opening the line before
a dash (`10 - loss: 2.713`), absl's `train.py:48] [12] train_loss=`, and the loss of an epoch named
before it (`Loss after epoch 3: 2.1`). Each with a neighbour that must stay as it was read."""
from __future__ import annotations

import pytest

from spikelens.errors import SpikelensError
from spikelens.importers.linetokens import tokenise
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def test_counters_named_in_japanese_give_the_epoch_and_the_step_within_it(tmp_path):
    """`f'エポック {epoch+1}/{num_epochs}, バッチ {i}/{len(train_loader)}, 損失: {loss:.4f}'`: the
    batch count runs within the epoch, as `Epoch 1/30, Batch 10/100` does."""
    lines = [f"エポック {e}/3, バッチ {i}/100, 損失: {loss(10 * e + i // 10):.4f}"
             for e in range(1, 4) for i in range(10, 101, 10)]
    got = curve(load(tmp_path, lines), "損失")
    assert [s for s, _ in got] == [100 * (e - 1) + i for e in range(1, 4) for i in range(10, 101, 10)]
    assert [v for _, v in got] == [round(loss(10 * e + i // 10), 4) for e in range(1, 4) for i in range(10, 101, 10)]


def test_a_korean_batch_counter_is_the_step():
    t = tokenise("  [배치 30/100] 현재 손실: 2.7509")
    assert t.inner == (6, 2) and t.inner_total == (9, 3)
    assert [n for n, _, _ in t.values] == ["현재_손실"]


def test_a_number_glued_to_cjk_words_is_read_and_a_chinese_ordinal_is_the_epoch(tmp_path):
    """`'{}, 第{}轮, loss为{:.4f}'.format(...)`: CJK letters touch the numbers (no space between
    words in those scripts), `第N轮` is the N-th round, `为` links the loss to its value."""
    t = tokenise("ohlol, 第3轮, loss为2.1234")
    assert t.epoch == (8, 1) and t.values == [("loss", 17, 6)]
    lines = [f"ohlol, 第{e}轮, loss为{loss(e):.4f}" for e in range(1, 31)]
    got = curve(load(tmp_path, lines), "loss")
    assert [v for _, v in got] == [round(loss(e), 4) for e in range(1, 31)]
    assert [s for s, _ in got] == sorted(s for s, _ in got) and len({s for s, _ in got}) == 30


def test_latin_names_glued_to_digits_stay_one_word():
    """`top1`, `loss_0`, `训练损失2.31`: a Latin letter joins its digits to the word, a CJK one does not."""
    assert [n for n, _, _ in tokenise("top1 0.5 loss_0 2.1").values] == ["top1", "loss_0"]
    assert tokenise("训练损失2.31").values == [("训练损失", 4, 4)]


def test_one_loss_named_line_after_line_is_a_curve_in_line_order(tmp_path):
    """`print('Loss is: ', running_loss / i)`: one key, no counter; a loss that moves is a log."""
    got = curve(load(tmp_path, [f"Loss is:  {loss(k)!r}" for k in range(40)]), "Loss_is")
    assert [v for _, v in got] == [loss(k) for k in range(40)]


def test_one_key_that_names_no_loss_stays_unread(tmp_path):
    """`Temperature: 21.5` line after line is a reading of something, not a training log."""
    with pytest.raises(SpikelensError):
        load(tmp_path, [f"Temperature: {20 + (k % 7) / 10:.1f}" for k in range(40)], "readings.log")


def test_a_count_opening_the_line_before_a_dash_is_the_step(tmp_path):
    """`print('%d - loss: %.3f' % (t, loss))`: the count of the record, by one stride."""
    got = curve(load(tmp_path, [f"{t} - loss: {loss(t // 10):.3f}" for t in range(0, 300, 10)]), "loss")
    assert [s for s, _ in got] == list(range(0, 300, 10))


def test_a_negative_number_after_a_count_is_still_a_value():
    """`3 -0.5` has no dash parted by spaces: no count-and-dash opening."""
    assert tokenise("3 -0.5").step is None


def test_absl_prefix_then_a_bracketed_step(tmp_path):
    """clu's LoggingWriter: `I0501 12:00:00.123456 140000 logging_writer.py:48] [12] train_loss=2.3`."""
    lines = [f"I0501 12:{k // 60:02d}:{k % 60:02d}.123456 140000000 logging_writer.py:48] [{10 * k + 10}] "
             f"train_accuracy={0.5 + k / 100}, train_loss={loss(k)!r}" for k in range(40)]
    got = curve(load(tmp_path, lines), "train_loss")
    assert [s for s, _ in got] == [10 * k + 10 for k in range(40)]


def test_the_loss_of_an_epoch_named_before_it(tmp_path):
    """gensim's `Loss after epoch {}: {}`, R torch's `Loss at epoch %d: %3f`: the words before the
    joining word name the value, the epoch counts it."""
    assert tokenise("Loss at epoch 3: 2.5").values == [("Loss", 17, 3)]
    got = curve(load(tmp_path, [f"Loss after epoch {e}: {loss(e)!r}" for e in range(30)]), "Loss")
    assert [v for _, v in got] == [loss(e) for e in range(30)]
    assert [s for s, _ in got] == list(range(30))


def test_a_sentence_naming_an_epoch_reads_no_value():
    """`Saving model at the end of epoch 51`: no value is linked after the epoch."""
    assert tokenise("Saving model at the end of epoch 51").values == []
