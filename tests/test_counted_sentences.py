"""A value named in a sentence that places it with several counts (#24): `Loss at epoch 0 and iteration
500 is 0.21`, `Reward in epoch 3, step 100: 1.5`. The name before the first count names the value after
the last; the counts give its step. Fixtures are written here as the scripts' own print statements."""
from __future__ import annotations

import math

import polars as pl

from spikelens import api
from spikelens.importers.linetokens import tokenise


def _named(line):
    t = tokenise(line)
    return [(n, line[s:s + k]) for n, s, k in t.values]


def test_the_name_before_the_counts_names_the_value_after_them():
    assert _named("Loss at epoch 0 and iteration 500 is 8.4595") == [("Loss", "8.4595")]
    assert _named("NCE Loss at epoch 2 and iteration 0 is -1.83") == [("NCE_Loss", "-1.83")]
    assert _named("Reward in epoch 3, step 100: 1.5") == [("Reward", "1.5")]
    assert _named("The loss at epoch 3 is 0.52") == [("loss", "0.52")]  # one count, as before


def test_a_sentence_that_names_no_value_after_its_counts_stays_unread():
    assert _named("Saved the model at epoch 3 and iteration 500") == []
    assert _named("Loss in epoch 3, lr 0.1") == [("lr", "0.1")]  # the value after the comma has its own name


def test_a_log_of_such_sentences_is_read_with_its_steps(tmp_path):
    lines = []
    for epoch in range(10):
        for it in (0, 500, 1000):
            k = epoch * 3 + it // 500
            lines.append(f"Loss at epoch {epoch} and iteration {it} is {2.0 * math.exp(-k / 8) + 0.1}")
            lines.append(f"NCE Loss at epoch {epoch} and iteration {it} is {0.5 - 0.4 * math.exp(-k / 8)}")
    (tmp_path / "loss.txt").write_text("\n".join(lines) + "\n")
    frame = api.load(str(tmp_path / "loss.txt"))
    loss = frame.filter(pl.col("metric") == "Loss").sort("seq")
    assert loss.height == 30
    assert loss.get_column("value")[0] == 2.1 and loss.get_column("step").is_sorted()
    assert loss.get_column("step").n_unique() == 30
    assert set(frame.get_column("metric").unique().to_list()) >= {"Loss", "NCE_Loss"}
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    assert run.stats["main_metric"] == "Loss"


def test_a_counter_named_in_a_sentence_places_the_record():
    line = "Epoch is [1/600], mini-batch is [7/1600], time consumption is 1.3252, batch_loss is 13.2807"
    t = tokenise(line)
    assert line[t.epoch[0]:sum(t.epoch)] == "1" and line[t.inner[0]:sum(t.inner)] == "7"
    assert _named(line) == [("time_consumption", "1.3252"), ("batch_loss", "13.2807")]


def test_terms_printed_before_their_counted_line_join_its_record(tmp_path):
    # `logger.info('classify loss is ...')` then `logger.info('Epoch is [e/E], mini-batch is [i/I], ...')`
    lines = []
    for i in range(1, 41):
        cls, iou = 0.9 * math.exp(-i / 30), 5.8 * math.exp(-i / 40) + 0.5
        lines.append(f"2021-05-03 03:53:{i % 60:02d},430 [MainThread  ] [INFO ]  classify loss is {cls:.8f}, "
                     f"iou loss is {iou:.8f}")
        lines.append(f"2021-05-03 03:53:{i % 60:02d},794 [MainThread  ] [INFO ]  Epoch is [1/600], mini-batch is "
                     f"[{i}/1600], time consumption is 0.83, batch_loss is {cls + 2 * iou:.8f}")
    (tmp_path / "log_train.txt").write_text("\n".join(lines) + "\n")
    frame = api.load(str(tmp_path / "log_train.txt"))
    for metric in ("classify_loss", "iou_loss", "batch_loss"):
        assert frame.filter(pl.col("metric") == metric).sort("seq").get_column("step").to_list() == list(range(1, 41))
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    assert run.stats["main_metric"] == "batch_loss"
