"""The README's screenshots of the HTML report, taken in headless Chromium.

    python docs/screenshots.py

Analyses the bundled example and the resume fixtures (written by fixtures/writers),
renders the HTML report, and saves:
- docs/report-summary.png: the page as it opens (runs by severity, counts by kind);
- docs/report-finding.png: gpt-small after a click on its spike in the summary: the
  run's charts zoomed to the spike and, below, the spike's card (its own zoom beside
  its message, evidence, likely cause and what to try).
"""
from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import chromium, console_errors, missing  # noqa: E402


def main() -> None:
    from PIL import Image

    from spikelens import api
    from spikelens.report.html import render_html

    if missing():
        sys.exit(f"no browser: {missing()}")
    report = api.analyze(ROOT / "fixtures" / "example", ROOT / "fixtures" / "resumes")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(render_html(report), encoding="utf-8")
        with chromium(1360, 900) as d:
            d.get(page.as_uri())
            time.sleep(0.5)
            d.save_screenshot(str(ROOT / "docs" / "report-summary.png"))
            chip = next(c for c in d.find_elements("css selector", "#summary a.chip")
                        if c.text.startswith("spike") and "gpt-small" in
                        c.find_element("xpath", "./ancestor::tr").get_attribute("data-name"))
            fid = chip.get_attribute("data-goto")
            chip.click()
            time.sleep(0.5)
            # the run's heading, charts zoomed to the spike, and the spike's card, in one picture
            d.set_window_size(1360, 2000)
            d.execute_script(f"spikelens.zoomTo('{fid}')")
            time.sleep(0.5)
            box = d.execute_script(f"""
                const sec = document.getElementById('{fid}').closest('section');
                const card = document.getElementById('{fid}').getBoundingClientRect();
                const top = sec.getBoundingClientRect().top;
                return [top, card.bottom];""")
            png = Image.open(io.BytesIO(d.get_screenshot_as_png()))
            top, bottom = max(0, int(box[0]) - 8), min(png.height, int(box[1]) + 8)
            png.crop((0, top, png.width, bottom)).save(ROOT / "docs" / "report-finding.png", optimize=True)
            errors = console_errors(d)
            if errors:
                sys.exit(f"console errors: {errors}")
    print("wrote docs/report-summary.png and docs/report-finding.png")


if __name__ == "__main__":
    main()
