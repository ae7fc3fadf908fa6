"""Browser tests: a real daphne server in a subprocess, Debian's chromium driven by Playwright.

The server shares an SQLite file with a setup subprocess (``tests/e2e/world.py``); its model endpoint
is the session's scripted OpenAI-compatible server, which the tests script from this process.
Without chromium (or Playwright) the tests fail under ``CI=true`` and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fakes.openai_server import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
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
EXPECT_TIMEOUT_MS = 15000


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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

    def build(self, builder: str, *args: str) -> object:
        """Call ``builder`` (``"module:function"``, with ``args``) in a fresh process on the server's
        database (the test process has no Django connection to it); what it returns, through JSON."""
        module, function = builder.split(":")
        code = (
            "import django,json,sys;django.setup();"
            f"from {module} import {function} as build;"
            "print(json.dumps(build(*sys.argv[1:])))"
        )
        out = _run([sys.executable, "-c", code, *args], self.env, f"building {builder}")
        return json.loads(out.strip().splitlines()[-1])

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Read the server's database directly (the test process has no Django connection to it)."""
        with sqlite3.connect(self.database, timeout=10) as connection:
            return connection.execute(sql, params).fetchall()


def _run(args: list[str], env: dict[str, str], what: str) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not Path(CHROMIUM).exists():
        _unavailable(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    return CHROMIUM


@pytest.fixture(scope="session")
def e2e_server(
    chromium_path: str, tmp_path_factory: pytest.TempPathFactory, scripted_llm_server: ScriptedOpenAIServer
) -> Iterator[E2EServer]:
    """Migrate a fresh SQLite file, create the world in it, and serve it with daphne."""
    folder = tmp_path_factory.mktemp("e2e")
    database = folder / "e2e.sqlite3"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}
        and not key.startswith("EMAIL_")
    }
    # The session's OPENAI_BASE_URL guard (a dead port) stays: only the org's endpoint may be called.
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{database}",
            "DJANGO_SETTINGS_MODULE": "platform_core.settings",
            "PYTHONUNBUFFERED": "1",
            # the embedded mail default (no EMAIL_HOST) writes into this folder, not the checkout's var/mail
            "EMAIL_FILE_PATH": str(folder / "mail"),
        }
    )
    server = E2EServer(port=_free_port(), database=database, log_path=folder / "daphne.log", env=env)
    _run([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
    out = _run(
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
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    contexts = []

    def make(width: int = 1280, height: int = 820, locale: str = "en-GB"):
        context = browser.new_context(viewport={"width": width, "height": height}, locale=locale)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(EXPECT_TIMEOUT_MS)
        page.goto(f"{e2e_server.url}/login/?next=/o/acme/chat/")
        page.fill("#id_username", e2e_server.world["username"])
        page.fill("#id_password", PASSWORD)
        page.click(".login button[type=submit]")
        page.wait_for_url("**/o/acme/chat/")
        return page

    try:
        yield make
    finally:
        for context in contexts:
            context.close()


@pytest.fixture
def signed_in_page(browser, e2e_server: E2EServer):
    """``signed_in_page(username, next=..., width=..., height=..., locale=...)``: a new browser context's page
    signed in as ``username`` (the factories' password) and landed on ``next``, with the list its page errors
    and the strict policy's refusals ("Refused to ...") are collected in."""
    from playwright.sync_api import expect

    from tests.factories import PASSWORD as FACTORY_PASSWORD

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    contexts = []

    def make(
        username: str, *, next: str = "/admin/", width: int = 1366, height: int = 900, locale: str = "en-GB"
    ):
        context = browser.new_context(viewport={"width": width, "height": height}, locale=locale)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(EXPECT_TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if "Refused" in msg.text else None)
        page.goto(f"{e2e_server.url}/login/?next={next}")
        page.fill("#id_username", username)
        page.fill("#id_password", FACTORY_PASSWORD)
        page.click(".login button[type=submit]")
        page.wait_for_url(f"**{next}")
        return page, errors

    try:
        yield make
    finally:
        for context in contexts:
            context.close()
