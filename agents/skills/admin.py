"""The admin of skills: each skill's current version is edited on its page (a change of its content adds
a version, through the services), its versions are listed read-only below it, and a skill folder's .zip
is imported from the list's "Import a skill" page and exported from the skill's page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.skills.models import Skill, SkillFile, SkillVersion
from agents.skills.packaging import ZIP_MAX_BYTES
from agents.skills.selectors import skill_export, skill_files_current
from agents.skills.services import (
    SkillImportRefused,
    skill_create,
    skill_delete,
    skill_import,
    skill_problems,
    skill_update,
)
from platform_core.admin.base import OrgScopedAdmin, OrgScopedInline
from platform_core.models import Organization
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.tenancy.admin_orgs import admin_orgs


class SkillAdminForm(forms.ModelForm):
    """A skill's current version; its content is checked by the services' rules (those of the API and
    the import too)."""

    class Meta:
        model = Skill
        fields = ["organization", "name", "description", "body", "is_active"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3, "class": "vLargeTextField"}),
            "body": forms.Textarea(attrs={"rows": 24, "class": "vLargeTextField", "spellcheck": "false"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "body" in self.fields:
            self.fields["body"].strip = False  # type: ignore[attr-defined]  # a CharField: Markdown keeps its ends

    def clean_body(self) -> str:
        """The body as written: browsers send a text area's lines with CRLF, stored as LF (an unchanged
        page saved again is no new version)."""
        return str(self.cleaned_data.get("body") or "").replace("\r\n", "\n")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization = cleaned.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        if organization is None or self.errors:
            return cleaned
        existing = self.instance if not self.instance._state.adding else None
        problems = skill_problems(
            organization=organization,
            name=cleaned.get("name") or "",
            description=cleaned.get("description") or "",
            body=cleaned.get("body") or "",
            files=skill_files_current(skill=existing) if existing is not None else {},
            skill=existing,
        )
        for field, found in problems.items():
            for message in found:
                self.add_error(field if field in self.fields else None, message)
        return cleaned

    def validate_unique(self) -> None:
        """The services check the name (:meth:`clean`): Django's own message would say it twice."""


