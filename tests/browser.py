"""Headless Chromium driven by Selenium, for the HTML report's browser tests, its
screenshots (docs/screenshots.py) and its first-paint benchmark (benchmarks/bench_html.py).

Uses the distribution's `chromium` and `chromium-driver` (Debian packages, installed by
.ci/run); `missing()` says why a browser cannot be started here, for a skip reason.
"""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
         "--hide-scrollbars", "--force-device-scale-factor=1")


def _binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def missing() -> str | None:
    """Why no browser can be driven here, or None when one can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install '.[test]')"
    if _binary() is None:
        return "no Chromium installed (apt-get install chromium chromium-driver; .ci/run does)"
    if shutil.which("chromedriver") is None:
        return "no chromedriver installed (apt-get install chromium-driver; .ci/run does)"
    return None


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator:
    """A Selenium Chrome driver on a fresh profile, console messages kept (read them with
    `driver.get_log("browser")`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="spikelens-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = _binary()
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.add_argument(f"--window-size={width},{height}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver) -> list[str]:
    """The SEVERE console messages since the last call (JS errors, failed loads)."""
    return [m["message"] for m in driver.get_log("browser") if m.get("level") == "SEVERE"]
