"""A skill travels as a .zip of its folder, the open Agent Skills layout: ``SKILL.md`` (front matter with
the name and the description, then the body) and its other files. A folder written for another tool
imports as it is (its other front matter kept); an export imports back as the same skill, its files
byte for byte; importing a skill of a name the organisation has makes a new version of it. A zip that
is no such folder is refused with a message the admin can act on, and nothing is written."""

from __future__ import annotations

import io
import zipfile

import pytest
import yaml

from agents.skills.models import Skill, SkillVersion
from agents.skills.packaging import skill_md_parse
from agents.skills.selectors import skill_export, skill_files_current
from agents.skills.services import SkillImported, SkillImportRefused, skill_import
from platform_core.models import AuditLog

pytestmark = pytest.mark.django_db

# As Anthropic's skills repository and other tools write them (https://agentskills.io/specification).
SKILL_MD = """---
name: purchase-approval
description: How a purchase is approved at Demo Trading Co. Use it before paying or approving an order.
license: Apache-2.0
metadata:
  author: purchasing-team
  version: "1.2"
allowed-tools: erp__list_orders erp__create_payment
---

# Purchase approval

1. Find the order with `erp__list_orders`.
2. Check the amount against [the limits](references/limits.md).
"""
LIMITS = "| up to | who |\n| --- | --- |\n| 10,000 CNY | the buyer |\r\n"
TEMPLATE = "Order: {order}\nApproved by: {approver}\n"


