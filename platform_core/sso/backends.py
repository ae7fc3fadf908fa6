"""The password backend: Django's, refusing members of organisations that switched passwords off."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from platform_core.sso.rules import password_login_refusal

REFUSAL_ATTR = "_password_login_off"


class PasswordPolicyBackend(ModelBackend):
    """Django's ``ModelBackend``; a correct password of a member of an organisation with password sign-in
    off is refused (``PermissionDenied`` stops every other backend too) and the refusal is kept on the
    request for the sign-in form to explain."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            return None
        refusal = password_login_refusal(user)
        if refusal is not None:
            if request is not None:
                setattr(request, REFUSAL_ATTR, refusal)
            raise PermissionDenied
        return user
