"""Did the run finish what it set out to do?

A run-level judgement (SL306 `ended_early`), made beside the resume findings because it
reads the run's timeline and what its writers declared, not a curve:

- the plan: the total the log states (`step 750/19560`, `iteration 600/ 171661`,
  `step:40/1750`), HF `max_steps`, Lightning `max_epochs` in `hparams.yaml`, `epochs` in
  Ultralytics' `args.yaml`; the importers put it in the run's meta as `plan.steps` /
  `plan.epochs` (with `plan.epoch_base`, the number of the first epoch, where the step is
  the epoch);
- the end: the last logged step (the stitched step of the last live point), and the
  error a text log ends with (`plan.error`: the exception line after a final
  `Traceback`, or a launcher's kill message).

A crash is an error: it is the first thing the run's owner needs to know (a run
stopped by hand, `KeyboardInterrupt` or a launcher's `received SIGINT`, is info: deliberate;
so is an error after the run reached its plan: it finished, and the error came on its way
out). A run that stopped well short of
its plan with no error in its log is info: on real runs that is most often a run its
owner stopped on purpose (a fine-tune planned for many epochs and stopped once good
enough), and it may also be still running; the finding says where it stopped. A stop
declared by an early-stopping callback, and a snapshot inside a `checkpoint-N` folder
(the run went on after it), are not findings.

Earlier launches are told too, as info (the run went on): one that died with an error line
(`launch_crash_findings`) and one that died without a word, read from how the next launch
took over (`relaunch_crash_findings`: a rollback to before the step it had reached).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..model.finding import Finding

CODE = "SL306"
KIND = "ended_early"

SHORT_FRACTION = 0.9
"""A run is short of its plan when it stopped before this fraction of it."""

_CHECKPOINT_DIR = re.compile(r"(?:^|[/\\])checkpoint[-_]\d+[/\\][^/\\]+$")


def plan_of(meta: dict[str, Any]) -> dict[str, Any]:
    """The plan the run's writers declared, from the run meta (see the module doc)."""
    plan: dict[str, Any] = {}
    steps = _positive(meta.get("plan.steps", meta.get("plan_steps")))
    if steps is None:
        steps = _positive(meta.get("hf.max_steps"))
        if steps is not None:
            plan["plan_from"] = "trainer_state.json max_steps"
    elif meta.get("plan.from"):
        plan["plan_from"] = meta["plan.from"]
    if steps is not None:
        plan["planned_steps"] = steps
    epochs = _positive(meta.get("plan.epochs"))
    if epochs is not None:
        plan["planned_epochs"] = epochs
        plan.setdefault("plan_from", meta.get("plan.from") or "max_epochs")
    return plan


