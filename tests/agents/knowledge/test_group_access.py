"""A knowledge base restricted to groups (issue 34): a member in one of its groups gets its search tool,
its passages and its documents' files, through a run, the API and the citation link; taken out of the
group, or out of the organisation, they get none, even in a run already under way; a group of another
organisation can be given access neither through the API nor through the admin."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents import runtime
from agents.engine.tool_context import ToolCallContext
from agents.knowledge.base_services import knowledge_base_update
from agents.knowledge.models import KnowledgeBase
from agents.knowledge.search import Found, NotReadable, knowledge_search
from agents.knowledge.selectors import knowledge_base_readable_ids
from platform_core.identity.groups.services import member_group_delete, member_group_members_remove
from platform_core.models import AuditLog, Membership, Role
from platform_core.services import membership_remove
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.agents.knowledge.test_search_tool import TOOL, _blueprint
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.factories import PASSWORD, MemberGroupFactory, member_of

pytestmark = pytest.mark.django_db

QUESTION = "finance director"


@pytest.fixture
def reader(org):
    return member_of(org, Role.MEMBER, username="reader")


@pytest.fixture
def finance(org, reader):
    return MemberGroupFactory(organization=org, name="finance", members=[reader])


@pytest.fixture
def world(org, org_admin, finance):
    """The knowledge base ``policies``, restricted to the group ``finance``, given to an agent."""
    kb = knowledge_base_with(org, org_admin, restricted=True, groups=[finance])
    document = indexed(kb, "policy.md", POLICY_EN)
    indexed(kb, "政策.txt", POLICY_ZH)
    ModelConfigFactory(organization=org, base_url="http://127.0.0.1:9/v1", is_default=True)
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    agent.connectors.add(kb.connector)
    return kb, agent, document


def _search(org, kb, user):
    return knowledge_search(
        organization_id=org.pk, user_id=user.pk, knowledge_base_ids=[kb.pk], query=QUESTION
    )


def _search_tool(org, agent, user):
    return runtime.tools_for(_blueprint(org, agent, user)).get(TOOL)


def _searched(tool):
    return async_to_sync(tool.execute)(ToolCallContext(TOOL, "c1", 1), query=QUESTION)


def _api_download(org, document) -> str:
    return f"/api/v1/orgs/{org.slug}/knowledge-bases/{document.knowledge_base_id}/documents/{document.pk}/download/"


def _citation_link(org, document) -> str:
    return reverse("knowledge-document-file", kwargs={"org_slug": org.slug, "document_id": document.pk})


def test_a_member_in_one_of_its_groups_gets_the_tool_and_the_passages_and_others_get_none(org, world, reader):
    kb, agent, _document = world
    outsider = member_of(org, Role.MEMBER, username="outsider")

    assert _search_tool(org, agent, reader) is not None
    found = _search(org, kb, reader)
    assert isinstance(found, Found) and found.passages
    assert _search_tool(org, agent, outsider) is None
    assert _search(org, kb, outsider) == NotReadable()


def test_a_member_in_one_of_its_groups_downloads_its_documents(client_for, client, org, world, reader):
    _kb, _agent, document = world
    outsider = member_of(org, Role.MEMBER, username="outsider")

    download = client_for(reader).get(_api_download(org, document))
    assert download.status_code == 200 and b"".join(download.streaming_content) == POLICY_EN.encode()
    assert client.login(username=reader.username, password=PASSWORD)
    assert client.get(_citation_link(org, document)).status_code == 200
    assert client_for(outsider).get(_api_download(org, document)).status_code == 404


def test_taken_out_of_the_group_mid_run_the_next_search_is_refused_and_the_files_are_404(
    client_for, org, org_admin, world, reader, finance
):
    kb, agent, document = world
    tool = _search_tool(org, agent, reader)
    assert tool is not None

    member_group_members_remove(group=finance, user_ids=[reader.pk], actor=org_admin)

    result = _searched(tool)
    assert result.is_error and "not available" in result.content and "finance" not in result.content
    assert _search(org, kb, reader) == NotReadable()
    assert client_for(reader).get(_api_download(org, document)).status_code == 404


def test_taken_out_of_the_organisation_mid_run_the_next_search_is_refused(org, org_admin, world, reader):
    kb, agent, _document = world
    tool = _search_tool(org, agent, reader)
    assert tool is not None

    membership_remove(membership=Membership.objects.get(organization=org, user=reader), actor=org_admin)

    result = _searched(tool)
    assert result.is_error and "not available" in result.content
    assert _search(org, kb, reader) == NotReadable()


def test_a_row_left_behind_grants_nothing_to_someone_who_is_no_member_any_more(
    org, org_admin, world, reader, finance
):
    """Memberships removed by any path (a cascade, a repair by hand) leave the group's and the knowledge
    base's rows: the access check itself requires a current membership."""
    kb, _agent, _document = world
    kb.members.add(reader)
    Membership.objects.filter(organization=org, user=reader).delete()

    assert finance.members.filter(pk=reader.pk).exists() and kb.members.filter(pk=reader.pk).exists()
    assert _search(org, kb, reader) == NotReadable()


def test_deleting_the_group_takes_its_access_away(org, org_admin, world, reader, finance):
    kb, _agent, _document = world

    member_group_delete(group=finance, actor=org_admin)

    assert _search(org, kb, reader) == NotReadable()
    assert not kb.groups.exists()


