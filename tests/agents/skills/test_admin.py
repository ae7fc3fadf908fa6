"""The skills' admin: an org admin creates and edits a skill through the services (a change of its content
is a new version, listed read-only on its page), imports a skill folder's .zip and downloads its export;
a refused zip says why; another organisation's skills are neither shown, exported nor imported into; an
agent's page offers and accepts its organisation's skills only."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents.skills.models import Skill, SkillVersion
from connectors.models import Connector, ConnectorKind
from platform_core.models import AuditLog, Role
from tests.agents.admin_form import agent_admin_form
from tests.agents.factories import AgentFactory
from tests.agents.skills.test_import_export import folder_zip
from tests.agents.skills.world import APPROVAL_BODY, APPROVAL_DESCRIPTION, skill_of
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def _form(org, **fields):
    return {
        "organization": str(org.pk),
        "name": "purchase-approval",
        "description": APPROVAL_DESCRIPTION,
        "body": APPROVAL_BODY,
        "is_active": "on",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
        "versions-MIN_NUM_FORMS": "0",
        "versions-MAX_NUM_FORMS": "1000",
        **fields,
    }


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_an_admin_creates_then_edits_a_skill_and_each_change_is_a_version(admin_client, org, org_admin):
    created = admin_client.post(reverse("admin:agents_skill_add"), _form(org), follow=True)
    skill = Skill.objects.for_org(org).get()
    changed = admin_client.post(
        reverse("admin:agents_skill_change", args=[skill.pk]),
        _form(org, body="# Purchase approval\n\nAsk Ada.\n"),
        follow=True,
    )
    page = admin_client.get(reverse("admin:agents_skill_change", args=[skill.pk]))

    assert created.status_code == changed.status_code == 200
    skill.refresh_from_db()
    assert skill.version == 2 and skill.body == "# Purchase approval\n\nAsk Ada.\n"
    assert [v.number for v in SkillVersion.objects.for_org(org).filter(skill=skill)] == [2, 1]
    assert Connector.objects.for_org(org).filter(kind=ConnectorKind.SKILLS).exists()
    assert list(
        AuditLog.objects.filter(organization=org, action__startswith="skill.")
        .order_by("id")
        .values_list("action", "actor")
    ) == [("skill.created", org_admin.pk), ("skill.updated", org_admin.pk)]
    assert reverse("admin:agents_skill_export", args=[skill.pk]) in page.content.decode()


def test_a_bad_name_is_the_forms_error_once(admin_client, org):
    skill_of(org)

    taken = admin_client.post(reverse("admin:agents_skill_add"), _form(org))
    bad = admin_client.post(reverse("admin:agents_skill_add"), _form(org, name="Purchase Approval"))

    assert taken.status_code == bad.status_code == 200
    assert taken.context["adminform"].form.errors["name"] == [
        "The organisation already has a skill of this name."
    ]
    assert "lowercase" in bad.context["adminform"].form.errors["name"][0]
    assert Skill.objects.for_org(org).count() == 1


def test_an_admin_imports_a_skill_folder_and_downloads_its_export(admin_client, org):
    response = admin_client.post(
        reverse("admin:agents_skill_import"),
        {"organization": str(org.pk), "file": SimpleUploadedFile("skill.zip", folder_zip())},
        follow=True,
    )
    skill = Skill.objects.for_org(org).get()
    exported = admin_client.get(reverse("admin:agents_skill_export", args=[skill.pk]))

    assert response.redirect_chain[-1][0] == reverse("admin:agents_skill_change", args=[skill.pk])
    assert "The skill “purchase-approval” was imported." in _messages(response)
    assert exported["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(exported.content)).namelist()
    assert sorted(names) == sorted(zipfile.ZipFile(io.BytesIO(folder_zip())).namelist())


def test_a_refused_zip_is_the_import_forms_error(admin_client, org):
    response = admin_client.post(
        reverse("admin:agents_skill_import"),
        {
            "organization": str(org.pk),
            "file": SimpleUploadedFile("skill.zip", folder_zip(**{"logo.png": b"\x89PNG\x00"})),
        },
    )

    assert response.status_code == 200
    assert "“logo.png” is not a text file" in response.context["form"].errors["file"][0]
    assert not Skill.objects.for_org(org).exists()


def test_another_organisations_skill_is_neither_exported_nor_imported_into(admin_client, org, other_org):
    foreign = skill_of(other_org, "globex-secrets")

    exported = admin_client.get(reverse("admin:agents_skill_export", args=[foreign.pk]))
    imported = admin_client.post(
        reverse("admin:agents_skill_import"),
        {"organization": str(other_org.pk), "file": SimpleUploadedFile("skill.zip", folder_zip())},
    )
    listed = admin_client.get(reverse("admin:agents_skill_changelist"))

    assert exported.status_code in (302, 404) and b"globex" not in exported.content.lower()
    assert imported.status_code == 200 and "organization" in imported.context["form"].errors
    assert not Skill.objects.for_org(other_org).exclude(pk=foreign.pk).exists()
    assert not Skill.objects.for_org(org).exists()
    assert b"globex-secrets" not in listed.content


def test_a_member_who_is_no_admin_cannot_import(client, org):
    member = member_of(org, Role.MEMBER, username="staff-member")
    member.is_staff = True
    member.save()
    assert client.login(username=member.username, password=PASSWORD)

    response = client.get(reverse("admin:agents_skill_import"))

    assert response.status_code in (302, 403)


def test_an_agent_is_given_skills_of_its_organisation_only(client, org, other_org):
    admin = member_of(org, Role.ADMIN, username="both")
    from platform_core.models import Membership

    Membership.objects.create(user=admin, organization=other_org, role=Role.ADMIN)
    assert client.login(username=admin.username, password=PASSWORD)
    own, foreign = skill_of(org), skill_of(other_org, "globex-way")

    refused = client.post(
        reverse("admin:agents_agent_add"), agent_admin_form(org, skills=[str(own.pk), str(foreign.pk)])
    )
    allowed = client.post(reverse("admin:agents_agent_add"), agent_admin_form(org, skills=[str(own.pk)]))

    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors["skills"] == [
        "Choose skills of the agent's organisation."
    ]
    assert allowed.status_code == 302
    agent = AgentFactory._meta.model.objects.for_org(org).get(name="Buyer")
    assert list(agent.skills.all()) == [own]


def test_a_page_saved_again_as_the_browser_sends_it_is_no_new_version(admin_client, org):
    skill = skill_of(org)

    admin_client.post(
        reverse("admin:agents_skill_change", args=[skill.pk]),
        _form(org, body=APPROVAL_BODY.replace("\n", "\r\n")),
    )

    skill.refresh_from_db()
    assert skill.version == 1 and skill.body == APPROVAL_BODY


def test_a_skill_stays_in_its_organisation(client, org, other_org):
    admin = member_of(org, Role.ADMIN, username="both-orgs")
    from platform_core.models import Membership

    Membership.objects.create(user=admin, organization=other_org, role=Role.ADMIN)
    assert client.login(username=admin.username, password=PASSWORD)
    skill = skill_of(org)

    client.post(reverse("admin:agents_skill_change", args=[skill.pk]), _form(other_org, body="# Moved?\n"))

    assert Skill.objects.for_org(org).get().body == "# Moved?\n"
    assert not Skill.objects.for_org(other_org).exists()
