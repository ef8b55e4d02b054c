"""Browser tests: Debian's Chromium driven by Playwright against pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django would otherwise refuse the ORM
# calls the test bodies make between browser steps.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Screenshots of the pages under test land here when set (they are not assertions).
SCREENSHOT_DIR = os.environ.get("E2E_SCREENSHOTS", "")


@pytest.fixture(scope="session")
def browser() -> Iterator:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def new_page(browser, live_server):
    """Open pages in fresh browser contexts (one per user); closed after the test."""
    contexts = []

    def open_page(viewport: tuple[int, int] = (1440, 900), javascript: bool = True):
        context = browser.new_context(
            base_url=live_server.url,
            viewport={"width": viewport[0], "height": viewport[1]},
            java_script_enabled=javascript,
        )
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def login(page, username: str, password: str = "pw-for-tests") -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def screenshot(page, name: str) -> None:
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=False)
