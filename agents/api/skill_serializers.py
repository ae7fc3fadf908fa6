"""Serializers of the skills API: a skill (its current version), its versions, and an import's outcome.

A skill's content (name, description, body, files) is checked by the services
(:func:`agents.skills.services.skill_problems`), the same rules as the admin's and the import's; here only
its shape is.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.skills.limits import PATH_MAX_CHARS
from agents.skills.models import NAME_HELP, Skill, SkillVersion


class SkillFileSerializer(serializers.Serializer):
    """One text file of a skill: its path in the skill's folder and its text."""

    path = serializers.CharField(max_length=PATH_MAX_CHARS, help_text=_("As in “references/limits.md”."))
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)

    def validate(self, attrs: dict[str, str]) -> dict[str, str]:
        # A partial change (PATCH) makes nested fields optional; a file still needs both.
        missing = {name: [_("This field is required.")] for name in ("path", "content") if name not in attrs}
        if missing:
            raise serializers.ValidationError(missing)
        return attrs


class SkillFileListedSerializer(serializers.Serializer):
    """One file of a version, without its text."""

    path = serializers.CharField(read_only=True)
    size = serializers.IntegerField(read_only=True, help_text=_("In bytes (UTF-8)."))


class SkillListSerializer(serializers.ModelSerializer):
    """A skill as the list shows it: without its body and files."""

    class Meta:
        model = Skill
        fields = ["id", "name", "description", "is_active", "version", "created_at", "updated_at"]
        read_only_fields = fields


class SkillSerializer(serializers.ModelSerializer):
    """What a skill's create or change sets. ``files`` replaces all of the skill's files when given."""

    name = serializers.CharField(max_length=64, help_text=NAME_HELP)
    description = serializers.CharField(max_length=1024)
    body = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, default="")
    files = SkillFileSerializer(
        many=True,
        required=False,
        help_text=_("The skill's other files (text only); given, they replace all of its files."),
    )

    class Meta:
        model = Skill
        fields = ["name", "description", "body", "is_active", "files"]

    def validate_files(self, value: list[dict[str, str]]) -> dict[str, str]:
        files = {item["path"]: item["content"] for item in value}
        if len(files) != len(value):
            raise serializers.ValidationError(_("Two files have the same path."))
        return files


class SkillDetailSerializer(serializers.ModelSerializer):
    """A skill's current version, with its body and files (``files`` in the context: path -> text)."""

    front_matter = serializers.JSONField(
        read_only=True,
        help_text=_("SKILL.md's front matter besides the name and the description, as imported."),
    )
    files = serializers.SerializerMethodField()

    class Meta:
        model = Skill
        fields = [
            "id",
            "name",
            "description",
            "body",
            "is_active",
            "version",
            "front_matter",
            "files",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    @extend_schema_field(SkillFileSerializer(many=True))
    def get_files(self, skill: Skill) -> list[dict[str, str]]:
        files: dict[str, str] = self.context.get("files", {})
        return [{"path": path, "content": content} for path, content in files.items()]


class SkillVersionSerializer(serializers.ModelSerializer):
    """One saved version of a skill, as it was."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    files = SkillFileListedSerializer(many=True, read_only=True)

    class Meta:
        model = SkillVersion
        fields = [
            "number",
            "name",
            "description",
            "body",
            "front_matter",
            "files",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class SkillImportSerializer(serializers.Serializer):
    """A skill folder's .zip (``SKILL.md`` and its other files)."""

    file = serializers.FileField(help_text=_("A .zip holding one folder with SKILL.md."))


class SkillImportedSerializer(serializers.Serializer):
    """What an import did: ``created``, ``updated`` (a new version) or ``unchanged``; and the skill."""

    outcome = serializers.ChoiceField(choices=["created", "updated", "unchanged"])
    skill = SkillDetailSerializer()
