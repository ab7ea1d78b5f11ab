"""Line shapes the session-18 dev runs and fresh harvest showed unread, each written here in the layout
of its print statement (never copied from a log): bare numbers under an epoch's header line, an outer
count that has not moved yet in a file's head, and a lone measure logged line after line with no counter."""
from __future__ import annotations

import pytest

from spikelens import api, diagnostics
from spikelens.errors import SpikelensError
from spikelens.frame import infer_role
from spikelens.importers.barenumbers import BareNumbersImporter
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def _epochs(header: str, row: str, epochs: int = 3, per: int = 12, end: list[str] | None = None) -> tuple[list[str], list[float]]:
    lines, values = [], []
    for e in range(epochs):
        lines.append(header.format(e=e, lr=1e-4))
        for i in range(per):
            v = loss(e * per + i)
            values.append(v)
            lines.append(row.format(v=v, i=100 * i))
    return lines + (end or []), values


@pytest.mark.parametrize("header, row", [
    ("Epoch {e}", "{v}"),  # print(f'Epoch {epoch}'), then print(loss.item()) each batch
    ("Epoch: {e}", "{v}, {i}"),  # then print(f'{loss.item()}, {batch_idx}'): the batch count restarts each epoch
    ("epoch {e} lr {lr}", "{i} {v}"),  # print('epoch', epoch, 'lr', lr), then print(i, loss.item())
    ("===== Epoch {e} =====", "{v:.6f}"),
])
def test_rows_under_epoch_headers_are_the_loss_counted_by_their_epoch(tmp_path, header, row):
    lines, values = _epochs(header, row, end=["Done!"])
    path = tmp_path / "train_log.txt"
    path.write_text("\n".join(lines) + "\n")
    assert BareNumbersImporter().claims(path, path.read_bytes())
    frame = load(tmp_path, lines, name="train_log.txt")
    metrics = frame.get_column("metric").unique().to_list()
    assert len(metrics) == 1 and infer_role(metrics[0]) == "loss"  # the lr of the header is not read
    got = curve(frame, metrics[0])
    assert [s for s, _ in got] == list(range(len(values)))
    assert [v for _, v in got] == pytest.approx(values, rel=1e-6)


def test_rows_under_headers_that_are_no_epoch_or_hold_words_stay_unclaimed(tmp_path):
    """A header that counts nothing (`Results`) or rows with words are not this layout."""
    for lines in (_epochs("Results {e}", "{v}")[0], _epochs("Epoch {e}", "cat {v}")[0]):
        path = tmp_path / "train_log.txt"
        path.write_text("\n".join(lines) + "\n")
        assert not BareNumbersImporter().claims(path, path.read_bytes())