def ended_early_finding(run: str, meta: dict[str, Any], *, first_step: int | None, last_step: int | None,
                        last_epoch: float | None, last_source: str | None,
                        loss_ended_nonfinite: bool = False, epochs_done: float | None = None,
                        plan_is_training: bool = True, epochs_at_most: int | None = None) -> Finding | None:
    """SL306 for a run that crashed or stopped well short of its plan, else None. With
    `plan_is_training` False (the run logged no training, only a data-preparation bar's speed), the
    total its counter shows is no plan: an error after the counter reached it is still a crash.
    `epochs_at_most`: the most epochs a run that logs no epoch counter can have done (the steps it
    spans): a plan in epochs it falls far short of was not finished, whatever its step counts."""
    if last_step is None:
        return None
    if last_source and _CHECKPOINT_DIR.search(str(last_source)):
        return None  # a checkpoint's copy of the state: the run went on after it
    plan = plan_of(meta) if plan_is_training else {}  # a data-preparation bar's total plans no training
    base = meta.get("plan.epoch_base")
    if last_epoch is None and "planned_epochs" in plan and isinstance(base, int) and not isinstance(base, bool):
        last_epoch = float(last_step - base)  # the step is the epoch, counted from `base` (Ultralytics, timm)
    error = meta.get("plan.error")
    stopped_by = _early_stopped(meta)
    done = _fraction_done(plan, first_step=first_step, last_step=last_step, last_epoch=last_epoch,
                          epochs_done=epochs_done)
    at_most = None
    if done is None and "planned_epochs" in plan and epochs_at_most is not None \
            and epochs_at_most < SHORT_FRACTION * plan["planned_epochs"]:
        at_most = done = epochs_at_most / float(plan["planned_epochs"])
    short = done is not None and done < SHORT_FRACTION
    if not error and (not short or stopped_by):
        return None
    ev: dict[str, Any] = {"last_step": int(last_step), **plan}
    if last_epoch is not None and "planned_epochs" in plan:
        ev["last_epoch"] = float(last_epoch)
    if done is not None:
        ev["fraction_done"] = round(done, 4)
    if at_most is not None:
        ev["epochs_at_most"] = int(epochs_at_most)
    if error:
        ev["error_line"] = str(error)
        if meta.get("plan.error_line_no") is not None:
            ev["error_line_no"] = int(meta["plan.error_line_no"])
    if stopped_by:
        ev["stopped_by"] = stopped_by
    ev["loss_ended_nonfinite"] = bool(loss_ended_nonfinite)
    where = _plan_text(plan, done, at_most=at_most is not None)
    if error and done is not None and done >= 1.0:
        severity = "info"  # the plan was done: an error at shutdown (a saver, a logger's close) is no crash
        ev["finished_plan"] = True
        msg = f"the run finished its plan (step {last_step}{where}), then logged an error on its way out: {_short(str(error))}"
    elif error and _USAGE.search(str(error)):
        severity = "info"  # argparse stops a command before it runs anything: the training logged is not what failed
        ev["usage_error"] = True
        msg = (f"after step {last_step}{where} a command stopped at its start on a usage error (its arguments were "
               f"refused before it ran anything): {_short(str(error))}; the training logged before it is not what failed")
    elif error:
        severity = "info" if _interrupted(str(error)) else "error"
        verb = "was interrupted" if severity == "info" else "crashed"
        msg = f"the run {verb} after step {last_step}{where}: {_short(str(error))}"
        if not plan_is_training:  # its steps count a data-preparation bar: training never logged a value
            msg = (f"the run {verb} before training logged any value (it logged only a speed or a count, which had "
                   f"reached {last_step}): {_short(str(error))}")
            ev["no_training_logged"] = True
    else:
        severity = "info"
        msg = (f"the log stops at step {last_step}{where}, with no error in it: stopped on purpose, killed "
               f"from outside (out of memory, preempted), or still running")
    if loss_ended_nonfinite:
        msg += " (the loss was already NaN/inf: see the nan finding)"
    at = int(last_step) if plan_is_training or first_step is None else int(first_step)  # before training: its start
    return Finding(kind=KIND, code=CODE, run=run, metric=None, severity=severity, message=msg,
                   start_step=at, end_step=at, evidence=ev,
                   extra={"planned_steps": plan.get("planned_steps"), "planned_epochs": plan.get("planned_epochs")})


def nan_crash_finding(run: str, meta: dict[str, Any], ended: Finding | None, last_step: int | None) -> Finding | None:
    """SL201 `nan` for a run whose log says after its last value that values went NaN/inf
    (`Loss is nan, stopping training`: the run's own check stopped it) while the logged curves
    were still finite. None when the log does not say so, or the loss itself already showed it
    (the curve's nan finding says it then). When the NaN is in the error line of a crash
    (`found invalid values: tensor([[nan, ...`), the crash finding is the one event: the NaN is
    folded into it (`fold_nan_into_crash`) and None is returned, so one error line never
    makes two errors."""
    said = meta.get("plan.error_nan")
    if not said or (ended is not None and ended.evidence.get("loss_ended_nonfinite")):
        return None
    crashed = ended is not None and ended.severity == "error"
    if crashed:
        fold_nan_into_crash(ended, str(said))
        return None
    if not _STOPS.search(str(said)):
        return None  # a NaN warning the run printed at its end (TF's `NaN or Inf found`) need not have ended it
    step = ended.start_step if ended is not None else last_step
    if step is None:
        return None
    logged = not (ended is not None and ended.evidence.get("values_logged") == 0)
    where = f"after step {step}" if logged else "before logging any value"
    error = meta.get("plan.error")
    msg = (f"the run ended on NaN/inf values {where}, which its logged metrics did not show: {_short(str(said))}"
           + (f" ({_short(str(error), 100)})" if error and str(error) != str(said) else ""))
    ev = {"nan_message": str(said), "first_nonfinite_step": int(step), "from_log_message": True}
    if error:
        ev["error_line"] = str(error)
    return Finding(kind="nan", code="SL201", run=run, metric=None, severity="error", message=msg,
                   start_step=int(step), peak_step=int(step), end_step=int(step), evidence=ev)


