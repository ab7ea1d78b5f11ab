"""Line shapes of the statements session 13 kept untuned (half B of `benchmarks/format_strings.py`)
and of the statements harvested in session 14, each written here in the layout of its print
statement (never copied from a log): the PyTorch tutorial's `[1,  2000] loss:`, a counter that
starts over each pass with no epoch printed (`batch:10/100`), a markdown row that is no
record (`| component | 147 |`), trax's `train  CrossEntropyLoss |  2.77`, tables whose
header names hold a space (spaCy's, scikit-learn's); and the epoch kept as a metric where a line
shape prints one beside the step (Keras, fairseq)."""
from __future__ import annotations

import pytest

from spikelens.importers.linetokens import header_cells, table_row, tokenise
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


@pytest.mark.parametrize("fmt", ["[{e}, {i:5d}] loss: {v:.3f}", "[{e},{i:5d}] loss:{v:.3f}"])
def test_a_bracketed_pair_opening_a_line_is_the_epoch_and_the_count_within_it(tmp_path, fmt):
    """`print('[%d, %5d] loss: %.3f' % (epoch + 1, i + 1, running_loss / 2000))`: coarse to fine,
    so the steps run on across epochs (the count has no total: an epoch is as wide as it runs)."""
    counts = (2000, 4000, 6000, 8000, 10000, 12000)
    lines = [fmt.format(e=e, i=i, v=loss(6 * e + j)) for e in range(1, 5) for j, i in enumerate(counts)]
    frame = load(tmp_path, lines)
    got = curve(frame, "loss")
    assert [s for s, _ in got] == [(e - 1) * 12000 + i for e in range(1, 5) for i in counts]
    assert [v for _, v in got] == [round(loss(6 * e + j), 3) for e in range(1, 5) for j in range(6)]
    assert [v for _, v in curve(frame, "epoch")] == [1.0, 2.0, 3.0, 4.0]


def test_a_count_from_zero_with_no_total_is_as_wide_as_it_runs_and_one_stride(tmp_path):
    """`[e, 0]`..`[e, 90]` by 10 holds 100 counts: the next epoch's 0 is step 100, not 90."""
    t = tokenise("[2,    0] loss: 2.5")
    assert t.epoch is not None and t.inner is not None and t.inner_total is None
    lines = [f"[{e}, {i:5d}] loss: {loss(10 * e + i // 10):.3f}" for e in range(1, 4) for i in range(0, 100, 10)]
    got = curve(load(tmp_path, lines), "loss")
    assert [s for s, _ in got] == [100 * (e - 1) + i for e in range(1, 4) for i in range(0, 100, 10)]


def test_a_counter_that_starts_over_after_its_end_has_finished_a_pass(tmp_path):
    """`print('batch:{}/{} loss:{:.3f}'.format(i, batch_num, loss))` inside an epoch loop that prints
    no epoch: each pass over the data adds its width to the counts after it."""
    lines = [f"batch:{i}/100 loss:{loss(10 * p + i // 10):.3f}" for p in range(3) for i in range(10, 101, 10)]
    got = curve(load(tmp_path, lines), "loss")
    assert [s for s, _ in got] == [100 * p + i for p in range(3) for i in range(10, 101, 10)]


def test_a_counter_that_falls_back_from_the_middle_is_kept_as_printed(tmp_path):
    """A relaunch (the count falls back before reaching its end) is no finished pass: the steps
    stay as printed, for the relaunch readers to see."""
    counts = [*range(10, 60, 10), *range(10, 101, 10)]
    lines = [f"batch:{i}/100 loss:{loss(k):.3f}" for k, i in enumerate(counts)]
    got = curve(load(tmp_path, lines), "loss")
    assert [s for s, _ in got] == counts


def test_a_markdown_row_of_a_label_and_a_count_is_no_record():
    """detectron2's dataset table `| component  | 147          |`: a bar opening the line makes it a
    table of labels, not trax's name-bar-value."""
    assert tokenise("| component  | 147          |").values == []


