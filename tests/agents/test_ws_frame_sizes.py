"""Oversized frames through a real daphne server (started the way ``make prod`` starts it): each gets an
``error`` frame and the socket then answers a normal frame; nothing drops the connection (1006).

Daphne's own default (1 MiB) dropped the connection above it; the platform raises the transport limit
(``platform_core.wiring.deploy.stack.WEBSOCKET_TRANSPORT_MAX_BYTES``) and refuses above the application's limit in the consumer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async

from agents.ws_frames import MAX_FRAME_BYTES
from platform_core.models import Role
from platform_core.wiring.deploy.stack import WEBSOCKET_TRANSPORT_MAX_BYTES
from tests.agents.factories import AgentFactory, ConversationFactory
from tests.agents.mcp_endpoint.live import daphne_on_test_database
from tests.agents.ws_helpers import bearer_for
from tests.factories import OrganizationFactory, member_of
from tests.production.ws_client import ws_frame, ws_open

pytestmark = pytest.mark.django_db(transaction=True)

KB = 1024
MB = 1024 * KB
SIZES = [MAX_FRAME_BYTES + 1, 1 * MB, 1 * MB + 1, 2 * MB, 5 * MB, WEBSOCKET_TRANSPORT_MAX_BYTES]


@pytest.fixture(scope="module")
def daphne_url(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    """A daphne server on the test database, with the deployment's command line."""
    with daphne_on_test_database(django_db_blocker, tmp_path_factory.mktemp("daphne-frames")) as url:
        yield url


@database_sync_to_async
def _conversation():
    org = OrganizationFactory(slug="acme")
    user = member_of(org, Role.MEMBER, username="mia")
    conversation = ConversationFactory(organization=org, user=user, agent=AgentFactory(organization=org))
    return user, conversation


def _message_of_size(size: int) -> str:
    head = '{"type": "message", "content": "'
    tail = '"}'
    return head + "x" * (size - len(head) - len(tail)) + tail


@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
async def test_an_oversized_frame_gets_an_error_and_the_socket_stays_usable(daphne_url, size):
    user, conversation = await _conversation()
    ws = await ws_open(daphne_url, str(conversation.pk), await bearer_for(user))
    try:
        frame = _message_of_size(size)
        assert len(frame.encode()) == size
        await ws.send(frame)
        refused = await ws_frame(ws)
        assert refused["event"] == "error" and refused["data"]["code"] == "bad_frame", refused
        assert "256 KB" in refused["data"]["message"]

        await ws.send(json.dumps({"type": "cancel"}))
        answered = await ws_frame(ws)
        assert answered["event"] == "error" and answered["data"]["code"] == "no_active_run", answered
    finally:
        await ws.close()
