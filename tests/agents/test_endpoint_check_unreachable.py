"""Check endpoint on an endpoint nobody answers: the report says it cannot be reached and judges no
ability ("The stored abilities match what the check found" was shown though nothing was checked), and the
admin lands on the report, next to the button that ran it."""

from __future__ import annotations

import socket

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from agents.engine.llm import aclose_shared_clients
from tests.agents.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
async def _close_llm_clients():
    yield
    await aclose_shared_clients()


@pytest.fixture
def admin_client(client, org_admin):
    client.force_login(org_admin)
    return client


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed when the block ends: nothing listens there


def test_an_unreachable_endpoint_is_reported_unreachable_with_no_ability_verdict(admin_client, org):
    config = ModelConfigFactory(organization=org, base_url=f"http://127.0.0.1:{_closed_port()}/v1")

    response = admin_client.post(reverse("admin:agents_modelconfig_check", args=[config.pk]))

    assert response.status_code == 302
    assert response["Location"].endswith("#endpoint-check")
    told = [str(m) for m in get_messages(response.wsgi_request)]
    assert told == ["The endpoint cannot be reached: nothing could be checked."]
    config.refresh_from_db()
    assert config.last_check["abilities"] == {}
    page = admin_client.get(reverse("admin:agents_modelconfig_change", args=[config.pk])).content.decode()
    assert "Cannot be reached: the connection was refused or nothing answers at that address." in page
    assert "timed out" not in page
    assert "The stored abilities match" not in page
    assert "No ability was checked, so none is compared with the stored ones." in page
