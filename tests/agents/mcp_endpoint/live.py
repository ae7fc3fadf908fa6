"""A daphne server on the test database (started the way ``make prod`` starts it) and the official MCP
SDK's client to talk to it: ``streamable_http_client`` and ``ClientSession``.

:func:`daphne_on_test_database` also serves the tests that talk to daphne some other way (websocket frames,
the offline demo)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from django.db import connection
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from platform_core.wiring.deploy.stack import ProcessGroup, daphne_spec, inherited_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(settings_dict: dict) -> str:
    """The test database, as a URL the server process can open."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


@contextmanager
def daphne_on_test_database(
    django_db_blocker,
    log_dir: Path,
    *,
    unset: tuple[str, ...] = (),
    extra_env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """A daphne server on the test database, with the deployment's command line, without the environment
    variables named in ``unset`` and with those of ``extra_env``; yields its base URL and stops it after."""
    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    env = inherited_env(DATABASE_URL=url, **dict(extra_env or {}))
    for name in unset:
        env.pop(name, None)
    group = ProcessGroup(env=env, log_dir=log_dir)
    spec = daphne_spec(free_port())
    group.start(spec)
    try:
        group.wait_ready(timeout=60)
        yield spec.base_url or ""
    finally:
        group.stop()


@pytest.fixture(scope="module")
def daphne_url(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    """A daphne server on the test database, with the deployment's command line."""
    with daphne_on_test_database(django_db_blocker, tmp_path_factory.mktemp("daphne-mcp")) as url:
        yield url


@asynccontextmanager
async def mcp_session(
    url: str, key: str | None = None, *, accept_language: str | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session on ``url``, sending ``Authorization: Bearer <key>`` (and
    ``Accept-Language`` when given)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if accept_language:
        headers["Accept-Language"] = accept_language
    async with httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(30.0, read=60.0), trust_env=False
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call_agent_until(
    session: ClientSession,
    question: str,
    stop: Callable[[str], bool],
    *,
    within: float,
    heard: list[str] | None = None,
) -> None:
    """Ask the Purchasing assistant's tool ``question``, and cancel the call at the first progress message
    ``stop`` accepts (failing after ``within`` seconds without one); each message is added to ``heard``."""
    reached = anyio.Event()
    matched: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if heard is not None:
            heard.append(message or "")
        if stop(message or ""):
            matched.append(message or "")
            reached.set()

    ended: list[Any] = []

    async def call() -> None:
        result = await session.call_tool(
            "purchasing_assistant", {"question": question}, progress_callback=on_progress
        )
        ended.append(result)
        reached.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(within):
            await reached.wait()
        tg.cancel_scope.cancel()
    # A call that ended before the awaited progress fails here with what it answered (not as a timeout).
    assert matched, f"the call ended before the awaited progress: {ended!r}; heard {heard!r}"
