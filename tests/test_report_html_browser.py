"""The HTML report in a real browser (headless Chromium through Selenium): it loads with
no console error, every run gets its charts, the summary is in severity order, the
filter hides clean runs, and a click on a finding moves the run's chart to its steps."""
from __future__ import annotations

import time

import pytest

from browser import chromium, console_errors, missing
from report_cases import metrics_run, sample_report
from spikelens.model.report import Report
from spikelens.report.html import render_html

pytestmark = pytest.mark.skipif(missing() is not None, reason=f"no browser to drive: {missing()}")


def _wait(driver, script: str, timeout: float = 10.0):
    """Poll a JS expression until it is truthy; return its value."""
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return ({script});")
        if value or time.monotonic() > end:
            return value
        time.sleep(0.05)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(sample_report()), encoding="utf-8")
    with chromium() as driver:
        driver.get(path.as_uri())
        _wait(driver, "document.readyState === 'complete' && window.spikelens")
        yield driver


@pytest.fixture
def fresh(page):
    """The page reloaded (filters cleared, charts unbuilt), console read empty."""
    page.refresh()
    _wait(page, "document.readyState === 'complete' && window.spikelens")
    console_errors(page)
    return page


def _x_range(driver, run: int) -> list[float]:
    return driver.execute_script(
        f"const c = spikelens.runs[{run}].panels[0].chart; return [c.scales.x.min, c.scales.x.max];")


def test_loads_without_console_errors_and_every_run_has_its_charts(fresh):
    d = fresh
    sections = d.find_elements("css selector", "section.run")
    assert len(sections) == 4
    for sec in sections:  # charts are built as their run scrolls into view
        d.execute_script("arguments[0].scrollIntoView()", sec)
        run = sec.get_attribute("data-run")
        assert _wait(d, f"document.querySelectorAll('#run-{run} .charts .uplot').length > 0"), run
    panels = d.execute_script(
        "return [...document.querySelectorAll('section.run')].map(s => s.querySelectorAll('.charts .uplot').length)")
    assert panels == [4, 1, 3, 3]  # llama-fp16: loss, grad norm, LR, loss scale; bert-resume: loss only
    for card in d.find_elements("css selector", "article.finding"):  # drawn as each card comes near
        d.execute_script("arguments[0].scrollIntoView()", card)
    assert _wait(d, "document.querySelectorAll('.finding .zoom .uplot').length === 6")  # one zoom per card
    assert console_errors(d) == []


def test_summary_lists_runs_in_severity_order(fresh):
    rows = fresh.find_elements("css selector", "#summary tbody tr")
    assert [r.get_attribute("data-sev") for r in rows] == ["error", "warning", "warning", "ok"]
    assert rows[0].find_element("css selector", "td.name").text == "llama-fp16"


def test_filter_hides_the_clean_runs(fresh):
    d = fresh
    from selenium.webdriver.support.ui import Select

    Select(d.find_element("id", "f-sev")).select_by_value("attention")
    for el in d.find_elements("css selector", "#summary tbody tr, section.run"):
        assert el.is_displayed() == (el.get_attribute("data-sev") != "ok")
    assert d.find_element("id", "f-count").text == "3 of 4 runs"
    Select(d.find_element("id", "f-sev")).select_by_value("all")
    d.find_element("id", "f-name").send_keys("bert")
    shown = [r.get_attribute("data-name") for r in d.find_elements("css selector", "#summary tbody tr")
             if r.is_displayed()]
    assert shown == ["bert-resume"]
    d.find_element("id", "f-name").clear()
    button = d.find_element("css selector", 'button.kind[data-kind="nan"]')
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)  # clear of the sticky filter bar
    button.click()
    shown = [r.get_attribute("data-name") for r in d.find_elements("css selector", "#summary tbody tr")
             if r.is_displayed()]
    assert shown == ["llama-fp16"]


