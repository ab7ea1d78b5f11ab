"""`spikelens analyze` (the report: terminal, JSON, markdown, HTML, PNG) and
`spikelens explain` (the catalog page of a kind or cause)."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, List, Optional

import typer

from .. import api
from ..config import Config, load_config
from ..errors import UsageError
from ..outputs import claim, refuse_overlap, write_output
from ..frame import ROLES
from . import app
from .common import (ALLOW_EMPTY, CHARTS, CONFIG, PARAM, QUIET_RUNS, ROLE, VERBOSE, emit_warnings, force_option,
                     stderr_console, stdout_console)

if TYPE_CHECKING:
    from rich.table import Table


class Executor(str, Enum):
    local = "local"
    ray = "ray"


class ReportFormat(str, Enum):
    rich = "rich"
    json = "json"
    markdown = "markdown"
    concise = "concise"


@app.command("analyze")
def analyze_cmd(
    paths: List[Path] = typer.Argument(..., help="Log files or folders (any mix of formats)."),
    format: ReportFormat = typer.Option(ReportFormat.rich, "--format", "-f", case_sensitive=False,
                                        help="rich (terminal), json (the contract, stdout only JSON), markdown, or concise "
                                             "(one line per finding: PATH:STEP: CODE severity message)."),
    html: Optional[Path] = typer.Option(None, "--html", metavar="FILE",
                                        help="Also write a self-contained interactive HTML report (summary, "
                                             "zoomable charts, each finding zoomed)."),
    html_static: bool = typer.Option(False, "--html-static",
                                     help="With --html: draw every chart as the page opens, not as it scrolls "
                                          "into view (headless screenshots, archives; printing draws them anyway)."),
    plot: Optional[Path] = typer.Option(None, "--plot", metavar="DIR",
                                        help="Also write one PNG per run and one zoomed PNG per finding into DIR "
                                             "(created)."),
    config: Optional[Path] = CONFIG,
    role: List[str] = ROLE,
    param: List[str] = PARAM,
    executor: Executor = typer.Option(Executor.local, "--executor",
                                      help="Where runs are analysed: local (worker processes) or ray (one Ray task "
                                           "per run group, on the cluster ray.init finds, e.g. RAY_ADDRESS, or a "
                                           "local one; needs the 'ray' extra)."),
    findings: Optional[Path] = typer.Option(None, "--findings", metavar="FILE.parquet|DIR",
                                            help="Also write the findings as data (one row per finding and per run) "
                                                 "to a Parquet file, or a folder partitioned by run; run again with the "
                                                 "same dataset, only runs whose files changed are read."),
    experiment: List[str] = typer.Option([], "--experiment", metavar="NAME",
                                         help="With an MLflow database or server among PATHS: only the runs of "
                                              "this experiment (name or id). Repeatable."),
    run_id: List[str] = typer.Option([], "--run-id", metavar="ID",
                                     help="With an MLflow database or server among PATHS: only this run. "
                                          "Repeatable."),
    remedy: Optional[Path] = typer.Option(None, "--remedy", metavar="FILE",
                                          help="Also write, as JSON, the steps to skip (batches, samples where the "
                                               "batch size is logged) and the checkpoint to roll back to for each "
                                               "spike and divergence, with Megatron --train-range-to-skip arguments "
                                               "and a skip_batches list for spikelens.replay.callbacks.SkipBatches."),
    force: bool = force_option("the --html and --remedy files and the PNGs of --plot",
                               " A --findings dataset is updated in place, as it is made to be."),
    charts: bool = CHARTS,
    allow_empty: bool = ALLOW_EMPTY,
    quiet: bool = QUIET_RUNS,
    verbose: bool = VERBOSE,
) -> None:
    """Analyze the training logs under PATHS: spikes, divergence, NaN, oscillation and resume
    artifacts, with likely causes and what to try.

    Prints a verdict per run, a summary table and every finding. Exit code 0 (analyze reports,
    it does not gate; see [bold]spikelens check[/]), 2 on input errors and when no run under
    PATHS has a loss that could be read.

    Example: [bold]spikelens analyze runs/ --html report.html --plot plots/[/]

    Example: [bold]spikelens analyze logs/ --format json --param spike.recovery_fast_steps=500[/]

    Example: [bold]spikelens analyze http://localhost:5000 --experiment my-exp[/]
    """
    from ..importers.mlflow_runs import select_in

    paths = select_in(paths, experiment, run_id)
    for what, out in (("--html", html), ("--plot", plot), ("--remedy", remedy)):
        if out is not None:  # before the analysis: the logs read are never written over, nor added to
            refuse_overlap(out, paths, what)
    for what, out in (("--html", html), ("--remedy", remedy)):
        if out is not None:  # and an existing file is replaced only with --force
            claim(out, what, force=force)
    cfg = build_config(config, role)
    params = detector_params(cfg, param)
    started = time.perf_counter()
    with progress(quiet) as update:
        # frames only feed pictures: a JSON sweep of 1,000 runs would otherwise hold them all
        keep_frames = html is not None or plot is not None or (charts and format != ReportFormat.json)
        # spool: a large sweep's reports wait in a temporary file (next to the first output file: with
        # frames they may not fit /tmp), each output reads them back a run at a time
        beside = next((p.parent for p in (html, remedy, plot) if p is not None), None)
        report = api.analyze(*paths, config=cfg, detector_params=params, progress=update,
                             keep_frames=keep_frames, executor=executor.value, findings=findings,
                             spool=beside if beside is not None else True)
    require_loss(report, paths, allow_empty)
    emit_warnings(report.warnings, quiet)
    if verbose and not quiet:
        _log_runs(report, time.perf_counter() - started)
    if plot is not None:
        _write_plots(report, plot, quiet, force)
    if html is not None:
        _write_html(report, html, quiet, static=html_static, force=force)
    if remedy is not None:
        _write_remedy(report, remedy, quiet, force)
    if format == ReportFormat.json:
        from ..report.json_report import write_json

        _to_stdout(lambda out: write_json(report, out))  # a run at a time: a sweep's report is never held
    elif format == ReportFormat.markdown:
        from ..report.markdown import write_markdown

        _to_stdout(lambda out: write_markdown(report, out, charts=charts))
    elif format == ReportFormat.concise:
        from ..report.concise import write_concise

        _to_stdout(lambda out: write_concise(report, out))
    else:
        from ..report.terminal import render_terminal

        render_terminal(report, stdout_console(), verbose=verbose, charts=charts, quiet=quiet)


def _to_stdout(write) -> None:
    """An output written to stdout as it is made; `| head` leaving after a few writes ends
    it quietly, as the entry point does (141)."""
    try:
        write(sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(141) from None


def require_loss(report, paths: list[Path], allow_empty: bool) -> None:
    """Nothing read is no pass: exit 2 naming what was found, unless --allow-empty."""
    from ..coverage import nothing_read

    error = None if allow_empty else nothing_read(report, paths)
    if error is not None:
        raise error


@app.command("explain")
def explain_cmd(
    name: Optional[str] = typer.Argument(None, help="A finding kind (spike, nan, ...), a cause (grad_explosion, "
                                                    "...) or a detector code (SL101). Without it, list them all."),
) -> None:
    """What a finding kind or a cause means, why it matters and what engineers do about it.

    Example: [bold]spikelens explain spike[/]

    Example: [bold]spikelens explain fp16_overflow[/]
    """
    from rich.padding import Padding  # Rich is imported where a terminal page is drawn, not at start-up
    from rich.table import Table
    from rich.text import Text

    from ..explain import catalog

    out = stdout_console()
    if name is None:
        out.print(catalog_table())
        return
    entry = catalog.lookup(name)
    out.print(Text.assemble((entry.title, "bold"), f"  ({entry.group} {entry.name})"))
    for label, body in (("What it is", entry.what), ("Why it matters", entry.why)):
        out.print()
        out.print(Text(label, style="bold"))
        out.print(Padding(Text(body), (0, 0, 0, 2)))
    out.print()
    out.print(Text("What to try", style="bold"))
    tips = Table.grid(padding=(0, 1))
    tips.add_column(width=1)
    tips.add_column()
    for tip in entry.tries:
        tips.add_row("•", catalog.advice(tip))
    out.print(Padding(tips, (0, 0, 0, 2)))
    if entry.related:
        out.print()
        out.print(Text("See also: " + ", ".join(entry.related), style="dim"))
    doc = _detector_doc(name)
    if doc:
        out.print()
        out.print(Text(doc, style="dim"))


def catalog_table() -> Table:
    from rich.table import Table

    from ..detect.codes import codes_by_kind
    from ..explain import catalog

    codes = codes_by_kind()
    table = Table(title="spikelens explain NAME (a kind, a cause or a code)", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("code", no_wrap=True)
    table.add_column("group")
    table.add_column("what it is", overflow="fold")
    for e in catalog.ENTRIES.values():
        table.add_row(e.name, ", ".join(codes.get(e.name, [])) if e.group == "kind" else "", e.group, e.title)
    return table


def _detector_doc(name: str) -> str | None:
    """A detector's own docstring when NAME is its code (SL101)."""
    from ..detect.registry import DETECTORS

    cls = next((c for c in DETECTORS if c.code == name.strip().upper()), None)
    return f"{cls.code} ({cls.__name__}):\n{cls.describe()}" if cls else None


