"""Fixtures shared by the agent tests.

``live_server_url``: a real daphne server on loopback, in this process (a thread of its own runs the
Twisted reactor and the server's event loop), so the tests' database and settings are the server's. One
server per session (a Twisted reactor runs once per process), shared by every directory below. Runs live
in the server's event loop; the tests reach them only over HTTP, the websocket and MCP, like any client,
and read the database to check.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.factories import OrganizationFactory, member_of
from tests.fakes.http_service import LoopbackHTTPService, running_http_service


@pytest.fixture
def chat(db, scripted_llm) -> Callable[[], tuple]:
    """Builds (sync) an org, a member ``mia``, an agent on the scripted LLM and her conversation with it;
    returns ``(user, conversation)``."""

    def build():
        org = OrganizationFactory(slug="acme")
        user = member_of(org, Role.MEMBER, username="mia")
        ModelConfigFactory(organization=org, base_url=scripted_llm.base_url, is_default=True)
        agent = AgentFactory(organization=org, instructions="Be brief.")
        return user, ConversationFactory(organization=org, user=user, agent=agent)

    return build


@pytest.fixture
def erp() -> Iterator[LoopbackHTTPService]:
    """A loopback HTTP service that records every request: the ERP the purchasing connector calls."""
    with running_http_service() as service:
        yield service


START_TIMEOUT = 20.0


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
def key_client():
    """``key_client(user, scopes)``: an API client with a personal key of ``user`` holding only ``scopes``."""
    from rest_framework.test import APIClient

    from platform_core.models import ApiKey, ApiKeyAddress

    def make(user, scopes):
        raw = ApiKey.new_raw()
        key = ApiKey.objects.create(
            user=user,
            name="scoped",
            key_prefix=raw[:12],
            key_hash=ApiKey.hash_raw(raw),
            scopes=scopes,
            last_used_ip="127.0.0.1",
        )
        ApiKeyAddress.objects.create(key=key, ip_address="127.0.0.1")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make
