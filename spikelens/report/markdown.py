"""`--format markdown`: the analyze report as a document to paste into an issue, a
pull request or a notebook (GitHub-flavoured: a pipe table, headings per run, the
neighbourhood charts in code blocks).
"""
from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import TextIO

from ..model.finding import Finding
from ..explain.catalog import next_steps
from ..model.report import Report, RunReport
from ..pipeline.runsummary import by_name
from .sparkline import chart, neighbourhood
from .verdict import (counts_text, final_value_text, loss_story, segments_text, span_text, split_findings,
                      status, steps_text, verdict)

SEVERITY_MARK = {"error": "🔴", "warning": "🟠", "info": "ℹ️", "ok": "🟢"}
_SPECIAL = re.compile(r"([\\`*{}\[\]<>#|])")
_LONE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def escape(text: str) -> str:
    """Text that renders literally (run names and messages hold `_`, `*`, `|`).

    An underscore inside a word (`grad_norm`) never starts emphasis in GitHub
    markdown, so it stays as it is and the source stays readable.
    """
    return _LONE_UNDERSCORE.sub(r"\\_", _SPECIAL.sub(r"\\\1", text))


def code(text: str) -> str:
    """An inline code span that survives backticks inside."""
    ticks = "``" if "`" in text else "`"
    return f"{ticks}{text}{ticks}" if ticks == "`" else f"{ticks} {text} {ticks}"


def render_markdown(report: Report, *, charts: bool = True) -> str:
    """The whole report as one markdown document (ends with a newline)."""
    buf = io.StringIO()
    write_markdown(report, buf, charts=charts)
    return buf.getvalue()


def write_markdown(report: Report, out: TextIO, *, charts: bool = True) -> None:
    """`render_markdown`, written a run at a time: a spooled sweep's runs are read back one
    at a time (three passes: the headline's counts, the table, the sections), never held."""
    runs = by_name(report.runs)
    doc = _Document(out)
    doc.add([f"# spikelens {report.command}: {_headline(Counter(status(r) for r in runs))}", ""])
    if runs:
        doc.add(chain(summary_rows(runs), [""]))
    flagged = False
    for run in runs:
        if run.findings:
            flagged = True
            doc.add(run_section(run, charts=charts))
    if report.warnings:
        doc.add(["## Warnings while reading", ""])
        doc.add([f"- {escape(w)}" for w in report.warnings] + [""])
    if flagged:  # not report.findings(): every finding of a sweep at once
        doc.add(["---", "", "More on any kind or cause: `spikelens explain NAME`.", ""])
    doc.end()


class _Document:
    """Lines joined by newlines as they come, ending with exactly one newline (the text's
    trailing newlines are held back until more text follows)."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.first, self.held = out, True, ""

    def add(self, lines: Iterable[str]) -> None:
        for line in lines:
            text = line if self.first else "\n" + line
            self.first = False
            body = text.rstrip("\n")
            if body:
                self.out.write(self.held + body)
                self.held = text[len(body):]
            else:
                self.held += text

    def end(self) -> None:
        self.out.write("\n")


def _headline(states: Counter) -> str:
    """(`states`: runs of each status.)"""
    n = sum(states.values())
    head = f"{n} run{'s' if n != 1 else ''}"
    if not n:
        return head + ", nothing to report"
    parts = [f"{states[s]} {word}" for s, word in
             (("error", "with errors"), ("warning", "with warnings"), ("ok", "clean")) if states[s]]
    return head + " — " + ", ".join(parts)


def _cell(text: str) -> str:
    return escape(text).replace("\n", " ")


def summary_table(runs: Sequence[RunReport]) -> list[str]:
    return list(summary_rows(runs))


def summary_rows(runs: Sequence[RunReport]) -> Iterator[str]:
    """The summary table's lines, a run's row at a time (a spooled sweep's runs are read back
    one at a time: the table of 10^5 runs is never held)."""
    yield "| run | format | worst | verdict | steps | points | final loss | findings |"
    yield "|---|---|---|---|---|---:|---:|---|"
    for r in runs:
        st = status(r)
        yield "| " + " | ".join([
            _cell(r.run), _cell(", ".join(r.formats) or "—"), f"{SEVERITY_MARK[st]} {st}", _cell(verdict(r)),
            steps_text(r), f"{r.points:,}", final_value_text(r), _cell(counts_text(r)),
        ]) + " |"


def run_section(run: RunReport, *, charts: bool = True) -> list[str]:
    st = status(run)
    facts = [", ".join(run.formats), segments_text(run), f"steps {steps_text(run)}", f"{run.points:,} points",
             loss_story(run)]
    out = [f"## {SEVERITY_MARK[st]} {escape(run.run)}: {escape(verdict(run))}", "",
           escape(" · ".join(p for p in facts if p)), ""]
    major, notes = split_findings(run)
    cache: dict = {}
    shown: set = set()
    for f in major:
        out += finding_section(f, run, cache, charts=charts, shown_tips=shown)
    if notes:
        out += ["**Notes**", ""]
        out += [f"- {code(f.kind)}: {escape(f.message)}"
                + (f" — likely {code(f.causes[0].cause)}: {escape(f.causes[0].evidence)}" if f.causes else "")
                for f in notes] + [""]
    return out


def finding_section(f: Finding, run: RunReport, cache: dict | None = None, *, charts: bool = True,
                    shown_tips: set | None = None) -> list[str]:
    where = f" in {code(f.metric)}" if f.metric else ""
    out = [f"### {SEVERITY_MARK.get(f.severity, '')} {f.severity}: {f.kind} ({f.code}){where}, {span_text(f)}", "",
           escape(f.message), ""]
    if f.causes:
        out += ["**Likely causes**", ""]
        out += [f"- **{escape(c.cause)}** ({round(100 * c.confidence)}%): {escape(c.evidence)}" for c in f.causes]
        out.append("")
    tips = tuple(next_steps(f))
    if tips and shown_tips is not None and tips in shown_tips:
        out += ["**What to try**: as above.", ""]
    elif tips:
        out += ["**What to try**", ""] + [f"- {t}" for t in tips] + [""]  # catalog text is markdown
        if shown_tips is not None:
            shown_tips.add(tips)
    if charts:
        win = neighbourhood(run, f, cache)
        if win is not None and win.step.size >= 3 and win.has_finite:
            out += ["```text", *chart(win), "```", ""]
    return out
