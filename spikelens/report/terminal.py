"""The Rich terminal report of `spikelens analyze`: a verdict per run, the summary
table, then every finding with its causes, what to try and a small chart.

Everything is rendered from the Report alone (no clock, no terminal size guesses),
so the same report prints the same text into a fixed-width console; tests keep
goldens of it.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console, Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..model.finding import Finding
from ..coverage import has_loss
from ..explain.catalog import next_steps
from ..model.report import Report, RunReport
from ..pipeline.runsummary import by_name
from .sparkline import chart, neighbourhood
from .verdict import (counts_text, final_value_text, loss_story, segments_text, span_text, split_findings,
                      status, steps_text, verdict)

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim", "ok": "green"}
STATUS_MARK = {"error": "✗", "warning": "!", "ok": "✓"}
MAX_DETAILED = 20
"""Findings (and notes) shown per run before the rest is summarised in one line."""
CONTENT_WIDTH = 1 << 14
"""A console this wide has no terminal behind it (a pipe, a file): tables take their content's width."""


def render_terminal(report: Report, console: Console, *, verbose: bool = False, charts: bool = True,
                    quiet: bool = False) -> None:
    """Print the report: headline, summary table, then the details of each run with findings.

    `verbose` shows info findings in full (not one line each); `quiet` (sweeps) only the
    verdict line of each run with problems, then the headline.
    """
    runs = by_name(report.runs)  # a spooled sweep's runs are read back one at a time
    if quiet:
        for run in runs:
            if status(run) != "ok":
                console.print(verdict_line(run), soft_wrap=True)  # one line a run, however long its name
        console.print(_headline(report, runs), soft_wrap=True)
        return
    console.print(_headline(report, runs))
    if not runs:
        return
    print_summary(console, runs, None if console.width >= CONTENT_WIDTH else console.width)
    flagged = False
    for run in runs:
        if run.findings:
            flagged = True
            console.print()
            console.print(run_details(run, verbose=verbose, charts=charts))
    if flagged:  # not report.findings(): every finding of a sweep at once
        console.print()
        console.print(Text("More on any kind or cause: spikelens explain NAME (e.g. spikelens explain spike)",
                           style="dim"))


def _headline(report: Report, runs: list[RunReport]) -> Text:
    n = len(runs)
    text = Text(f"spikelens {report.command}: {n} run{'s' if n != 1 else ''}", style="bold")
    if not n:
        return text.append(", nothing to report", style="")
    states = dict.fromkeys(SEVERITY_STYLE, 0)
    unchecked = 0
    for r in runs:  # counted a run at a time: a spooled sweep's runs are never all held
        s = status(r)
        states[s] += 1
        unchecked += s == "ok" and not has_loss(r)
    parts = []
    for s, word in (("error", "with errors"), ("warning", "with warnings"), ("ok", "clean")):
        k = states[s] - (unchecked if s == "ok" else 0)
        if k:
            parts.append((f"{k} {word}", SEVERITY_STYLE[s]))
    if unchecked:
        parts.append((f"{unchecked} not checked (no loss)", "yellow"))
    text.append(" — ")
    for i, (words, style) in enumerate(parts):
        if i:
            text.append(", ")
        text.append(words, style=style)
    return text


ROWS_AT_ONCE = 256
"""Summary rows made into one Rich table at a time (`print_summary`)."""


def print_summary(console: Console, runs: Sequence[RunReport], width: int | None = 100) -> None:
    """`summary_table` printed `ROWS_AT_ONCE` rows at a time, the same lines: a first pass
    measures every row (the columns' widths), then each batch is a table of those widths
    (the header on the first only). A spooled sweep's rows are never all held."""
    layout = _layout(_Measures(_row(run) for run in runs), width)
    rows: list[dict] = []
    first = True
    for run in runs:
        rows.append(_row(run))
        if len(rows) == ROWS_AT_ONCE:
            console.print(_table(rows, *layout, header=first))
            rows, first = [], False
    if rows:
        console.print(_table(rows, *layout, header=first))


