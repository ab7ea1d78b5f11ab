"""Side quantities of a reinforcement learner that engineers read as divergence when they run away.

A Q-value, a Gaussian policy's std and a PPO update's approximate KL each have a size a healthy
run keeps: value estimates settle at a fixed point, a policy's std shrinks as it grows sure, an
update moves the policy by hundredths of a nat. Each is judged against that, in orders of
magnitude, never against a loss's noise model (their values are not losses).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..model.finding import Finding
from .stats import rank_correlation

_Q = re.compile(r"(?:^|[_\- ])q(?:[_\- ]|$)|q_?val|^qf\d*(?:_|$)|^q\d", re.I)
"""`mean_q`, `max_q`, `Avg_Q_value`, `q_values`, `qf1_values`: a value estimate."""
_STD = re.compile(r"(?:policy_|action_|actor_)?std", re.I)
_NOT_POLICY = re.compile(r"reward|stats|obs|norm|return|adv|value|grad", re.I)
"""A std of rewards, of observation statistics or of gradients is no policy's std."""
_UPDATE_KL = re.compile(r"approx_?kl", re.I)
"""PPO's per-update approximate KL (`approx_kl`, `approxkl`); a KL to a reference policy may grow."""


def _leaf(metric: str) -> str:
    return re.split(r"[/.]", metric)[-1]