# ---------------------------------------------------------------- options → config

def build_config(path: Path | None, roles: list[str]) -> Config:
    """Settings from FILE (or the nearest config file), with `--role` overrides on top."""
    cfg = load_config(path)
    cfg.roles = {**cfg.roles, **parse_roles(roles)}
    return cfg


def parse_roles(items: list[str]) -> dict[str, str]:
    """`TAG=ROLE` options → {tag: role}; the role must be a known one."""
    out: dict[str, str] = {}
    for item in items:
        tag, sep, role = item.rpartition("=")
        tag, role = tag.strip(), role.strip()
        if not sep or not tag:
            raise UsageError(f"--role {item!r}: expected TAG=ROLE, e.g. --role 'train/ce=loss'")
        if role not in ROLES:
            raise UsageError(f"--role {item!r}: unknown role {role!r}; known: {', '.join(ROLES)}")
        out[tag] = role
    return out


def parse_value(raw: str) -> Any:
    """A parameter value as TOML reads it (500, 0.5, true, "text"), else the plain string."""
    from ..config import tomllib

    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def detector_params(cfg: Config, items: list[str]) -> dict[str, dict[str, Any]]:
    """`--param DETECTOR.NAME=VALUE` merged over the config's [detectors] tables.

    Each override is filed under the code of every detector it names (by kind or code)
    that has the parameter: codes are applied after kinds, so the command line wins
    over a config table keyed either way.
    """
    from ..detect.registry import DETECTORS

    merged: dict[str, dict[str, Any]] = {k: dict(v) for k, v in cfg.detectors.items()}
    for item in items:
        lhs, sep, raw = item.partition("=")
        key, dot, name = lhs.strip().rpartition(".")
        if not sep or not dot or not key or not name:
            raise UsageError(f"--param {item!r}: expected DETECTOR.NAME=VALUE, e.g. --param spike.window=100")
        matching = [c for c in DETECTORS if key in (c.kind, c.code) or key.upper() == c.code]
        if not matching:
            known = sorted({c.kind for c in DETECTORS} | {c.code for c in DETECTORS})
            raise UsageError(f"--param {item!r}: no detector {key!r}; known: {', '.join(known) or 'none registered'}")
        having = [c for c in matching if name in c.params()]
        if not having:
            known = sorted({p for c in matching for p in c.params()})
            raise UsageError(f"--param {item!r}: {key} has no parameter {name!r}; known: {', '.join(known)}")
        value = parse_value(raw.strip())
        for cls in having:
            merged.setdefault(cls.code, {})[name] = value
    return merged


