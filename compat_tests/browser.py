"""Headless Chromium for the web console's tests, from Debian's packages.

Playwright's and Selenium Manager's own browser downloads cannot work where only package
registries are reachable, so the suite installs Debian's `chromium` and `chromium-driver` with
apt-get when either binary is missing (a prerequisite, built before the first test and printing
what it does), and Selenium drives that chromedriver by its path: nothing else is downloaded.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from compat_tests.toolchains import BuildError, Say, run_build

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PACKAGES = ("chromium", "chromium-driver")
#: The window the pages are rendered in (and the docs' screenshots taken at).
WINDOW = (1280, 800)


@dataclass(frozen=True)
class Chromium:
    browser: Path
    driver: Path


def install_chromium(say: Say) -> Chromium:
    """Debian's chromium and chromedriver, installed with apt-get if either is missing; `apt-get
    update` only when the install fails for want of package lists."""
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return Chromium(CHROMIUM, CHROMEDRIVER)
    if shutil.which("apt-get") is None:
        raise BuildError(f"{CHROMIUM} or {CHROMEDRIVER} is missing and there is no apt-get to install "
                         f"Debian's {' '.join(PACKAGES)} (the console's browser tests need them)")
    if os.geteuid() != 0:
        raise BuildError(f"{CHROMIUM} or {CHROMEDRIVER} is missing; install them as root: "
                         f"apt-get install {' '.join(PACKAGES)}")
    install = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "--no-install-recommends",
               *PACKAGES]
    say(f"Chromium: {' '.join(install[2:])}")
    try:
        run_build(install, Path("/"), "apt-get install of Chromium", say)
    except BuildError as first:
        say(f"Chromium: the install failed ({str(first).splitlines()[0]}); apt-get update, then again")
        run_build(["apt-get", "update"], Path("/"), "apt-get update", say)
        run_build(install, Path("/"), "apt-get install of Chromium", say)
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        raise BuildError(f"apt-get installed {' '.join(PACKAGES)} but {CHROMIUM} or {CHROMEDRIVER} is still missing")
    return Chromium(CHROMIUM, CHROMEDRIVER)


def start_driver(chromium: Chromium, temporary: Path):
    """A Selenium WebDriver on headless Chromium, by the installed driver's path (so Selenium
    Manager never looks for one to download). Chromium keeps its singleton socket in TMPDIR
    and leaves it there when it ends: ``temporary``, a directory the caller owns, takes it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium.browser)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars"):
        options.add_argument(argument)
    service = Service(executable_path=str(chromium.driver), env={**os.environ, "TMPDIR": str(temporary)})
    return webdriver.Chrome(service=service, options=options)
