"""Did a run log any training at all?

Two judgements need the same answer: a slowdown in a log that holds nothing of training (a
data-preparation bar's `159.47sample/s` alone) is a note, not an alarm (`throughput`), and the
total such a bar counts to is no training plan (`ended`: an error after the bar reached it is a
crash, not "finished its plan, then an error on its way out"). They used to ask it in two ways (the
roles of every metric; the role of the main curve) that disagreed on a run judged by a curve of no
known role (the `energy` of a VMC run beside its `it/s`) and on a rate logged beside a learning rate.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

TRAINING_ROLES = frozenset({"loss", "eval_loss", "reward", "accuracy", "perplexity", "kl", "entropy", "grad_norm",
                            "lr", "loss_scale"})
"""Roles only a training (or its evaluation) logs."""

_CLOCK_OR_COUNT = re.compile(
    r"(?:^|[/_\-. ])(?:epochs?|steps?|global_?step|iters?|iterations?|batch(?:es)?|samples?|tokens?|examples?"
    r"|time|times|timestamp|wall(?:_?time)?|elapsed|eta|remaining|runtime|duration|progress|percent|pct|done|total"
    r"|count|n|num(?:ber)?|seconds?|secs?|s|ms|min|minutes?|hours?|h)(?:$|[/_\-. ])|%$", re.I)
"""A name of no known role that counts or times rather than measures (`epoch`, `elapsed`, `eta`, `%`)."""


def logged_training(roles: Mapping[str, str]) -> bool:
    """Whether anything a run logged (`roles`: metric -> role) is training's: a metric of a training
    role, or one of no known role that is no clock or count (a VMC run's `energy`, a `wer`). A run
    that logged only speeds, step times, memory, clocks and counters logged none."""
    return any(role in TRAINING_ROLES or (role == "other" and not _CLOCK_OR_COUNT.search(str(metric)))
               for metric, role in roles.items())
