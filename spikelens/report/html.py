"""`--html FILE`: one self-contained page to triage a folder of runs in a browser.

It opens on a summary (runs by severity, counts by kind, a filter, each run's verdict
and its findings one click away); below, each run gets interactive charts drawn with
uPlot (vendored in `vendor/`, inlined once per page: the page needs no network): the
main loss with every finding that needs attention, and every note its verdict speaks of,
as a band or a marker, segment boundaries and superseded points apart, and grad norm, LR,
loss scale, throughput, step time and memory on the same step axis; a picker lists every
metric the run logged and adds any other one (accuracy, MFU, a reward) as a chart of its
own; each finding gets a zoom of its own stretch beside its message, evidence and advice.

The series are decimated keeping every extreme (see `chart_data`); the picker's metrics
travel apart, coarser, in a script element parsed only when one is added. The charts are
built when their run scrolls into view (all at once before printing, or with `static`),
so a sweep of hundreds of runs opens at once. Past `MAX_CHARTED_RUNS` runs, only the runs with findings get a section;
past `MAX_ROWS`, the summary lists the worst `MAX_ROWS` runs and counts the rest.
The page is written as it is made (`write_html`), a run at a time.
"""
from __future__ import annotations

import heapq
import html
import io
import json
import re
import shutil
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..explain.catalog import next_steps
from ..model.finding import SEVERITY_RANK, Finding
from ..model.report import Report, RunReport
from ..pipeline.runsummary import reordered
from .chart_data import (EXTRA_POINTS_PER_PAGE, EXTRA_POINTS_PER_RUN, drawn_metrics, extra_chart, metric_parts,
                         natural_key, run_chart)
from .verdict import (counts_text, final_loss_text, kind_counts, loss_story, number, segments_text, span_text,
                      split_findings, status, steps_text, verdict)

HERE = Path(__file__).parent
UPLOT_VERSION = "1.6.32"
MAX_CHARTED_RUNS = 300
"""Above this many runs, clean runs are listed in the summary only (no chart section)."""
MAX_ROWS = 5000
"""Summary rows at most: past this many runs the page lists the worst MAX_ROWS (errors first,
then warnings, by name) and says how many of each status it leaves out (the page of a sweep of
10^5 runs would be ~100 MB of rows no one scrolls; the parent would hold a key a run)."""
MAX_SECTIONS = 400
"""Chart sections at most past MAX_CHARTED_RUNS, worst first (about 37 KB each; the summary
still lists every run)."""
CHIPS_PER_RUN = 16
"""Findings linked from a run's summary row (the rest are in its section)."""
STATUS_ORDER = {"error": 0, "warning": 1, "ok": 2}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _md_code(text: str) -> str:
    """Escape, then turn the catalog's `code` spans into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _asset(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def _json_script(payload: Any) -> str:
    """JSON safe inside <script>: no '<' can close the element."""
    return json.dumps(payload, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


class Sweep:
    """What the page says of all runs, read in one pass over them (each run let go after):
    the page order, each listed run's status, the kinds seen and counted, the main metrics'
    roles. A sweep's runs may wait on disk (`pipeline.runsummary.SpooledRuns`): the page then
    holds this, at most `2 * MAX_ROWS` runs' keys and one run at a time."""

    def __init__(self, runs: Sequence[RunReport]) -> None:
        keys: list[tuple[int, str, int]] = []
        self.total: dict[str, list[int]] = {}
        self.worst: dict[str, int] = {}
        self.roles: set[str] = set()
        self.counts = {"error": 0, "warning": 0, "ok": 0}
        """Runs of each status, listed or not."""
        for i, r in enumerate(runs):
            st = status(r)
            self.counts[st] += 1
            keys.append((STATUS_ORDER[st], r.run, i))
            if len(keys) >= 2 * MAX_ROWS:  # only the worst MAX_ROWS can be listed: the rest let go
                keys = heapq.nsmallest(MAX_ROWS, keys)
            for k, n in kind_counts(r).items():
                t = self.total.setdefault(k, [0, 0])
                t[0] += n
                t[1] += 1
            for f in r.findings:
                self.worst[f.kind] = max(self.worst.get(f.kind, 0), SEVERITY_RANK[f.severity])
            if r.stats.get("main_metric"):
                self.roles.add(r.metrics.get(r.stats["main_metric"], "other"))
        keys = sorted(keys)[:MAX_ROWS]
        self.n = sum(self.counts.values())
        """Every run of the sweep."""
        self.order = array("q", (i for _, _, i in keys))
        """The listed runs: errors first, then warnings, then clean runs; by name inside each."""
        self.states = [("error", "warning", "ok")[k[0]] for k in keys]
        """Each listed run's status, in page order."""
        flagged = [j for j, st in enumerate(self.states) if st != "ok"]
        self.charted = list(range(len(keys))) if self.n <= MAX_CHARTED_RUNS else flagged[:MAX_SECTIONS]
        """Page positions of the runs that get a section: all of them up to MAX_CHARTED_RUNS, else
        the ones with findings (at most MAX_SECTIONS)."""

    def left_out_note(self) -> str:
        """What the page leaves to the summary table, and why."""
        n, clean = len(self.states), self.states.count("ok")
        flagged = n - clean - len(self.charted)
        parts = [f"{clean} clean run{'s' if clean != 1 else ''}"] if clean else []
        if flagged:
            parts.append(f"{flagged} run{'s' if flagged != 1 else ''} with findings past the first {MAX_SECTIONS}")
        return (f"{' and '.join(parts)} {'are' if n - len(self.charted) != 1 else 'is'} listed above only: "
                f"more than {MAX_CHARTED_RUNS} runs, so charts are drawn for the runs with findings"
                + (f" (at most {MAX_SECTIONS}, worst first)." if flagged else "."))

    def unlisted_note(self) -> str:
        """The runs the table leaves out (more than MAX_ROWS), how many of each status, and where they are."""
        listed = {st: self.states.count(st) for st in self.counts}
        rest = [f"{self.counts[st] - listed[st]} {word}" for st, word in
                (("error", "with errors"), ("warning", "with warnings"), ("ok", "clean"))
                if self.counts[st] > listed[st]]
        return (f"This page lists the {len(self.states)} worst of {self.n} runs (errors first, then warnings, "
                f"then clean runs, by name); the other {self.n - len(self.states)} ({', '.join(rest)}) are not "
                "listed: every run is in the JSON, concise and markdown reports.")


