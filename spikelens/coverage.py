"""Was anything read? A run with no loss-like metric was not checked, and a report
where no run has one is no pass: a job that crashed before logging, a header-only CSV
or a truncated trainer_state.json must not look like a clean run to a CI gate. A run
that logs no loss but a score (an accuracy, a Dice) is read by that score, as a person
reads it, and a note says so; a run that names none of them is read by the curve a person
would read it by, its role read from its trend (`curveguess`), and a note says that too.
"""
from __future__ import annotations

from typing import Sequence

from .errors import NothingFound
from .model.report import Report, RunReport

LOSS_ROLES = ("loss", "eval_loss", "reward")
"""What a run is judged by: a loss, an eval loss, or the reward of a reinforcement-learning run
(an SB3 monitor.csv logs only episode rewards; its reward is its objective)."""
SCORE_ROLES = ("accuracy",)
"""...else the score it logs (an accuracy, a Dice, an F1, a mAP, a BLEU: higher is better): a
person reads a run that prints only its accuracy by that accuracy, so it is read and charted,
and a note says it was judged by a score, not a loss."""
MAX_REASONS = 3
"""Reasons named in the one-line error before the rest are counted."""


def has_loss(run: RunReport) -> bool:
    """Was the run judged: it logs a loss or a reward, or a score that stands for them, or a curve
    a person reads it by whose role was read from its trend (`curveguess`)."""
    return bool(guessed(run)) or any(role in LOSS_ROLES or role in SCORE_ROLES for role in run.metrics.values())


def guessed(run: RunReport) -> dict[str, str]:
    """The curve the run was read by where no name said what to judge it by: metric -> its shape
    (falling, rising, no steady trend); empty when names said it."""
    return dict(getattr(run.metrics, "guessed", None) or {})


def guessed_note(run: RunReport) -> str:
    """What the report says of a run judged by a guessed curve: which, by what shape, how to name it."""
    import shlex

    metric, shape = next(iter(guessed(run).items()))
    role = run.metrics.get(metric, "other")
    tag = shlex.quote(metric)  # `--role 'Total Steps'=loss`: as a shell takes it
    if role == "other":
        return (f"{run.run}: no metric named as a loss, reward or score; its curve {metric!r} has no steady "
                f"trend, so only its non-finite values and how the run ended were checked; "
                f"name its role with --role {tag}=loss (or =reward)")
    told = {"loss": "a loss", "eval_loss": "a held-out loss", "accuracy": "a score (higher is better)",
            "reward": "a reward (higher is better)"}[role]
    return (f"{run.run}: no metric named as a loss, reward or score; judged by {metric!r}, read as {told} "
            f"from its trend ({shape}); name its role with --role {tag}=loss (or =reward) if that is wrong")


def judged_by_score(run: RunReport) -> bool:
    """A run that logs no loss nor reward, only a score (higher is better)."""
    roles = set(run.metrics.values())
    return not roles & set(LOSS_ROLES) and bool(roles & set(SCORE_ROLES))


def score_note(run: RunReport) -> str:
    main = (run.stats or {}).get("main_metric") or next(m for m, r in run.metrics.items() if r in SCORE_ROLES)
    return (f"{run.run}: no loss logged, judged by its score {main!r} (higher is better); "
            f"name its loss with --role TAG=loss if it logs one")


def crashed(run: RunReport) -> bool:
    """A run whose log ends in an error or an interrupt (SL306 naming the line it ended on) was
    judged: how it ended is the verdict, whether or not a loss was logged before it."""
    return any(f.kind == "ended_early" and (f.severity == "error" or (f.evidence or {}).get("error_line")
                                            and not (f.evidence or {}).get("launch_crashed"))
               for f in run.findings)


def lossless_note(run: RunReport) -> str:
    metrics = ", ".join(run.metrics) or "no metrics"
    return (f"{run.run}: no loss-like metric ({metrics}), so nothing was checked in it; "
            f"name its loss with --role TAG=loss")


def note_lossless(report: Report) -> None:
    """Name every run without a loss among the report's warnings (once)."""
    for run in report.runs:
        note = (guessed_note(run) if guessed(run) else score_note(run) if judged_by_score(run)
                else lossless_note(run))
        if (not has_loss(run) or judged_by_score(run) or guessed(run)) and not (run.points == 0 and crashed(run)) \
                and note not in report.warnings:
            report.warnings.append(note)


def unread(report: Report) -> list[str]:
    """The warnings naming a found log that gave no points (with why), in order."""
    from .discover import NOTHING_READ

    return [w for w in report.warnings if w.endswith(NOTHING_READ)]


def unread_error(report: Report) -> NothingFound | None:
    """`check`'s error when a found log gave no points, even beside runs that were read:
    a crashed run must not turn CI green. One line naming each log and why."""
    lines = unread(report)
    if not lines:
        return None
    shown = "; ".join(w.replace("\n", " ") for w in lines)
    return NothingFound(None, f"{len(lines)} log(s) found but not read, so not checked: {shown} "
                              "(--allow-empty judges what was read)")


def nothing_read(report: Report, paths: Sequence[object]) -> NothingFound | None:
    """The error for a report in which no run has a loss (None when one has): what was
    found and why nothing could be read, in one line."""
    if any(has_loss(r) or crashed(r) for r in report.runs):
        return None
    # the runs read without a loss first (what to do about them: --role), then the files not read
    notes = [lossless_note(r) for r in report.runs]
    reasons = notes + [w.replace("\n", " ") for w in report.warnings if w not in notes]
    found = (f"no loss could be read: {len(report.runs)} run(s) without a loss-like metric" if report.runs
             else "nothing could be read: no run with data")
    shown = "; ".join(reasons[:MAX_REASONS])
    if len(reasons) > MAX_REASONS:
        shown += f"; and {len(reasons) - MAX_REASONS} more"
    where = ", ".join(str(p) for p in paths) or "."
    return NothingFound(where, found + (f" ({shown})" if shown else ""))
