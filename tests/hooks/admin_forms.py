"""The Feishu channel admin's add form as a browser posts it."""

from __future__ import annotations

from platform_core.models import Organization


def feishu_channel_add_form(org: Organization, **fields: object) -> dict[str, object]:
    """A channel "approvals" of ``org`` with its three secrets typed in, then ``fields``."""
    return {
        "organization": org.pk,
        "name": "approvals",
        "app_id": "cli_1",
        "app_secret_input": "app-secret-value",
        "verification_token_input": "verify-token-value",
        "encrypt_key_input": "encrypt-key-value",
        "receive_id_type": "chat_id",
        "language": "zh-hans",
        "is_active": "on",
        **fields,
    }
