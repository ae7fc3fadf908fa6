"""Demo seeder: the demo organisation's "Purchasing assistant" on the demo ERP connector, its example
questions and the "Large payments" approval policy they meet.

The agent names no model endpoint, so it answers with the platform default: the environment's endpoint
when ``OPENAI_BASE_URL`` is set, else the offline demo model. Its mode is automatic, so the offline demo
model sends the question with two parts to plan mode and the others to ReAct.
"""

from __future__ import annotations

from django.db import transaction

from agents.models import Agent, ExecutionMode
from platform_core.models import Organization

DEMO_AGENT_NAME = "Purchasing assistant"
DEMO_AGENT_INSTRUCTIONS = (
    "You help the purchasing team with purchase orders and payments in the ERP. Look things up with the "
    "ERP tools before answering, quote order numbers and amounts exactly, and never invent data."
)
# One that reads, one that writes and waits for approval (above the policy's limit), one that plan mode
# splits into two look-ups. tests/agents/test_demo_phrasings.py proves what the offline model does.
DEMO_EXAMPLE_QUESTIONS = [
    "Which purchase orders are still drafts?",
    "Pay 18,600 CNY for purchase order PO-0001",
    "Show the draft purchase orders and all payments",
]
DEMO_POLICY_NAME = "Large payments"
DEMO_POLICY_CONDITION = "amount > 10000"


@transaction.atomic
def demo_agent_seed(org: Organization) -> None:
    """Create the demo agent and its approval policy (idempotent); give it every demo connector."""
    from connectors.models import Connector

    agent, _ = Agent.objects.get_or_create(
        organization=org,
        name=DEMO_AGENT_NAME,
        defaults={
            "description": "Answers questions about purchase orders and payments.",
            "instructions": DEMO_AGENT_INSTRUCTIONS,
            "execution_mode": ExecutionMode.AUTO,
            "example_questions": DEMO_EXAMPLE_QUESTIONS,
        },
    )
    if not agent.example_questions:  # seeded before agents had example questions
        agent.example_questions = DEMO_EXAMPLE_QUESTIONS
        agent.save(update_fields=["example_questions"])
    connectors = Connector.objects.filter(organization=org, name__in=["erp", "purchasing"])
    agent.connectors.add(*connectors)
    _demo_policy_seed(org)


def _demo_policy_seed(org: Organization) -> None:
    """Payments above 10,000 wait for an owner, admin or approver of the organisation."""
    from connectors.models import ConnectorAction
    from hooks.models import ApprovalPolicy

    policy, created = ApprovalPolicy.objects.get_or_create(
        organization=org,
        name=DEMO_POLICY_NAME,
        defaults={
            "description": "Demo: a payment above 10,000 waits for a person to approve it.",
            "condition": DEMO_POLICY_CONDITION,
        },
    )
    if created:
        payments = ConnectorAction.objects.filter(
            organization=org, connector__name="erp", name="create_payment"
        )
        policy.actions.add(*payments)