def test_clicking_a_finding_moves_the_chart_to_its_steps(fresh):
    d = fresh
    chip = d.find_element("css selector", '#summary a.chip[data-goto="f2-0"]')  # gpt-small-3's spike at 3204
    assert "spike" in chip.text
    chip.click()
    view = d.execute_script("return spikelens.runs[2].data.findings.find(f => f.id === 'f2-0')")
    lo, hi = _x_range(d, 2)
    assert (lo, hi) == pytest.approx((view["lo"], view["hi"]))
    assert lo < 3203 and 3260 < hi and hi - lo < 1000  # the spike and its recovery, not the whole run
    for panel in (1, 2):  # the companions follow on the same step axis
        assert d.execute_script(f"return spikelens.runs[2].panels[{panel}].chart.scales.x.min") == pytest.approx(lo)
    assert "selected" in d.find_element("id", "f2-0").get_attribute("class")
    # zoomed in, the loss is drawn with the window's full detail: every step around the spike
    xs = d.execute_script("const c = spikelens.runs[2].panels[0].chart; return c.data[0].filter("
                          f"x => x >= 3190 && x <= 3270)")
    assert xs == list(range(3190, 3271))
    # the card's own button does the same for the other spike
    button = d.find_element("css selector", '#f2-1 button.goto')
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    lo2, hi2 = _x_range(d, 2)
    assert lo2 < 5099 and 5812 < hi2 and lo2 > 3300
    assert console_errors(d) == []


def test_zoom_pan_log_and_smoothing_controls(fresh):
    d = fresh
    from selenium.webdriver.common.action_chains import ActionChains

    sec = d.find_element("id", "run-2")
    d.execute_script("arguments[0].scrollIntoView()", sec)
    _wait(d, "spikelens.runs[2] && spikelens.runs[2].built")
    over = sec.find_element("css selector", ".charts .uplot .u-over")
    ActionChains(d).move_to_element_with_offset(over, -200, 0).click_and_hold() \
        .move_by_offset(150, 0).release().perform()  # drag: zoom in
    lo, hi = _x_range(d, 2)
    assert 0 < hi - lo < 2000
    ActionChains(d).key_down("\ue008").move_to_element(over).click_and_hold().move_by_offset(100, 0) \
        .release().key_up("\ue008").perform()  # shift-drag: pan left, same width
    lo2, hi2 = _x_range(d, 2)
    assert lo2 < lo and (hi2 - lo2) == pytest.approx(hi - lo, rel=1e-6)
    ActionChains(d).double_click(over).perform()  # whole run again
    assert _x_range(d, 2) == pytest.approx([0, 5999])
    n = d.execute_script("return spikelens.runs[2].panels[0].chart.data[0].length")
    assert n <= 2 * 700 + 2  # the overview: per-bucket extremes only

    ActionChains(d).move_to_element(over).perform()  # hover: the legend shows the values under the cursor
    values = [v.text for v in sec.find_elements("css selector", ".charts .uplot")[0]
              .find_elements("css selector", ".u-legend .u-value")]
    assert values[0] not in ("", "—") and float(values[1]) > 0  # step, train/loss
    d.execute_script("""const o = arguments[0], r = o.getBoundingClientRect();
        o.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, altKey: true, bubbles: true, cancelable: true,
                                                 clientX: r.left + r.width / 2, clientY: r.top + 50}));""", over)
    lo3, hi3 = _x_range(d, 2)  # alt+wheel zooms in around the cursor
    assert hi3 - lo3 == pytest.approx(0.75 * 5999, rel=1e-3) and lo3 > 0 and hi3 < 5999
    ActionChains(d).double_click(over).perform()
    assert d.execute_script("return spikelens.runs[2].panels[0].chart.scales.y.distr") == 3  # log by default
    sec.find_element("css selector", ".log-toggle").click()
    assert d.execute_script("return spikelens.runs[2].panels[0].chart.scales.y.distr") == 1

    d.execute_script("const s = document.querySelector('#run-2 .smooth'); s.value = '0.9';"
                     "s.dispatchEvent(new Event('input'));")
    shown = d.execute_script("const c = spikelens.runs[2].panels[0].chart;"
                             "return c.series.filter(s => s.label.endsWith('(smoothed)')).map(s => s.show)")
    assert shown == [True]
    assert console_errors(d) == []