def render_html(report: Report, *, static: bool = False) -> str:
    """The page, as one string (`write_html` into a string)."""
    buf = io.StringIO()
    write_html(report, buf, static=static)
    return buf.getvalue()


def write_html(report: Report, out: TextIO, *, static: bool = False, scratch: str | Path | None = None) -> None:
    """The page, written a part at a time: a sweep of 10^5 runs is read run by run, twice (the
    summary's order and counts, then its rows and sections), never held. Charts are drawn as
    they scroll into view, and all of them before printing; `static` draws every chart as the
    page opens (headless screenshots, archives). The charts' data, which the page carries after
    its sections, waits in an unnamed temporary file in `scratch` (None: the system's)."""
    seen = Sweep(report.runs)
    runs = reordered(report.runs, seen.order)
    n, listed = seen.n, len(seen.states)
    counts = [f"{seen.counts[s]} {w}" for s, w in
              (("error", "with errors"), ("warning", "with warnings"), ("ok", "clean")) if seen.counts[s]]
    title = f"spikelens {report.command}: {n} run{'s' if n != 1 else ''}"
    eager = ' data-static="1"' if static else ""
    for line in ("<!DOCTYPE html>", f'<html lang="en"{eager}><head><meta charset="utf-8">',
                 '<meta name="viewport" content="width=device-width, initial-scale=1">',
                 '<link rel="icon" href="data:,">',
                 f"<title>{_e(title)}</title>",
                 f"<style>{_asset('vendor/uPlot.min.css')}\n{_asset('html_page.css')}</style></head><body>",
                 f"<header><h1>{_e(title)}</h1><p class=\"counts\">{_e(', '.join(counts) or 'nothing to report')}</p>"
                 "</header>"):
        out.write(line + "\n")
    charted = set(seen.charted)
    if n:
        out.write(filter_bar(sorted(seen.total), listed) + "\n")
        _summary_table(out, runs, charted, final_column(seen.roles))
        if listed < n:
            out.write(f'<p class="note">{_e(seen.unlisted_note())}</p>\n')
        out.write(kinds_table(seen.total, seen.worst) + "\n")
        if len(charted) < listed:
            out.write(f'<p class="note">{_e(seen.left_out_note())}</p>\n')
    budget = min(EXTRA_POINTS_PER_RUN, EXTRA_POINTS_PER_PAGE // max(1, len(charted)))
    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=scratch) as data:
        for i in seen.charted:
            run = runs[i]
            fids = finding_ids(run, i)
            parts = metric_parts(run)
            extras, left_out = extra_chart(run, parts, budget)
            out.write(run_section(run, i, fids, metric_picker(run, parts, left_out)) + "\n")
            data.write(f'<script type="application/json" id="chart-{i}">{_json_script(run_chart(run, fids, parts))}'
                       "</script>\n")
            if extras["series"]:  # parsed only when the picker adds one of them
                data.write(f'<script type="application/json" id="more-{i}">{_json_script(extras)}</script>\n')
        if report.warnings:
            out.write('<section class="warnings"><h2>Warnings while reading</h2><ul>\n')
            for w in report.warnings:
                out.write(f"<li>{_e(w)}</li>\n")
            out.write("</ul></section>\n")
        out.write("<footer>More on any kind or cause: <code>spikelens explain NAME</code>. "
                  f"Charts drawn with uPlot {UPLOT_VERSION} (MIT), embedded in this page.</footer>\n")
        data.seek(0)
        shutil.copyfileobj(data, out)
    out.write(f"<script>{_asset('vendor/uPlot.iife.min.js')}</script>\n")
    out.write(f"<script>{_asset('html_app.js')}</script>\n")
    out.write("</body></html>\n")


