"""The poll loop: find the sources under the paths (new files and folders as they
appear), read what each appended, re-judge the runs that grew, tell what is new.

`Watcher.poll()` is one poll (tests and the benchmark call it directly); `run()` polls
every `interval` seconds until a stop (the event set by a signal handler, `duration`
elapsed, or a finding at `fail_on`), then judges every run whole once (`finish`: the
findings that need the end) and closes the alerts.

`OnlineJudge` is the same judge fed points from inside a training loop (the capture
callbacks), without files.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import diagnostics
from ..config import Config, load_config
from ..importers.base import Importer, Table, long_table
from ..model.finding import SEVERITY_RANK
from .alerts import ExecHook, Webhook
from .judge import Event, Judge, RunBook
from .state import WatchState
from .tail import Follower, followers_for, safe_poll


@dataclass
class WatchSummary:
    """How a watch ended: what it told and why it stopped."""

    polls: int = 0
    runs: int = 0
    told: int = 0
    by_severity: dict[str, int] = field(default_factory=dict)
    stopped: str = ""
    """"fail-on", "duration", "stopped" (a signal or the caller's stop event), "interrupted"."""
    failed: Event | None = None
    """The finding at --fail-on that ended the watch (or came at its end)."""
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return 1 if self.failed is not None else 0


class Watcher:
    """Follows the paths and judges their runs (see the module docstring)."""

    def __init__(self, paths: list[str | Path], *, config: Config | None = None, detector_params: dict | None = None,
                 state: str | Path | None = None, fail_on: str | None = None, webhook: str | None = None,
                 exec: str | None = None, on_event: Callable[[Event], None] | None = None,
                 on_warning: Callable[[str], None] | None = None, context: int = 20_000, settle: int = 3):
        self.roots = [Path(p) for p in paths]
        self.state = WatchState.open(state, self.roots)
        self.judge = Judge(config or load_config(), detector_params, context=context, settle=settle,
                           ledger=self.state.load())
        self.fail_on = fail_on
        self.hooks: list[Any] = ([Webhook(webhook)] if webhook else []) + ([ExecHook(exec)] if exec else [])
        self.on_event = on_event
        self.on_warning = on_warning or diagnostics.warn
        self.followers: dict[int, Follower] = {}
        self._by_path: dict[str, int] = {}
        self._whole: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._claimed: dict[str, Importer] = {}
        self._unclaimed: dict[str, int] = {}
        self._plugins: dict[str, dict[str, str]] = {}
        self.books: dict[str, RunBook] = {}
        self._dirty: set[str] = set()
        self._warned: set[str] = set()
        self._missing: set[str] = set()
        self.summary = WatchSummary()

    # ------------------------------------------------------------------ finding sources

    def discover(self) -> None:
        """Followers for sources not followed yet (a new event file after a resume, a new
        run folder in a sweep); a path that does not exist yet is waited for."""
        from ..discover import _claim, _walk

        groups: dict[str, tuple[Importer, list[Path]]] = {}
        seen: set[Path] = set()  # W&B's latest-run link points at a run folder walked already
        for root in self.roots:
            if not root.exists():
                if str(root) not in self._missing:
                    self._missing.add(str(root))
                    self._warn([f"{root}: does not exist yet; waiting for it"])
                continue
            for path, is_dir in _walk(root):
                imp = self._claim(path, is_dir, _claim)
                if imp is not None:
                    real = path.resolve()
                    if real in seen or (path.is_symlink() and self._inside_roots(real)):
                        continue  # followed by its own name (a link is repointed when a new run starts)
                    seen.add(real)
                    groups.setdefault(imp.group_key(path), (imp, []))[1].append(path)
        for key, (imp, paths) in groups.items():
            made = followers_for(paths, imp, self.state.views, self._plugins.setdefault(key, {}))
            for fol in made:
                if len(fol.paths) == 1 and type(fol).__name__ != "WholeFollower":
                    p = str(fol.paths[0])
                    if p not in self._by_path:
                        self._by_path[p] = self._add(fol)
                    continue
                names = tuple(sorted(str(p) for p in fol.paths))
                old = self._whole.get(key)
                if old is None or old[1] != names:
                    if old is not None:
                        self._forget(old[0])
                    self._whole[key] = (self._add(fol), names)

    def _inside_roots(self, real: Path) -> bool:
        return any(r.resolve() == real or r.resolve() in real.parents for r in self.roots if r.is_dir())

    def _claim(self, path: Path, is_dir: bool, claim) -> Importer | None:
        p = str(path)
        if p in self._claimed:
            return self._claimed[p]
        size = -1
        if not is_dir:
            try:
                size = path.stat().st_size
            except OSError:
                return None
            if self._unclaimed.get(p) == size:
                return None  # judged before at this size: nothing new to claim it by
        imp = claim(path, is_dir)
        if imp is None:
            self._unclaimed[p] = size
            return None
        self._claimed[p] = imp
        return imp

    def _add(self, fol: Follower) -> int:
        fid = len(self.followers) + 1
        while fid in self.followers:
            fid += 1
        self.followers[fid] = fol
        return fid

    def _forget(self, fid: int) -> None:
        self.followers.pop(fid, None)
        for key, book in self.books.items():
            book.drop(fid)
            self._dirty.add(key)

    # ------------------------------------------------------------------ one poll

    def poll(self) -> list[Event]:
        """Read what was appended, re-judge the runs that grew, tell and return what is new."""
        with diagnostics.collecting() as diag:
            self.discover()
            for fid, fol in list(self.followers.items()):
                delta = safe_poll(fol)
                if delta is None:
                    continue
                if delta.reset:
                    for key, book in self.books.items():
                        if any(i[0] == fid for i in book.parts):
                            book.drop(fid)
                            self._dirty.add(key)
                for t in delta.tables:
                    book = self.books.setdefault(t.run_key, RunBook(t.run_key))
                    book.add((fid, str(t.source), t.segment_key), t)
            events = []
            for key, book in self.books.items():
                if book.pending == 0 and key not in self._dirty:
                    continue
                self._dirty.discard(key)
                events.extend(self._judge(book))
        self._warn(diag.lines)
        self.summary.polls += 1
        self.summary.runs = len(self.books)
        self._tell(events)
        return events

    def _judge(self, book: RunBook, final: bool = False) -> list[Event]:
        try:
            rep, guard = self.judge.judge(book, whole=final)
        except Exception as exc:  # noqa: BLE001 - one run that cannot be judged must not end the watch
            diagnostics.warn(f"run {book.name or book.key}: could not be judged ({type(exc).__name__}: {exc})")
            return []
        if rep is None:
            return []
        events = self.judge.events(rep, guard, final=final)
        self.judge.status(book, rep)
        return events

    def finish(self) -> list[Event]:
        """Judge every run whole, once: what only the end can tell (the outliers summary, a
        plateau, a run that ended early), any outcome still open, and what runs watched
        together tell of each other (`explain.crossrun.link_runs`, as `analyze` links a
        sweep: a one-point outlier at the same step in several runs is a shared spike)."""
        from ..explain.crossrun import link_runs
        from ..model.report import Report

        with diagnostics.collecting() as diag:
            judged = []
            for book in self.books.values():
                try:
                    rep, _ = self.judge.judge(book, whole=True)
                except Exception as exc:  # noqa: BLE001 - one run that cannot be judged must not end the watch
                    diagnostics.warn(f"run {book.name or book.key}: could not be judged ({type(exc).__name__}: {exc})")
                    continue
                if rep is not None:
                    judged.append((book, rep))
            try:
                link_runs(Report(command="watch", runs=[rep for _, rep in judged]))
            except Exception as exc:  # noqa: BLE001 - the links are a refinement: the runs' own findings stand
                diagnostics.warn(f"runs could not be linked ({type(exc).__name__}: {exc})")
            events = []
            for book, rep in judged:
                events.extend(self.judge.events(rep, None, final=True))
                self.judge.status(book, rep)
        self._warn(diag.lines)
        self._tell(events)
        return events

    def _tell(self, events: list[Event]) -> None:
        if not events:
            return
        # the ledger first, then the alerts: a watch killed in between tells nothing twice
        self.state.save(self.judge.ledger)
        for ev in events:
            if ev.type == "finding":
                self.summary.told += 1
                sev = ev.finding.severity
                self.summary.by_severity[sev] = self.summary.by_severity.get(sev, 0) + 1
                for hook in self.hooks:
                    hook.send(ev)
                if self.summary.failed is None and self.fail_on is not None \
                        and SEVERITY_RANK[sev] >= SEVERITY_RANK[self.fail_on]:
                    self.summary.failed = ev
            if self.on_event is not None:
                self.on_event(ev)

    def _warn(self, lines: list[str]) -> None:
        new = [ln for ln in lines if ln not in self._warned]
        self._warned.update(new)
        for line in new:
            self.on_warning(line)

    # ------------------------------------------------------------------ the loop

    def run(self, interval: float = 30.0, duration: float | None = None,
            stop: threading.Event | None = None) -> WatchSummary:
        """Poll until a stop; then the end-of-watch judgement (unless --fail-on ended it)
        and the alerts flushed. Ctrl-C (KeyboardInterrupt) is a clean stop too."""
        stop = stop or threading.Event()
        start = time.monotonic()
        try:
            while True:
                self.poll()
                for hook in self.hooks:
                    if isinstance(hook, ExecHook):
                        hook.reap()
                if self.summary.failed is not None:
                    self.summary.stopped = "fail-on"
                    break
                left = None if duration is None else duration - (time.monotonic() - start)
                if left is not None and left <= 0:
                    self.summary.stopped = "duration"
                    break
                if stop.wait(interval if left is None else min(interval, left)):
                    self.summary.stopped = "stopped"
                    break
            if self.summary.failed is None:
                self.finish()
        except KeyboardInterrupt:
            self.summary.stopped = "interrupted"
        finally:
            for hook in self.hooks:
                hook.close()
            self.summary.seconds = time.monotonic() - start
        return self.summary

    def statuses(self) -> list[dict[str, Any]]:
        return [dict(b.status) for b in list(self.books.values()) if b.status]


class OnlineJudge:
    """The watch's judge fed from inside a training loop: `add(step, {"loss": v, ...})`,
    judged every `every` steps; returns the events that became known. Runs with the same
    windowing, settling and ledger as the watch, on points instead of files."""

    def __init__(self, run: str = "train", *, config: Config | None = None, detector_params: dict | None = None,
                 every: int = 1, context: int = 20_000, settle: int = 3):
        self.judge = Judge(config or load_config(), detector_params, context=context, settle=settle)
        self.book = RunBook(run)
        self.run = run
        self.every = max(1, every)
        self._rows: list[tuple[int, str, float]] = []
        self._seen = 0
        self._t0 = time.time()

    def add(self, step: int, metrics: dict[str, float | None]) -> list[Event]:
        for name, value in metrics.items():
            if value is not None:
                self._rows.append((int(step), name, float(value)))
        self._seen += 1
        if self._seen % self.every:
            return []
        return self.flush()

    def flush(self, final: bool = False) -> list[Event]:
        if self._rows:
            steps, names, values = zip(*self._rows)
            frame = long_table(list(steps), [None] * len(steps), list(names), list(values))
            self._rows = []
            self.book.add((0, self.run, self.run), Table(frame=frame, source=self.run, format="callback",
                                                         run_key=self.run, segment_key=self.run,
                                                         run_name=self.run))
        if self.book.pending == 0 and not final:
            return []
        with diagnostics.collecting():
            rep, guard = self.judge.judge(self.book, whole=final)
        if rep is None:
            return []
        return self.judge.events(rep, guard, final=final)


class LoopJudge:
    """What the capture callbacks hold: an OnlineJudge on the loss and what a finding at or
    above `fail_on` does ("raise", "stop" or "capture")."""

    def __init__(self, action: str, fail_on: str = "warning", every: int = 10):
        if fail_on not in SEVERITY_RANK:
            raise ValueError(f"fail_on={fail_on!r}: expected one of {', '.join(SEVERITY_RANK)}")
        self.action = action
        self.fail_on = fail_on
        self.judge = OnlineJudge("train", every=every)
        self.events: list[Event] = []

    def observe(self, step: int, loss: float | None) -> bool:
        """Feed one step's loss; True when the trainer should stop."""
        from .judge import FindingAlert

        new = self.judge.add(step, {"loss": loss})
        self.events.extend(new)
        hit = next((e for e in new if e.type == "finding"
                    and SEVERITY_RANK[e.finding.severity] >= SEVERITY_RANK[self.fail_on]), None)
        if hit is None or self.action == "capture":
            return False
        if self.action == "raise":
            raise FindingAlert(hit)
        return True
