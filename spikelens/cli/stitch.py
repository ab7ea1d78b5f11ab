"""`spikelens stitch`: the launches of one resumed run laid on one timeline."""
from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from .. import api
from ..detect.resume import human_duration
from ..errors import UsageError
from ..model.report import RunReport
from . import app
from .analyze import ReportFormat, build_config, detector_params
from .common import (CHARTS, CONFIG, PARAM, QUIET, ROLE, VERBOSE, emit_warnings, force_option, stderr_console,
                     stdout_console)

OUTPUT_SUFFIXES = (".parquet", ".csv")


@app.command("stitch")
def stitch_cmd(
    paths: List[Path] = typer.Argument(..., help="The parts of ONE run: event files or their folder, "
                                                 "version_N folders, W&B run folders, CSV files, logs."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE",
                                          help="Write the stitched frame (with its `superseded` column) "
                                               "to FILE.parquet or FILE.csv."),
    mkdir: bool = typer.Option(False, "--mkdir", help="Create the --output file's folder when it does not exist."),
    force: bool = force_option("the --output FILE"),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the stitched run (default: the first part's)."),
    format: ReportFormat = typer.Option(ReportFormat.rich, "--format", "-f", case_sensitive=False,
                                        help="rich (terminal), json (the contract, stdout only JSON), markdown, or concise "
                                             "(one line per finding: PATH:STEP: CODE severity message)."),
    config: Optional[Path] = CONFIG,
    role: List[str] = ROLE,
    param: List[str] = PARAM,
    charts: bool = CHARTS,
    quiet: bool = QUIET,
    verbose: bool = VERBOSE,
) -> None:
    """Stitch the launches (segments) of one resumed run into one timeline and report
    what the resumes did: rollbacks (resume_overlap), step counters that restarted
    (step_reset), repeated data, gaps, and every other finding on the stitched curve.

    Where launches overlap, the later launch wins from its first step on; the points
    it replaced stay in the frame with superseded = true. A launch whose step counter
    restarted is re-based onto the true steps. Input files are never modified.

    Example: [bold]spikelens stitch lightning_logs/version_0 lightning_logs/version_1[/]

    Example: [bold]spikelens stitch runs/gpt/ -o stitched.parquet --format json[/]
    """
    if output is not None and output.suffix.lower() not in OUTPUT_SUFFIXES:
        raise UsageError(f"{output}: --output must end in .parquet or .csv")
    if output is not None:
        from ..outputs import claim, refuse_overlap
        from .ls import output_folder

        refuse_overlap(output, paths, "-o")  # the logs read are never written over, nor added to
        claim(output, "-o", force=force)  # before reading: one overwrite policy for every output
        output_folder(output, mkdir)
    cfg = build_config(config, role)
    params = detector_params(cfg, param)
    started = time.perf_counter()
    report, frame = api.stitch(*paths, config=cfg, detector_params=params, name=name)
    emit_warnings(report.warnings, quiet)
    if verbose and not quiet:
        run = report.runs[0]
        stderr_console().print(f"stitched {len(run.segments)} launch(es) of {run.run}: {run.points:,} points in "
                               f"{time.perf_counter() - started:.2f} s", highlight=False, markup=False)
    if output is not None:
        _write(frame, output, quiet, force)
    if format == ReportFormat.json:
        from ..report.json_report import render_json

        typer.echo(render_json(report))
    elif format == ReportFormat.markdown:
        from ..report.markdown import render_markdown

        typer.echo(render_markdown(report, charts=charts), nl=False)
    elif format == ReportFormat.concise:
        from ..report.concise import render_concise

        typer.echo(render_concise(report), nl=False)
    else:
        from ..report.terminal import render_terminal

        out = stdout_console()
        out.print(timeline_table(report.runs[0]))
        render_terminal(report, out, verbose=verbose, charts=charts)


def timeline_table(run: RunReport) -> Table:
    """One row per launch: where it came from, its stitched steps, how it took over,
    what it superseded and the wall-clock gap before it."""
    table = Table(title=f"{escape(run.run)}: {len(run.segments)} launch(es) on one timeline", title_justify="left")
    for col, kw in (("#", {"justify": "right"}), ("launch", {"no_wrap": True}), ("steps", {"no_wrap": True}),
                    ("points", {"justify": "right", "no_wrap": True}),
                    ("superseded", {"justify": "right", "no_wrap": True}),
                    ("offset", {"justify": "right", "no_wrap": True}),
                    ("gap before", {"justify": "right", "no_wrap": True}),
                    ("source", {"overflow": "fold", "min_width": 12})):
        table.add_column(col, **kw)
    prev_end = None
    for s in run.segments:
        gap = ""
        w0, w1 = s.get("first_wall_time"), s.get("last_wall_time")
        if prev_end is not None and w0 is not None and w0 >= prev_end:
            gap = human_duration(w0 - prev_end)
        if w1 is not None:
            prev_end = w1 if prev_end is None else max(prev_end, w1)
        off = s.get("step_offset") or 0
        steps = "—" if s.get("first_step") is None else f"{s.get('first_step')}–{s.get('last_step')}"  # logged nothing
        table.add_row(str(s.get("segment", "")), s.get("launch", ""), steps,
                      f"{s.get('points', 0):,}", f"{s.get('superseded', 0):,}", f"{off:+d}" if off else "",
                      gap, escape(Path(s.get("source", "")).name))
    return table



def _write(frame, output: Path, quiet: bool, force: bool) -> None:
    from .ls import write_frame

    try:
        write_frame(frame, output, force=force)
    except OSError as exc:
        raise UsageError(f"{output}: cannot write ({exc.strerror or exc})") from None
    if not quiet:
        n = int(frame.get_column("superseded").sum())
        typer.echo(f"wrote {frame.height:,} points ({n:,} superseded) to {output}", err=True)

