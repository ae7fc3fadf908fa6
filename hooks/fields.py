"""The guard rails' settings, by model: the one list the admin forms and the API serializers build theirs
from (each adds its own inputs for secrets and approver lists, and its own read-only columns)."""

from __future__ import annotations

# An approval policy: what it covers, then (after its approvers) where the card goes and how long it waits.
POLICY_COVERAGE = ("name", "description", "actions", "connectors", "writes_only", "condition")
POLICY_DELIVERY = ("channel", "chat_id", "timeout_seconds", "is_active")
# A Feishu channel: its app (the secrets apart), then where and how its cards go.
FEISHU_APP = ("name", "app_id")
FEISHU_DELIVERY = ("base_url", "default_chat_id", "receive_id_type", "language", "is_active")
RATE_LIMIT = ("name", "connector", "per_user", "max_calls", "period_seconds", "is_active")
# An agent's hook settings, besides the agent.
AGENT_HOOK_SWITCHES = (
    "rate_limits_enabled",
    "truncate_enabled",
    "max_observation_chars",
    "session_context_enabled",
)
