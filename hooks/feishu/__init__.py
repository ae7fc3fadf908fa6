"""The Feishu (Lark) wire layer for approval cards: client, card builders and callback parsing.

Django-free; /work/shared/FEISHU.md holds the protocol facts these modules implement.
"""

from __future__ import annotations

from hooks.feishu.callback import (
    CallbackRejected,
    CallbackSecrets,
    CardAction,
    SeenEvents,
    UrlVerification,
    decrypt_payload,
    encrypt_payload,
    parse_callback,
    replay_rejected,
    toast_reply,
    url_verification_reply,
    verify_signature,
)
from hooks.feishu.cards import (
    MAX_CARD_BYTES,
    approval_decided_card,
    approval_pending_card,
    card_to_content,
    channel_test_card,
)
from hooks.feishu.client import FeishuApp, FeishuClient, aclose_shared_clients, clear_token_cache
from hooks.feishu.errors import FeishuError

__all__ = [
    "MAX_CARD_BYTES",
    "CallbackRejected",
    "CallbackSecrets",
    "CardAction",
    "FeishuApp",
    "FeishuClient",
    "FeishuError",
    "SeenEvents",
    "UrlVerification",
    "aclose_shared_clients",
    "approval_decided_card",
    "approval_pending_card",
    "card_to_content",
    "channel_test_card",
    "clear_token_cache",
    "decrypt_payload",
    "encrypt_payload",
    "parse_callback",
    "replay_rejected",
    "toast_reply",
    "url_verification_reply",
    "verify_signature",
]