def test_an_outer_count_that_has_not_moved_in_the_head_still_counts_the_rows(tmp_path):
    """`f.write(f'{epoch}\\t\\t{i}\\t\\t{loss:.4f}\\n')` with thousands of batches an epoch: the head of the file
    shows epoch 1 only; the batch count beside it counts the rows, the falling column is the loss."""
    rows = [(e, i, loss(e * 100 + i // 3)) for e in range(1, 4) for i in range(300)]
    path = tmp_path / "log.txt"
    path.write_text("\n".join(f"{e}\t\t{i}\t\t{v:.4f}" for e, i, v in rows) + "\n")
    assert BareNumbersImporter().claims(path, path.read_bytes()[:4096])
    with diagnostics.collecting():
        got = curve(api.load(path), "log_loss_column3")
    assert [s for s, _ in got] == list(range(len(rows)))
    assert [v for _, v in got] == pytest.approx([round(v, 4) for _, _, v in rows])


def test_constant_columns_over_values_that_count_nothing_stay_unclaimed(tmp_path):
    """A constant first column over measured values with no count beside it: still named by nothing."""
    path = tmp_path / "data.txt"
    path.write_text("\n".join(f"1\t{0.5 + 0.01 * (k % 7)}\t{0.2 + 0.01 * (k % 3)}" for k in range(300)) + "\n")
    assert not BareNumbersImporter().claims(path, path.read_bytes()[:4096])


def test_a_lone_return_logged_line_after_line_is_a_curve_in_line_order(tmp_path):
    """`logger.info(f'episodic returns: {r}')` after every episode, no counter on the line: the returns in
    the order logged, a reward as a person reads it."""
    lines = [f"2024-11-28 20:07:{10 + k // 10:02d},{100 + k:03d} DQN INFO episodic returns: {10 + (k * 7) % 30}"
             for k in range(60)]
    got = curve(load(tmp_path, lines, name="dqn.log"), "episodic_returns")
    assert [s for s, _ in got] == list(range(60))
    assert [v for _, v in got] == [10 + (k * 7) % 30 for k in range(60)]
    assert infer_role("episodic_returns") == "reward"


@pytest.mark.parametrize("line", ["INFO lr: {x}", "Temperature: {x}"])
def test_a_lone_setting_or_reading_line_after_line_stays_unread(tmp_path, line):
    """A key that names no curve a loop logs (a learning rate, a sensor) on its own line after line: a
    printout, not read as a training curve (as before)."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(line.format(x=0.001 * (1 + k % 5)) for k in range(60)) + "\n")
    with diagnostics.collecting(), pytest.raises(SpikelensError):
        api.load(path)


def _two_line(first: str, second: str, n: int = 30) -> list[str]:
    out = []
    for e in range(1, n + 1):
        out += [first.format(e=e, v=loss(e), a=0.5 + e / 100), second.format(e=e, v=loss(e), a=0.5 + e / 100)]
    return out


def test_a_record_whose_counter_comes_on_its_last_line_takes_that_step(tmp_path):
    """`print(f'loss: {running_loss}')` inside train(), then `print(f'Epoch: {epoch:03d}, Train Acc: ...')`:
    each loss line opens its epoch's record; it is that epoch's loss, the first one included."""
    frame = load(tmp_path, _two_line("loss: {v}", "Epoch: {e:03d}, Train Acc: {a:.4f}, Test Acc: {a:.4f}"))
    assert curve(frame, "loss") == [(e, pytest.approx(loss(e))) for e in range(1, 31)]
    assert [s for s, _ in curve(frame, "Train_Acc")] == list(range(1, 31))


def test_a_line_printed_after_its_counted_line_stays_with_the_record_before(tmp_path):
    """The loss printed after the epoch's line belongs to that epoch (as before); a setting printed once
    before the first epoch is the preamble, no record."""
    lines = ["lr: 0.1"] + _two_line("Epoch: {e:03d}, Train Acc: {a:.4f}", "loss: {v}")
    frame = load(tmp_path, lines)
    assert curve(frame, "loss") == [(e, pytest.approx(loss(e))) for e in range(1, 31)]
    assert "lr" not in frame.get_column("metric").unique().to_list()


def test_a_counter_that_counts_every_record_is_the_step_over_a_key_held_for_several(tmp_path):
    """keras-rl's `  600/50000: episode: 3, ..., loss: 2.64`, the episode held over several records: the
    `N/M` counter counts them one by one, the step a person reads."""
    lines = [f"{10 * (k + 1):>6d}/3000: episode: {k // 5 + 1}, duration: 0.512s, loss: {loss(k):.6f}, mae: 0.5"
             for k in range(40)]
    got = curve(load(tmp_path, lines), "loss")
    assert [s for s, _ in got] == [10 * (k + 1) for k in range(40)]


def test_a_step_key_that_counts_every_record_stays_the_step_beside_a_restarting_counter(tmp_path):
    """`step: 120, batch 3/10, loss: ..`: the step key counts every record; the batch counter starts again."""
    lines = [f"step: {10 * (k + 1)}, batch {k % 10 + 1}/10, loss: {loss(k):.4f}" for k in range(40)]
    got = curve(load(tmp_path, lines), "loss")
    assert [s for s, _ in got] == [10 * (k + 1) for k in range(40)]


def test_a_header_printed_over_two_lines_joins_its_words_down_each_column(tmp_path):
    """Vowpal Wabbit's progress table: `average  since  example  example  current ...` over `loss  last
    counter  weight  label ...`: each column is named by both its words, the example counter counts."""
    top = "average  since         example        example  current  current  current"
    low = "loss     last          counter         weight    label  predict features"
    rows, n = [], 1
    for k in range(40):
        n = n * 2 if k < 12 else n + 500
        rows.append(f"{loss(k):<8.6f} {loss(k) * 1.1:<8.6f} {n:>12} {float(n):>14.1f} {1.0:>8.4f} {0.5:>8.4f} {15:>8}")
    frame = load(tmp_path, [top, low, *rows], name="vw.log")
    assert {"average_loss", "since_last", "example_weight", "current_label"} <= set(frame.get_column("metric").to_list())
    got = curve(frame, "average_loss")
    assert [s for s, _ in got] == [int(r.split()[2]) for r in rows]
    assert infer_role("average_loss") == "loss"


def test_a_title_over_a_header_is_no_second_header_line(tmp_path):
    """A line of words over a header that do not stand one over each column (`Training results`) names
    nothing: the header's own names stay."""
    top = "Training     results"
    low = "epoch     train_loss     val_loss"
    rows = [f"{k:>5}     {loss(k):>10.4f}     {loss(k) * 1.1:>8.4f}" for k in range(30)]
    frame = load(tmp_path, [top, low, *rows])
    got = curve(frame, "train_loss")
    assert [s for s, _ in got] == list(range(30))
