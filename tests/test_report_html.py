"""The HTML page: self-contained, one embedded picture per run, everything escaped."""
from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

from report_cases import clean_run, sample_report, spiky_run
from spikelens.report.html import render_html
from spikelens.model.report import Report


class _Collect(HTMLParser):
    VOID = {"meta", "img", "br", "link", "hr", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.attrs, self.errors = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def _parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    p.close()
    return p


def test_page_is_self_contained_and_well_formed():
    page = render_html(sample_report())
    p = _parse(page)
    assert not p.errors and not p.stack
    assert "script" not in p.tags and "link" not in p.tags
    assert not re.search(r"""(src|href)=["'](https?:)?//""", page)
    imgs = [a for t, a in p.attrs if t == "img"]
    assert len(imgs) == 4
    for a in imgs:
        assert a["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(a["src"].split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")


def test_given_images_are_used_and_plots_can_be_left_out():
    rep = Report("analyze", [spiky_run(), clean_run()])
    fake = {"gpt-small-3": b"\x89PNG\r\n\x1a\nfake"}
    page = render_html(rep, fake)
    assert page.count("data:image/png;base64,") == 1
    assert base64.b64encode(fake["gpt-small-3"]).decode() in page
    assert "<img" not in render_html(rep, plots=False)


def test_content_matches_the_report():
    page = render_html(sample_report(), plots=False)
    assert "1 with errors, 2 with warnings, 1 clean" in page
    assert "diverged at step 3500; NaN at step 3610" in page
    assert "<b>grad_explosion</b> (80%)" in page
    assert "truncated record at byte 4120" in page
    assert page.count('class="finding ') == 6
    assert 'href="#run-gpt-small-3"' in page and 'id="run-gpt-small-3"' in page


def test_everything_from_the_logs_is_escaped():
    run = spiky_run()
    run.run = '<script>alert("x")</script>'
    run.findings[0].message = "loss <b>spiked</b> & fell"
    page = render_html(Report("analyze", [run]), plots=False)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "loss &lt;b&gt;spiked&lt;/b&gt; &amp; fell" in page
    assert not _parse(page).errors
