"""The skills REST API: owners and admins create, change, switch, delete and import skills, each write
versioned and audited; members read them, their versions and their export, and change nothing; another
organisation's skill is 404 on every route and changes nothing; an agent is allowed its organisation's
skills only; API keys are held to their scopes."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.skills.models import Skill, SkillVersion
from connectors.models import Connector, ConnectorKind
from platform_core.models import AuditLog
from tests.agents.factories import AgentFactory
from tests.agents.skills.test_import_export import SKILL_MD, folder_zip
from tests.agents.skills.world import APPROVAL_BODY, APPROVAL_DESCRIPTION, skill_of

pytestmark = pytest.mark.django_db


def skills_url(org, skill=None, action="") -> str:
    url = f"/api/v1/orgs/{org.slug}/skills/"
    if skill is not None:
        url += f"{skill.pk}/"
    return url + (f"{action}/" if action else "")


def import_zip(client, org, data: bytes, **extra):
    return client.post(
        f"{skills_url(org)}import/",
        {"file": SimpleUploadedFile("skill.zip", data, content_type="application/zip")},
        format="multipart",
        **extra,
    )


def test_an_admin_creates_a_skill_with_its_files_audited(client_for, org, org_admin):
    response = client_for(org_admin).post(
        skills_url(org),
        {
            "name": "purchase-approval",
            "description": APPROVAL_DESCRIPTION,
            "body": APPROVAL_BODY,
            "files": [{"path": "templates/request.md", "content": "Amount:\n"}],
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "purchase-approval" and body["version"] == 1 and body["is_active"]
    assert body["body"] == APPROVAL_BODY
    assert body["files"] == [{"path": "templates/request.md", "content": "Amount:\n"}]
    assert Connector.objects.for_org(org).filter(kind=ConnectorKind.SKILLS).exists()
    row = AuditLog.objects.get(organization=org, action="skill.created")
    assert row.actor == org_admin and row.after["version"] == 1


def test_a_bad_skill_is_a_field_error(client_for, org, org_admin):
    skill_of(org)
    client = client_for(org_admin)

    taken = client.post(skills_url(org), {"name": "purchase-approval", "description": "d"}, format="json")
    bad = client.post(skills_url(org), {"name": "Purchase Approval", "description": "d"}, format="json")
    twice = client.post(
        skills_url(org),
        {"name": "x", "description": "d", "files": [{"path": "a.md", "content": ""}] * 2},
        format="json",
    )

    assert taken.status_code == 400 and "already has a skill" in taken.json()["name"][0]
    assert bad.status_code == 400 and "lowercase" in bad.json()["name"][0]
    assert twice.status_code == 400 and "same path" in str(twice.json()["files"])
    assert Skill.objects.for_org(org).count() == 1


def test_a_change_of_content_is_a_new_version_and_switching_off_is_not(client_for, org, org_admin):
    skill = skill_of(org, files={"a.md": "A"})
    client = client_for(org_admin)

    changed = client.patch(skills_url(org, skill), {"body": "# New procedure\n"}, format="json")
    switched = client.patch(skills_url(org, skill), {"is_active": False}, format="json")
    versions = client.get(skills_url(org, skill, "versions")).json()["results"]

    assert changed.status_code == 200 and changed.json()["version"] == 2
    assert changed.json()["files"] == [{"path": "a.md", "content": "A"}]
    assert switched.json()["version"] == 2 and switched.json()["is_active"] is False
    assert [v["number"] for v in versions] == [2, 1]
    assert versions[0]["body"] == "# New procedure\n" and versions[1]["body"] == APPROVAL_BODY
    assert versions[0]["files"] == [{"path": "a.md", "size": 1}]
    assert [row.action for row in AuditLog.objects.filter(organization=org).order_by("id")][-2:] == [
        "skill.updated",
        "skill.updated",
    ]


def test_a_change_with_a_file_missing_its_path_or_text_is_a_field_error(client_for, org, org_admin):
    skill = skill_of(org, files={"a.md": "A"})
    client = client_for(org_admin)

    no_path = client.patch(skills_url(org, skill), {"files": [{"content": "B"}]}, format="json")
    no_text = client.patch(skills_url(org, skill), {"files": [{"path": "b.md"}]}, format="json")

    required = ["This field is required."]
    assert no_path.status_code == 400 and no_path.json()["files"]["0"] == {"path": required}
    assert no_text.status_code == 400 and no_text.json()["files"]["0"] == {"content": required}
    assert client.get(skills_url(org, skill)).json()["files"] == [{"path": "a.md", "content": "A"}]


def test_members_read_skills_and_change_nothing(client_for, org, member):
    skill = skill_of(org)
    client = client_for(member)

    listed = client.get(skills_url(org)).json()["results"]
    assert [s["name"] for s in listed] == ["purchase-approval"] and "body" not in listed[0]
    assert client.get(skills_url(org, skill)).json()["body"] == APPROVAL_BODY
    assert client.get(skills_url(org, skill, "versions")).status_code == 200
    assert client.get(skills_url(org, skill, "export")).status_code == 200

    assert client.post(skills_url(org), {"name": "x", "description": "d"}, format="json").status_code == 403
    assert client.patch(skills_url(org, skill), {"body": "x"}, format="json").status_code == 403
    assert client.delete(skills_url(org, skill)).status_code == 403
    assert import_zip(client, org, folder_zip()).status_code == 403
    skill.refresh_from_db()
    assert skill.body == APPROVAL_BODY and Skill.objects.for_org(org).count() == 1
    assert not SkillVersion.objects.for_org(org).exclude(number=1).exists()


def test_an_admin_deletes_a_skill(client_for, org, org_admin):
    skill = skill_of(org)

    assert client_for(org_admin).delete(skills_url(org, skill)).status_code == 204

    assert not Skill.objects.for_org(org).exists()
    assert AuditLog.objects.filter(organization=org, action="skill.deleted").exists()


def test_import_creates_then_reports_unchanged_and_export_round_trips(client_for, org, org_admin):
    client = client_for(org_admin)

    created = import_zip(client, org, folder_zip())
    again = import_zip(client, org, folder_zip())
    skill = Skill.objects.for_org(org).get()
    exported = client.get(skills_url(org, skill, "export"))

    assert created.status_code == 201 and created.json()["outcome"] == "created"
    assert created.json()["skill"]["front_matter"]["license"] == "Apache-2.0"
    assert again.status_code == 200 and again.json()["outcome"] == "unchanged"
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    assert exported["Content-Disposition"] == 'attachment; filename="purchase-approval.zip"'
    archive = zipfile.ZipFile(io.BytesIO(exported.content))
    original = zipfile.ZipFile(io.BytesIO(folder_zip()))
    for name in original.namelist():
        if not name.endswith("SKILL.md"):
            assert archive.read(name) == original.read(name)
    assert import_zip(client, org, exported.content).json()["outcome"] == "unchanged"


def test_a_refused_import_says_why_in_the_callers_language(client_for, org, org_admin):
    data = folder_zip(**{"logo.png": b"\x89PNG\r\n\x1a\n\x00"})

    english = import_zip(client_for(org_admin), org, data)
    chinese = import_zip(client_for(org_admin), org, data, HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert english.status_code == 400 and "“logo.png” is not a text file" in english.json()["file"][0]
    assert chinese.status_code == 400 and "logo.png" in chinese.json()["file"][0]
    assert "not a text file" not in chinese.json()["file"][0]
    assert not Skill.objects.for_org(org).exists()


def test_an_import_whose_skill_is_refused_names_the_field(client_for, org, org_admin):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("s/SKILL.md", SKILL_MD.replace("description: How", f"description: {'x' * 1100} How"))

    response = import_zip(client_for(org_admin), org, buffer.getvalue())

    assert response.status_code == 400 and "description" in response.json()
    assert not Skill.objects.for_org(org).exists()


def test_the_list_costs_a_fixed_number_of_queries(client_for, org, member, django_assert_max_num_queries):
    for number in range(5):
        skill_of(org, f"skill-{number}", files={"a.md": "A"})
    client = client_for(member)

    with django_assert_max_num_queries(8):
        assert len(client.get(skills_url(org)).json()["results"]) == 5


# --- agents -----------------------------------------------------------------------------------------------


def test_an_agent_is_allowed_its_organisations_skills_only(client_for, org, org_admin, other_org):
    own, foreign = skill_of(org), skill_of(other_org)
    agent = AgentFactory(organization=org)
    client = client_for(org_admin)
    url = f"/api/v1/orgs/{org.slug}/agents/{agent.pk}/"

    refused = client.patch(url, {"skills": [str(foreign.pk)]}, format="json")
    allowed = client.patch(url, {"skills": [str(own.pk)]}, format="json")

    assert refused.status_code == 400 and "skills" in refused.json()
    assert allowed.status_code == 200 and allowed.json()["skills"] == [str(own.pk)]
    assert list(agent.skills.all()) == [own]


def test_the_skill_library_is_no_agents_connector(client_for, org, org_admin):
    skill_of(org)
    library = Connector.objects.for_org(org).get(kind=ConnectorKind.SKILLS)
    agent = AgentFactory(organization=org)

    response = client_for(org_admin).patch(
        f"/api/v1/orgs/{org.slug}/agents/{agent.pk}/", {"connectors": [str(library.pk)]}, format="json"
    )

    assert response.status_code == 400 and not agent.connectors.exists()


def test_the_connectors_api_neither_makes_nor_unmakes_a_skill_library(client_for, org, org_admin):
    skill_of(org)
    library = Connector.objects.for_org(org).get(kind=ConnectorKind.SKILLS)
    client = client_for(org_admin)

    made = client.post(
        f"/api/v1/orgs/{org.slug}/connectors/", {"name": "mine", "kind": "skills"}, format="json"
    )
    unmade = client.patch(
        f"/api/v1/orgs/{org.slug}/connectors/{library.pk}/", {"kind": "http"}, format="json"
    )

    assert made.status_code == 400 and "first skill" in str(made.json()["kind"])
    assert unmade.status_code == 400
    library.refresh_from_db()
    assert library.kind == ConnectorKind.SKILLS


# --- API keys and other organisations -----------------------------------------------------------------------


def test_an_api_key_reads_with_the_read_scope_and_writes_only_with_the_admin_scope(
    key_client, org, org_admin
):
    skill = skill_of(org)
    reader, admin = key_client(org_admin, ["read"]), key_client(org_admin, ["read", "admin"])

    assert reader.get(skills_url(org, skill)).status_code == 200
    assert reader.get(skills_url(org, skill, "export")).status_code == 200
    assert reader.patch(skills_url(org, skill), {"body": "x"}, format="json").status_code == 403
    assert import_zip(reader, org, folder_zip()).status_code == 403
    assert admin.patch(skills_url(org, skill), {"body": "x"}, format="json").status_code == 200


ROUTES = [
    ("get", "list"),
    ("post", "list"),
    ("get", "detail"),
    ("patch", "detail"),
    ("delete", "detail"),
    ("get", "versions"),
    ("get", "export"),
    ("post", "import"),
]


def _route(org, kind, skill) -> str:
    return {
        "list": skills_url(org),
        "detail": skills_url(org, skill),
        "versions": skills_url(org, skill, "versions"),
        "export": skills_url(org, skill, "export"),
        "import": f"{skills_url(org)}import/",
    }[kind]


@pytest.mark.cross_org("skill-list", "skill-detail", "skill-versions", "skill-export", "skill-import")
@pytest.mark.parametrize(("method", "kind"), ROUTES, ids=[f"{m}-{k}" for m, k in ROUTES])
def test_another_organisations_skill_is_404_on_every_route(
    client_for, org, org_admin, other_org, other_admin, method, kind
):
    foreign = skill_of(other_org, "globex-secrets", body="# Globex only\n")
    own = skill_of(org, "acme-procedure")
    client = client_for(org_admin)

    if kind in ("detail", "versions", "export"):
        response = getattr(client, method)(_route(org, kind, foreign), {}, format="json")
        assert response.status_code == 404 and b"globex" not in response.content.lower()
    response = getattr(client, method)(_route(other_org, kind, foreign), {}, format="json")
    assert response.status_code == 404 and b"globex" not in response.content.lower()
    response = getattr(client_for(other_admin), method)(_route(org, kind, own), {}, format="json")
    assert response.status_code == 404

    if method == "get" and kind == "list":
        assert [s["name"] for s in client.get(skills_url(org)).json()["results"]] == ["acme-procedure"]
    foreign.refresh_from_db()
    assert foreign.body == "# Globex only\n" and foreign.version == 1
    assert Skill.objects.for_org(other_org).count() == 1
    assert SkillVersion.objects.for_org(other_org).count() == 1
    assert [s.name for s in Skill.objects.for_org(org)] == ["acme-procedure"]