def test_every_finding_is_one_click_from_the_summary(fresh):
    d = fresh
    chips = d.find_elements("css selector", "#summary a.chip")
    assert len(chips) == 6
    for chip in chips:
        fid = chip.get_attribute("data-goto")
        d.execute_script("window.scrollTo(0, 0)")
        chip.click()
        run = int(fid[1:].split("-")[0])
        view = d.execute_script(f"return spikelens.runs[{run}].data.findings.find(f => f.id === '{fid}')")
        assert _x_range(d, run) == pytest.approx([view["lo"], view["hi"]]), fid
        card = d.find_element("id", fid)
        assert "selected" in card.get_attribute("class")
        top = d.execute_script(f"return document.getElementById('run-{run}').getBoundingClientRect().top")
        assert 0 <= top < 200  # the run's charts are brought into view
    notes = d.find_element("css selector", '#summary a[data-open="notes-3"]')  # clean-baseline's note
    d.execute_script("window.scrollTo(0, 0)")
    notes.click()
    assert d.find_element("id", "notes-3").get_attribute("open") is not None
    assert console_errors(d) == []


_DRAWN = """
const canvases = [...document.querySelectorAll('.charts .uplot canvas, .finding .zoom .uplot canvas')];
return canvases.map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let ink = 0;
  for (let i = 3; i < d.length; i += 4 * 7) if (d[i] > 0) ink++;
  return ink;
});
"""


def _line_pixels(png) -> int:
    """Pixels of a screenshot in the first series' blue (#1f77b4, give or take antialiasing)."""
    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB"), dtype=np.int32)
    return int((np.abs(rgb - np.array([0x1f, 0x77, 0xb4])) < 40).all(axis=2).sum())


def test_a_printed_page_has_every_chart_drawn(page, tmp_path):
    """Print media (what Chrome's print and PDF export switch to) draws every chart and zoom at
    once, none left as 'drawn when scrolled into view'; the PDF of the page renders."""
    page.refresh()
    _wait(page, "document.readyState === 'complete' && window.spikelens")
    assert page.execute_script("return document.querySelectorAll('.charts .uplot').length") < 11  # lazy on screen
    page.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        assert _wait(page, "document.querySelectorAll('.charts .uplot').length === 11"), "run charts not drawn"
        assert _wait(page, "document.querySelectorAll('.finding .zoom .uplot').length === 6"), "zooms not drawn"
        ink = page.execute_script(_DRAWN)
        assert len(ink) >= 17 and all(n > 0 for n in ink)  # every canvas holds a drawing
        assert not page.find_elements("css selector", ".charts .loading")
        pdf = page.execute_cdp_cmd("Page.printToPDF", {"printBackground": True})
        assert len(pdf["data"]) > 10_000
        chart = page.find_element("css selector", "#run-2 .charts .uplot")  # gpt-small-3's loss, below the fold
        page.execute_script("arguments[0].scrollIntoView()", chart)
        shot = tmp_path / "printed-chart.png"
        chart.screenshot(str(shot))
        assert _line_pixels(shot) > 300  # the curve is in the picture, not an empty block
    finally:
        page.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    assert console_errors(page) == []


def test_a_static_page_draws_every_chart_as_it_opens(tmp_path):
    path = tmp_path / "static.html"
    path.write_text(render_html(sample_report(), static=True), encoding="utf-8")
    with chromium() as driver:
        driver.get(path.as_uri())
        _wait(driver, "document.readyState === 'complete' && window.spikelens")
        assert _wait(driver, "document.querySelectorAll('.charts .uplot').length === 11")
        assert _wait(driver, "document.querySelectorAll('.finding .zoom .uplot').length === 6")
        shot = tmp_path / "static-chart.png"
        driver.find_elements("css selector", ".charts .uplot")[-1].screenshot(str(shot))  # the last run's loss
        assert _line_pixels(shot) > 300
        assert console_errors(driver) == []


