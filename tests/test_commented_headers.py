"""A commented header over bare numbers names their columns: `%` (Torch7 optim.Logger) as `#` does."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens.errors import FormatError
from spikelens.importers.barenumbers import BareNumbersImporter
from spikelens.importers.commentheader import header_names


def _torch_logger(path, names, rows):
    """What Torch7's optim.Logger writes: `%` and the names, each ended by a tab, then a row a line."""
    with open(path, "w") as f:
        f.write("%" + "".join(f" {n}\t" for n in names) + "\n")
        for row in rows:
            f.write("".join(f"{v:11.4e}\t" for v in row) + "\n")


def _read(path):
    imp = BareNumbersImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    return imp.read(path)[0].frame


def test_a_percent_header_over_one_column_names_it(tmp_path):
    acc = 100 - 50 * np.exp(-np.arange(12) / 3)
    path = tmp_path / "train.log"
    _torch_logger(path, ["mean class accuracy (train set)"], acc[:, None])
    frame = _read(path)
    assert frame["metric"].unique().to_list() == ["mean class accuracy (train set)"]
    assert frame["step"].to_list() == list(range(12))
    assert np.allclose(frame["value"].to_numpy(), acc, rtol=1e-3)


def test_a_percent_header_over_two_columns_names_each(tmp_path):
    rows = np.c_[np.linspace(50, 90, 12), np.linspace(45, 80, 12)]
    path = tmp_path / "test.log"
    _torch_logger(path, ["mean class accuracy (train set)", "mean class accuracy (test set)"], rows)
    frame = _read(path)
    assert set(frame["metric"].unique()) == {"mean class accuracy (train set)", "mean class accuracy (test set)"}


def test_a_percent_header_naming_no_measure_is_refused(tmp_path):
    path = tmp_path / "data.log"
    _torch_logger(path, ["sample id"], np.arange(12.0)[:, None])
    assert not BareNumbersImporter().claims(path, path.read_bytes())


@pytest.mark.parametrize("line,width,names", [
    ("# iter loss val_loss", 3, ["iter", "loss", "val_loss"]),
    ("% mean class accuracy (train set)\t", 1, ["mean class accuracy (train set)"]),
    ("# step, loss_train, loss_test, metrics_test", 13, None),  # fewer names than columns: not named
    ("% 0.5 1.0", 2, None),  # numbers, no names
    ("loss", 1, None),  # no comment mark
])
def test_header_names(line, width, names):
    assert header_names(line, width) == names
