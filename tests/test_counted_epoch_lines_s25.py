"""A count joined to the word it counts by a hyphen (`0-epoch`, Mugs' and DINO-family loggers) is the epoch, and
`(i/N)` after it the iteration within it: the step a person reads is epoch x N + i, so a relaunch that rolled back
inside an epoch shows where it went back to. A value named by its aggregate word and its measure with no link
(`total loss 10.19,  lr: 5e-04`) is read beside the linked keys after it. Fixtures are written by Python's own
`logging`, as the training script configures it (#24, #25, session 25)."""
from __future__ import annotations

import logging

import polars as pl

from spikelens import api, diagnostics
from spikelens.importers.linetokens import tokenise

PER_EPOCH = 400


def _log(path, launches) -> None:
    logger = logging.getLogger(f"mugs-{path.name}")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    for first, last in launches:
        logger.info("Namespace(arch='vit_small', epochs=20, lr=0.0005)")
        for e in range(first[0], last[0] + 1):
            lo = first[1] if e == first[0] else 100
            hi = last[1] if e == last[0] else PER_EPOCH
            for i in range(lo, hi + 1, 100):
                loss = 10 / (1 + 0.2 * (e * PER_EPOCH + i) / PER_EPOCH)
                logger.info(f"{e}-epoch ({i}/{PER_EPOCH}): total loss {loss:.6f},  instance-sup.: {loss * 0.9:.6f}, "
                            f"lr: 5.0000e-04, wd: 0.0000e+00, weak aug. ratio: 0.5")
            if hi == PER_EPOCH:
                logger.info(f"{e}-epoch: loss: {loss:.6f}")
    handler.close()
    logger.removeHandler(handler)


def test_a_hyphened_epoch_and_its_iteration_count_the_steps(tmp_path):
    path = tmp_path / "train.log"
    _log(path, [((0, 100), (5, 400))])
    with diagnostics.collecting():
        frame = api.load(str(path))
    loss = frame.filter(pl.col("metric") == "total_loss").sort("step")
    assert loss.height == 24
    assert loss.get_column("step").to_list()[:5] == [100, 200, 300, 400, 500]
    assert loss.get_column("step").max() == 5 * PER_EPOCH + 400


def test_a_relaunch_that_rolled_back_inside_an_epoch_is_told(tmp_path):
    path = tmp_path / "train.log"
    _log(path, [((0, 100), (3, 300)), ((3, 100), (6, 400))])  # died at 3-epoch (300/400), resumed from its start
    with diagnostics.collecting():
        run = api.analyze(str(path)).runs[0]
    over = [f for f in run.findings if f.kind == "resume_overlap"]
    assert over and over[0].start_step == 3 * PER_EPOCH + 100


def test_an_aggregate_word_names_a_value_and_a_sentence_stays_prose():
    assert [v[0] for v in tokenise("epoch 3: total loss 10.196984,  lr: 9.857393").values] == ["total_loss", "lr"]
    assert not tokenise("Model has total 124 parameters").values