@pytest.fixture(scope="module")
def metrics_page(tmp_path_factory):
    """A run logging accuracy, MFU, tokens/s, a reward and 24 per-layer grad norms beside its
    loss, grad norm and LR, whose loss never fell (an info plateau heads its verdict)."""
    path = tmp_path_factory.mktemp("html") / "metrics.html"
    path.write_text(render_html(Report("analyze", [metrics_run()])), encoding="utf-8")
    with chromium() as driver:
        driver.get(path.as_uri())
        _wait(driver, "document.readyState === 'complete' && window.spikelens")
        yield driver


def test_the_picker_adds_any_logged_metric_as_a_chart(metrics_page, tmp_path):
    d = metrics_page
    from selenium.webdriver.support.ui import Select

    picker = d.find_element("css selector", "#run-0 select.add-metric")
    listed = [o.get_attribute("value") for o in picker.find_elements("css selector", "option")][1:]
    assert set(listed) == set(metrics_run().metrics)  # every metric of the run is listed
    assert _wait(d, "document.querySelectorAll('#run-0 .charts .uplot').length === 4")  # loss, grad norm, LR, tokens/s
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", picker)
    for name in ("eval/accuracy", "perf/mfu"):
        Select(picker).select_by_value(name)
    assert _wait(d, "document.querySelectorAll('#run-0 .charts .uplot').length === 6")
    titles = [t.text for t in d.find_elements("css selector", "#run-0 .panel-title")]
    assert titles[-2:] == ["eval/accuracy (accuracy)", "perf/mfu (other)"]
    n = d.execute_script("return spikelens.runs[0].panels.map(p => p.chart.data[0].length)")
    assert 40 < n[4] <= 100 and 40 < n[5] <= 2 * 120  # decimated: 27 metrics share the run's budget
    d.execute_script("spikelens.setX(0, 1000, 2000)")  # the added charts follow the run's step axis
    assert d.execute_script("return spikelens.runs[0].panels.map(p => p.chart.scales.x.min)") == [1000] * 6
    added = d.find_elements("css selector", "#run-0 .charts .uplot")[-1]
    shot = tmp_path / "added.png"
    added.screenshot(str(shot))
    assert _line_pixels(shot) > 100  # drawn, not an empty box
    assert not Select(picker).options[listed.index("eval/accuracy") + 1].is_enabled()
    assert console_errors(d) == []


_BAND_INK = """
const u = spikelens.runs[0].panels[0].chart, b = u.bbox;
const x = Math.round(u.valToPos(2500, 'x', true));
const d = u.ctx.getImageData(x - 20, b.top, 40, Math.round(b.height)).data;
let ink = 0;
for (let i = 3; i < d.length; i += 4) ink += d[i];
return ink;
"""


def test_an_info_finding_heading_the_verdict_gets_its_band(metrics_page):
    d = metrics_page
    _wait(d, "spikelens.runs[0] && spikelens.runs[0].built")
    d.execute_script("spikelens.setX(0, 0, 4999)")  # the whole run
    (plateau,) = d.execute_script("return spikelens.runs[0].data.findings")
    assert plateau["sev"] == "info" and plateau["heads"]
    banded = d.execute_script(_BAND_INK)
    d.execute_script("const u = spikelens.runs[0].panels[0].chart; spikelens.runs[0].data.findings[0].heads = false;"
                     "u.redraw(false);")
    plain = d.execute_script(_BAND_INK)
    d.execute_script("spikelens.runs[0].data.findings[0].heads = true;"
                     "spikelens.runs[0].panels[0].chart.redraw(false);")
    assert banded > plain * 1.25  # the grey band over the plateau's steps, drawn because it heads the verdict