def summary_table(runs: list[RunReport], width: int | None = 100) -> Table:
    """One row per run: the verdict first, then the numbers.

    Column widths are computed here rather than left to Rich, which crops a table
    wider than the console instead of wrapping its text columns. When the verdict
    would get fewer than 22 columns, the steps and points (also on each run's detail
    line) are left out. With no width (no terminal) every column is as wide as its
    content: nothing folds.
    """
    rows = [_row(run) for run in runs]
    return _table(rows, *_layout(_Measures(rows), width))


def _row(run: RunReport) -> dict:
    return {"run": run, "st": status(run), "verdict": verdict(run), "steps": steps_text(run),
            "points": f"{run.points:,}", "loss": final_value_text(run), "findings": counts_text(run)}


class _Measures:
    """The longest text of each column over the rows (all a layout needs of them)."""

    def __init__(self, rows: Iterable[dict]) -> None:
        self.name = self.item = self.loss = self.steps = self.points = self.findings = self.verdict = 0
        for r in rows:
            run = r["run"]
            self.name = max(self.name, len(run.run), len(", ".join(run.formats)))
            self.item = max([self.item] + [len(i) + 1 for i in r["findings"].split(", ")])
            for key in ("loss", "steps", "points", "findings", "verdict"):
                setattr(self, key, max(getattr(self, key), len(r[key])))


