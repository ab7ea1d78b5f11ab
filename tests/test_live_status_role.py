"""The watch status names what the run is judged by: an RL run's last value is its return, not a loss."""
from spikelens.config import Config
from spikelens.live.judge import Judge, RunBook
from spikelens.model.report import RunReport


def _status(metric: str, role: str, value: float) -> dict:
    rep = RunReport(run="r", sources=[], segments=[], metrics={metric: role, "train/loss": "loss"},
                    stats={"main_metric": metric, "last_step": 90, "last_value": value})
    book = RunBook(key="r")
    Judge(cfg=Config()).status(book, rep)
    return book.status


def test_reward_run_status_says_reward_not_loss():
    st = _status("rollout/ep_rew_mean", "reward", 212.5)
    assert st["role"] == "reward" and st["last_value"] == 212.5
    assert st["loss"] is None


def test_loss_run_status_keeps_its_loss():
    st = _status("train/loss", "loss", 0.42)
    assert st["role"] == "loss" and st["loss"] == 0.42 == st["last_value"]