def fold_nan_into_crash(ended: Finding, said: str) -> None:
    """The crash `ended` says what its error line says about NaN/inf values: the message names
    them (the cause the owner looks for first) and the evidence keeps the line
    (`nan_message`, `died_of_nan`)."""
    ended.evidence.update(nan_message=said, died_of_nan=True, first_nonfinite_step=ended.start_step)
    logged = ended.evidence.get("values_logged") != 0
    ended.message += "; its error names NaN/inf values" + (", which its logged metrics did not show" if logged else "")
    if said != ended.evidence.get("error_line"):
        ended.message += f" ({_short(said, 100)})"


def launch_crash_findings(run: str, meta: dict[str, Any]) -> list[Finding]:
    """SL306 (info) for each earlier launch of a text log that died and was launched again
    (`plan.launch_errors`, see `textsignals.Signals.launch_errors`): the run went on, so it
    is no verdict on the run, but the crash and its error line are what the owner asks
    about ("it crashed before training got going")."""
    out = []
    for died in meta.get("plan.launch_errors") or ():
        error, last, nxt = str(died.get("error") or ""), died.get("last_step"), died.get("next_step")
        if not error:
            continue
        if died.get("line_no") is not None and died.get("line_no") == meta.get("plan.error_line_no"):
            continue  # the line the run ended on (what a killed process flushed after it is no relaunch)
        verb = ("stopped on NaN/inf values" if died.get("nan") else "was interrupted" if _interrupted(error)
                else "crashed")
        where = "before logging any value" if last is None else f"after step {last}"
        msg = f"a launch {verb} {where} and was started again (step {nxt} next): {_short(error)}"
        ev = {"error_line": error, "last_step": last, "relaunched_at_step": nxt, "launch_crashed": True,
              **({"died_of_nan": True} if died.get("nan") else {})}
        if died.get("line_no") is not None:
            ev["error_line_no"] = int(died["line_no"])
        step = int(last if last is not None else nxt)
        out.append(Finding(kind=KIND, code=CODE, run=run, metric=None, severity="info", message=msg,
                           start_step=step, end_step=step, evidence=ev,
                           extra={"planned_steps": None, "planned_epochs": None}))
    return out if len(out) <= LISTED_MAX else [_launch_crashes(run, out)]


def ledger_failure_findings(run: str, meta: dict[str, Any]) -> list[Finding]:
    """SL306 (info) for the experiments of a results ledger whose status says they failed
    (`ledger.failed`, see `importers.ledger`: autoresearch's `crash` rows, written as zeros): each
    was a training run that died, and the loop went on to the next. A last row that failed is how
    the ledger ended (the run's own SL306, from `plan.error`), not told again here. Many (more than
    `LISTED_MAX`) are one finding that lists them, as launch crashes are."""
    failed = sorted(int(s) for s in meta.get("ledger.failed") or ())
    if failed and meta.get("plan.error"):
        failed = failed[:-1] if str(meta["plan.error"]).startswith(f"experiment {failed[-1]}:") else failed
    if not failed:
        return []
    listed = ", ".join(str(s) for s in failed[:8]) + (", …" if len(failed) > 8 else "")
    msg = (f"experiment {failed[0]} of this ledger failed (its status says so) and logged no values; the loop went "
           f"on to the next" if len(failed) == 1 else
           f"{len(failed)} experiments of this ledger failed (their status says so; experiments {listed}) and logged "
           f"no values; the loop went on after each")
    ev = {"ledger_failed": failed, "launch_crashed": True}
    return [Finding(kind=KIND, code=CODE, run=run, metric=None, severity="info", message=msg,
                    start_step=failed[0], end_step=failed[-1], evidence=ev,
                    extra={"planned_steps": None, "planned_epochs": None})]


