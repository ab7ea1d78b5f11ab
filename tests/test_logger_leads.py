"""What Python's `logging` prints before a message by default (`INFO:root:`, basicConfig's
`%(levelname)s:%(name)s:%(message)s`) and a launcher's bracketed name (`[titan] `) are no keys (#24): a
log written through them reads as the same log printed plainly. Fixtures are written here by `logging`
itself and by the script's own print statements."""
from __future__ import annotations

import logging

import polars as pl
import pytest

from spikelens import api
from spikelens.importers.linetokens import tokenise

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def _script(say) -> None:
    """A PointNet-style training script: an epoch banner, then the epoch's means (`log_string`)."""
    for epoch in range(30):
        say(f"-----{epoch}------")
        say(f"train_mean loss: {2.5 / (1 + epoch / 5):.6f}")
        say(f"train_accuracy: {0.3 + epoch / 50:.6f}")
        say(f"test_mean loss: {3.6 / (1 + epoch / 8) + 0.2:.6f}")
        say(f"test_accuracy: {0.04 + epoch / 40:.6f}")


def _logged(path, fmt: str) -> None:
    log = logging.getLogger(f"r2.{path.stem}")
    log.propagate = False
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(fmt))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        _script(log.info)
    finally:
        log.removeHandler(handler)
        handler.close()


def _curves(path) -> dict[str, list[tuple[int, float]]]:
    f = api.load(path)
    return {m: f.filter(pl.col("metric") == m).sort("seq").select("step", "value").rows()
            for m in f.get_column("metric").unique().to_list()}


def test_a_logger_lead_is_no_key():
    for line in ("INFO:root:-----3------", "[titan] -----3------", "WARNING:tensorflow:-----3------"):
        assert tokenise(line).values == []
    t = tokenise("[valid] loss=35.2, acc=0.6")  # a phase tag stays the line's phase
    assert t.evaluation == "val" and [n for n, _, _ in t.values] == ["val_loss", "val_acc"]


@pytest.mark.parametrize("fmt", ["%(levelname)s:root:%(message)s", "[titan] %(message)s"])
def test_a_log_written_through_a_logger_reads_as_printed(tmp_path, fmt):
    plain = tmp_path / "plain" / "log_train.txt"
    plain.parent.mkdir()
    lines: list[str] = []
    _script(lines.append)
    plain.write_text("\n".join(lines) + "\n")
    logged = tmp_path / "logged" / "log_train.txt"
    logged.parent.mkdir()
    _logged(logged, fmt)
    assert logged.read_text().splitlines()[0] == fmt.replace("%(levelname)s", "INFO").replace("%(message)s", "-----0------")
    want, got = _curves(plain), _curves(logged)
    assert len(want["train_mean_loss"]) == 30
    assert got == want
