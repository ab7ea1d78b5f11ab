"""`--html FILE`: one self-contained page (inline CSS, each run's picture embedded as
a base64 PNG, no script and no external resource), so it can be mailed, attached to
a CI run or opened offline.
"""
from __future__ import annotations

import base64
import html
import re
from typing import Mapping

from ..model.finding import Finding
from ..explain.catalog import next_steps
from ..model.report import Report, RunReport
from .verdict import (counts_text, final_loss_text, loss_story, segments_text, span_text, split_findings,
                      status, steps_text, verdict)

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1250px;
color:#1d1d1f;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.3em}h2{font-size:1.2em;margin:1.8em 0 .2em;border-bottom:1px solid #ddd}
table.summary{border-collapse:collapse;width:100%;margin:1em 0}
table.summary th,table.summary td{padding:.35em .6em;border-bottom:1px solid #e5e5e5;text-align:left;
vertical-align:top}
table.summary td.num{text-align:right;font-variant-numeric:tabular-nums}
.facts{color:#666;margin:.2em 0 .8em}
.sev{display:inline-block;border-radius:3px;padding:0 .45em;font-size:.8em;font-weight:600;color:#fff}
.error{background:#c62828}.warning{background:#e67e00}.info{background:#888}.ok{background:#2e7d32}
.finding{border-left:4px solid #ccc;padding:.3em .9em;margin:.9em 0}
.finding.error{border-color:#c62828;background:#fdf3f3}.finding.warning{border-color:#e67e00;background:#fff8ef}
.finding.info{border-color:#aaa;background:#f7f7f7}
.finding h3{font-size:1em;margin:.2em 0}.finding ul{margin:.2em 0 .4em}.label{color:#666;font-size:.9em}
img.plot{max-width:100%;border:1px solid #eee}
code{background:#f0f0f0;padding:0 .25em;border-radius:3px}
.warnings li{color:#8a5a00}
footer{color:#888;margin-top:3em;font-size:.9em}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _md_code(text: str) -> str:
    """Escape, then turn the catalog's `code` spans into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def render_html(report: Report, images: Mapping[str, bytes] | None = None, *, plots: bool = True) -> str:
    """The page. `images` maps run name → PNG bytes (as `plots.plot_run` makes them);
    without it, pictures are drawn here unless `plots` is False."""
    runs = sorted(report.runs, key=lambda r: r.run)
    if images is None:
        images = {}
        if plots:
            from .plots import plot_run

            images = {r.run: plot_run(r) for r in runs}
    states = [status(r) for r in runs]
    counts = [f"{states.count(s)} {w}" for s, w in
              (("error", "with errors"), ("warning", "with warnings"), ("ok", "clean")) if states.count(s)]
    title = f"spikelens {report.command}: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>", f"<p>{_e(', '.join(counts) or 'nothing to report')}</p>"]
    if runs:
        out.append(summary_table(runs))
    for run in runs:
        out.append(run_section(run, images.get(run.run)))
    if report.warnings:
        out.append('<h2>Warnings while reading</h2><ul class="warnings">')
        out += [f"<li>{_e(w)}</li>" for w in report.warnings]
        out.append("</ul>")
    out.append("<footer>More on any kind or cause: <code>spikelens explain NAME</code></footer>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def summary_table(runs: list[RunReport]) -> str:
    rows = ['<table class="summary"><thead><tr><th>run</th><th>format</th><th>worst</th><th>verdict</th>'
            "<th>steps</th><th>points</th><th>final loss</th><th>findings</th></tr></thead><tbody>"]
    for r in runs:
        st = status(r)
        rows.append(
            f'<tr><td><a href="#{_anchor(r.run)}">{_e(r.run)}</a></td><td>{_e(", ".join(r.formats) or "—")}</td>'
            f'<td><span class="sev {st}">{st}</span></td><td>{_e(verdict(r))}</td><td>{_e(steps_text(r))}</td>'
            f'<td class="num">{r.points:,}</td><td class="num">{_e(final_loss_text(r))}</td>'
            f"<td>{_e(counts_text(r))}</td></tr>")
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _anchor(name: str) -> str:
    return "run-" + re.sub(r"[^A-Za-z0-9_-]+", "-", name)


def run_section(run: RunReport, png: bytes | None) -> str:
    st = status(run)
    facts = [", ".join(run.formats), segments_text(run), f"steps {steps_text(run)}", f"{run.points:,} points",
             loss_story(run)]
    out = [f'<section id="{_anchor(run.run)}">',
           f'<h2><span class="sev {st}">{st}</span> {_e(run.run)}: {_e(verdict(run))}</h2>',
           f'<p class="facts">{_e(" · ".join(p for p in facts if p))}</p>']
    if png:
        data = base64.b64encode(png).decode("ascii")
        out.append(f'<img class="plot" alt="{_e(run.run)}: loss, gradient norm, learning rate and loss scale '
                   f'with the findings shaded" src="data:image/png;base64,{data}">')
    major, notes = split_findings(run)
    out += [finding_card(f) for f in major]
    if notes:
        out.append('<p class="label">Notes</p><ul>')
        out += [f"<li><code>{_e(f.kind)}</code> {_e(f.message)}</li>" for f in notes]
        out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)


def finding_card(f: Finding) -> str:
    where = f" in <code>{_e(f.metric)}</code>" if f.metric else ""
    out = [f'<div class="finding {_e(f.severity)}">',
           f'<h3><span class="sev {_e(f.severity)}">{_e(f.severity)}</span> {_e(f.kind)} '
           f'<span class="label">{_e(f.code)}</span>{where}, {_e(span_text(f))}</h3>',
           f"<p>{_e(f.message)}</p>"]
    if f.causes:
        out.append('<span class="label">Likely causes</span><ul>')
        out += [f"<li><b>{_e(c.cause)}</b> ({round(100 * c.confidence)}%): {_e(c.evidence)}</li>" for c in f.causes]
        out.append("</ul>")
    else:
        out.append('<p class="label">Likely causes: none found in the other metrics.</p>')
    tips = next_steps(f)
    if tips:
        out.append('<span class="label">What to try</span><ul>')
        out += [f"<li>{_md_code(t)}</li>" for t in tips]
        out.append("</ul>")
    out.append("</div>")
    return "\n".join(out)
