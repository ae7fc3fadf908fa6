"""The agent admin's form as a browser posts it."""

from __future__ import annotations

from platform_core.models import Organization


def agent_admin_form(org: Organization, **fields: str) -> dict[str, str]:
    """An agent "Buyer" of ``org`` in ReAct mode with the admin's defaults, then ``fields``."""
    return {
        "organization": str(org.pk),
        "name": "Buyer",
        "description": "",
        "instructions": "",
        "execution_mode": "react",
        "max_iterations": "20",
        "completion_check": "on",
        "active": "on",
        **fields,
    }
