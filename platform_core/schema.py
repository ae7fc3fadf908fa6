"""OpenAPI schema extensions (imported by the app config so drf-spectacular registers them)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_basic_type, build_choice_field
from drf_spectacular.types import OpenApiTypes


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "platform_core.identity.api_keys.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API key (personal or organisation; scopes read, chat, admin) from the API keys page, "
                "the admin, `POST /api/v1/api-keys/` or `manage.py create_api_token`."
            ),
        }


class ProviderChoiceFieldExtension(OpenApiSerializerFieldExtension):
    """A sign-in rule's ``provider``: an enum of the configured providers, or a plain string while the
    deployment configures none (``enum: []`` is invalid OpenAPI and breaks client generators)."""

    target_class = "platform_core.api.sign_in.ProviderChoiceField"

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        if self.target.choices:
            return build_choice_field(self.target)
        return build_basic_type(OpenApiTypes.STR) or {"type": "string"}