def test_a_name_and_a_lone_number_parted_by_a_bar(tmp_path):
    """trax's training loop: `Step     10: train   CrossEntropyLoss |  2.77014660`, the eval lines
    under their own name (and a line of prose between them read as nothing)."""
    lines = []
    for k in range(1, 21):
        lines += [f"Step {10 * k:6d}: Ran 10 train steps in 0.31 secs",
                  f"Step {10 * k:6d}: train {'CrossEntropyLoss':>26} |  {loss(k):.8f}",
                  f"Step {10 * k:6d}: eval  {'CrossEntropyLoss':>26} |  {loss(k) + 0.1:.8f}",
                  f"Step {10 * k:6d}: eval  {'Accuracy':>26} |  {0.5 + k / 100:.8f}"]
    frame = load(tmp_path, lines)
    assert curve(frame, "CrossEntropyLoss") == [(10 * k, round(loss(k), 8)) for k in range(1, 21)]
    assert [s for s, _ in curve(frame, "val_CrossEntropyLoss")] == [10 * k for k in range(1, 21)]
    assert [v for _, v in curve(frame, "val_Accuracy")] == [round(0.5 + k / 100, 8) for k in range(1, 21)]


def test_a_bar_between_pairs_still_parts_them():
    """fairseq's `| epoch 001 | loss 9.1 | ppl 2.3`: a bar after a number is a separator, no link."""
    line = "| epoch 001 | loss 9.1 | ppl 2.3"
    t = tokenise(line)
    assert {n: line[a:a + k] for n, a, k in t.values} == {"loss": "9.1", "ppl": "2.3"}
    assert line[t.epoch[0]:sum(t.epoch)] == "001"


def test_an_aligned_header_keeps_a_space_inside_a_name():
    """spaCy's and scikit-learn's headers: two spaces part columns, one is inside a name; `#`
    heads a column of counts. A sentence (`Epoch 1  loss 2.3`) is no header."""
    assert [n for n, _, _ in header_cells("E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE ")] == \
        ["E", "#", "LOSS_TOK2VEC", "LOSS_NER", "ENTS_F", "SCORE"]
    assert [n for n, _, _ in header_cells("      Iter       Train Loss      OOB Improve   Remaining Time ")] == \
        ["Iter", "Train_Loss", "OOB_Improve", "Remaining_Time"]
    assert header_cells("Epoch 1  loss 2.3  acc 0.9") is None


def test_right_aligned_cells_under_left_aligned_names_line_up():
    """spaCy prints its header left-aligned, its numbers right-aligned: a cell within its column
    (from its name's start to the next name's) is that column's."""
    header = header_cells("E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE ")
    row = "  0     200        225.63     77.33   17.55    0.18"
    t = table_row(row, header)
    assert t is not None
    assert (t.step[0], row[t.step[1]:sum(t.step[1:])]) == ("#", "200")
    assert {n: row[a:a + k] for n, a, k in t.values} == {"E": "0", "LOSS_TOK2VEC": "225.63", "LOSS_NER": "77.33",
                                                          "ENTS_F": "17.55", "SCORE": "0.18"}
    assert table_row("  0     200        225.63     77.33   17.55", header) is None  # a cell short


def test_tables_whose_names_hold_a_space_are_read(tmp_path):
    """spaCy's `spacy train` table and scikit-learn's GradientBoosting `verbose=1` table."""
    spacy = ["ℹ Pipeline: ['tok2vec', 'ner']",
             "E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE ",
             "---  ------  ------------  --------  ------  ------  ------  ------"]
    spacy += [f"{k // 10:>3}  {100 * k:>6}  {loss(k) * 40:>12.2f}  {loss(k) * 90:>8.2f}  {50 + k / 3:>6.2f}  "
              f"{50 + k / 3:>6.2f}  {50 + k / 3:>6.2f}  {(50 + k / 3) / 100:>6.2f}" for k in range(30)]
    got = curve(load(tmp_path, spacy, "spacy.log"), "LOSS_NER")
    assert got == [(100 * k, round(loss(k) * 90, 2)) for k in range(30)]
    gb = [f"{'Iter':>10}{'Train Loss':>17}{'OOB Improve':>17}{'Remaining Time':>17} "]
    gb += [f"{k:>10}{loss(k):>17.4f}{0.01 * loss(k):>17.4f}{f'{60 - k}s':>17}" for k in range(1, 41)]
    frame = load(tmp_path, gb, "gb.log")
    assert curve(frame, "Train_Loss") == [(k, round(loss(k), 4)) for k in range(1, 41)]
    assert [v for _, v in curve(frame, "Remaining_Time_s")][:2] == [59.0, 58.0]


