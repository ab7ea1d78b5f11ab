"""`spikelens check`: the analysis as a CI gate (exit 0 pass, 1 fail, 2 usage or input error).

The policy and baseline logic lives in `spikelens.check`; this module maps options onto
it and renders the result (Rich, JSON, GitHub annotations, markdown, JUnit).
"""
from __future__ import annotations

import json
import shutil
import time
from enum import Enum
from pathlib import Path
from typing import Callable, List, Optional, TextIO

import typer
from rich.table import Table
from rich.text import Text

from .. import api
from ..check import (CheckResult, baseline_from, build_policy, evaluate, load_baseline, parse_kind_thresholds,
                     write_baseline)
from ..errors import OutputExists, SpikelensError, UsageError
from ..outputs import atomic_write, claim, occupied, refuse_overlap, write_output
from . import app
from .analyze import _to_stdout, build_config, detector_params, progress, require_loss
from .common import (ALLOW_EMPTY, CHARTS, CONFIG, PARAM, QUIET_RUNS, ROLE, VERBOSE, Format, emit_warnings, force_option,
                     stderr_console, stdout_console)


class Severity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


@app.command("check")
def check_cmd(
    paths: List[Path] = typer.Argument(..., help="Log files or folders of finished runs (any mix of formats)."),
    format: Format = typer.Option(Format.rich, "--format", "-f", case_sensitive=False,
                                  help="rich (terminal), json (the report plus a 'check' object), github "
                                       "(workflow-command annotations), markdown or concise (PATH:STEP: CODE severity message)."),
    fail_on: Optional[Severity] = typer.Option(None, "--fail-on", case_sensitive=False,
                                               help="Fail on findings at or above this severity "
                                                    "[default: warning, or fail-on in the config]."),
    fail_on_kind: List[str] = typer.Option([], "--fail-on-kind", metavar="KIND=SEVERITY",
                                           help="Threshold for one kind or code prefix, over --fail-on "
                                                "(e.g. oscillation=error, SL4=error). Repeatable."),
    always_fail: List[str] = typer.Option([], "--always-fail", metavar="KINDS",
                                          help="Kinds or codes that fail at warning or above whatever --fail-on "
                                               "says [default: nan]; 'none' for none. Comma-separated, repeatable."),
    max_fast_spikes: Optional[int] = typer.Option(None, "--max-fast-spikes", min=0, metavar="N",
                                                  help="Fast-recovering spikes tolerated per run; with more, all "
                                                       "of them fail [default: 0]."),
    select: List[str] = typer.Option([], "--select", metavar="KINDS",
                                     help="Check only these kinds or code prefixes, ruff style "
                                          "(e.g. SL1,nan) [default: all]. Comma-separated, repeatable."),
    ignore: List[str] = typer.Option([], "--ignore", metavar="KINDS",
                                     help="Never check these kinds or code prefixes (the more specific of "
                                          "--select/--ignore wins). Comma-separated, repeatable."),
    metric: List[str] = typer.Option([], "--metric", metavar="GLOB",
                                     help="Check only findings on metrics matching GLOB (run-level findings "
                                          "always). Repeatable."),
    ignore_metric: List[str] = typer.Option([], "--ignore-metric", metavar="GLOB",
                                            help="Never check findings on metrics matching GLOB. Repeatable."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", metavar="FILE",
                                            help="Findings recorded in FILE do not fail (matched by run, metric, "
                                                 "kind and a step window); only new ones do."),
    update_baseline: bool = typer.Option(False, "--update-baseline",
                                         help="Write every checked finding into the --baseline file and exit 0 "
                                              "(it replaces an earlier baseline: that is what it is for; a file "
                                              "there that is not a spikelens baseline only with --force)."),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE",
                                         help="Also write JUnit XML: one test case per run, failures carry "
                                              "the messages."),
    summary: Optional[Path] = typer.Option(None, "--summary", metavar="FILE",
                                           help="Also append the markdown report to FILE (e.g. "
                                                "\"$GITHUB_STEP_SUMMARY\"); what FILE held is kept."),
    stitch: bool = typer.Option(False, "--stitch",
                                help="Treat everything under PATHS as segments of one run (resumed launches "
                                     "logged to separate folders), as the stitch analysis does."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings fail (report-only jobs)."),
    force: bool = force_option("the --junit file", " --summary appends and --update-baseline re-records, as made to."),
    allow_empty: bool = ALLOW_EMPTY,
    config: Optional[Path] = CONFIG,
    role: List[str] = ROLE,
    param: List[str] = PARAM,
    charts: bool = CHARTS,
    quiet: bool = QUIET_RUNS,
    verbose: bool = VERBOSE,
) -> None:
    """Check finished runs against a policy, for CI: exit 0 when nothing at or above
    --fail-on remains, 1 when something does, 2 on usage or input errors and when no run under
    PATHS has a loss that could be read (--allow-empty: judge what was read).

    The policy comes from options, then [bold][tool.spikelens.check][/] in pyproject.toml or
    spikelens.toml, then defaults (fail on warnings, NaN always fails, no fast spike allowed).

    Example: [bold]spikelens check runs/ --fail-on error --max-fast-spikes 2[/]

    Example: [bold]spikelens check runs/ --format github --junit check.xml --summary "$GITHUB_STEP_SUMMARY"[/]

    Example: [bold]spikelens check runs/ --baseline spikelens-baseline.json --update-baseline[/]
    """
    cfg = build_config(config, role)
    params = detector_params(cfg, param)
    options = {
        "fail_on": fail_on.value if fail_on is not None else None,
        "fail_on_kind": parse_kind_thresholds(fail_on_kind),
        "always_fail": _joined(always_fail),
        "max_fast_spikes": max_fast_spikes,
        "select": _joined(select),
        "ignore": _joined(ignore),
        "metrics": list(metric) or None,
        "ignore_metrics": list(ignore_metric) or None,
        "baseline": str(baseline) if baseline is not None else None,
    }
    policy = build_policy(cfg.check, options, config_path=cfg.path)
    if update_baseline and policy.baseline is None:
        raise UsageError("--update-baseline needs a file: give --baseline FILE (or baseline in [tool.spikelens.check])")
    accepted = load_baseline(policy.baseline) if policy.baseline is not None and not update_baseline else None
    for what, out in (("--junit", junit), ("--summary", summary),
                      ("--baseline", policy.baseline if update_baseline else None)):
        if out is not None:  # before the analysis: the logs read are never written over, nor added to
            refuse_overlap(out, paths, what)
    if junit is not None:
        claim(junit, "--junit", force=force)
    if update_baseline and not force:
        _only_a_baseline(Path(policy.baseline))

    started = time.perf_counter()
    with progress(quiet) as update:
        if stitch:
            report, _ = api.stitch(*paths, config=cfg, detector_params=params)
        else:
            keep_frames = charts and (format in (Format.rich, Format.markdown) or summary is not None)
            # a large sweep's reports wait on disk (next to the first output file: with frames they may not
            # fit /tmp); the gate and every output read them back and check them a run at a time
            beside = next((p.parent for p in (junit, summary) if p is not None), None)
            report = api.analyze(*paths, config=cfg, detector_params=params, progress=update,
                                 keep_frames=keep_frames, spool=beside if beside is not None else True)
    elapsed = time.perf_counter() - started
    require_loss(report, paths, allow_empty)
    if not allow_empty:
        from ..coverage import unread_error

        error = unread_error(report)  # a found log that gave nothing is no pass, even beside good runs
        if error is not None:
            raise error
    emit_warnings(report.warnings, quiet)
    result = evaluate(report, policy, accepted)
    if update_baseline:
        fresh = baseline_from(result.report)
        write_baseline(fresh, policy.baseline)
        fresh.path = policy.baseline
        result = evaluate(report, policy, fresh)
        if not quiet:
            typer.echo(f"wrote {len(fresh.entries)} finding(s) to the baseline {policy.baseline}", err=True)
    code = 0 if update_baseline else result.exit_code(exit_zero)

    # every output written as it is made, a run at a time: a sweep's runs are never held
    if junit is not None:
        from ..report.junit import write_junit

        _write(junit, lambda fh: write_junit(result, fh, elapsed=elapsed), "the JUnit report", flag="--junit",
               force=force)
    if summary is not None:
        _write(summary, lambda fh: write_markdown_check(result, fh, charts=charts), "the markdown summary",
               append=True)
    if format == Format.json:
        from ..report.json_report import write_check_json

        _to_stdout(lambda out: write_check_json(result, out, code))
    elif format == Format.github:
        from ..report.github import write_github

        _to_stdout(lambda out: write_github(result, out))
        if not quiet:
            stderr_console().print(Text(_headline(result)), highlight=False)
    elif format == Format.markdown:
        _to_stdout(lambda out: write_markdown_check(result, out, charts=charts))
    elif format == Format.concise:
        from ..report.concise import write_concise

        _to_stdout(lambda out: write_concise(result.report, out))
    else:
        _render_rich(result, verbose=verbose, charts=charts, quiet=quiet)
    raise typer.Exit(code)


