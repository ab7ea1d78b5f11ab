"""Where groups of sources are analysed: this process, local worker processes, or Ray.

An executor maps one pure function (`run.analyze_group`) over the groups and yields the
results in the order the groups were given, with only a few in flight: a sweep of 10^5
runs never holds 10^5 frames, and the report is the same on every machine and executor.
"""
from __future__ import annotations

import logging
import os
import signal
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

from ..errors import SpikelensError, UsageError

EXECUTORS = ("local", "ray")
MIN_GROUPS_FOR_WORKERS = 4
IN_FLIGHT_PER_WORKER = 2


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def execute(executor: str, fn: Callable[..., Any], items: list[Any], shared: tuple = (),
            jobs: int | None = None) -> Iterator[Any]:
    """`fn(item, *shared)` for every item, yielded in order."""
    if executor == "local":
        return _local(fn, items, shared, jobs)
    if executor == "ray":
        return _ray(fn, items, shared)
    raise UsageError(f"--executor {executor!r}: expected one of {', '.join(EXECUTORS)}")


def _local(fn: Callable[..., Any], items: list[Any], shared: tuple, jobs: int | None) -> Iterator[Any]:
    """Worker processes (all cores by default); a handful of groups stay in this process."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs == 1 or len(items) < MIN_GROUPS_FOR_WORKERS:
        for item in items:
            yield fn(item, *shared)
        return
    # the pool's modules load only here: `multiprocessing` is ~30 ms of every analyze's
    # start-up, and one run (the common command line) never starts a worker
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: Polars' thread pool does not survive a fork
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_ignores_signals)
    try:
        yield from _in_order((_submit(pool, fn, item, shared) for item in items),
                             IN_FLIGHT_PER_WORKER * jobs, Future.result)
    except BaseException:  # Ctrl-C, SIGTERM, an error, or the caller stopped reading
        _stop(pool)
        raise
    pool.shutdown()


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _submit(pool: ProcessPoolExecutor, fn: Callable[..., Any], item: Any, shared: tuple) -> Future:
    """Submit with Ctrl-C and SIGTERM held back: a worker started by this submit inherits
    them blocked until it has set them aside (`_worker_ignores_signals`), so one that is
    still starting never dies of them with a traceback; here they arrive right after."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        return pool.submit(fn, item, *shared)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        return pool.submit(fn, item, *shared)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_ignores_signals() -> None:
    """Ctrl-C and SIGTERM reach the whole process group; only the main process handles
    them (it stops the workers), so no worker prints a traceback or breaks the pool first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Drop the queued groups and end the workers now (they hold no output: the report
    and every file are written by this process, after the sweep)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        try:
            proc.kill()
        except (OSError, ValueError, AttributeError):  # already gone
            pass
    for proc in procs:
        try:
            proc.join(5)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass


def _in_order(submitted: Iterable[Any], limit: int, wait: Callable[[Any], Any]) -> Iterator[Any]:
    """Results of lazily submitted tasks in submission order, at most `limit` in flight."""
    it = iter(submitted)
    pending: deque = deque()
    for task in it:
        pending.append(task)
        if len(pending) >= limit:
            break
    while pending:
        out = wait(pending.popleft())
        nxt = next(it, None)
        if nxt is not None:
            pending.append(nxt)
        yield out


def _ray(fn: Callable[..., Any], items: list[Any], shared: tuple) -> Iterator[Any]:
    """One Ray task per item on the cluster `ray.init` finds (RAY_ADDRESS, or one started
    with `ray start`), else on a local instance started here and stopped at the end."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'spikelens[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        remote = ray.remote(num_cpus=1)(fn)
        refs = [ray.put(x) for x in shared]
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        yield from _in_order((remote.remote(item, *refs) for item in items),
                             IN_FLIGHT_PER_WORKER * workers, _ray_get)
    finally:
        if started:
            ray.shutdown()


def _ray_get(ref: Any) -> Any:
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        # a user mistake in a task (a named file that is not a log) is a one-line error
        if isinstance(exc.cause, SpikelensError):
            raise exc.cause from None
        raise
