"""A log whose name ends in a number a launcher or a rotation appended is found when a folder is walked
(#24): PaddleDetection's `log/workerlog.0` was read when named but passed over in its folder ("no layout
a reader knows"); `train.log.1` and `run.log.2024-01-02` are `.log` files. A numbered binary stays
unread and a numbered CSV is still the CSV reader's."""
from __future__ import annotations

from pathlib import Path

from conftest import load

from spikelens.importers.base import kind_suffix


def test_the_kind_of_a_numbered_name():
    assert kind_suffix(Path("workerlog.0")) == ""
    assert kind_suffix(Path("train.log.1")) == ".log"
    assert kind_suffix(Path("run.log.2024-01-02")) == ".log"
    assert kind_suffix(Path("metrics.csv")) == ".csv"
    assert kind_suffix(Path("model.pt")) == ".pt"


def _paddle_lines(n: int) -> str:
    lines = ["[03/08 09:42:40] ppdet.utils.checkpoint INFO: Finish loading model weights"]
    for i in range(n):
        it = 1 + 50 * i
        lines.append(f"[03/08 09:{42 + i // 60:02d}:{i % 60:02d}] ppdet.engine INFO: {it:>6}/130860 iters Epoch: [0] "
                     f"[{50 * i:>6}/727] learning_rate: 0.000{i:03d} loss_class: {0.9 - 0.004 * i:.6f} "
                     f"loss_bbox: {0.8 - 0.003 * i:.6f} loss: {9.0 - 0.03 * i:.4f} eta: 3 days, 1:02:03 "
                     f"batch_cost: 2.4{i % 10} data_cost: 0.01 ips: 3.3 images/s")
    return "\n".join(lines) + "\n"


def test_numbered_logs_in_a_walked_folder_are_read(tmp_path):
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "workerlog.0").write_text(_paddle_lines(60))
    (tmp_path / "rotated").mkdir()
    (tmp_path / "rotated" / "train.log.1").write_text("".join(f"step {s} loss {2.0 / s:.4f}\n" for s in range(1, 40)))
    (tmp_path / "rotated" / "model.pt.1").write_bytes(bytes(range(256)) * 64)
    runs, warnings = load(tmp_path)
    by_name = {Path(r.sources[0]).name: r for r in runs}
    assert set(by_name) == {"workerlog.0", "train.log.1"}, (sorted(by_name), warnings)
    paddle = by_name["workerlog.0"].frame
    losses = paddle.filter(paddle["metric"] == "loss")
    assert losses.height == 60 and losses["step"].to_list()[:3] == [1, 51, 101]
