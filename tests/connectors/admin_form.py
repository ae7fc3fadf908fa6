"""What every post of the connector admin's change form carries besides the connector's own fields: the
limits left at their defaults, and an empty inline of actions."""

from __future__ import annotations

DEFAULT_LIMITS_AND_NO_ACTIONS: dict[str, object] = {
    "statement_timeout_ms": "5000",
    "max_rows": "200",
    "connect_timeout": "5",
    "read_timeout": "30",
    "max_response_bytes": "1000000",
    "allowed_private_hosts": "",
    "actions-TOTAL_FORMS": "0",
    "actions-INITIAL_FORMS": "0",
    "actions-MIN_NUM_FORMS": "0",
    "actions-MAX_NUM_FORMS": "1000",
}
