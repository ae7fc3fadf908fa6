"""The chat page gives its composer what attaching files needs: where files upload, the download route of
a sent file, the limits it shows, and whether the agent's model reads images (the endpoint a run of the
agent uses: its own, else the organisation's default)."""

from __future__ import annotations

import pytest

from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, member):
    assert client.login(username=member.username, password=PASSWORD)
    return client


def page(client, org, agent, member, *, new: bool) -> str:
    if new:
        return client.get(f"/o/{org.slug}/chat/new/?agent={agent.pk}").content.decode()
    conversation = ConversationFactory(organization=org, user=member, agent=agent)
    return client.get(f"/o/{org.slug}/chat/{conversation.pk}/").content.decode()


@pytest.mark.parametrize("new", [True, False], ids=["new chat", "conversation"])
def test_the_composer_gets_the_upload_route_the_download_route_and_the_limits(
    signed_in, org, member, settings, new
):
    settings.ATTACHMENT_MAX_FILE_BYTES = 5 * 1024 * 1024
    settings.ATTACHMENT_MAX_MESSAGE_BYTES = 12 * 1024 * 1024
    agent = AgentFactory(organization=org)

    body = page(signed_in, org, agent, member, new=new)

    assert 'data-attachments-url="/api/v1/orgs/acme/attachments/"' in body
    assert (
        'data-attachment-file-url="/o/acme/attachments/00000000-0000-0000-0000-000000000000/download/"'
        in body
    )
    assert f'data-max-file-bytes="{5 * 1024 * 1024}"' in body
    assert f'data-max-message-bytes="{12 * 1024 * 1024}"' in body
    assert "Up to 5.0\xa0MB a file, 12.0\xa0MB a message" in body
    assert 'id="attach-button"' in body and 'type="file"' in body and "multiple" in body


@pytest.mark.parametrize("new", [True, False], ids=["new chat", "conversation"])
def test_the_page_says_whether_the_agents_own_model_reads_images(signed_in, org, member, new):
    seeing = AgentFactory(organization=org, model_config=ModelConfigFactory(organization=org, vision=True))
    blind = AgentFactory(organization=org, model_config=ModelConfigFactory(organization=org, vision=False))

    assert 'data-reads-images="1"' in page(signed_in, org, seeing, member, new=new)
    assert 'data-reads-images=""' in page(signed_in, org, blind, member, new=new)


def test_an_agent_without_a_model_of_its_own_reads_images_as_the_organisations_default_does(
    signed_in, org, member
):
    agent = AgentFactory(organization=org, model_config=None)
    assert 'data-reads-images=""' in page(signed_in, org, agent, member, new=True)  # the demo model

    ModelConfigFactory(organization=org, is_default=True, vision=True)
    assert 'data-reads-images="1"' in page(signed_in, org, agent, member, new=True)


def test_an_inactive_model_of_the_agent_gives_way_to_the_default_as_runs_do(signed_in, org, member):
    ModelConfigFactory(organization=org, is_default=True, vision=False)
    agent = AgentFactory(
        organization=org, model_config=ModelConfigFactory(organization=org, vision=True, active=False)
    )
    assert 'data-reads-images=""' in page(signed_in, org, agent, member, new=True)


def test_the_limits_hint_speaks_simplified_chinese(signed_in, org, member):
    agent = AgentFactory(organization=org)
    body = signed_in.get(f"/o/{org.slug}/chat/new/?agent={agent.pk}", HTTP_ACCEPT_LANGUAGE="zh-CN").content
    text = body.decode()
    assert "附加文件" in text and "每个文件" in text
