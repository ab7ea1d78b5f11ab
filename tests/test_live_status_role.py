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


def _table_text(statuses: list[dict]) -> str:
    from rich.console import Console

    from spikelens.cli.watch import status_table

    console = Console(width=100, record=True, color_system=None)
    console.print(status_table(statuses))
    return console.export_text()


def test_status_table_names_a_reward_and_leaves_a_loss_bare():
    text = _table_text([_status("rollout/ep_rew_mean", "reward", 212.5), _status("train/loss", "loss", 0.42)])
    assert "last value" in text and "212.5 reward" in text
    assert "0.42" in text and "0.42 loss" not in text
