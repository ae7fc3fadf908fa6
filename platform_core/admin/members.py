"""How an org admin names a user on the membership page: never by browsing, only by exact identifier.

Users are not tenant data: a user may belong to several organisations or to none yet. An org admin may
invite an existing platform user into their organisation (the person accepts it: issue 31) by the
user's exact username or e-mail address, but the admin never lists, searches, autocompletes or prefills users who are not already
members of the organisations that admin administers. Superusers keep Django's raw-id user field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from platform_core.identity.api_keys.keys import without_service_users

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def user_find_by_identifier(*, identifier: str) -> list[User]:
    """Active users named exactly by ``identifier``: the username (case-sensitive), else the e-mail
    address (case-insensitive). At most two are returned: more than one means the name is ambiguous.
    Organisation keys' service users are never found: they are no people (issue 31)."""
    users = without_service_users(get_user_model()._default_manager.filter(is_active=True))
    by_name = list(users.filter(username=identifier)[:1])
    if by_name:
        return by_name
    return list(users.filter(email__iexact=identifier).exclude(email="")[:2])


class UserIdentifierField(forms.CharField):
    """A text input for an existing, active user's exact username or e-mail address; cleans to the user."""

    default_error_messages = {
        "unknown": _("No active user has this username or e-mail address."),
        "ambiguous": _("Several users have this e-mail address: enter the username."),
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 254)
        kwargs.setdefault(
            "help_text",
            _(
                "The exact username or e-mail address of an existing user. Users who are not yet "
                "members of your organisations cannot be looked up or browsed."
            ),
        )
        super().__init__(**kwargs)

    def clean(self, value: Any) -> User:
        identifier = super().clean(value)
        found = user_find_by_identifier(identifier=identifier)
        if not found:
            raise forms.ValidationError(self.error_messages["unknown"], code="unknown")
        if len(found) > 1:
            raise forms.ValidationError(self.error_messages["ambiguous"], code="ambiguous")
        return found[0]


def username_prefill(*, value: Any, visible: QuerySet) -> str | None:
    """The username for a ``?user=<id>`` prefill when that user is in ``visible``; otherwise None."""
    try:
        user = visible.filter(pk=value).first()
    except (ValueError, ValidationError):
        return None
    return user.get_username() if user is not None else None
