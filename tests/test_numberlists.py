"""Lists of numbers printed whole (`f.write(str(losses))`): one curve a list, named by its name or the file."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens.errors import FormatError
from spikelens.importers.base import read_head
from spikelens.importers.numberlists import NumberListsImporter
from spikelens.importers.registry import IMPORTERS


def _curves(table):
    out = {}
    for step, metric, value in table.frame.select("step", "metric", "value").rows():
        out.setdefault(metric, []).append((step, value))
    return out


def test_printed_lists_are_curves_named_by_the_file_or_their_name(tmp_path):
    train = [2.0 * 0.97 ** i for i in range(40)]
    val = [2.1 * 0.98 ** i for i in range(40)]
    path = tmp_path / "loss.txt"
    with open(path, "w") as f:  # a script's f.write(str(train_losses)); f.write("\n\n"); f.write(str(val_losses))
        f.write(str(train) + "\n\n\n" + str(val))
    first = next(imp for imp in IMPORTERS if imp.claims(path, read_head(path)))
    assert isinstance(first, NumberListsImporter)
    (table,) = first.read(path)
    got = _curves(table)
    assert set(got) == {"loss", "loss_list2"}
    assert got["loss"][:2] == [(0, pytest.approx(2.0)), (1, pytest.approx(1.94))] and len(got["loss"]) == 40
    assert got["loss_list2"][-1] == (39, pytest.approx(val[-1]))
    # print(np.array(...)) wraps its list over lines without commas; a name before a list names it
    named = tmp_path / "history.log"
    arr = np.array(train)
    named.write_text(f"train_loss = {np.array2string(arr, separator=' ', max_line_width=60)}\n"
                     f"val_loss: {val}\n")
    imp = NumberListsImporter()
    assert imp.claims(named, read_head(named))
    got = _curves(imp.read(named)[0])
    assert set(got) == {"train_loss", "val_loss"} and len(got["train_loss"]) == 40
    assert got["train_loss"][5][1] == pytest.approx(train[5], rel=1e-6)
    # an unnamed list in a file whose name says nothing may be anything: not claimed
    data = tmp_path / "data.txt"
    data.write_text(str(train))
    assert not imp.claims(data, read_head(data))
    # text beside the lists is not this format, and the refusal says where
    mixed = tmp_path / "losses.txt"
    mixed.write_text(str(train) + "\nbest epoch 12\n" + str(val))
    assert imp.claims(mixed, read_head(mixed))
    with pytest.raises(FormatError, match=r"losses\.txt.*best epoch"):
        imp.read(mixed)


def test_a_log_line_opening_with_brackets_is_no_list(tmp_path):
    path = tmp_path / "train_loss.log"
    path.write_text("".join(f"[0 12:30:{s:02d}] step {s} loss {1 / (s + 1)}\n" for s in range(20)))
    assert not NumberListsImporter().claims(path, read_head(path))
    path.write_text("[1, 2, 3] best epochs\n" + str([0.5] * 20))  # three numbers, then words: claimed
    assert NumberListsImporter().claims(path, read_head(path))


def test_a_plots_points_exported_as_text_step_at_their_first_number(tmp_path):
    from spikelens.importers.numberlists import PointsImporter

    losses = [1.0 + (i % 5) / 10 for i in range(30)]
    path = tmp_path / "log_loss.txt"  # a table for pgfplots written on one line: `it loss \\`
    path.write_text("".join(f"{i * 250} {v:.3f} \\\\" for i, v in enumerate(losses)))
    first = next(imp for imp in IMPORTERS if imp.claims(path, read_head(path)))
    assert isinstance(first, PointsImporter)
    got = _curves(first.read(path)[0])
    assert list(got) == ["log_loss"] and got["log_loss"][:2] == [(0, 1.0), (250, pytest.approx(1.1))]
    coords = tmp_path / "train_loss.tex"  # \addplot coordinates {(1,0.52) (2,0.48) ...};
    coords.write_text("\\addplot coordinates {" + " ".join(f"({i},{v})" for i, v in enumerate(losses, 1)) + "};\n")
    imp = PointsImporter()
    assert imp.claims(coords, read_head(coords))
    got = _curves(imp.read(coords)[0])
    assert got["train_loss"][-1] == (30, pytest.approx(losses[-1]))
    coords.write_text("(1,0.5) (2,0.4) then text\n" + " ".join(f"({i},{v})" for i, v in enumerate(losses, 3)))
    with pytest.raises(FormatError, match=r"train_loss\.tex.*then text"):
        imp.read(coords)
