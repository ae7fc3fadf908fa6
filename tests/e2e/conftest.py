"""Browser tests: a real daphne server in a subprocess, Debian's chromium driven by Playwright.

The server shares an SQLite file with a setup subprocess (``tests/e2e/world.py``); its model endpoint
is the session's scripted OpenAI-compatible server, which the tests script from this process.
Without chromium (or Playwright) the tests fail under ``CI=true`` and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser_pages import page_opener, sign_in
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.production.processes import ROOT, free_port, run_checked, unavailable

# Debian's chromium; CHROMIUM_PATH points elsewhere on other systems.
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "e2e-correct-horse-battery"
START_TIMEOUT = 40.0
# The deployment's own variables of the test process must not reach a server on a file of its own.
SERVICE_VARIABLES = frozenset({"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"})


def server_env(
    database: Path, settings: Mapping[str, str], *, also_drop: Collection[str] = ()
) -> dict[str, str]:
    """The test process's environment for a server on the SQLite file ``database``: without the
    deployment's service variables, the mail settings and ``also_drop``, with ``settings`` on top."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in SERVICE_VARIABLES and key not in also_drop and not key.startswith("EMAIL_")
    }
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{database}",
            "DJANGO_SETTINGS_MODULE": "platform_core.settings",
            "PYTHONUNBUFFERED": "1",
            **settings,
        }
    )
    return env


def wait_for(condition: Callable[[], object], *, timeout: float = 15.0, what: str = "condition") -> object:
    """Poll ``condition`` until it returns something truthy (for state outside the browser)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@dataclass
class E2EServer:
    """The platform served by daphne on a loopback port, with its own SQLite database file."""

    port: int
    database: Path
    log_path: Path
    env: dict[str, str]
    world: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    daphne_args: list[str] = field(default_factory=list)  # e.g. ["--http-timeout", "3"]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                *self.daphne_args,
                "platform_core.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/login/", timeout=2) as response:
                    if response.status == 200:
                        return
            except urllib.error.HTTPError as exc:  # it answers, but badly: the log says why
                raise RuntimeError(f"daphne answered {exc.code} to /login/:\n{self.log_tail()}") from exc
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise RuntimeError(f"daphne did not answer within {START_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def python(self, code: str, *args: str, what: str = "a script") -> str:
        """Run ``code`` (with ``args`` in ``sys.argv``) in a fresh process on the server's database; its
        output."""
        return run_checked([sys.executable, "-c", code, *args], self.env, what)

    def build(self, builder: str, *args: str) -> Any:
        """Call ``builder`` (``"module:function"``, with ``args``) in a fresh process on the server's
        database (the test process has no Django connection to it); what it returns, through JSON."""
        module, function = builder.split(":")
        code = (
            "import django,json,sys;django.setup();"
            f"from {module} import {function} as build;"
            "print(json.dumps(build(*sys.argv[1:])))"
        )
        out = self.python(code, *args, what=f"building {builder}")
        return json.loads(out.strip().splitlines()[-1])

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Read the server's database directly (the test process has no Django connection to it)."""
        with sqlite3.connect(self.database, timeout=10) as connection:
            return connection.execute(sql, params).fetchall()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not Path(CHROMIUM).exists():
        unavailable(
            "browser tests", f"Debian's chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("browser tests", "the playwright package is not installed (pip install -e '.[dev]')")
    return CHROMIUM


@pytest.fixture(scope="session")
def e2e_server(
    chromium_path: str, tmp_path_factory: pytest.TempPathFactory, scripted_llm_server: ScriptedOpenAIServer
) -> Iterator[E2EServer]:
    """Migrate a fresh SQLite file, create the world in it, and serve it with daphne."""
    folder = tmp_path_factory.mktemp("e2e")
    database = folder / "e2e.sqlite3"
    # The session's OPENAI_BASE_URL guard (a dead port) stays: only the org's endpoint may be called.
    # The embedded mail default (no EMAIL_HOST) writes into this folder, not the checkout's var/mail, and so
    # do uploaded files (chat attachments), not into var/media.
    env = server_env(database, {"EMAIL_FILE_PATH": str(folder / "mail"), "MEDIA_ROOT": str(folder / "media")})
    server = E2EServer(port=free_port(), database=database, log_path=folder / "daphne.log", env=env)
    run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
    out = run_checked(
        [
            sys.executable,
            "-m",
            "tests.e2e.world",
            "--llm",
            scripted_llm_server.base_url,
            "--site",
            server.url,
            "--password",
            PASSWORD,
        ],
        env,
        "world setup",
    )
    server.world = json.loads(out.strip().splitlines()[-1])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # launch() gives every browser a new, empty profile directory.
        browser = playwright.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def make_page(browser, e2e_server: E2EServer, scripted_llm: ScriptedOpenAIServer):
    """``make_page(width, height, locale)``: a new browser context's page, signed in as the member."""
    with page_opener(browser) as opener:

        def make(width: int = 1280, height: int = 820, locale: str = "en-GB"):
            page = opener.new_page(width=width, height=height, locale=locale)
            sign_in(page, e2e_server.url, e2e_server.world["username"], PASSWORD, "/o/acme/chat/")
            return page

        yield make


@pytest.fixture
def signed_in_page(browser, e2e_server: E2EServer):
    """``signed_in_page(username, next=..., width=..., height=..., locale=..., **options)``: a new browser
    context's page (``options`` go to the context) signed in as ``username`` (the factories' password) and
    landed on ``next``, with the list its page errors and the strict policy's refusals ("Refused to ...")
    are collected in."""
    from tests.factories import PASSWORD as FACTORY_PASSWORD

    with page_opener(browser) as opener:

        def make(
            username: str,
            *,
            next: str = "/admin/",
            width: int = 1366,
            height: int = 900,
            locale: str = "en-GB",
            **options,
        ):
            page = opener.new_page(width=width, height=height, locale=locale, **options)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if "Refused" in msg.text else None)
            sign_in(page, e2e_server.url, username, FACTORY_PASSWORD, next)
            return page, errors

        yield make
