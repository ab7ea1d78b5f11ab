"""Tables whose columns a person names from what stands around them (#24, session 25): a custom logger's
tab-separated `log.txt` whose padded names lead with a digit (`2d_loss   \\t`) and end every field with a
tab; the Trainer's `Step\\tTraining Loss` table copied out of a notebook under Unsloth's banner (the line of
names just above the rows names them); `np.savetxt('train_log.csv', ...)` rewritten each epoch with no
header and no counter, alone in its folder (a training log's rows are its epochs, in line order). Each with
a case that must stay unread or unnamed. Fixtures are written here as those scripts write them."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from spikelens import api, diagnostics
from spikelens.errors import SpikelensError


def _load(path) -> pl.DataFrame:
    with diagnostics.collecting():
        return api.load(str(path))


def test_padded_tab_names_leading_with_a_digit_and_a_tab_after_every_field(tmp_path):
    path = tmp_path / "checkpoints" / "log.txt"
    path.parent.mkdir()
    rng = np.random.default_rng(0)
    with path.open("w") as f:  # the script's logger: `'%-10s\t' % name` then `'%f\t' % value` per term
        f.write("".join(f"{n:<10s}\t" for n in ("2d_loss", "3d_loss", "adv_loss", "temporal_loss")) + "\n")
        for i in range(300):
            f.write("".join(f"{v:f}\t" for v in (6 * np.exp(-i / 80) + 0.1 * rng.random(), 7 * np.exp(-i / 90),
                                                   3 + 0.2 * rng.random(), 4 + rng.random())) + "\n")
    frame = _load(path)
    assert set(frame.get_column("metric").unique()) == {"2d_loss", "3d_loss", "adv_loss", "temporal_loss"}
    loss = frame.filter(pl.col("metric") == "2d_loss").sort("step")
    assert loss.height == 300 and loss.get_column("step").to_list()[:3] == [0, 1, 2]
    assert loss.item(0, "value") == pytest.approx(float(f"{6 + 0.1 * np.random.default_rng(0).random():f}"))


def test_a_line_of_numbers_is_no_header_even_with_a_tab_after_every_field(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("".join("".join(f"{v:f}\t" for v in (1 / (i + 1), 2.0, 3.0)) + "\n" for i in range(40)))
    try:
        metrics = _load(path).get_column("metric").unique().to_list()
    except SpikelensError:
        metrics = []
    assert not any(m.strip() in ("1.000000", "2.000000", "3.000000") for m in metrics)


UNSLOTH = """Qwen 14B
Unsloth - 2x faster free finetuning | Num GPUs used = 1
   \\\\   /|    Num examples = 7,225 | Num Epochs = 5 | Total steps = 500
O^O/ \\_/ \\    Batch size per device = 4 | Gradient accumulation steps = 16
\\        /    Data Parallel GPUs = 1 | Total batch size (4 x 16 x 1) = 64
 "-____-"     Trainable parameters = 64,225,280 of 14,832,532,480 (0.43% trained)
 [500/500 1:38:51, Epoch 4/5]

