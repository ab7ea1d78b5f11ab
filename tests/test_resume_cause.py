"""A resume is a held-out event's cause only when the training loss moved too (#25: a Keras run's
validation-only spikes, three epochs after a one-step relaunch, were blamed on the resume at 90%
while the training loss stayed smooth): state a resume failed to restore shows in training first."""
from __future__ import annotations

import numpy as np

from spikelens.detect.base import RunContext, Series
from spikelens.explain.causes import resume
from spikelens.model.finding import Finding

STEPS = np.arange(485, 12611, 485)


def _ctx() -> RunContext:
    series = {m: Series(m, r, STEPS, np.linspace(1.0, 0.1, STEPS.size)) for m, r in (("loss", "loss"),
                                                                                    ("val_loss", "eval_loss"))}
    return RunContext(run="r", roles={m: s.role for m, s in series.items()}, series=series, segment_starts=[485])


def _spike(metric: str, at: int) -> Finding:
    return Finding(kind="spike", code="SL101", run="r", metric=metric, severity="warning", message="spike",
                   start_step=at, peak_step=at + 485, end_step=at + 970, recovery="fast", magnitude=20.0)


def test_a_validation_only_spike_after_a_resume_is_not_the_resumes():
    f = _spike("val_loss", 1940)
    assert resume(f, _ctx(), [f]) is None


def test_a_validation_spike_the_training_loss_shared_is_still_the_resumes():
    f, g = _spike("val_loss", 1940), _spike("loss", 1940)
    cause = resume(f, _ctx(), [f, g])
    assert cause is not None and cause.cause == "resume" and cause.numbers["resume_step"] == 485


def test_a_training_loss_spike_after_a_resume_is_the_resumes():
    g = _spike("loss", 970)
    assert resume(g, _ctx(), [g]) is not None