def _joined(items: list[str]) -> str | None:
    """Repeated comma-separated options → one comma-separated string (None: not given)."""
    return ",".join(items) if items else None


def _only_a_baseline(path: Path) -> None:
    """--update-baseline replaces a baseline (that is what it is for), never a file that is
    something else (a typo naming the config, a report) unless --force says so."""
    if not occupied(path):
        return
    try:
        load_baseline(path).close()  # read to know it is one (an entry at a time), then let go
    except SpikelensError as exc:
        problem = getattr(exc, "problem", str(exc))
        raise OutputExists(f"--baseline {path}: already exists; --force replaces it (it is not a spikelens "
                           f"baseline: {problem})") from None


def _write(path: Path, text: Callable[[TextIO], None], what: str, append: bool = False, flag: str = "",
           force: bool = False) -> None:
    """Written whole or not at all (outputs.atomic_write), as `text` writes it; appending keeps
    what was there (copied first), anything else follows the overwrite policy (outputs.write_output)."""
    def write(tmp: Path) -> None:
        if append and path.is_file():
            shutil.copyfile(path, tmp)  # what was there, byte for byte
        with tmp.open("a" if append else "w", encoding="utf-8", errors="surrogateescape") as fh:
            text(fh)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if append:
            atomic_write(path, write)
        else:
            write_output(path, write, flag or what, force=force)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write {what} ({exc.strerror or exc})") from None


