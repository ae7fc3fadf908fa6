"""Chat over HTTP against a real daphne server on loopback, in this process (a thread of its own runs
the Twisted reactor and the server's event loop), so the tests' database and settings are the server's.

One server per session (a Twisted reactor runs once per process). Runs live in the server's event loop;
the tests reach them only over HTTP and the websocket, like any client, and read the database to check.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from connectors.tools import connector_tools_for_run
from tests.fakes.http_service import LoopbackHTTPService, running_http_service
from tests.hooks.factories import ApprovalPolicyFactory
from tests.hooks.scenario import Purchasing, build_purchasing

START_TIMEOUT = 20.0
PAYMENT = {"amount": 60000, "currency": "CNY"}


@dataclass
class LiveServer:
    url: str
    loop: asyncio.AbstractEventLoop

    def client(self, token: str, **kwargs: Any) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=20.0, **kwargs
        )


@pytest.fixture
def live_server_url(_live_server: LiveServer, transactional_db: None) -> Iterator[LiveServer]:
    """The live server for one test. Afterwards (before the test's database is emptied) the server's
    runs are stopped and the run manager's tasks on its loop ended, so nothing of this test writes into
    the next one's database, asks the scripted model, or serves other tests' runs from this loop."""
    from agents.runs.manager import run_manager
    from platform_core.config_cache import config_cache_forget

    yield _live_server
    asyncio.run_coroutine_threadsafe(run_manager.shutdown(), _live_server.loop).result(timeout=20)
    # The next test's database may reuse this one's ids (SQLite): its organisation must not find this
    # organisation's cached configuration.
    config_cache_forget()


@pytest.fixture(scope="session")
def _live_server(django_db_setup: None, django_db_blocker: Any) -> Iterator[LiveServer]:
    """The server, started after the test database exists and stopped before it is dropped."""
    import daphne.server  # installs Twisted's asyncio reactor: imported only here
    from twisted.internet import reactor

    from platform_core.asgi import application

    server = daphne.server.Server(
        application,
        endpoints=["tcp:port=0:interface=127.0.0.1"],
        signal_handlers=False,
        verbosity=0,
        application_close_timeout=5,
    )
    thread = threading.Thread(target=server.run, name="daphne-live", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.listening_addresses:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("daphne did not start listening")
        time.sleep(0.02)
    host, port = server.listening_addresses[0]
    try:
        yield LiveServer(f"http://{host}:{port}", reactor._asyncioEventloop)  # type: ignore[attr-defined]
    finally:
        reactor.callFromThread(reactor.stop)  # type: ignore[attr-defined]
        thread.join(timeout=10)
        with django_db_blocker.unblock():
            _close_server_connections()


def _close_server_connections() -> None:
    """Close the database connections the server's threads opened (the process's one thread for
    thread-sensitive sync code, the event writer's), so the test database can be dropped."""
    from asgiref.sync import SyncToAsync
    from django.db import connections

    from agents.runs.events import store

    for executor in (SyncToAsync.single_thread_executor, store._WRITER_THREAD):
        executor.submit(connections.close_all).result(timeout=10)
    connection = connections["default"]
    if connection.vendor == "postgresql":  # threads that are gone cannot close theirs: end them here
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture
def erp() -> Iterator[LoopbackHTTPService]:
    with running_http_service() as service:
        yield service


@pytest.fixture
def purchasing(transactional_db, scripted_llm, erp, monkeypatch) -> Purchasing:
    """The purchasing organisation (an ERP connector on the loopback service; payments over 50,000 need
    the approver april), its connector tools as the runs' tools."""
    from agents import runtime

    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)
    world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=erp.base_url)
    ApprovalPolicyFactory(
        organization=world.org,
        name="Large payments",
        actions=[world.actions["create_payment"]],
        condition="amount > 50000",
        approver_users=[world.approver],
    )
    return world


@dataclass
class SSEEvent:
    id: str | None = None
    event: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)

    @property
    def json(self) -> Any:
        return json.loads(self.data)


def sse_events(lines: Iterator[str]) -> Iterator[SSEEvent]:
    """Parse a text/event-stream (https://html.spec.whatwg.org/multipage/server-sent-events.html): yields
    each dispatched event; comment-only blocks come as events with ``comments`` and no data."""
    current = SSEEvent()
    started = False
    for line in lines:
        if line == "":
            if started:
                yield current
            current, started = SSEEvent(), False
            continue
        started = True
        if line.startswith(":"):
            current.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            current.data = f"{current.data}\n{value}" if current.data else value
        elif name in ("id", "event"):
            setattr(current, name, value)
    if started:
        yield current
