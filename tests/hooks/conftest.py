"""Fixtures of the guard-rail tests.

Celery tasks run eagerly here (``task_always_eager``): ``.delay()`` runs the task at once in the thread
that committed, exactly the code a worker runs, so a test sees the card sent, retried or failed without a
broker or a worker process. Eager retries are re-applied at once (Celery ignores the countdown in eager
mode), so tests read the countdown each retry asked for (backoff, ``x-ogw-ratelimit-reset``) from
Celery's ``task_retry`` signal.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from agents import runtime
from connectors.tools import connector_tools_for_run
from platform_core.models import Role
from tests.eager_tasks import tasks_run_eagerly
from tests.factories import PASSWORD, member_of
from tests.fakes.http_service import LoopbackHTTPService, running_http_service


@pytest.fixture(autouse=True)
def celery_eager() -> Iterator[None]:
    with tasks_run_eagerly():
        yield


@pytest.fixture(autouse=True)
def fresh_rate_counters() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def admin(org):
    """Ada, an admin of ``org``."""
    return member_of(org, Role.ADMIN, username="ada")


@pytest.fixture
def admin_client(client, admin):
    """A browser signed in to the admin site as ``admin``."""
    assert client.login(username=admin.username, password=PASSWORD)
    return client


@pytest.fixture
def connector_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run gets its agent's connector actions as tools, through the platform's own tool builder
    (and not one another test may have patched in)."""
    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)


@pytest.fixture
def http_service() -> Iterator[LoopbackHTTPService]:
    """A real HTTP service on loopback that records every request (the connectors' target)."""
    with running_http_service() as service:
        yield service


@pytest.fixture
def wsgi():
    """The real WSGI handler in-process. Like Django's test client, it must not close the test's database
    connection at request boundaries: on PostgreSQL that connection holds the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        with httpx.Client(
            transport=httpx.WSGITransport(app=WSGIHandler()), base_url="http://testserver"
        ) as client:
            yield client
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
