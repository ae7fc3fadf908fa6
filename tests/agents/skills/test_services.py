"""Skills are written by services: a new skill is version 1 and brings the organisation's skill library
connector; a change of its content adds a version (its files copied), a change of nothing or of its
activity alone does not; names follow the Agent Skills rules and are unique per organisation; every
write leaves one audit row that names the skill and its version, never its text."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from agents.skills.limits import FILE_MAX_BYTES, MAX_FILES
from agents.skills.models import Skill, SkillFile, SkillVersion
from agents.skills.selectors import skill_files_current
from agents.skills.services import skill_create, skill_delete, skill_update
from connectors.models import Connector, ConnectorKind
from platform_core.models import AuditLog
from tests.agents.skills.world import APPROVAL_BODY, skill_of
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db


def _audit(org) -> list[AuditLog]:
    return list(AuditLog.objects.filter(organization=org, action__startswith="skill.").order_by("id"))


def test_a_new_skill_is_version_one_with_its_files_and_brings_the_skill_library(org, org_admin):
    skill = skill_of(org, files={"templates/request.md": "Amount: ...\n"}, actor=org_admin)

    version = SkillVersion.objects.for_org(org).get(skill=skill)
    assert skill.version == version.number == 1 and version.body == APPROVAL_BODY
    assert version.created_by == org_admin
    assert skill_files_current(skill=skill) == {"templates/request.md": "Amount: ...\n"}
    library = Connector.objects.for_org(org).get(kind=ConnectorKind.SKILLS)
    assert library.name == "skills" and library.is_active
    assert list(library.actions.values_list("name", "is_write")) == [("read_skill", False)]
    (row,) = _audit(org)
    assert row.action == "skill.created" and row.actor == org_admin
    assert row.after == {"name": "purchase-approval", "version": 1, "is_active": True, "files": 1}
    assert "buyer" not in json.dumps(row.after)


def test_the_skill_library_takes_a_free_name_and_is_made_once(org):
    ConnectorFactory(organization=org, name="skills")
    skill_of(org, "one")
    skill_of(org, "two")

    (library,) = Connector.objects.for_org(org).filter(kind=ConnectorKind.SKILLS)
    assert library.name == "skills_2"


def test_a_change_of_content_adds_a_version_and_keeps_the_files(org, org_admin):
    skill = skill_of(org, files={"checklist.md": "- order\n"})

    changed = skill_update(skill=skill, actor=org_admin, body="# Purchase approval\n\nAsk the buyer.\n")

    assert changed == ["body"] and skill.version == 2
    assert list(SkillVersion.objects.for_org(org).filter(skill=skill).values_list("number", flat=True)) == [
        2,
        1,
    ]
    assert SkillVersion.objects.for_org(org).get(skill=skill, number=1).body == APPROVAL_BODY
    assert skill_files_current(skill=skill) == {"checklist.md": "- order\n"}
    assert SkillFile.objects.for_org(org).filter(version__skill=skill).count() == 2
    row = _audit(org)[-1]
    assert row.action == "skill.updated"
    assert row.before == {"name": "purchase-approval", "version": 1, "is_active": True}
    assert row.after == {"name": "purchase-approval", "version": 2, "is_active": True, "changed": ["body"]}


def test_new_files_make_a_version_and_the_same_content_makes_none(org, org_admin):
    skill = skill_of(org)

    assert skill_update(skill=skill, actor=org_admin, body=APPROVAL_BODY, files={}) == []
    assert skill_update(skill=skill, actor=org_admin, files={"a.md": "A"}) == ["files"]

    assert skill.version == 2 and skill_files_current(skill=skill) == {"a.md": "A"}
    assert [row.action for row in _audit(org)] == ["skill.created", "skill.updated"]


def test_switching_a_skill_off_adds_no_version(org, org_admin):
    skill = skill_of(org)

    assert skill_update(skill=skill, actor=org_admin, is_active=False) == ["is_active"]

    skill.refresh_from_db()
    assert not skill.is_active and skill.version == 1
    assert _audit(org)[-1].after == {
        "name": "purchase-approval",
        "version": 1,
        "is_active": False,
        "changed": ["is_active"],
    }


@pytest.mark.parametrize(
    "name", ["Purchase-Approval", "purchase_approval", "-approval", "approval-", "a--b", "x" * 65, ""]
)
def test_a_name_outside_the_agent_skills_rules_is_refused(org, name):
    with pytest.raises(ValidationError) as refused:
        skill_create(organization=org, name=name, description="d", actor=None)

    assert set(refused.value.message_dict) == {"name"}
    assert not Skill.objects.for_org(org).exists()


def test_a_name_is_unique_in_its_organisation_only(org, other_org):
    skill_of(org)
    skill_of(other_org)

    with pytest.raises(ValidationError) as refused:
        skill_of(org)

    assert "already has a skill of this name" in refused.value.message_dict["name"][0]


def test_a_skill_needs_a_description_and_bounded_files(org):
    too_many = {f"f{n}.md": "x" for n in range(MAX_FILES + 1)}
    cases = [
        ({"description": " "}, "description"),
        ({"description": "d" * 1025}, "description"),
        ({"files": too_many}, "files"),
        ({"files": {"big.md": "x" * (FILE_MAX_BYTES + 1)}}, "files"),
        ({"files": {"../escape.md": "x"}}, "files"),
        ({"files": {"SKILL.md": "x"}}, "files"),
        ({"files": {"bin.dat": "a\x00b"}}, "files"),
    ]
    for change, field in cases:
        content = {"description": "How to approve.", **change}
        with pytest.raises(ValidationError) as refused:
            skill_create(organization=org, name="approval", actor=None, **content)
        assert set(refused.value.message_dict) == {field}, change


def test_deleting_a_skill_deletes_its_versions_and_is_audited(org, org_admin, member):
    from tests.agents.factories import AgentFactory

    agent = AgentFactory(organization=org)
    skill = skill_of(org, files={"a.md": "A"}, agents=[agent])

    skill_delete(skill=skill, actor=org_admin)

    assert not SkillVersion.objects.for_org(org).exists() and not SkillFile.objects.for_org(org).exists()
    assert not agent.skills.exists()
    row = _audit(org)[-1]
    assert row.action == "skill.deleted" and row.before["name"] == "purchase-approval"