def zip_of(entries: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def folder_zip(**extra: str | bytes) -> bytes:
    return zip_of(
        {
            "purchase-approval/SKILL.md": SKILL_MD,
            "purchase-approval/references/limits.md": LIMITS,
            "purchase-approval/assets/approval.txt": TEMPLATE,
            **{f"purchase-approval/{path}": content for path, content in extra.items()},
        }
    )


def imported(org, data: bytes, actor=None) -> Skill:
    outcome = skill_import(organization=org, data=data, actor=actor)
    assert isinstance(outcome, SkillImported), outcome
    return outcome.skill


def test_a_folder_written_for_another_tool_imports_as_it_is(org, org_admin):
    outcome = skill_import(organization=org, data=folder_zip(), actor=org_admin)

    assert isinstance(outcome, SkillImported) and outcome.created
    skill = outcome.skill
    assert skill.name == "purchase-approval" and skill.version == 1
    assert skill.description.startswith("How a purchase is approved")
    assert skill.body.startswith("# Purchase approval\n\n1. Find the order")
    assert skill.front_matter == {
        "license": "Apache-2.0",
        "metadata": {"author": "purchasing-team", "version": "1.2"},
        "allowed-tools": "erp__list_orders erp__create_payment",
    }
    assert skill_files_current(skill=skill) == {
        "references/limits.md": LIMITS,
        "assets/approval.txt": TEMPLATE,
    }
    row = AuditLog.objects.get(organization=org, action="skill.imported")
    assert row.after == {"name": "purchase-approval", "version": 1, "is_active": True, "files": 2}


def test_an_export_imports_back_as_the_same_skill_byte_for_byte(org, other_org):
    skill = imported(org, folder_zip())

    exported = skill_export(skill=skill)

    assert exported.filename == "purchase-approval.zip"
    original = zipfile.ZipFile(io.BytesIO(folder_zip()))
    archive = zipfile.ZipFile(io.BytesIO(exported.data))
    assert sorted(archive.namelist()) == sorted(original.namelist())
    for name in ("purchase-approval/references/limits.md", "purchase-approval/assets/approval.txt"):
        assert archive.read(name) == original.read(name)
    exported_md = skill_md_parse(archive.read("purchase-approval/SKILL.md").decode())
    assert exported_md == skill_md_parse(SKILL_MD)
    again = imported(other_org, exported.data)
    assert skill_export(skill=again).data == exported.data


def test_the_same_skill_imported_again_changes_nothing_and_a_new_one_is_a_version(org, org_admin):
    skill = imported(org, folder_zip())

    same = skill_import(organization=org, data=folder_zip(), actor=org_admin)
    newer = skill_import(
        organization=org,
        data=zip_of(
            {
                "purchase-approval/SKILL.md": SKILL_MD.replace("1. Find", "1. First find"),
                "purchase-approval/checklist.md": "- order\n",
            }
        ),
        actor=org_admin,
    )

    assert isinstance(same, SkillImported) and not same.created and not same.changed
    assert isinstance(newer, SkillImported) and newer.changed and newer.skill.pk == skill.pk
    skill.refresh_from_db()
    assert skill.version == 2 and "First find" in skill.body
    assert skill_files_current(skill=skill) == {"checklist.md": "- order\n"}
    assert SkillVersion.objects.for_org(org).filter(skill=skill).count() == 2


def test_skill_md_at_the_top_of_the_zip_and_archivers_litter_are_accepted(org):
    skill = imported(
        org,
        zip_of(
            {
                "SKILL.md": SKILL_MD,
                "notes.md": "n",
                "__MACOSX/._SKILL.md": b"\x00\x05\x16\x07",
                ".DS_Store": b"\x00\x00\x00\x01Bud1",
            }
        ),
    )

    assert skill_files_current(skill=skill) == {"notes.md": "n"}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"not a zip", "not a .zip file"),
        (zip_of({"purchase-approval/README.md": "hi"}), "has no SKILL.md"),
        (zip_of({"a/SKILL.md": SKILL_MD, "b/SKILL.md": SKILL_MD}), "more than one folder"),
        (zip_of({"s/SKILL.md": "# No front matter\n"}), "must start with its front matter"),
        (zip_of({"s/SKILL.md": "---\nname: s\n---\nbody\n"}), "has no “description”"),
        (zip_of({"s/SKILL.md": "---\ndescription: d\n---\n"}), "has no “name”"),
        (zip_of({"s/SKILL.md": "---\nname: [unclosed\n---\n"}), "not valid YAML"),
        (
            folder_zip(**{"assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00"}),
            "“assets/logo.png” is not a text file",
        ),
        (folder_zip(**{"big.md": "x" * (256 * 1024 + 1)}), "“big.md” is larger than 256 KiB"),
        (folder_zip(**{f"f{n}.md": "x" for n in range(50)}), "at most 50 are kept"),
        (zip_of({"s/SKILL.md": SKILL_MD.replace("purchase-approval", "Purchase Approval")}), "lowercase"),
    ],
    ids=[
        "not-a-zip",
        "no-skill-md",
        "two-skills",
        "no-front-matter",
        "no-description",
        "no-name",
        "bad-yaml",
        "binary-file",
        "file-too-large",
        "too-many-files",
        "bad-name",
    ],
)
def test_a_zip_that_is_no_skill_folder_is_refused_and_nothing_is_written(org, data, says):
    outcome = skill_import(organization=org, data=data, actor=None)

    assert isinstance(outcome, SkillImportRefused) and says in outcome.message, outcome
    assert not Skill.objects.for_org(org).exists()
    assert not AuditLog.objects.filter(organization=org, action__startswith="skill.").exists()


def test_a_path_that_leaves_the_folder_is_refused(org):
    data = zip_of({"SKILL.md": SKILL_MD, "../../etc/passwd.md": "x"})

    outcome = skill_import(organization=org, data=data, actor=None)

    assert isinstance(outcome, SkillImportRefused) and "not a relative path" in outcome.message


def test_the_refusal_of_a_binary_file_is_said_in_chinese_to_a_chinese_admin(org):
    from django.utils import translation

    with translation.override("zh-hans"):
        outcome = skill_import(organization=org, data=folder_zip(**{"logo.png": b"\x89PNG\x00"}), actor=None)

    assert isinstance(outcome, SkillImportRefused) and "logo.png" in outcome.message
    assert "not a text file" not in outcome.message


def test_exported_front_matter_is_name_and_description_first(org):
    skill = imported(org, folder_zip())

    text = zipfile.ZipFile(io.BytesIO(skill_export(skill=skill).data)).read("purchase-approval/SKILL.md")

    head = text.decode().split("---\n")[1]
    assert list(yaml.safe_load(head))[:2] == ["name", "description"]
