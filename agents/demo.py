"""Demo seeder: the demo organisation's "Purchasing assistant" on the demo ERP connectors (the HTTP API and
the MCP server), exposed over MCP, with the demo knowledge base and the skill "purchase-approval", its
example questions and the approval policies they meet: "Large payments" and "MCP purchase requests"
(every purchase request created through the MCP server waits).

The agent names no model endpoint, so it answers with the platform default: the environment's endpoint
when ``OPENAI_BASE_URL`` is set, else the offline demo model. Its mode is automatic, so the offline demo
model sends the question with two parts to plan mode and the others to ReAct.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.knowledge.demo import DEMO_KNOWLEDGE_BASE, demo_knowledge_seed
from agents.memory.connector import agent_memory_ready
from agents.models import Agent, ExecutionMode
from agents.skills.demo import DEMO_SKILL_QUESTION, demo_skill_seed
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
    # Through the demo MCP server (connector "erp_mcp"): a read, and a write held for approval.
    "Find the purchase orders from Nordic Office AB on the MCP server",
    "Create a purchase request for 2,400 CNY from Nordic Office AB",
    # From the knowledge base "purchasing_policy", answered with a citation (Chinese questions work
    # the same way: tests/agents/test_demo_phrasings.py).
    "What does the purchasing policy say about checking new suppliers?",
    # From the skill "purchase-approval" (agents.skills.demo), read with skills__read_skill.
    DEMO_SKILL_QUESTION,
]
DEMO_POLICY_NAME = "Large payments"
DEMO_POLICY_CONDITION = "amount > 10000"
DEMO_MCP_POLICY_NAME = "MCP purchase requests"
DEMO_CONNECTOR_NAMES = ["erp", "purchasing", "erp_mcp", DEMO_KNOWLEDGE_BASE]


@transaction.atomic
def demo_agent_seed(org: Organization) -> None:
    """Create the demo agent and its approval policy (idempotent); give it every demo connector and the
    demo knowledge base."""
    from connectors.models import Connector

    demo_knowledge_seed(org)

    agent, _ = Agent.objects.get_or_create(
        organization=org,
        name=DEMO_AGENT_NAME,
        defaults={
            "description": "Answers questions about purchase orders and payments.",
            "instructions": DEMO_AGENT_INSTRUCTIONS,
            "execution_mode": ExecutionMode.AUTO,
            "example_questions": DEMO_EXAMPLE_QUESTIONS,
            "exposed_over_mcp": True,
            "memory": True,
        },
    )
    agent_memory_ready(agent, actor=None)
    if not agent.example_questions:  # seeded before agents had example questions
        agent.example_questions = DEMO_EXAMPLE_QUESTIONS
        agent.save(update_fields=["example_questions"])
    elif DEMO_SKILL_QUESTION not in agent.example_questions and len(agent.example_questions) < len(
        DEMO_EXAMPLE_QUESTIONS
    ):  # seeded before the demo had a skill
        agent.example_questions = [*agent.example_questions, DEMO_SKILL_QUESTION]
        agent.save(update_fields=["example_questions"])
    demo_skill_seed(org, agent)
    connectors = Connector.objects.filter(organization=org, name__in=DEMO_CONNECTOR_NAMES)
    agent.connectors.add(*connectors)
    # Payments above 10,000 wait for an owner, admin or approver of the organisation.
    _policy_seed(
        org,
        DEMO_POLICY_NAME,
        {
            "description": "Demo: a payment above 10,000 waits for a person to approve it.",
            "condition": DEMO_POLICY_CONDITION,
        },
        {"connector__name": "erp", "name": "create_payment"},
    )
    # Every purchase request created through the demo MCP server waits for one of them too.
    _policy_seed(
        org,
        DEMO_MCP_POLICY_NAME,
        {"description": "Demo: a purchase request made through the MCP server waits for a person."},
        {"connector__name": "erp_mcp", "mcp_tool": "create_purchase_request"},
    )


def _policy_seed(org: Organization, name: str, defaults: dict[str, Any], actions: dict[str, Any]) -> None:
    """The approval policy ``name``, created with ``defaults`` over the organisation's connector actions
    matching ``actions``; one that exists is left as it is."""
    from connectors.models import ConnectorAction
    from hooks.models import ApprovalPolicy

    policy, created = ApprovalPolicy.objects.get_or_create(organization=org, name=name, defaults=defaults)
    if created:
        policy.actions.add(*ConnectorAction.objects.filter(organization=org, **actions))