def test_a_group_of_another_organisation_gives_no_access_even_written_in_by_hand(
    org, other_org, org_admin, world, reader
):
    kb, _agent, _document = world
    kb.groups.clear()
    foreign = MemberGroupFactory(organization=other_org, name="finance")
    Membership.objects.create(organization=other_org, user=reader, role=Role.MEMBER)
    foreign.members.add(reader)
    kb.groups.add(foreign)  # what the services refuse, written straight into the table

    assert _search(org, kb, reader) == NotReadable()


# --- setting the groups: the API and the admin -----------------------------------------------------------


def kb_url(org, knowledge_base=None) -> str:
    base = f"/api/v1/orgs/{org.slug}/knowledge-bases/"
    return f"{base}{knowledge_base.pk}/" if knowledge_base is not None else base


def test_an_admin_restricts_a_knowledge_base_to_groups_through_the_api_audited(
    client_for, org, org_admin, reader, finance
):
    client = client_for(org_admin)
    created = client.post(
        kb_url(org), {"name": "policies", "restricted": True, "groups": [finance.pk]}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["groups"] == [finance.pk]
    kb_id = created.json()["id"]
    assert AuditLog.objects.get(action="knowledge_base.created").after["groups"] == [str(finance.pk)]

    board = MemberGroupFactory(organization=org, name="board")
    changed = client.patch(f"{kb_url(org)}{kb_id}/", {"groups": [board.pk]}, format="json")
    assert changed.status_code == 200 and changed.json()["groups"] == [board.pk]
    row = AuditLog.objects.get(action="knowledge_base.updated")
    assert row.before == {"groups": [str(finance.pk)]} and row.after == {"groups": [str(board.pk)]}


def test_the_groups_with_access_are_shown_to_admins_only(client_for, org, org_admin, reader, finance):
    knowledge_base_with(org, org_admin, restricted=True, groups=[finance])

    as_reader = client_for(reader).get(kb_url(org)).json()["results"]
    as_admin = client_for(org_admin).get(kb_url(org)).json()["results"]

    assert [kb["name"] for kb in as_reader] == ["policies"]
    assert "groups" not in as_reader[0] and "members" not in as_reader[0]
    assert as_admin[0]["groups"] == [finance.pk]


def test_a_group_of_another_organisation_is_refused_with_400_and_nothing_changes(
    client_for, org, org_admin, other_org, finance
):
    foreign = MemberGroupFactory(organization=other_org, name="globex-board")
    client = client_for(org_admin)

    created = client.post(
        kb_url(org), {"name": "policies", "restricted": True, "groups": [foreign.pk]}, format="json"
    )
    assert created.status_code == 400 and "groups" in created.json()
    assert "this organisation" in str(created.json()["groups"])
    assert b"globex" not in created.content

    kb = knowledge_base_with(org, org_admin, restricted=True, groups=[finance])
    patched = client.patch(kb_url(org, kb), {"groups": [finance.pk, foreign.pk]}, format="json")
    assert patched.status_code == 400 and "groups" in patched.json()
    assert list(kb.groups.all()) == [finance]


def test_the_refusal_of_another_organisations_group_reads_in_chinese(client_for, org, org_admin, other_org):
    foreign = MemberGroupFactory(organization=other_org, name="globex-board")

    response = client_for(org_admin).post(
        kb_url(org),
        {"name": "policies", "restricted": True, "groups": [foreign.pk]},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert response.status_code == 400
    assert any("\u4e00" <= ch <= "\u9fff" for ch in str(response.json()["groups"]))


def test_the_service_refuses_a_group_of_another_organisation(org, org_admin, other_org):
    foreign = MemberGroupFactory(organization=other_org, name="globex-board")
    kb = knowledge_base_with(org, org_admin)

    with pytest.raises(ValidationError) as refused:
        knowledge_base_update(knowledge_base=kb, actor=org_admin, restricted=True, groups=[foreign])
    assert "groups" in refused.value.message_dict
    with pytest.raises(ValidationError):
        knowledge_base_with(org, org_admin, name="other", restricted=True, groups=[foreign])
    kb.refresh_from_db()
    assert not kb.restricted and not kb.groups.exists()


def _admin_form(org, **fields):
    return {
        "organization": str(org.pk),
        "name": "policies",
        "description": "",
        "active": "on",
        "embedding_endpoint": "",
        "rerank_endpoint": "",
        "restricted": "on",
        "documents-TOTAL_FORMS": "0",
        "documents-INITIAL_FORMS": "0",
        "documents-MIN_NUM_FORMS": "0",
        "documents-MAX_NUM_FORMS": "1000",
        **fields,
    }


def test_the_admin_restricts_a_knowledge_base_to_a_group_and_refuses_another_organisations(
    client, org, other_org, org_admin, reader, finance
):
    """An admin of both organisations is offered the groups of both: a group of the other one is a form
    error, not a saved grant."""
    Membership.objects.create(organization=other_org, user=org_admin, role=Role.ADMIN)
    foreign = MemberGroupFactory(organization=other_org, name="globex-board")
    assert client.login(username=org_admin.username, password=PASSWORD)
    add = reverse("admin:agents_knowledgebase_add")

    refused = client.post(add, _admin_form(org, groups=[str(foreign.pk)]))
    assert refused.status_code == 200
    assert "groups" in refused.context["adminform"].form.errors

    saved = client.post(add, _admin_form(org, groups=[str(finance.pk)]))
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    kb = KnowledgeBase.objects.for_org(org).get()
    assert list(kb.groups.all()) == [finance]
    readable = knowledge_base_readable_ids(
        organization_id=org.pk, user_id=reader.pk, knowledge_base_ids=[kb.pk]
    )
    assert readable == [kb.pk]
