"""A headless Chromium driven by Selenium, for the console's tests (tests/browser). Debian's ``chromium`` and
``chromium-driver`` (`make test` installs them); Selenium is given both paths, so selenium-manager never tries to
download a browser or a driver. Missing, the tests skip saying what to install; under CI
(TOOLREC_REQUIRE_SHARED=1, as .ci/run sets) they fail instead, since a skip there would hide the console's tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

from tests.conftest import REQUIRE_SHARED_VARIABLE

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.is_file()]
    if missing:
        reason = f"{', '.join(missing)} missing: the console's tests need `apt-get install chromium chromium-driver`"
        if os.environ.get(REQUIRE_SHARED_VARIABLE) == "1":
            pytest.fail(f"{reason}, and ${REQUIRE_SHARED_VARIABLE}=1 says they must run")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    # --no-sandbox: CI runs the suite as root, where Chromium's sandbox refuses to start.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1600"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # CSP violations land in the console log
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