class SkillImportForm(forms.Form):
    """A skill folder's .zip, for one of the organisations the admin administers."""

    organization = forms.ModelChoiceField(queryset=Organization.objects.none(), label=_("organisation"))
    file = forms.FileField(
        label=_("Skill folder (.zip)"),
        help_text=_(
            "A .zip holding one folder with SKILL.md (front matter with name and description, then the "
            "procedure) and the skill's other text files. A skill of the same name gets a new version."
        ),
    )

    def __init__(self, *args: Any, organizations: QuerySet[Organization], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["organization"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = organizations
        if organizations.count() == 1:
            field.initial = organizations.first()
            field.widget = forms.HiddenInput()


class SkillVersionInline(OrgScopedInline):
    """The skill's versions, newest first: read-only (a version never changes)."""

    model = SkillVersion
    fk_name = "skill"
    extra = 0
    can_delete = False
    show_change_link = False
    fields = ("number", "name", "description", "file_count", "created_by", "created_at")
    readonly_fields = fields
    ordering = ["-number"]
    verbose_name_plural = _("versions")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("files"))
    def file_count(self, obj: SkillVersion) -> int:
        return SkillFile.objects.for_org(obj.organization_id).filter(version=obj).count()


@admin.register(Skill)
class SkillAdmin(OrgScopedAdmin):
    form = SkillAdminForm
    change_list_template = "admin/agents/skill/change_list.html"
    inlines = [SkillVersionInline]
    list_display = ["name", "organization", "version", "is_active", "updated_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "description"]
    readonly_fields = ["version", "files", "export"]
    fieldsets = [
        (None, {"fields": ["organization", "name", "description", "is_active", "version"]}),
        (_("Procedure"), {"fields": ["body", "files", "export"]}),
    ]
    actions = ["activate", "deactivate"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """A skill stays in its organisation."""
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "organization"] if obj is not None else fields

    @admin.display(description=_("files"))
    def files(self, obj: Skill) -> str:
        if obj.pk is None:
            return "-"
        found = skill_files_current(skill=obj)
        if not found:
            return gettext("None (import a skill folder to add files).")
        return format_html_join(
            "",
            "<div><code>{}</code> ({})</div>",
            ((p, filesizeformat(len(t.encode()))) for p, t in found.items()),
        )

    @admin.display(description=_("export"))
    def export(self, obj: Skill) -> str:
        if obj.pk is None:
            return "-"
        url = reverse("admin:agents_skill_export", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, gettext("Download the skill folder (.zip)"))

    def save_model(self, request: HttpRequest, obj: Skill, form: Any, change: bool) -> None:
        data, actor, ip_address = form.cleaned_data, signed_in_user(request), client_ip(request)
        if not change:
            created = skill_create(
                organization=data["organization"] if "organization" in data else obj.organization,
                name=data["name"],
                description=data["description"],
                body=data.get("body") or "",
                is_active=bool(data.get("is_active")),
                actor=actor,
                ip_address=ip_address,
            )
            form.instance = created
            obj.pk, obj.version = created.pk, created.version
            obj._state.adding = False
            return
        skill_update(
            skill=obj,
            actor=actor,
            ip_address=ip_address,
            name=data["name"],
            description=data["description"],
            body=data.get("body") or "",
            is_active=bool(data.get("is_active")),
        )

    def delete_model(self, request: HttpRequest, obj: Skill) -> None:
        skill_delete(skill=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for skill in queryset:
            skill_delete(skill=skill, actor=signed_in_user(request), ip_address=client_ip(request))

    def _switch(self, request: HttpRequest, queryset: QuerySet, active: bool) -> None:
        for skill in queryset:
            skill_update(
                skill=skill, actor=signed_in_user(request), ip_address=client_ip(request), is_active=active
            )

    @admin.action(description=_("Switch the selected skills on"))
    def activate(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._switch(request, queryset, True)

    @admin.action(description=_("Switch the selected skills off"))
    def deactivate(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._switch(request, queryset, False)

    def get_urls(self) -> list[Any]:
        extra = [
            path("import/", self.admin_site.admin_view(self.import_view), name="agents_skill_import"),
            path(
                "<path:object_id>/export/",
                self.admin_site.admin_view(self.export_view),
                name="agents_skill_export",
            ),
        ]
        return extra + super().get_urls()

    def export_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        skill = self.get_object(request, object_id)  # scoped: another organisation's is None
        if skill is None:
            raise Http404(gettext("No such skill."))
        if not self.has_view_permission(request, skill):
            raise PermissionDenied
        exported = skill_export(skill=skill)
        response = HttpResponse(exported.data, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{exported.filename}"'
        return response

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        organizations = (
            Organization.objects.all() if request.user.is_superuser else admin_orgs(request)
        ).order_by("name")
        form = SkillImportForm(request.POST or None, request.FILES or None, organizations=organizations)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            if (upload.size or 0) > ZIP_MAX_BYTES:
                form.add_error(
                    "file",
                    gettext("The zip is larger than %(limit)d MiB.") % {"limit": ZIP_MAX_BYTES // 2**20},
                )
            else:
                outcome = skill_import(
                    organization=form.cleaned_data["organization"],
                    data=upload.read(),
                    actor=signed_in_user(request),
                    ip_address=client_ip(request),
                )
                if isinstance(outcome, SkillImportRefused):
                    form.add_error("file", outcome.message)
                else:
                    name = outcome.skill.name
                    if outcome.created:
                        text = gettext("The skill “%(name)s” was imported.")
                    elif outcome.changed:
                        text = gettext("The skill “%(name)s” has a new version, %(version)d.")
                    else:
                        text = gettext("The skill “%(name)s” was already this: nothing changed.")
                    self.message_user(
                        request, text % {"name": name, "version": outcome.skill.version}, messages.SUCCESS
                    )
                    return HttpResponseRedirect(reverse("admin:agents_skill_change", args=[outcome.skill.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Import a skill"),
            "opts": self.model._meta,
            "form": form,
            "has_view_permission": True,
        }
        return TemplateResponse(request, "admin/agents/skill/import.html", context)
