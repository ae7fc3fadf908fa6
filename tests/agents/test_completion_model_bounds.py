"""``/v1/chat/completions`` bounds the ``model`` it looks up (security issue #31): a 1 MB name reached a
case-insensitive lookup, which SQLite refuses ("LIKE or GLOB pattern too complex"), and answered 500."""

from __future__ import annotations

import pytest

from agents.chat_http.completions import MAX_MODEL_CHARS
from platform_core.models import Role
from tests.agents.factories import AgentFactory
from tests.factories import member_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("size", [MAX_MODEL_CHARS + 1, 1024 * 1024])
@pytest.mark.parametrize("prefix", ["", "acme/"])
def test_an_oversized_model_is_a_400_naming_the_model(client_for, org, size, prefix):
    AgentFactory(organization=org, name="Purchasing assistant")
    client = client_for(member_of(org, Role.MEMBER, username="mia"))

    response = client.post(
        "/v1/chat/completions",
        {"model": prefix + "x" * size, "messages": [{"role": "user", "content": "hi"}]},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "model"


def test_a_model_within_the_bound_is_still_looked_up(client_for, org):
    AgentFactory(organization=org, name="Purchasing assistant")
    client = client_for(member_of(org, Role.MEMBER, username="mia"))

    response = client.post(
        "/v1/chat/completions",
        {"model": "acme/" + "x" * (MAX_MODEL_CHARS - 5), "messages": [{"role": "user", "content": "hi"}]},
        format="json",
    )

    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"
