"""API key scopes on the HTTP chat: chatting needs the ``chat`` scope, reading models a ``chat`` or
``read`` key, and an organisation's key chats only with its organisation's agents."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from agents.models import Run
from platform_core.identity.api_keys.keys import api_key_create
from tests.agents.factories import AgentFactory
from tests.factories import OrganizationFactory
from tests.fakes.openai_server import text

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = [{"role": "user", "content": "Hello"}]


def _key(scopes: list[str], *, owner: Any = None, organization: Any = None) -> str:
    return api_key_create(
        name="scoped", scopes=scopes, actor=None, owner=owner, organization=organization
    ).raw


def _sdk(live: Any, token: str, base: str = "/v1") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}{base}", api_key=token, max_retries=0, timeout=30)


def test_a_read_only_key_may_list_models_but_not_chat(live_server_url, purchasing):
    token = _key(["read"], owner=purchasing.requester)
    base = f"/api/v1/orgs/acme/conversations/{purchasing.conversation.pk}"

    assert [m.id for m in _sdk(live_server_url, token).models.list()] == ["acme/Purchasing assistant"]
    with pytest.raises(openai.PermissionDeniedError):
        _sdk(live_server_url, token).chat.completions.create(
            model="acme/Purchasing assistant", messages=QUESTION
        )
    client = live_server_url.client(token)
    assert client.post(f"{base}/messages/", json={"content": "Hi"}).status_code == 403
    assert client.get(f"{base}/messages/").status_code == 200  # reading the conversation is reading
    assert not Run.objects.unscoped().exists()


def test_a_chat_only_key_chats_and_follows_its_run(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("Hi."), text("Hello there."))
    client = live_server_url.client(_key(["chat"], owner=purchasing.requester))
    base = f"/api/v1/orgs/acme/conversations/{purchasing.conversation.pk}"

    posted = client.post(f"{base}/messages/", json={"content": "Hi"})
    assert posted.status_code == 202, posted.text
    with client.stream("GET", posted.json()["stream_url"]) as stream:
        assert stream.status_code == 200
        body = "".join(stream.iter_text())
    assert "event: done" in body


def test_an_organisations_key_chats_with_its_agents_only(live_server_url, purchasing, scripted_llm):
    other = OrganizationFactory(slug="globex")
    foreign = AgentFactory(organization=other, name="Globex helper")
    token = _key(["chat"], organization=purchasing.org)
    scripted_llm.script(text("Hi."), text("Hello from Acme."))

    completion = _sdk(live_server_url, token).chat.completions.create(
        model="Purchasing assistant", messages=QUESTION
    )

    assert completion.choices[0].message.content == "Hello from Acme."
    assert [m.id for m in _sdk(live_server_url, token).models.list()] == ["acme/Purchasing assistant"]
    for model in ("globex/Globex helper", str(foreign.pk)):
        with pytest.raises(openai.NotFoundError):
            _sdk(live_server_url, token).chat.completions.create(model=model, messages=QUESTION)
    with pytest.raises(openai.NotFoundError):
        _sdk(live_server_url, token, base=f"/api/v1/orgs/globex/agents/{foreign.pk}").chat.completions.create(
            model="x", messages=QUESTION
        )
