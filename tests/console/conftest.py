"""A headless Chromium for the console's browser tests: Debian's ``chromium`` and
``chromium-driver`` driven by Selenium. When they are missing, ``.ci/install-chromium`` installs
them (as root with apt-get); where that cannot be done the tests skip, saying so."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import ROOT

# Screenshots taken by the tests: kept as artefacts of the run (tests/artifacts is not committed);
# with CQELS_README_SCREENSHOTS=1 the README's are written to docs/img/ too.
ARTIFACTS = ROOT / "tests" / "artifacts" / "console"
README_IMAGES = ROOT / "docs" / "img"


def _executables() -> tuple[str | None, str | None]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    return browser, shutil.which("chromedriver")


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    browser, driver = _executables()
    if browser is None or driver is None:
        subprocess.run([str(ROOT / ".ci" / "install-chromium")], check=False)
        browser, driver = _executables()
    if browser is None or driver is None:
        pytest.skip("headless Chromium is not installed and could not be: run .ci/install-chromium as root "
                    "(apt-get install chromium chromium-driver)")
    return browser, driver


@pytest.fixture
def browser(chromium) -> Iterator[object]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extras: pip install -e '.[test]'")
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,1000", "--disable-gpu"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_script_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def screenshot(browser):
    """``screenshot(name, readme=False)``: a PNG of the page in tests/artifacts/console/ (and its path)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(name: str, *, readme: bool = False) -> Path:
        path = ARTIFACTS / f"{name}.png"
        browser.save_screenshot(str(path))
        if readme and os.environ.get("CQELS_README_SCREENSHOTS") == "1":
            README_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, README_IMAGES / f"{name}.png")
        return path

    return take