def finding_ids(run: RunReport, i: int) -> dict[int, str]:
    """Each finding's element id (`f{run's place}-{finding's place}`), by the finding's id()."""
    return {id(f): f"f{i}-{j}" for j, f in enumerate(run.findings)}


def _row_attrs(run: RunReport, i: int) -> str:
    kinds = " ".join(sorted({f.kind for f in run.findings}))
    return (f'data-run="{i}" data-sev="{status(run)}" data-kinds="{_e(kinds)}" '
            f'data-name="{_e(run.run.lower())}"')


def filter_bar(kinds: list[str], n: int) -> str:
    options = "".join(f'<option value="{_e(k)}">{_e(k)}</option>' for k in kinds)
    return ('<div class="filters" id="filters">'
            '<label>severity <select id="f-sev" autocomplete="off"><option value="all">all runs</option>'
            '<option value="attention">errors and warnings</option><option value="error">errors</option>'
            '<option value="warning">warnings</option><option value="ok">clean</option></select></label>'
            f'<label>kind <select id="f-kind" autocomplete="off"><option value="">any</option>{options}</select></label>'
            '<label>run <input id="f-name" type="search" autocomplete="off" placeholder="name contains…"></label>'
            f'<span id="f-count">{n} of {n} runs</span></div>')


def _summary_table(out: TextIO, runs: Sequence[RunReport], charted: set[int], final: tuple[str, str]) -> None:
    """The summary, a row a run (`charted`: the page positions that have a section)."""
    title, tip = final
    out.write('<table class="summary" id="summary"><thead><tr><th>run</th>'
              '<th title="the worst severity among the run\'s findings (ok: none needs attention)">status</th>'
              "<th>verdict</th><th>findings</th><th title=\"first and last step logged\">steps</th>"
              "<th class=\"num\" title=\"values read, every metric\">points read</th>"
              f"<th class=\"num\" title=\"{_e(tip)}\">{_e(title)}</th>"
              "<th>log format</th></tr></thead><tbody>\n")
    for i, r in enumerate(runs):
        st = status(r)
        name = (f'<a href="#{_anchor(i)}">{_e(r.run)}</a>' if i in charted else _e(r.run))
        out.write(
            f"<tr {_row_attrs(r, i)}><td class=\"name\">{name}</td><td><span class=\"sev {st}\">{st}</span></td>"
            f"<td>{_e(verdict(r))}</td><td>{_chips(r, i, finding_ids(r, i), i in charted)}</td>"
            f"<td class=\"steps\">{_e(steps_text(r))}</td><td class=\"num\">{r.points:,}</td>"
            f"<td class=\"num\">{_e(final_loss_text(r))}{_main_metric(r)}</td>"
            f"<td>{_e(', '.join(r.formats) or '—')}</td></tr>\n")
    out.write("</tbody></table>\n")


FINAL_TITLES = {"loss": "final loss", "eval_loss": "final eval loss", "perplexity": "final perplexity",
                "reward": "final reward", "accuracy": "final accuracy"}
"""The last-value column's title when every run's main metric has this role."""