LISTED_MAX = 5
"""Launch crashes (and rollbacks, `resume.boundary_findings`) told one finding each up to this many; more (a job
relaunched dozens of times) are one finding that lists them, the way an engineer sums them up."""


def _launch_crashes(run: str, each: list[Finding]) -> Finding:
    """One SL306 (info) for many launches that crashed and were started again: how many, the steps they
    died after, the error most of them printed; each launch in `evidence.launch_crashes`."""
    errors = [str(f.evidence["error_line"]) for f in each]
    common = max(set(errors), key=errors.count)
    steps = [f.start_step for f in each]
    msg = (f"{len(each)} launches crashed and were started again (after steps "
           f"{', '.join(str(s) for s in steps[:8])}{', …' if len(each) > 8 else ''}); "
           + (f"each printed: {_short(common)}" if errors.count(common) == len(errors) else
              f"{errors.count(common)} of them printed: {_short(common)}"))
    ev = {"launch_crashed": True, "launch_crashes": [dict(f.evidence) for f in each], "error_line": common,
          "last_step": each[0].evidence.get("last_step"), "relaunched_at_step": each[0].evidence.get("relaunched_at_step")}
    if any(f.evidence.get("died_of_nan") for f in each):
        ev["died_of_nan"] = True
    return Finding(kind=KIND, code=CODE, run=run, metric=None, severity="info", message=msg,
                   start_step=min(steps), end_step=max(steps), evidence=ev,
                   extra={"planned_steps": None, "planned_epochs": None})