"""


def test_the_names_over_a_notebooks_copied_table_name_its_rows(tmp_path):
    path = tmp_path / "train_loss.txt"
    rows = [(10 * (i + 1), 1.0 + 1.9 * np.exp(-i / 8)) for i in range(50)]
    path.write_text(UNSLOTH + "Step\tTraining Loss\n" + "".join(f"{s}\t{v:.6f}\n" for s, v in rows)
                    + "\n5951.8784 seconds used for training.\n99.2 minutes used for training.\n"
                      "Peak reserved memory = 37.605 GB.\n")
    frame = _load(path)
    assert frame.get_column("metric").unique().to_list() == ["Training Loss"]
    assert frame.sort("step").get_column("step").to_list() == [s for s, _ in rows]
    with diagnostics.collecting():
        report = api.analyze(str(path))
    assert report.runs[0].stats.get("main_metric") == "Training Loss"


def test_words_above_the_rows_that_name_no_measure_are_no_header(tmp_path):
    path = tmp_path / "train_loss.txt"
    path.write_text(UNSLOTH + "Training finished well\n" + "".join(f"{10 * (i + 1)}\t{1 + np.exp(-i / 8):.6f}\n"
                                                                  for i in range(50)))
    frame = _load(path)
    assert "Training Loss" not in frame.get_column("metric").unique().to_list()
    assert all(m.startswith("train_loss") for m in frame.get_column("metric").unique())


def _savetxt_log(path, n: int = 60) -> None:
    rng = np.random.default_rng(1)
    cls = 0.4 * np.exp(-np.arange(n) / 6) + 0.05 + 0.005 * rng.random(n)
    total = cls * 0.8 + 0.01 * rng.random(n)
    np.savetxt(path, np.c_[cls, np.zeros(n), total], fmt="%.6f", delimiter=",")


def test_a_headerless_train_log_alone_in_its_folder_is_read_in_line_order(tmp_path):
    path = tmp_path / "train_log.csv"
    _savetxt_log(path)
    frame = _load(path)
    assert "train_log_loss_column1" in frame.get_column("metric").unique().to_list()
    assert frame.filter(pl.col("metric") == "train_log_loss_column1").get_column("step").to_list() == list(range(60))


def test_a_headerless_table_named_by_nothing_stays_unread(tmp_path):
    path = tmp_path / "features.csv"  # a data set's columns, not a log
    _savetxt_log(path)
    with pytest.raises(SpikelensError):
        _load(path)


# -- a loss at chance from its first epoch (#25): a binary classifier's 0.6985 ... 0.6890 over 18 epochs drifts
# beyond its noise but never leaves ln 2's band: it never learned, from the first epoch, not from where it settled


def _epoch_csv(tmp_path, train) -> list:
    path = tmp_path / "loss_history.csv"  # csv.writer of a GCN baseline: one row an epoch
    val = 0.6964 - 0.0003 * np.arange(len(train))
    path.write_text("epoch,train_loss,val_loss\n" + "".join(f"{i + 1},{a:.6f},{b:.6f}\n"
                                                            for i, (a, b) in enumerate(zip(train, val))))
    with diagnostics.collecting():
        report = api.analyze(str(path))
    return [f for r in report.runs for f in r.findings if f.metric == "train_loss" and f.kind == "plateau"]


BINARY_AT_CHANCE = [0.69849, 0.69726, 0.69334, 0.69303, 0.69460, 0.69296, 0.69177, 0.69183, 0.69148, 0.69198,
                    0.69276, 0.69236, 0.69023, 0.68973, 0.69041, 0.69011, 0.68864, 0.68900]


def test_a_loss_in_ln2s_band_from_its_first_epoch_never_learned_from_the_start(tmp_path):
    found = _epoch_csv(tmp_path, BINARY_AT_CHANCE)
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].start_step == 1 and found[0].evidence["chance_classes"] == 2


def test_a_loss_that_leaves_ln2s_band_is_no_chance_plateau(tmp_path):
    falling = [0.6985 * 0.985 ** i for i in range(18)]  # a slow but material fall (24%) from ln 2
    assert not [f for f in _epoch_csv(tmp_path, falling) if f.evidence.get("reading") == "chance"]


def test_a_converged_tail_drifting_near_some_ln_k_after_a_fall_is_no_chance_plateau(tmp_path):
    e = np.arange(200)  # a knowledge-graph pretraining loss: 3.0 down to 1.63, then a slow drift through ln 5
    loss = 1.595 + 1.4 * np.exp(-e / 15) + 0.03 * (1 - e / 200) + 0.001 * np.random.default_rng(8).standard_normal(200)
    assert not [f for f in _epoch_csv(tmp_path, loss) if f.evidence.get("reading") == "chance"]
