"""The chat web app's pages: conversation list and agent picker, new chat, the chat view, translations."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from django.utils.translation.trans_real import DjangoTranslation

from agents.models import Conversation
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory, RunFactory
from tests.factories import PASSWORD, MembershipFactory, UserFactory, member_of

pytestmark = pytest.mark.django_db

JS_DIR = Path(settings.BASE_DIR) / "static" / "js"


def chat_url(org, suffix=""):
    return f"/o/{org.slug}/chat/{suffix}"


@pytest.fixture
def signed_in(client, member):
    assert client.login(username=member.username, password=PASSWORD)
    return client


def _touch(conversation, minutes_ago):
    Conversation.objects.unscoped().filter(pk=conversation.pk).update(
        updated_at=timezone.now() - timedelta(minutes=minutes_ago)
    )


# --- the conversation list --------------------------------------------------------------------------


@pytest.mark.cross_org("chat-home")
def test_chat_home_lists_only_the_users_own_conversations_of_that_org_newest_first(
    signed_in, member, org, other_org
):
    older = ConversationFactory(organization=org, user=member, title="Invoices for March")
    newer = ConversationFactory(organization=org, user=member, title="Late purchase orders")
    _touch(older, 60)
    _touch(newer, 5)
    ConversationFactory(organization=org, title="Someone else's chat")
    globex_user = member_of(other_org, Role.MEMBER, username="gil")
    ConversationFactory(organization=other_org, user=globex_user, title="Globex secret plan")
    ConversationFactory(organization=other_org, user=member, title="Mia in Globex")

    response = signed_in.get(chat_url(org))

    assert response.status_code == 200
    titles = [c.title for c in response.context["conversations"]]
    assert titles == ["Late purchase orders", "Invoices for March"]
    body = response.content.decode()
    assert body.index("Late purchase orders") < body.index("Invoices for March")
    for hidden in ("Someone else&#x27;s chat", "Globex secret plan", "Mia in Globex"):
        assert hidden not in body


@pytest.mark.cross_org("chat-home")
def test_chat_home_of_an_organisation_the_user_is_not_in_is_404(signed_in, other_org):
    ConversationFactory(organization=other_org, title="Globex secret plan")
    response = signed_in.get(chat_url(other_org))
    assert response.status_code == 404
    assert b"Globex" not in response.content


def test_agent_picker_offers_the_organisations_active_agents_only(signed_in, org, other_org):
    AgentFactory(organization=org, name="Purchasing assistant", description="Orders and suppliers")
    AgentFactory(organization=org, name="Retired helper", active=False)
    AgentFactory(organization=other_org, name="Globex agent")

    body = signed_in.get(chat_url(org)).content.decode()

    assert "Purchasing assistant" in body and "Orders and suppliers" in body
    assert "Retired helper" not in body and "Globex agent" not in body


def test_chat_home_says_when_there_are_no_agents_or_conversations(signed_in, org):
    body = signed_in.get(chat_url(org)).content.decode()
    assert "No agents are available" in body
    assert "No conversations yet." in body


def test_chat_home_query_count_does_not_grow_with_the_number_of_conversations(
    signed_in, member, org, django_assert_max_num_queries
):
    agent = AgentFactory(organization=org)
    ConversationFactory.create_batch(2, organization=org, user=member, agent=agent)
    with django_assert_max_num_queries(12) as few:
        signed_in.get(chat_url(org))
    ConversationFactory.create_batch(20, organization=org, user=member, agent=AgentFactory(organization=org))
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = signed_in.get(chat_url(org))
    assert len(response.context["conversations"]) == 22


@pytest.mark.parametrize("suffix", ["", "00000000-0000-0000-0000-000000000001/"])
def test_anonymous_visitors_are_sent_to_sign_in(client, org, suffix):
    response = client.get(chat_url(org, suffix))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/o/acme/chat/")


def test_a_superuser_who_is_not_a_member_gets_404_like_the_websocket_would_refuse(client, org):
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    client.force_login(root)
    assert client.get(chat_url(org)).status_code == 404


def test_api_clients_with_a_bearer_token_see_the_same_pages(client_for, member, org, other_org):
    client = client_for(member)
    assert client.get(chat_url(org)).status_code == 200
    assert client.get(chat_url(other_org)).status_code == 404


def test_a_bearer_key_without_the_read_scope_is_refused_the_chat_pages(client, member, org):
    from platform_core.identity.api_keys.keys import api_key_create

    raw = api_key_create(name="bot", scopes=["chat"], owner=member, actor=member).raw
    response = client.get(chat_url(org), HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 403
    assert "read scope" in response.content.decode()


def test_home_page_links_to_the_chat_of_each_organisation(signed_in, org):
    body = signed_in.get("/").content.decode()
    assert 'href="/o/acme/chat/"' in body


# --- new chat -----------------------------------------------------------------------------------------


def test_opening_a_new_chat_shows_the_agent_and_creates_no_conversation(signed_in, member, org):
    agent = AgentFactory(organization=org, name="Purchasing assistant")

    response = signed_in.get(chat_url(org, "new/"), {"agent": str(agent.pk)})

    assert response.status_code == 200
    assert not Conversation.objects.unscoped().exists()  # created with the first message, not before
    body = response.content.decode()
    assert f'data-agent-id="{agent.pk}"' in body
    assert 'data-create-url="/api/v1/orgs/acme/conversations/"' in body
    assert 'data-conversation=""' in body and 'data-socket-path=""' in body


def test_the_agent_picker_opens_a_new_chat_without_posting_anything(signed_in, org):
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    body = signed_in.get(chat_url(org)).content.decode()
    assert '<form method="get" action="/o/acme/chat/new/">' in body
    assert f'name="agent" value="{agent.pk}"' in body
    assert (
        'action="/o/acme/chat/new/" method="post"' not in body
        and "csrfmiddlewaretoken" not in body.split('<ul class="agent-picker">')[1].split("</ul>")[0]
    )


@pytest.mark.cross_org("chat-new")
def test_new_chat_with_another_organisations_agent_is_404_and_creates_nothing(signed_in, org, other_org):
    foreign = AgentFactory(organization=other_org, name="Globex agent")

    response = signed_in.get(chat_url(org, "new/"), {"agent": str(foreign.pk)})

    assert response.status_code == 404
    assert not Conversation.objects.unscoped().exists()


@pytest.mark.cross_org("chat-new")
def test_new_chat_in_an_organisation_the_user_is_not_in_is_404(signed_in, other_org):
    agent = AgentFactory(organization=other_org)
    response = signed_in.get(chat_url(other_org, "new/"), {"agent": str(agent.pk)})
    assert response.status_code == 404
    assert not Conversation.objects.unscoped().exists()


@pytest.mark.parametrize("value", ["", "not-a-uuid", "00000000-0000-0000-0000-000000000001"])
def test_new_chat_with_a_missing_or_unknown_agent_is_404(signed_in, org, value):
    assert signed_in.get(chat_url(org, "new/"), {"agent": value}).status_code == 404
    assert not Conversation.objects.unscoped().exists()


def test_new_chat_with_an_inactive_agent_is_404(signed_in, org):
    agent = AgentFactory(organization=org, active=False)
    assert signed_in.get(chat_url(org, "new/"), {"agent": str(agent.pk)}).status_code == 404
    assert not Conversation.objects.unscoped().exists()


def test_new_chat_stores_nothing_on_post(signed_in, org):
    agent = AgentFactory(organization=org)
    assert signed_in.post(chat_url(org, "new/"), {"agent": str(agent.pk)}).status_code == 405
    assert not Conversation.objects.unscoped().exists()


# --- the chat view ----------------------------------------------------------------------------------


def test_chat_view_renders_the_conversation_and_what_the_script_needs(signed_in, member, org):
    conversation = ConversationFactory(organization=org, user=member, title="Late purchase orders")

    response = signed_in.get(chat_url(org, f"{conversation.pk}/"))

    assert response.status_code == 200
    body = response.content.decode()
    assert f'data-socket-path="/ws/conversations/{conversation.pk}/"' in body
    assert f'data-messages-url="/api/v1/orgs/acme/conversations/{conversation.pk}/messages/"' in body
    assert 'data-active-run=""' in body
    assert 'src="/jsi18n/"' in body and 'type="module"' in body and "js/chat.js" in body
    assert 'aria-current="page"' in body  # the open conversation is marked in the sidebar
    assert "Late purchase orders" in body


def test_chat_view_tells_the_script_which_run_is_still_working(signed_in, member, org):
    conversation = ConversationFactory(organization=org, user=member)
    RunFactory(conversation=conversation, status="done")
    running = RunFactory(conversation=conversation, status="running")

    body = signed_in.get(chat_url(org, f"{conversation.pk}/")).content.decode()

    assert f'data-active-run="{running.pk}"' in body


def test_conversation_titles_are_escaped_in_the_page(signed_in, member, org):
    conversation = ConversationFactory(organization=org, user=member, title="<img src=x onerror=alert(1)>")
    body = signed_in.get(chat_url(org, f"{conversation.pk}/")).content.decode()
    assert "<img src=x" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body


@pytest.mark.cross_org("chat-conversation")
def test_another_users_conversation_in_the_same_org_is_404(signed_in, org):
    theirs = ConversationFactory(organization=org, title="Their private chat")
    response = signed_in.get(chat_url(org, f"{theirs.pk}/"))
    assert response.status_code == 404
    assert b"Their private chat" not in response.content


@pytest.mark.cross_org("chat-conversation")
def test_a_conversation_of_another_org_is_404_under_either_slug(signed_in, member, org, other_org):
    foreign = ConversationFactory(organization=other_org, title="Globex secret plan")
    assert signed_in.get(chat_url(org, f"{foreign.pk}/")).status_code == 404
    assert signed_in.get(chat_url(other_org, f"{foreign.pk}/")).status_code == 404
    # Even the user's own conversation in another org does not open under this org's slug.
    MembershipFactory(organization=other_org, user=member, role=Role.MEMBER)
    own_elsewhere = ConversationFactory(organization=other_org, user=member, title="Mine at Globex")
    assert signed_in.get(chat_url(org, f"{own_elsewhere.pk}/")).status_code == 404
    assert signed_in.get(chat_url(other_org, f"{own_elsewhere.pk}/")).status_code == 200


def test_unknown_conversation_is_404(signed_in, org):
    assert signed_in.get(chat_url(org, "00000000-0000-0000-0000-000000000001/")).status_code == 404


# --- translations -------------------------------------------------------------------------------------


def test_chat_pages_speak_simplified_chinese_when_the_browser_asks(signed_in, member, org):
    AgentFactory(organization=org, name="Purchasing assistant")
    conversation = ConversationFactory(organization=org, user=member, title="")
    home = signed_in.get(chat_url(org), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "新对话" in home and "您的对话" in home
    chat = signed_in.get(chat_url(org, f"{conversation.pk}/"), HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "发送" in chat and "停止" in chat


def _js_messages() -> set[tuple[str, str]]:
    """(singular, plural) of every gettext/ngettext literal in the chat script; plural is "" for gettext."""
    pattern = re.compile(r"""\b(?:gettext|ngettext)\(\s*"((?:[^"\\]|\\.)*)"(?:\s*,\s*"((?:[^"\\]|\\.)*)")?""")
    found: set[tuple[str, str]] = set()
    for path in JS_DIR.glob("*.js"):
        found.update(pattern.findall(path.read_text(encoding="utf-8")))
    return found


def test_every_string_of_the_chat_script_has_a_simplified_chinese_translation():
    messages = _js_messages()
    assert len(messages) > 40, "the extraction pattern no longer finds the script's strings"
    catalog = DjangoTranslation("zh-hans", domain="djangojs")
    missing = sorted(
        singular
        for singular, plural in messages
        if (
            catalog.ngettext(singular, plural, 2) == plural
            if plural
            else catalog.gettext(singular) == singular
        )
    )
    assert not missing, f"untranslated chat strings: {missing}"


def test_the_javascript_catalog_serves_chinese_to_chinese_browsers(client):
    response = client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 200
    body = response.content.decode("utf-8")
    for chinese in ("已连接", "停止"):
        assert json.dumps(chinese)[1:-1] in body or chinese in body


def test_the_chat_script_loads_only_its_own_modules():
    for path in JS_DIR.glob("*.js"):
        source = path.read_text(encoding="utf-8")
        for target in re.findall(r"""^\s*import\b[^;]*?from\s+["']([^"']+)["']""", source, re.M):
            assert target.startswith("./"), f"{path.name} imports {target}: no CDN, no packages"
            assert (JS_DIR / target[2:]).exists(), f"{path.name} imports a missing module {target}"


def test_only_the_organisations_admins_get_the_link_to_check_the_agents_model_endpoint(
    client, org, member, org_admin
):
    """When a run ends because of the model, the chat offers admins the endpoint's Check endpoint."""
    agent = AgentFactory(organization=org, model_config=ModelConfigFactory(organization=org))
    conversation = ConversationFactory(organization=org, user=org_admin, agent=agent)
    mine = ConversationFactory(organization=org, user=member, agent=agent)
    expected = f"/admin/agents/modelconfig/{agent.model_config_id}/change/#endpoint-check"

    assert client.login(username=org_admin.username, password=PASSWORD)
    for url in (chat_url(org, f"{conversation.pk}/"), chat_url(org, f"new/?agent={agent.pk}")):
        assert f'data-endpoint-check-url="{expected}"' in client.get(url).content.decode()

    client.logout()
    assert client.login(username=member.username, password=PASSWORD)
    for url in (chat_url(org, f"{mine.pk}/"), chat_url(org, f"new/?agent={agent.pk}")):
        page = client.get(url).content.decode()
        assert 'data-endpoint-check-url=""' in page and "modelconfig" not in page

    client.logout()
    assert client.login(username=org_admin.username, password=PASSWORD)
    default = AgentFactory(organization=org, model_config=None)
    page = client.get(chat_url(org, f"new/?agent={default.pk}")).content.decode()
    assert 'data-endpoint-check-url="/admin/agents/modelconfig/"' in page