def relaunch_crash_findings(run: str, meta: dict[str, Any], boundaries: list,
                            epochs: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> list[Finding]:
    """SL306 (info) for the launches of a run that died without a word and were launched again.

    A launch that stops, followed by one that starts again at or before the step it reached,
    reads to a person as "it died there" (killed, out of memory, preempted): the relaunch
    lost what the launch did after its checkpoint, or threw it away and began afresh. A launch
    is taken to have died when nothing the log said between the two makes the next one another
    run (`plan.launch_words`: a fold, seed, trial or stage with a new number, a new heading, early
    stopping, a closing summary), the next one (`boundaries`, `detect.resume.Boundary`, in launch
    order) is no counter that restarted under a curve that went on (`reset`), and
    - it is a new run from the beginning (`rerun`) that went past where this launch stopped,
      which got less than `SHORT_FRACTION` of the way the longest launch went (the same run
      launched again; runs of one length appended, or a shorter one last, are a sweep);
    - or the next one is a rollback of the same run and
      - it logged one step only, at the run's start (an attempt killed at its first step);
      - the next one resumed from a checkpoint more than a logging interval before its last step;
      - the next one began from scratch and it got less than `SHORT_FRACTION` of the way the
        longest launch from scratch went (the plan the launches show).
    Silent for a launch that reached the declared plan, a resume at the launch's last step
    (a planned stop, then a resume from its final checkpoint), runs appended one after
    another that the log names or that each went as far (k-fold, seeds, a sweep), a launch whose error line
    `launch_crash_findings` tells, a relaunch that declares the step it branched from (a fork), a
    launch of one point that is no attempt (an evaluation re-logged at a checkpoint's step), and a
    launch from scratch whose epochs are another length than the next one's (`epochs`: per segment, the
    steps and values of its epoch counter; `other_epochs`): the same run launched again reaches the same
    epoch at the same step, so a launch 3 epochs in at step 70 where the next is in its first epoch
    trained another configuration (a fine-tune on a smaller set, a stage of a pipeline) and finished it.
    One finding per run lists every launch that died."""
    attempts = _attempts(boundaries)
    if len(attempts) < 2:
        return []
    told = {d.get("last_step") for d in meta.get("plan.launch_errors") or ()}
    planned = plan_of(meta).get("planned_steps")
    if planned is not None and max(a["last"] for a in attempts) > planned:
        planned = None  # a plan on another counter (the steps of an epoch, a stage's total)
    run_first = attempts[0]["first"]
    longest = max(a["last"] - a["first"] for a in attempts if a["from_scratch"])
    # a launch that declares where it branched off (W&B's `resume_from`/fork) was started on purpose
    forked = {int(k) + 1 for k, v in (meta.get("segment_meta") or {}).items()
              if isinstance(v, dict) and any("branch_point" in str(key) for key in v)}
    # what the log said between two launches that makes the next one another run (`fold 2`, `seed=3`,
    # `Early stopping`: `textsignals.Signals.launch_words`), by the last step before it
    another = {w.get("last_step") for w in meta.get("plan.launch_words") or ()}
    died = []
    for a, b in zip(attempts, attempts[1:]):
        if b["launch"] not in ("rollback", "rerun") or b["first"] > a["last"] or a["last"] in told \
                or b["launch_no"] in forked or a["last"] in another:
            continue
        if planned is not None and a["last"] >= SHORT_FRACTION * planned:
            continue
        one_point = a["first"] == a["last"] and a["first"] <= run_first + max(a["interval"], 1)
        if b["launch"] == "rerun":
            # a new run from the beginning after one that got far: a death only where nothing said
            # it was another run, it stopped short of the longest, and the relaunch went past it
            short = (a["last"] - a["first"] < SHORT_FRACTION * longest and b["first"] < a["last"] < b["last"])
        elif b["from_scratch"]:
            short = a["last"] - a["first"] < SHORT_FRACTION * longest
        else:
            short = a["last"] - b["first"] >= max(b["interval"], 1)
        if (short and b["from_scratch"] and epochs
                and other_epochs(epochs.get(a["launch_no"] - 1), epochs.get(b["launch_no"] - 1), a["last"])):
            continue
        if one_point or short:
            died.append({"launch": a["launch_no"], "last_step": a["last"], "relaunched_at_step": b["first"],
                         "relaunch": b["launch_no"], "from_scratch": b["from_scratch"]})
    if not died:
        return []
    first = died[0]
    steps = ", ".join(str(d["last_step"]) for d in died[:8]) + (", …" if len(died) > 8 else "")
    how = "from the beginning" if first["from_scratch"] else f"from step {first['relaunched_at_step']}"
    msg = (f"launch {first['launch']} stopped after step {first['last_step']} with no error in the log and was "
           f"started again {how} (launch {first['relaunch']}): it died there (killed, out of memory, preempted)"
           if len(died) == 1 else
           f"{len(died)} launches stopped with no error in the log and were started again at or before the step "
           f"they had reached (after steps {steps}): they died there (killed, out of memory, preempted)")
    ev = {"last_step": first["last_step"], "relaunched_at_step": first["relaunched_at_step"], "launch_died": True,
          "died_launches": died}
    return [Finding(kind=KIND, code=CODE, run=run, metric=None, severity="info", message=msg,
                    start_step=int(first["last_step"]), end_step=int(first["last_step"]), evidence=ev,
                    extra={"planned_steps": planned, "planned_epochs": None})]


def other_epochs(a: tuple[np.ndarray, np.ndarray] | None, b: tuple[np.ndarray, np.ndarray] | None,
                 at: int) -> bool:
    """Launch `a`, which stopped at step `at`, and launch `b`, which started again from scratch, count
    their epochs differently: at that step (the last epoch each logged at or before it) they are a
    whole epoch or more apart. None of either's epochs logged by then says nothing (False)."""
    if a is None or b is None:
        return False
    ea, eb = a[1][a[0] <= at], b[1][b[0] <= at]
    if not ea.size or not eb.size:
        return False
    return bool(abs(float(ea[-1]) - float(eb[-1])) >= 1.0)


def _attempts(boundaries: list) -> list[dict]:
    """The run's launches that trained, in launch order: `first`, `last` (stitched steps),
    `launch` (how it took over), `from_scratch`, `interval`, `launch_no` (1-based). A launch
    of one point past the run's start (an evaluation re-logged at a checkpoint's step, a
    summary line) is no attempt; nor is a launch without the main metric."""
    if not boundaries:
        return []
    b0 = boundaries[0]
    run_first = b0.run_first_step if b0.run_first_step is not None else b0.first_step
    out = [{"first": int(run_first), "last": int(b0.prev_last_step), "launch": "start", "from_scratch": True,
            "interval": float(b0.interval), "launch_no": int(b0.previous) + 1}]
    for b in boundaries:
        if b.last_step is None or not b.has_main:
            continue
        one_point = b.last_step == b.first_step
        if one_point and b.first_step > run_first + max(b.interval, 1):
            continue
        out.append({"first": int(b.first_step), "last": int(b.last_step), "launch": b.launch,
                    "from_scratch": b.run_first_step is not None and b.first_step <= b.run_first_step + max(b.interval, 1),
                    "interval": float(b.interval), "launch_no": int(b.segment) + 1})
    return out


def crashed_before_logging_finding(run: str, meta: dict[str, Any]) -> Finding | None:
    """SL306 for a log that holds no value at all and ends in an error (`plan.error`): the job
    died before its first logged step (an out-of-memory at the first batch, a bad config).
    An error: nothing was trained, and a CI gate must fail it, not report "nothing read"."""
    error = meta.get("plan.error")
    if not error:
        return None
    severity = "info" if _interrupted(str(error)) else "error"
    verb = "was interrupted" if severity == "info" else "crashed"
    ev: dict[str, Any] = {"last_step": None, "error_line": str(error), "values_logged": 0, **plan_of(meta)}
    if meta.get("plan.error_line_no") is not None:
        ev["error_line_no"] = int(meta["plan.error_line_no"])
    msg = f"the run {verb} before logging any value: {_short(str(error))}"
    return Finding(kind=KIND, code=CODE, run=run, metric=None, severity=severity, message=msg,
                   start_step=0, end_step=0, evidence=ev,
                   extra={"planned_steps": ev.get("planned_steps"), "planned_epochs": ev.get("planned_epochs")})


_STOPS = re.compile(r"(?i)\b(?:stop|stopping|abort|aborting|exit|exiting|terminat\w*|halt\w*)\b")
"""A NaN message that says the run stops on it (`Loss is nan, stopping training`)."""


def _fraction_done(plan: dict[str, Any], *, first_step: int | None, last_step: int,
                   last_epoch: float | None, epochs_done: float | None = None) -> float | None:
    if "planned_steps" in plan:
        return float(last_step) / float(plan["planned_steps"])
    if "planned_epochs" in plan and epochs_done is not None:  # the epochs it got through, as its log counts them
        return float(epochs_done) / float(plan["planned_epochs"])
    if "planned_epochs" in plan and last_epoch is not None:
        return (float(last_epoch) + 1.0) / float(plan["planned_epochs"])  # epochs are counted from 0
    return None


def _plan_text(plan: dict[str, Any], done: float | None, at_most: bool = False) -> str:
    if done is None:
        return ""
    if "planned_steps" in plan:
        return f" of the {int(plan['planned_steps']):,} planned ({100 * done:.0f}%)"
    if at_most:  # (a bound: `2.5%`, not a rounded `2%` it may not have reached)
        return f" (at most {100 * done:.2g}% of the {int(plan['planned_epochs'])} planned epochs)"
    return f" ({100 * done:.0f}% of the {int(plan['planned_epochs'])} planned epochs)"


def _early_stopped(meta: dict[str, Any]) -> str | None:
    """The callback that declared the stop, when the writer recorded one."""
    if meta.get("hf.early_stopping"):
        return "EarlyStoppingCallback"
    return meta.get("plan.stopped_by") or None


_USAGE = re.compile(r"^\S+: error: (?:unrecognized arguments|the following arguments are required|argument |invalid choice"
                    r"|ambiguous option|one of the arguments|expected \w+ argument)")
"""argparse's exit line (`prog.py: error: unrecognized arguments: -ws 8`, after its `usage:` line): a command
given the wrong arguments exits before it runs anything, so it cannot have crashed a training in progress."""
_INTERRUPT = re.compile(r"\bKeyboardInterrupt\b|\bSIGINT\b|\bCtrl[- +]?C\b|\binterrupted by (?:the )?user\b"
                        r"|\bExiting from training early\b", re.I)
"""Ctrl-C in the words a program or its launcher prints it: Python's `KeyboardInterrupt`, a
launcher's `Main process received SIGINT, exiting` (DeepSpeed), torchrun's `Received SIGINT
death signal`, Flair's `Exiting from training early.` (its KeyboardInterrupt handler). SIGINT is the
terminal's interrupt: someone stopped the run by hand."""


def _interrupted(error: str) -> bool:
    """Stopped by hand (Ctrl-C), not by a fault."""
    return bool(_INTERRUPT.search(error))


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _positive(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if x > 0 else None