# ---------------------------------------------------------------- side outputs

@contextmanager
def progress(quiet: bool) -> Iterator[object | None]:
    """Runs done of the total, points read, warnings so far and the time left, on stderr while
    runs are read and analysed; on a terminal only (under -q too), nothing in a pipe or a CI log."""
    from .progress import sweep_progress

    with sweep_progress() as bar:
        yield bar


def _log_runs(report, seconds: float) -> None:
    err = stderr_console()
    for r in report.runs:
        err.print(f"{r.run}: {', '.join(r.formats)}, {len(r.segments)} segment(s), {r.points:,} points, "
                  f"{len(r.findings)} finding(s)", highlight=False, markup=False)
    err.print(f"analyzed {len(report.runs)} run(s) in {seconds:.2f} s", highlight=False, markup=False)


def _write_plots(report, folder: Path, quiet: bool, force: bool) -> None:
    from ..report.plots import write_plots

    try:
        paths = write_plots(report, folder, force=force)
    except OSError as exc:
        raise UsageError(f"{folder}: cannot write plots ({exc.strerror or exc})") from None
    if not quiet:
        typer.echo(f"wrote {sum(len(p) for p in paths.values())} plot(s) to {folder}", err=True)


def _write_remedy(report, path: Path, quiet: bool, force: bool) -> None:
    import json

    from ..remedy import remedy_document

    text = json.dumps(remedy_document(report), indent=1) + "\n"
    try:
        write_output(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), "--remedy", force=force)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write the remedy file ({exc.strerror or exc})") from None
    if not quiet:
        typer.echo(f"wrote {path}", err=True)


def _write_html(report, path: Path, quiet: bool, *, static: bool = False, force: bool = False) -> None:
    from ..report.html import write_html

    def write(tmp: Path) -> None:  # written as it is made: a sweep's page is never one string
        with tmp.open("w", encoding="utf-8") as fh:
            write_html(report, fh, static=static, scratch=path.parent)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, write, "--html", force=force)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write the HTML report ({exc.strerror or exc})") from None
    if not quiet:
        typer.echo(f"wrote {path}", err=True)
