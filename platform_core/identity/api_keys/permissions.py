"""The DRF permission that limits an API key to its scopes (sessions are not limited by it)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import permissions
from rest_framework.request import Request

from platform_core.identity.api_keys.scopes import request_credential, scope_required


class HasApiKeyScope(permissions.BasePermission):
    """Allows a request made with an API key only when the key has the scope the route needs
    (:func:`~platform_core.identity.api_keys.scopes.scope_required`); 403 otherwise."""

    def has_permission(self, request: Request, view: Any) -> bool:
        credential = request_credential(request)
        if credential is None:
            return True
        needed = scope_required(method=request.method or "GET", view=view)
        if credential.allows(needed):
            return True
        self.message = _("This API key lacks the %(scope)s scope.") % {"scope": needed}
        return False
