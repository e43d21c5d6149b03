"""Browser fixtures: headless Chromium through Playwright's sync API.

Fixtures (keep the names stable, other test modules use them):
- `browser`: module-scoped Chromium (skips locally / fails in CI without it).
  Not session-scoped: Playwright's sync API keeps an event loop running in the
  main thread while it is open, which breaks `asyncio.run` in any later test
  of the same (xdist) worker.
- `page`: a fresh browser context and page per test (1280x800), closed after.
- `new_page`: factory for more pages, each in its own context (a second person).
- `console_login(page, live_server, username)`: logs in through the login form
  with the test password of `tests.conftest.make_user`, and waits for the
  redirect away from /login/.
- `live_server` comes from pytest-django (it makes the test transactional).

Every test that uses `browser` (through `page` or `new_page`) is marked `browser`
(tests/console/conftest.py); the fixtures are its.
"""

import os
import shutil
import threading

import pytest
from django.core.signals import request_finished, request_started

from tests.conftest import PASSWORD, require_infrastructure

# Playwright's sync API runs an event loop in this thread; Django refuses ORM
# calls while one runs unless told this is fine (tests only, see PITFALLS).
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 800}


def _chromium_path() -> str | None:
    return os.environ.get("STATEROOM_CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="module")
def _playwright():
    executable = _chromium_path()
    if not executable:
        require_infrastructure(False, "needs Chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="module")
def browser(_playwright):
    browser = _playwright.chromium.launch(
        executable_path=_chromium_path(), headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


class _InFlight:
    """Requests the live server is still answering.

    A test may end while the page it drove still waits for an answer (a
    back-navigation, an htmx poll). Closing the browser does not stop the
    server's thread: it would go on reading the database while the next test
    flushes it, and the flush fails. Teardown waits for those answers first.
    """

    def __init__(self):
        self.count = 0
        self.changed = threading.Condition()

    # Only server threads count: the test client answers in the main thread.
    def started(self, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            with self.changed:
                self.count += 1

    def finished(self, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            with self.changed:
                self.count = max(0, self.count - 1)
                self.changed.notify_all()

    def wait_idle(self, timeout: float = 30.0) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: self.count == 0, timeout=timeout):
                raise AssertionError(f"the live server still answers {self.count} request(s)")


IN_FLIGHT = _InFlight()
request_started.connect(IN_FLIGHT.started, dispatch_uid="browser-in-flight-start")
request_finished.connect(IN_FLIGHT.finished, dispatch_uid="browser-in-flight-finish")


@pytest.fixture
def new_page(browser):
    """Open pages in separate contexts (separate cookies: separate people)."""
    contexts = []

    def make():
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()
    IN_FLIGHT.wait_idle()


@pytest.fixture
def page(new_page):
    return new_page()


@pytest.fixture
def console_login():
    def login(page, live_server, username: str, password: str = PASSWORD):
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        return page

    return login


# The Agents SDK runtime fixtures, for browser tests that drive a real agent.
from tests.runtime.agents.conftest import worker  # noqa: E402, F401
from tests.runtime.conftest import refund_log, server  # noqa: E402, F401
