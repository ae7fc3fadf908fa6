"""The web app's form for a new API key: a personal key, or a key of an organisation the user administers."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from platform_core.models import ApiKeyScope, Organization

PERSONAL = "personal"
EXPIRY_DAYS = {"never": None, "7": 7, "30": 30, "90": 90, "365": 365}


SENT_FORMS_KEPT = 20


class ApiKeyForm(forms.Form):
    """``form_id`` names one rendering of the form, so sending it twice (a reload of the page that
    showed the new key) creates nothing the second time."""

    form_id = forms.CharField(widget=forms.HiddenInput, max_length=64)
    name = forms.CharField(label=_("Name"), max_length=100)
    owner = forms.ChoiceField(label=_("Key of"))
    scopes = forms.MultipleChoiceField(
        label=_("Scopes"),
        choices=ApiKeyScope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[ApiKeyScope.READ, ApiKeyScope.CHAT],
    )
    expires = forms.ChoiceField(
        label=_("Expires"),
        initial="90",
        choices=[
            ("never", _("Never")),
            ("7", _("In 7 days")),
            ("30", _("In 30 days")),
            ("90", _("In 90 days")),
            ("365", _("In a year")),
        ],
    )

    def __init__(self, *args: Any, admin_orgs: list[Organization], **kwargs: Any) -> None:
        kwargs.setdefault("initial", {"form_id": secrets.token_urlsafe(16)})
        super().__init__(*args, **kwargs)
        self.admin_orgs = {org.slug: org for org in admin_orgs}
        owner = self.fields["owner"]
        assert isinstance(owner, forms.ChoiceField)
        owner.choices = [
            (PERSONAL, _("Me (personal key)")),
            *[(org.slug, org.name) for org in admin_orgs],
        ]

    def claim(self, session: Any) -> bool:
        """Record this form as sent in ``session``; False when it was sent before."""
        sent = list(session.get("api_key_forms_sent", []))
        form_id = self.cleaned_data["form_id"]
        if form_id in sent:
            return False
        session["api_key_forms_sent"] = [*sent, form_id][-SENT_FORMS_KEPT:]
        return True

    def organization(self) -> Organization | None:
        """The organisation of a new organisation key (None: a personal key)."""
        return self.admin_orgs.get(self.cleaned_data["owner"])

    def expires_at(self) -> datetime | None:
        days = EXPIRY_DAYS[self.cleaned_data["expires"]]
        return timezone.now() + timedelta(days=days) if days else None