@dataclass(frozen=True, kw_only=True)
class RunawayDetector(Detector):
    """A value estimate, a policy std or a policy update's KL that ran away by orders of magnitude.

    Detects: a Q-value (`mean_q`, `Avg_Q_value`) whose last tenth is `q_orders` orders of magnitude
    above its first tenth and still `q_late_growth` x its size at the middle of the run (no fixed
    point: bootstrapped targets feeding on themselves); a Gaussian policy's std (`train/std`) whose
    last tenth is `std_growth` x its first, rising on most of the run (rank correlation at least
    `min_rho`); a PPO update's approximate KL whose median over the run is `max_update_kl` nats or
    more (a healthy update moves the policy by hundredths of a nat).
    Why it matters: a value estimate with no fixed point makes every target wrong; a policy whose
    std grew tenfold acts at random (its actions clipped to the bounds); updates that replace the
    policy each time make the trust region meaningless. The reward curve may hide all three for a
    while.
    Likely causes: a learning rate too high for the critic, no target network or one updated too
    often, rewards not scaled (Q); an entropy bonus too large, a log-std left unbounded (std);
    advantages not normalised, a clip range or learning rate far too large, a KL computed on the
    wrong log-probabilities (KL).
    Evidence: first, middle and last sizes and their ratios; the std's growth and rank
    correlation; the KL's median, largest value and their steps.
    """

    code = "SL209"
    kind = "divergence"
    roles = ("other", "kl")

    min_points: int = 10
    q_orders: float = 3.0
    """A Q-value's last tenth this many orders of magnitude above its first tenth ..."""
    q_late_growth: float = 3.0
    """... and still growing: this many times its size at the middle of the run."""
    std_growth: float = 10.0
    """A policy's std that grew this many times from its first tenth to its last ..."""
    min_rho: float = 0.8
    """... rising on most of the run (rank correlation with the step)."""
    max_update_kl: float = 1.0
    """A PPO update KL whose median is this many nats or more: every update replaced the policy."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        step, v = series.finite()
        if v.size < self.min_points:
            return []
        leaf = _leaf(series.metric)
        if _UPDATE_KL.search(leaf):
            return self._update_kl(series, ctx, step, v)
        if series.role != "other":
            return []
        if _STD.fullmatch(leaf) and not _NOT_POLICY.search(series.metric):
            return self._std(series, ctx, step, v)
        if _Q.search(leaf):
            return self._q(series, ctx, step, v)
        return []

    def _q(self, series: Series, ctx: RunContext, step: np.ndarray, v: np.ndarray) -> list[Finding]:
        sizes = self._q_sizes(series)
        if sizes is None:
            return []
        runaways = [s for s in ctx.series.values() if s.role == "other" and _Q.search(_leaf(s.metric))
                    and self._q_sizes(s) is not None]
        if runaways and runaways[0] is not series:
            return []  # one finding for the run's value estimates (mean, max, min), on the first
        first, mid, last, t = sizes
        also = [s.metric for s in runaways[1:]]
        orders = float(np.log10(last / first))
        msg = (f"{series.label} ran away: its size grew from {first:.3g} (first {t} points) to {mid:.3g} at the "
               f"middle of the run and {last:.3g} by step {int(step[-1])} ({orders:.1f} orders of magnitude, still "
               f"{last / mid:.0f}x in the second half): value estimates with no fixed point, bootstrapping on "
               f"themselves" + (f"; {', '.join(also)} ran away with it" if also else ""))
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="error",
                        message=msg, start_step=_onset(step, np.abs(v), first), end_step=int(step[-1]),
                        magnitude=last / first,
                        evidence={"first_size": first, "middle_size": mid, "last_size": last,
                                  "orders_of_magnitude": orders, "runaway": "value_estimate", "also_on": also})]

    def _q_sizes(self, s: Series) -> tuple[float, float, float, int] | None:
        """(first tenth, middle, last tenth sizes, tenth) of a value estimate that ran away, else None."""
        _, v = s.finite()
        if v.size < self.min_points:
            return None
        t = max(3, v.size // 10)
        size = np.abs(v)
        first, last = float(np.median(size[:t])), float(np.median(size[-t:]))
        mid_at = v.size // 2
        mid = float(np.median(size[max(0, mid_at - t // 2):mid_at + t // 2 + 1]))
        if first > 0 and mid > 0 and last >= 10 ** self.q_orders * first and last >= self.q_late_growth * mid:
            return first, mid, last, t
        return None

    def _std(self, series: Series, ctx: RunContext, step: np.ndarray, v: np.ndarray) -> list[Finding]:
        if float(np.min(v)) <= 0:
            return []  # a log-std, or not a std
        t = max(3, v.size // 10)
        first, last = float(np.median(v[:t])), float(np.median(v[-t:]))
        rho = rank_correlation(v)
        if last < self.std_growth * first or not np.isfinite(rho) or rho < self.min_rho:
            return []
        msg = (f"{series.label} grew {last / first:.0f}x, from {first:.3g} (first {t} points) to {last:.3g} by step "
               f"{int(step[-1])}, rising all along (rank correlation {rho:.2f}): the policy's std ran away, so its "
               f"actions are mostly noise (clipped to their bounds) instead of growing sure")
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                        message=msg, start_step=int(step[0]), end_step=int(step[-1]), magnitude=last / first,
                        evidence={"first_size": first, "last_size": last, "growth": last / first,
                                  "spearman": float(rho), "runaway": "policy_std"})]

    def _update_kl(self, series: Series, ctx: RunContext, step: np.ndarray, v: np.ndarray) -> list[Finding]:
        typical = float(np.median(v))
        if typical < self.max_update_kl:
            return []
        big = np.flatnonzero(v >= self.max_update_kl)
        top = int(np.argmax(v))
        msg = (f"{series.label} was {typical:.3g} nats at the median update ({big.size} of {v.size} updates at "
               f"{self.max_update_kl:g} or more, up to {float(v[top]):.3g} at step {int(step[top])}; from step "
               f"{int(step[big[0]])} to {int(step[big[-1]])}): a PPO update moves the policy by hundredths of a nat, "
               f"so every update replaced the policy (advantages not normalised, a clip range or learning rate far "
               f"too large, the KL computed on the wrong log-probabilities)")
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="error",
                        message=msg, start_step=int(step[big[0]]), peak_step=int(step[top]),
                        end_step=int(step[big[-1]]), magnitude=typical,
                        evidence={"median_kl": typical, "max_kl": float(v[top]), "updates_over": int(big.size),
                                  "updates": int(v.size), "runaway": "update_kl"})]


def _onset(step: np.ndarray, size: np.ndarray, first: float) -> int:
    """The first step where the size stood ten times its first tenth's: where it left its start."""
    over = np.flatnonzero(size >= 10 * first)
    return int(step[over[0]]) if over.size else int(step[0])