@pytest.mark.parametrize("layout", ["keras", "fairseq"])
def test_the_epoch_printed_beside_the_step_is_kept_as_a_metric(tmp_path, layout):
    """Keras's `Epoch 5/40` headers over `485/485 ... loss:` lines and fairseq's `| epoch 005 |
    ... | num_updates 500`: people read them in epochs, so `epoch` is a metric of the file."""
    lines = []
    for e in range(1, 6):
        if layout == "keras":
            lines.append(f"Epoch {e}/5")
            lines += [f"{i}/30 [====>.....] - ETA: 1s - loss: {loss(30 * e + i):.4f} - accuracy: 0.5000"
                      for i in (10, 20, 30)]
        else:
            lines += [f"| epoch {e:03d} |  {i:>4d} / 30 loss={loss(30 * e + i):.3f}, num_updates={30 * (e - 1) + i}, "
                      f"lr=0.0005" for i in (10, 20, 30)]
    frame = load(tmp_path, lines)
    assert [v for _, v in curve(frame, "epoch")] == [1.0, 2.0, 3.0, 4.0, 5.0]
    steps = [s for s, _ in curve(frame, "loss")]
    assert steps == sorted(steps) and len(set(steps)) == 15


def test_counts_parted_by_bars_opening_a_bar_description_are_the_epoch_and_the_step(tmp_path):
    """torchtune's `pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss}")`: the
    global step, not the bar's own counter (`1/300`), and it keeps rising across epochs."""
    bars = [f"{k // 10 + 1}|{10 * (k + 1)}|Loss: {loss(k)!r}:   {k // 3:>2d}%|          | {k % 10 + 1}/10 "
            f"[00:01<00:09, 9.87it/s]" for k in range(30)]
    got = curve(load(tmp_path, ["\r".join(bars[i:i + 10]) for i in range(0, 30, 10)]), "Loss")
    assert got == [(10 * (k + 1), loss(k)) for k in range(30)]


def test_rows_under_a_header_of_two_lines_take_the_line_they_line_up_with(tmp_path):
    """Vowpal Wabbit's progress table: its second header line (`predict features`, one space
    apart) does not line up with the rows; the first line does, and with the word under each of its
    names (`average` over `loss`) names them; the example counter counts them."""
    lines = ["average  since         example        example  current  current  current",
             "loss     last          counter         weight    label  predict features"]
    lines += [f"{loss(k):.6f} {loss(k) * 0.6:.6f} {640 * (k + 1):>12d} {10.0 * (k + 1):>14.1f}   1.0000   0.5000       15"
              for k in range(30)]
    got = curve(load(tmp_path, lines), "average_loss")
    assert [v for _, v in got] == [round(loss(k), 6) for k in range(30)]
    assert [s for s, _ in got] == [640 * (k + 1) for k in range(30)]


def test_a_log_whose_head_is_a_long_printout_is_sniffed_at_its_tail(tmp_path, monkeypatch):
    """A script that prints a data frame for megabytes before keras-rl's episode lines (`16676/166760000:
    episode: 1, duration: 288.234s, ... episode reward: -159.262, ...`): the head reads as no log, the
    tail does (the sniff's sizes made small here so the file can be)."""
    from spikelens.importers import textlogs

    monkeypatch.setattr(textlogs, "GENERAL_SNIFF_BYTES", 16 * 1024)
    head = [f"{name:<12}{(k * 7919 % 1000) / 1000:>24.6f}" for k in range(3000)
            for name in ("open", "high", "low", "close")][:6000]
    rl = [f"{16676 * e:>10d}/166760000: episode: {e}, duration: 288.234s, episode steps: 16676, steps per second: 58, "
          f"episode reward: {-160 + e + loss(e):.3f}, mean reward: -0.010 [-3.111, 1.705], loss: {loss(e):.6f}"
          for e in range(1, 121)]
    got = curve(load(tmp_path, head + rl, "nohup.out"), "episode_reward")
    assert got == [(e, round(-160 + e + loss(e), 3)) for e in range(1, 121)]
