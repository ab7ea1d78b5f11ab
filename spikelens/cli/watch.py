"""`spikelens watch`: follow logs while they are written; tell each finding once.

Exit codes: 1 when a finding at or above `--fail-on` was told (at once: the watch stops
there), 0 for any other end (`--for` elapsed, Ctrl-C or SIGTERM: a clean stop, with a
summary), 2 for usage or input errors.
"""
from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import List, Optional

import typer
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from ..errors import UsageError
from ..model.report import LOSS_LIKE
from . import app
from .analyze import build_config
from .check import Severity
from .common import CONFIG, QUIET, ROLE, stderr_console, stdout_console

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def parse_duration(text: str) -> float:
    """`30s`, `10m`, `1h30m`, `2d`, or plain seconds (`90`, `0.5`)."""
    s = text.strip().lower().replace(" ", "")
    parts = list(_DURATION.finditer(s))
    if not s or not parts or "".join(m.group(0) for m in parts) != s:
        raise UsageError(f"--for {text!r}: not a duration (e.g. 30s, 10m, 1h30m)")
    return sum(float(m.group(1)) * _UNITS[m.group(2) or "s"] for m in parts)


def event_line(ev) -> str:
    f = ev.finding
    where = f" step {f.anchor_step}" if f.anchor_step is not None else ""
    if ev.type == "withdrawn":
        return f"withdrawn {f.code} {f.kind} run {ev.run}{where}: {f.message}"
    if ev.type == "update":
        return f"update {f.code} {f.kind} [{f.severity}] run {ev.run}{where}: {f.message}"
    tag = (" (at the end of the watch)" if ev.at_end else " (provisional)" if ev.to_json()["provisional"]
           else " (open: not back yet)" if f.recovery == "none" else "")
    return f"{f.code} {f.kind} [{f.severity}] run {ev.run}{where}: {f.message}{tag}"


_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def status_table(rows: list[dict]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for col in ("run", "last step", "last value", "findings"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in rows:
        worst = r.get("worst")
        found = str(r.get("findings", 0))
        table.add_row(escape(str(r.get("run"))), str(r.get("last_step", "")), escape(_last_value_text(r)),
                      f"[{_STYLE.get(worst, '')}]{found}[/]" if worst else found)
    return table


def _last_value_text(status: dict) -> str:
    """The main metric's last value, its role beside it where that is no loss (`88.5 reward`): an RL
    run is judged by its return, and a bare number under a 'loss' heading would say it is a loss."""
    value, role = status.get("last_value"), status.get("role")
    if value is None:
        return ""
    return f"{value:.4g}" if role in LOSS_LIKE or not role else f"{value:.4g} {role}"


@app.command("watch")
def watch_cmd(
    paths: List[Path] = typer.Argument(..., help="Log files or folders being written (any mix of formats); "
                                                 "a folder that does not exist yet is waited for."),
    interval: float = typer.Option(30.0, "--interval", min=0.05, metavar="SECONDS",
                                   help="Seconds between two polls."),
    fail_on: Optional[Severity] = typer.Option(None, "--fail-on", case_sensitive=False,
                                               help="Exit 1 at the first finding at or above this severity."),
    webhook: Optional[str] = typer.Option(None, "--webhook", metavar="URL",
                                          help="POST each finding as JSON (with a Slack-compatible 'text'), "
                                               "retried with backoff in the background."),
    exec_cmd: Optional[str] = typer.Option(None, "--exec", metavar="CMD",
                                           help="Run CMD (a shell command, not waited for) for each finding, with "
                                                "SPIKELENS_CODE, SPIKELENS_RUN, SPIKELENS_STEP, SPIKELENS_MESSAGE "
                                                "and SPIKELENS_FINDING_JSON in its environment."),
    duration: Optional[str] = typer.Option(None, "--for", metavar="DURATION",
                                           help="Stop after this long (30s, 10m, 2h) and exit 0 unless "
                                                "--fail-on fired."),
    state: Optional[Path] = typer.Option(None, "--state", metavar="DIR",
                                         help="Where the watch keeps what it told (a restart does not tell it "
                                              "again) [default: ~/.cache/spikelens/watch/<hash of PATHS>]."),
    quiet: bool = QUIET,
    config: Optional[Path] = CONFIG,
    role: List[str] = ROLE,
) -> None:
    """Watch runs while they train: each finding is told once, when it is known, and its
    outcome (a spike that came back) once more; the findings are those `analyze` gives on
    the finished logs. Ctrl-C or SIGTERM stops it cleanly with a summary (exit 0 unless
    --fail-on fired: 1).

    Example: [bold]spikelens watch runs/ --fail-on error --webhook https://hooks.slack.com/...[/]
    """
    from ..live.watcher import Watcher

    seconds = parse_duration(duration) if duration is not None else None
    out = stdout_console()
    err = stderr_console()

    def warn(line: str) -> None:
        if not quiet:
            err.print(f"[yellow]warning:[/] {escape(line)}", markup=True, highlight=False)

    live: Live | None = None

    def on_event(ev) -> None:
        line = escape(event_line(ev))
        style = _STYLE.get(ev.finding.severity, "")
        text = f"[{style}]{line}[/]" if style else line
        (live.console if live is not None else out).print(text, markup=True, highlight=False, soft_wrap=True)

    watcher = Watcher(paths, config=build_config(config, role), state=state,
                      fail_on=fail_on.value if fail_on is not None else None, webhook=webhook, exec=exec_cmd,
                      on_event=on_event, on_warning=warn)
    if not quiet:
        err.print(escape(f"spikelens watch: watching {', '.join(map(str, paths))} every {interval:g} s; "
                         f"state in {watcher.state.folder}"), highlight=False)
    stop = threading.Event()
    caught: list[int] = []

    def on_signal(signum, _frame) -> None:
        caught.append(signum)
        stop.set()
        if len(caught) > 1:  # a second Ctrl-C: the user does not want to wait for the end-of-watch judgement
            raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if out.is_terminal:
            live = Live(status_table([]), console=out, refresh_per_second=2, transient=False)
            with live:
                refresher = threading.Thread(target=_refresh, args=(live, watcher, stop), daemon=True)
                refresher.start()
                summary = watcher.run(interval, seconds, stop)
                stop.set()
                live.update(status_table(watcher.statuses()))
        else:
            summary = watcher.run(interval, seconds, stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if not quiet:
        err.print(escape(summary_line(summary, watcher)), highlight=False)
    raise typer.Exit(summary.exit_code)


def _refresh(live: Live, watcher, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        try:
            live.update(status_table(watcher.statuses()))
        except RuntimeError:  # a poll added a run while the table was read: the next refresh shows it
            continue


def summary_line(summary, watcher) -> str:
    counts = ", ".join(f"{n} {sev}" for sev, n in sorted(summary.by_severity.items())) or "no findings"
    why = {"fail-on": "a finding at --fail-on", "duration": "--for elapsed", "stopped": "stopped",
           "interrupted": "interrupted"}.get(summary.stopped, summary.stopped or "stopped")
    line = (f"spikelens watch: {summary.polls} poll(s), {summary.runs} run(s), {summary.told} finding(s) told "
            f"({counts}); ended: {why}; state in {watcher.state.folder}")
    if summary.failed is not None:
        line += f"\nfailed on: {event_line(summary.failed)}"
    return line