def final_column(roles: set[str]) -> tuple[str, str]:
    """(title, tooltip) of the last-value column, from the roles of the runs' main metrics:
    'final loss' when every run's main metric is a loss, 'final perplexity' when each is a
    perplexity, else 'final value' (each cell names its metric under the number)."""
    title = FINAL_TITLES.get(next(iter(roles)), "final value") if len(roles) == 1 else "final value"
    return title, "the last value of each run's main metric, named under it"


def metric_picker(run: RunReport, parts: dict, left_out: list[str]) -> str:
    """'add a chart': every metric the run logged; those the panels draw, those with no
    value and those past the page's budget are listed but cannot be added."""
    drawn = drawn_metrics(run, parts)
    skipped = set(left_out)
    names = sorted(set(run.metrics) | set(parts),
                   key=lambda m: (m in drawn, m not in parts or m in skipped, run.metrics.get(m, "other") == "other",
                                  natural_key(m)))
    addable = 0
    options = []
    for m in names:
        role = run.metrics.get(m, "other")
        why = ("drawn above" if m in drawn else "no values" if m not in parts else
               "not embedded: too many metrics" if m in skipped else "")
        addable += not why
        options.append(f'<option value="{_e(m)}"{" disabled" if why else ""}>{_e(m)} ({_e(role)})'
                       f'{" — " + _e(why) if why else ""}</option>')
    if not options:
        return ""
    prompt = f"add a chart ({addable} more metric{'s' if addable != 1 else ''})" if addable else "every metric drawn"
    return (f'<label>chart <select class="add-metric" autocomplete="off"><option value="">{prompt}</option>'
            f'{"".join(options)}</select></label>')


def _main_metric(run: RunReport) -> str:
    """The metric the final value is of (a perplexity or a reward says so), under the number."""
    main = run.stats.get("main_metric")
    return f'<br><span class="label">{_e(main)}</span>' if main else ""


def _chips(run: RunReport, i: int, fids: dict[int, str], linked: bool) -> str:
    """Each finding needing attention as a link that zooms the run's chart to it."""
    major, notes = split_findings(run)
    if not linked:
        return _e(counts_text(run))
    chips = [f'<a class="chip {_e(f.severity)}" href="#{fids[id(f)]}" data-goto="{fids[id(f)]}" '
             f'title="{_e(f.message)}">{_e(f.kind)} {_e(_at(f))}</a>' for f in major[:CHIPS_PER_RUN]]
    more = len(major) - CHIPS_PER_RUN
    if more > 0:
        chips.append(f'<a class="more" href="#{_anchor(i)}">+{more} more</a>')
    if notes:
        chips.append(f'<a class="more" href="#notes-{i}" data-open="notes-{i}">'
                     f'{len(notes)} note{"s" if len(notes) != 1 else ""}</a>')
    return " ".join(chips) or "—"


def _at(f: Finding) -> str:
    s = f.anchor_step
    return "" if s is None else f"@{s}"


def kinds_table(total: dict[str, list[int]], worst: dict[str, int]) -> str:
    """Findings and runs per kind (`total`: kind -> [findings, runs]; `worst`: kind -> its worst
    severity's rank), worst kinds first; a kind's name filters by it."""
    if not total:
        return '<p class="note">No findings in any run.</p>'
    rows = ['<table class="kinds" id="kinds"><thead><tr><th>kind</th><th>worst severity</th>'
            '<th class="num">findings</th><th class="num">runs with it</th></tr></thead><tbody>']
    sev_names = {v: k for k, v in SEVERITY_RANK.items()}
    for k in sorted(total, key=lambda k: (-worst[k], -total[k][0], k)):
        sev = sev_names[worst[k]]
        rows.append(f'<tr><td><button class="kind" data-kind="{_e(k)}">{_e(k)}</button></td>'
                    f'<td><span class="sev {sev}">{sev}</span></td><td class="num">{total[k][0]:,}</td>'
                    f'<td class="num">{total[k][1]:,}</td></tr>')
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _anchor(i: int) -> str:
    return f"run-{i}"


