"""Demo seeder: the demo organisation's "Purchasing assistant" on the demo ERP connector.

It names no model endpoint, so it answers with the platform default: the environment's endpoint when
``OPENAI_BASE_URL`` is set, else the offline demo model.
"""

from __future__ import annotations

from django.db import transaction

from agents.models import Agent
from platform_core.models import Organization

DEMO_AGENT_NAME = "Purchasing assistant"
DEMO_AGENT_INSTRUCTIONS = (
    "You help the purchasing team with purchase orders and payments in the ERP. Look things up with the "
    "ERP tools before answering, quote order numbers and amounts exactly, and never invent data."
)


@transaction.atomic
def demo_agent_seed(org: Organization) -> None:
    """Create the demo agent (idempotent) and give it every demo connector of the organisation."""
    from connectors.models import Connector

    agent, _ = Agent.objects.get_or_create(
        organization=org,
        name=DEMO_AGENT_NAME,
        defaults={
            "description": "Answers questions about purchase orders and payments.",
            "instructions": DEMO_AGENT_INSTRUCTIONS,
        },
    )
    connectors = Connector.objects.filter(organization=org, name="erp")
    agent.connectors.add(*connectors)
