"""Rebuilding an optimizer from its saved state_dict alone: the class from the saved options,
every hyperparameter and moment put back, and one-line errors when the groups do not fit."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spikelens.errors import ReplayError  # noqa: E402
from spikelens.replay.optimizers import optimizer_class, rebuild_optimizer  # noqa: E402


def _stepped(cls, **kw):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    opt = cls(model.parameters(), **kw)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(4, 3)).pow(2).mean().backward()
        opt.step()
    return model, opt


@pytest.mark.parametrize("cls, kw", [
    (torch.optim.AdamW, {"lr": 1e-3, "weight_decay": 0.1}), (torch.optim.Adam, {"lr": 1e-3}),
    (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}), (torch.optim.RMSprop, {"lr": 1e-3}),
    (torch.optim.Adagrad, {"lr": 1e-2}), (torch.optim.NAdam, {"lr": 1e-3}), (torch.optim.RAdam, {"lr": 1e-3}),
    (torch.optim.Adamax, {"lr": 1e-3}), (torch.optim.Adadelta, {"lr": 1.0}), (torch.optim.ASGD, {"lr": 1e-2}),
    (torch.optim.Rprop, {"lr": 1e-2}),
])
def test_the_class_and_state_come_back(cls, kw):
    model, opt = _stepped(cls, **kw)
    saved = opt.state_dict()
    assert optimizer_class(saved["param_groups"][0]) is cls
    rebuilt = rebuild_optimizer([list(model.parameters())], saved, torch, source="opt.pt")
    assert type(rebuilt) is cls and rebuilt.param_groups[0]["lr"] == kw["lr"]
    for p in model.parameters():
        for key, value in opt.state[p].items():
            assert torch.equal(torch.as_tensor(rebuilt.state[p][key]), torch.as_tensor(value))


def test_adafactor_from_transformers():
    transformers = pytest.importorskip("transformers")
    from transformers.optimization import Adafactor

    model, opt = _stepped(Adafactor, lr=1e-3, relative_step=False, scale_parameter=False)
    assert optimizer_class(opt.state_dict()["param_groups"][0]) is Adafactor
    assert transformers is not None


def test_groups_that_do_not_fit_are_one_line_errors():
    model, opt = _stepped(torch.optim.AdamW, lr=1e-3)
    params = list(model.parameters())
    with pytest.raises(ReplayError, match=r"opt.pt: the optimizer state has groups of \[2\] parameters"):
        rebuild_optimizer([params[:1]], opt.state_dict(), torch, source="opt.pt")
    with pytest.raises(ReplayError, match="has shape"):
        rebuild_optimizer([params[::-1]], opt.state_dict(), torch, source="opt.pt")  # the order matters
    with pytest.raises(ReplayError, match="match no known optimizer"):
        rebuild_optimizer([params], {"param_groups": [{"params": [0, 1], "lr": 1.0, "zeta": 2}], "state": {}},
                          torch, source="opt.pt")
