"""OpenAPI schema extensions (imported by the app config so drf-spectacular registers them)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "platform_core.authentication.BearerTokenAuthentication"
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