def run_section(run: RunReport, i: int, fids: dict[int, str], picker: str = "") -> str:
    st = status(run)
    facts = [", ".join(run.formats), segments_text(run), f"steps {steps_text(run)}", f"{run.points:,} points",
             loss_story(run)]
    out = [f'<section class="run" id="{_anchor(i)}" {_row_attrs(run, i)}>',
           f'<h2><span class="sev {st}">{st}</span> {_e(run.run)}: {_e(verdict(run))}</h2>',
           f'<p class="facts">{_e(" · ".join(p for p in facts if p))}</p>',
           '<div class="controls"><label><input type="checkbox" class="log-toggle" autocomplete="off"> log scale</label>'
           '<label>smoothing <input type="range" class="smooth" autocomplete="off" min="0" max="0.99" step="0.01" value="0">'
           f'<output>0</output></label>{picker}<button type="button" class="reset">whole run</button>'
           '<span class="hint">drag: zoom · shift-drag: pan · alt+wheel: zoom · double-click: whole run · '
           'click a legend entry: show/hide</span></div>',
           f'<div class="charts" data-run="{i}"><p class="loading">chart drawn when scrolled into view (and before printing)</p></div>']
    major, notes = split_findings(run)
    out += [finding_card(f, fids[id(f)]) for f in major]
    if notes:
        out.append(f'<details class="notes" id="notes-{i}"><summary>'
                   f'{len(notes)} note{"s" if len(notes) != 1 else ""} (info)</summary><ul>')
        for f in notes:
            fid = fids[id(f)]
            link = (f' <a href="#{_anchor(i)}" data-goto="{fid}">{_e(span_text(f))}</a>'
                    if f.anchor_step is not None else "")
            out.append(f'<li id="{fid}"><code>{_e(f.kind)}</code>{link} {_e(f.message)}</li>')
        out.append("</ul></details>")
    out.append("</section>")
    return "\n".join(out)


def evidence_rows(f: Finding, limit: int = 12) -> list[tuple[str, str]]:
    """(name, value) pairs of a finding's evidence as a person reads them."""
    out = []
    for k, v in f.evidence.items():
        if isinstance(v, np.ndarray):  # a detector's array: read as the list it holds
            v = v.tolist()
        if v is None or (isinstance(v, (list, dict)) and not v):  # nothing measured: no row, never a raw None
            continue
        out.append((k.replace("_", " "), _evidence_text(v)))
        if len(out) == limit:
            break
    return out


def _evidence_text(v: Any, depth: int = 0) -> str:
    """One evidence value as a person reads it: numbers to 4 digits, nested records as 'key value'."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        shown = [_evidence_text(x, depth + 1) for x in v[:8 if depth == 0 else 4]]
        more = f" (+{len(v) - len(shown)} more)" if len(v) > len(shown) else ""
        return ("; " if any(isinstance(x, (dict, list, tuple)) for x in v) else ", ").join(shown) + more
    if isinstance(v, dict):
        parts = [f"{str(a).replace('_', ' ')} {_evidence_text(b, depth + 1)}" for a, b in list(v.items())[:6]
                 if b is not None]
        return ", ".join(parts) + (" …" if len(v) > 6 else "")
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 10 ** 9:
        return f"{v:,}"
    if isinstance(v, (int, float)) or hasattr(v, "item"):
        return number(v)
    return str(v)


def finding_card(f: Finding, fid: str) -> str:
    where = f" in <code>{_e(f.metric)}</code>" if f.metric else ""
    zoomable = f.anchor_step is not None
    goto = f' data-goto="{fid}"' if zoomable else ""
    button = f'<button type="button" class="goto"{goto}>show in run chart ↑</button>' if zoomable else ""
    out = [f'<article class="finding {_e(f.severity)}" id="{fid}">',
           f'<div class="zoom" data-zoom="{fid}"></div>' if zoomable else '<div class="zoom empty"></div>',
           '<div class="body">',
           f'<h3{goto}><span class="sev {_e(f.severity)}">{_e(f.severity)}</span> {_e(f.kind)} '
           f'<span class="label">{_e(f.code)}</span>{where}, {_e(span_text(f))}</h3>{button}',
           f'<p class="message">{_e(f.message)}</p>']
    rows = evidence_rows(f)
    if rows:
        out.append('<table class="evidence">' + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
                   + "</table>")
    if f.causes:
        out.append('<p class="label">Likely causes</p><ul>')
        out += [f"<li><b>{_e(c.cause)}</b> ({round(100 * c.confidence)}%): {_e(c.evidence)}</li>" for c in f.causes]
        out.append("</ul>")
    tips = next_steps(f)
    if tips:
        out.append('<p class="label">What to try</p><ul>')
        out += [f"<li>{_md_code(t)}</li>" for t in tips]
        out.append("</ul>")
    out.append("</div></article>")
    return "\n".join(out)