# ---------------------------------------------------------------- renderings of the gate

def _headline(result: CheckResult) -> str:
    """'check failed: 2 findings fail (fail-on warning) in 1 of 3 runs; 1 below threshold' or 'check passed: ...'."""
    runs = result.report.runs
    c = result.counts()
    extra = [f"{c[k]} {word}" for k, word in (("below", "below threshold"), ("allowed", "allowed fast spike(s)"),
                                              ("baselined", "in the baseline")) if c[k]]
    if result.filtered_out:
        extra.append(f"{result.filtered_out} not selected")
    tail = f"; {', '.join(extra)}" if extra else ""
    rule = f"fail-on {result.policy.fail_on}"
    if result.passed:
        return f"check passed: nothing fails ({rule}) in {_n(len(runs), 'run')}{tail}"
    return (f"check failed: {_n(result.n_failed, 'finding')} ({rule}) in {result.runs_failing} of "
            f"{_n(len(runs), 'run')}{tail}")


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _render_rich(result: CheckResult, *, verbose: bool, charts: bool, quiet: bool = False) -> None:
    out = stdout_console()
    try:
        from ..report.terminal import render_terminal, verdict_line
    except ImportError:  # the terminal renderer is optional; the JSON one always exists
        from ..report.json_report import write_check_json

        _to_stdout(lambda fh: write_check_json(result, fh))
        return
    from ..pipeline.runsummary import by_name

    if quiet:  # a sweep: the runs that fail, one line each, and the verdict
        for run in by_name(result.report.runs):
            if any(g.fails for g in result.run_gates(run)):
                out.print(verdict_line(run))
        out.print(Text(_headline(result), style="bold green" if result.passed else "bold red"))
        return
    render_terminal(result.report, out, verbose=verbose, charts=charts)
    out.print()
    style = "bold green" if result.passed else "bold red"
    out.print(Text(_headline(result), style=style))
    if result.passed:
        return
    # the failing findings, a grid of FAILED_ROWS rows at a time, each as wide as the widest row of all
    # would make it (a first pass measures them): the lines of one grid of every row, never all held
    widest = max(out.measure(_failed_line(g)).maximum for g in result.failures())
    rows = None
    for k, g in enumerate(result.failures()):
        if rows is None:
            rows = Table.grid(padding=(0, 1))
            rows.add_column(width=3, justify="right")
            rows.add_column(width=min(widest, max(1, out.width - 4)))
        rows.add_row(Text("✗", style="red"), _failed_line(g))
        if (k + 1) % FAILED_ROWS == 0:
            out.print(rows)
            rows = None
    if rows is not None:
        out.print(rows)


FAILED_ROWS = 256
"""Failing findings printed as one grid (see `_render_rich`)."""


def _failed_line(g) -> Text:
    f = g.finding
    step = "" if f.anchor_step is None else f" step {f.anchor_step}"
    where = f" {f.metric}" if f.metric else ""
    return Text.assemble((f"{f.run}: {f.code} {f.kind}{where}{step}", "bold"), f" — {f.message} ",
                         (f"({g.reason})", "dim"))


def render_markdown_check(result: CheckResult, *, charts: bool = True) -> str:
    """The gate's verdict and failing findings as markdown, then the analysis report."""
    import io

    buf = io.StringIO()
    write_markdown_check(result, buf, charts=charts)
    return buf.getvalue()


def write_markdown_check(result: CheckResult, out: TextIO, *, charts: bool = True) -> None:
    """`render_markdown_check`, written a line at a time (the failing findings, then the
    report, a run at a time: a sweep's runs are never held)."""
    try:
        from ..report.markdown import escape, write_markdown
    except ImportError:
        escape = _md_escape
        write_markdown = None
    mark = "✅" if result.passed else "❌"
    out.write(f"## {mark} spikelens {escape(_headline(result))}\n\n")
    if not result.passed:
        out.write("| run | code | kind | metric | step | severity | why it fails |\n|---|---|---|---|---|---|---|\n")
        for g in result.failures():
            f = g.finding
            cells = [f.run, f.code, f.kind, f.metric or "", "" if f.anchor_step is None else str(f.anchor_step),
                     f.severity, g.reason]
            out.write("| " + " | ".join(escape(c) for c in cells) + " |\n")
        out.write("\n")
    if write_markdown is not None:
        write_markdown(result.report, out, charts=charts)
    else:
        from ..report.json_report import check_report_dict

        out.write("```json\n" + json.dumps(check_report_dict(result), indent=1, allow_nan=False) + "\n```\n")


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")