def _layout(m: _Measures, width: int | None) -> tuple[dict, int, int, bool]:
    """(fixed widths, verdict width, findings width, narrow) of the summary's columns."""
    if width is None:  # no terminal: every column as wide as its content
        fixed = {"run": max(len("run / format"), m.name), "worst": len("! warning"), "loss": max(len("loss"), m.loss),
                 "steps": max(len("steps"), m.steps), "points": max(len("points"), m.points)}
        return fixed, max(len("verdict"), m.verdict), max(len("findings"), m.findings), False
    name_w = min(24, max(len("run / format"), m.name))
    longest = max(len("findings"), m.item)
    for narrow in (False, True):
        fixed = {"run": name_w, "worst": len("! warning"), "loss": max(len("loss"), m.loss)}
        if not narrow:
            fixed["steps"] = max(len("steps"), m.steps)
            fixed["points"] = max(len("points"), m.points)
        ncols = len(fixed) + 2
        # padding of 1 each side of every cell but the outer edges, and a one-space divider
        rest = width - sum(fixed.values()) - (2 * ncols - 2) - (ncols - 1)
        findings_w = max(longest, min(m.findings, (rest * 2) // 5))
        verdict_w = rest - findings_w
        if verdict_w >= 22:
            break
    if verdict_w < 16:  # still too narrow: give the run column's width to the verdict
        fixed["run"] = max(12, fixed["run"] - (16 - verdict_w))
        verdict_w = 16
    return fixed, verdict_w, findings_w, narrow


def _table(rows: list[dict], fixed: dict, verdict_w: int, findings_w: int, narrow: bool, header: bool = True) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, show_header=header)
    table.add_column("run / format", overflow="fold", width=fixed["run"])
    table.add_column("worst", no_wrap=True, width=fixed["worst"])
    table.add_column("verdict", overflow="fold", width=verdict_w)
    if not narrow:
        table.add_column("steps", no_wrap=True, width=fixed["steps"])
        table.add_column("points", justify="right", no_wrap=True, width=fixed["points"])
    table.add_column("final\nloss", justify="right", no_wrap=True, width=fixed["loss"])
    table.add_column("findings", overflow="fold", width=findings_w)
    for r in rows:
        st, run = r["st"], r["run"]
        style = SEVERITY_STYLE[st]
        cells = [Text.assemble((run.run, "bold"), "\n", (", ".join(run.formats) or "—", "dim")),
                 Text(f"{STATUS_MARK[st]} {st}", style=style),
                 Text(r["verdict"], style=style if st != "ok" else "")]
        if not narrow:
            cells += [r["steps"], r["points"]]
        table.add_row(*cells, r["loss"], r["findings"])
    return table


def verdict_line(run: RunReport) -> Text:
    """'✗ run: NaN at step 3610': the run's status mark, name and verdict."""
    st = status(run)
    return Text.assemble((f"{STATUS_MARK[st]} {run.run}", "bold " + SEVERITY_STYLE[st]), ": ",
                         (verdict(run), SEVERITY_STYLE[st] if st != "ok" else ""))


def run_details(run: RunReport, *, verbose: bool = False, charts: bool = True) -> Group:
    """The verdict line, the run's facts, each finding needing attention, then the notes."""
    head = verdict_line(run)
    facts = [", ".join(run.formats), segments_text(run), f"steps {steps_text(run)}", f"{run.points:,} points",
             loss_story(run)]
    parts = [head, Padding(Text(" · ".join(p for p in facts if p), style="dim"), (0, 0, 0, 2))]
    major, notes = split_findings(run)
    if verbose:
        major, notes = major + notes, []
    cache: dict = {}
    shown: set = set()
    limit = None if verbose else MAX_DETAILED
    for f in major[:limit]:
        parts.append(Padding(finding_block(f, run, cache, charts=charts, shown_tips=shown), (1, 0, 0, 2)))
    if limit is not None and len(major) > limit:
        parts.append(Padding(Text(f"… and {len(major) - limit} more finding(s) like these: -v shows all, "
                                  "--format json lists them", style="dim"), (1, 0, 0, 2)))
    if notes:
        parts.append(Padding(notes_block(notes[:limit]), (1, 0, 0, 2)))
        if limit is not None and len(notes) > limit:
            parts.append(Padding(Text(f"… and {len(notes) - limit} more note(s)", style="dim"), (0, 0, 0, 2)))
    return Group(*parts)


def finding_block(f: Finding, run: RunReport, cache: dict | None = None, *, charts: bool = True,
                  shown_tips: set | None = None) -> Group:
    """Header (severity, kind, code, metric, steps), message, causes, what to try, chart.

    Tips already printed for an earlier finding of the run (`shown_tips`) are not
    repeated.
    """
    head = Text.assemble(
        (f" {f.severity.upper()} ", "reverse " + SEVERITY_STYLE.get(f.severity, "")), " ",
        (f.kind, "bold"), f"  {f.code}",
        f"  {f.metric}" if f.metric else "",
        f"  {span_text(f)}",
    )
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True, width=5)
    grid.add_column(no_wrap=True, width=1)
    grid.add_column(overflow="fold")
    for i, c in enumerate(f.causes):
        grid.add_row("cause" if i == 0 else "", "•",
                     Text.assemble((c.cause, "bold"), f" {round(100 * c.confidence)}%  ", c.evidence))
    tips = tuple(next_steps(f))
    if shown_tips is not None and tips and tips in shown_tips:
        grid.add_row("try", "•", Text("as above", style="dim"))
    else:
        for i, tip in enumerate(tips):
            grid.add_row("try" if i == 0 else "", "•", tip)
        if shown_tips is not None:
            shown_tips.add(tips)
    parts = [head, Padding(Text(f.message), (0, 0, 0, 2)), Padding(grid, (0, 0, 0, 2))]
    if charts:
        win = neighbourhood(run, f, cache)
        if win is not None and win.step.size >= 3 and win.has_finite:
            lines = chart(win)
            parts.append(Padding(Text("\n".join(lines), style="cyan", no_wrap=True, overflow="crop"), (0, 0, 0, 4)))
    return Group(*parts)


def notes_block(notes: list[Finding]) -> Group:
    """Info findings, one bullet each, with the likeliest cause when there is one."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1, style="dim")
    grid.add_column(overflow="fold", style="dim")
    for f in notes:
        likely = f" — likely {f.causes[0].cause}: {f.causes[0].evidence}" if f.causes else ""
        grid.add_row("•", Text.assemble((f.kind, "bold"), f"  {f.message}{likely}"))
    return Group(Text("notes", style="dim"), grid)
