"""A `#` header whose names span blocks of component columns (DeepXDE's loss.dat, written as it writes it)."""
from __future__ import annotations

import numpy as np

from spikelens.importers.spannedheader import SpannedHeaderImporter, spans


def _deepxde_loss_dat(path, terms, rows=15, metrics=0):
    """DeepXDE's `saveplot`: np.savetxt of [step, train terms, test terms, metrics] under a # header."""
    rng = np.random.default_rng(0)
    steps = np.arange(rows) * 1000.0
    decay = np.exp(-np.arange(rows) / 4)[:, None]
    scale = rng.uniform(0.5, 100, terms)
    train = scale * decay * (1 + 0.01 * rng.standard_normal((rows, terms)))
    test = train * (1 + 0.02 * rng.standard_normal((rows, terms)))
    cols = [steps[:, None], train, test] + ([rng.uniform(size=(rows, metrics))] if metrics else [])
    np.savetxt(path, np.hstack(cols), header="step, loss_train, loss_test, metrics_test")
    return steps, train


def _read(path):
    imp = SpannedHeaderImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    return imp.read(path)[0].frame


def test_loss_dat_reads_each_split_as_the_sum_of_its_terms(tmp_path):
    path = tmp_path / "loss.dat"
    steps, train = _deepxde_loss_dat(path, terms=6)
    frame = _read(path)
    main = frame.filter(frame["metric"] == "loss_train")
    assert main["step"].to_list() == steps.astype(int).tolist()
    assert np.allclose(main["value"].to_numpy(), train.sum(axis=1))
    assert {"loss_test", "loss_train/1", "loss_train/6"} <= set(frame["metric"].unique())
    assert "loss_train/7" not in set(frame["metric"].unique())


def test_loss_dat_with_a_metric_column(tmp_path):
    path = tmp_path / "loss.dat"
    _, train = _deepxde_loss_dat(path, terms=3, metrics=1)
    frame = _read(path)
    assert np.allclose(frame.filter(frame["metric"] == "loss_train")["value"].to_numpy(), train.sum(axis=1))
    assert "metrics_test" in set(frame["metric"].unique())


def test_headers_that_do_not_span_are_left_alone(tmp_path):
    path = tmp_path / "loss.dat"
    np.savetxt(path, np.c_[np.arange(12), np.linspace(2, 1, 12), np.linspace(3, 1, 12)], header="step loss val_loss")
    assert not SpannedHeaderImporter().claims(path, path.read_bytes())  # as many names as columns
    assert spans(["x", "loss_train", "loss_test"], 7) is None  # no counter first
    assert spans(["step", "loss", "acc"], 7) is None  # no two names of one measure
