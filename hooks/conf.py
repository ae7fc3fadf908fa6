"""Tunables of the guard rails, read from Django settings with embedded defaults."""

from __future__ import annotations

from django.conf import settings

DEFAULT_APPROVAL_TIMEOUT_SECONDS = 600
DEFAULT_MAX_OBSERVATION_CHARS = 8000


def approval_recheck_seconds() -> float:
    """How often a waiting approval gate re-reads its request from the database (a channel-layer
    message wakes it sooner; the re-check covers decisions whose message was lost or never sent)."""
    return float(getattr(settings, "APPROVAL_RECHECK_SECONDS", 2.0))


def card_send_max_retries() -> int:
    return int(getattr(settings, "APPROVAL_CARD_MAX_RETRIES", 6))


def card_retry_base_seconds() -> float:
    return float(getattr(settings, "APPROVAL_CARD_RETRY_BASE_SECONDS", 2.0))


def feishu_base_url() -> str:
    return getattr(settings, "FEISHU_BASE_URL", "https://open.feishu.cn").rstrip("/")
