"""Set up the load benchmark's organisation in the database named by ``DATABASE_URL`` (a subprocess).

    DATABASE_URL=postgres://…/agent_platform_bench python -m benchmarks.world --llm URL --erp URL --conversations N

One member with a Bearer token, the organisation's model endpoint (the benchmark's streaming model), an
``erp`` connector with ``get_order`` and ``slow_report`` on the benchmark's ERP, an agent using it, and
``N`` conversations. Prints the token and the conversation ids as one JSON line.
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import world_main


def org_with_erp(
    slug: str, name: str, *, llm_base_url: str, erp_base_url: str, model_timeout: int
) -> tuple[Any, Any]:
    """An organisation whose default model endpoint is the benchmark's model, and its ``erp`` connector on
    the benchmark's ERP (loopback servers both)."""
    from tests import factories as _factories  # noqa: F401  (loads the factory modules in their order)
    from tests.agents.factories import ModelConfigFactory
    from tests.factories import ConnectorFactory, OrganizationFactory

    org = OrganizationFactory(slug=slug, name=name)
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True, timeout=model_timeout)
    erp = ConnectorFactory(
        organization=org, name="erp", base_url=erp_base_url, allowed_private_hosts=["127.0.0.1"]
    )
    return org, erp


def agent_conversations(org: Any, user: Any, erp: Any, *, name: str, title: str, count: int) -> list[str]:
    """An agent called ``name`` using ``erp``, and the ids of ``count`` conversations of ``user`` with it
    (titled ``title`` and their number)."""
    from agents.models import Conversation
    from tests.agents.factories import AgentFactory

    agent = AgentFactory(organization=org, name=name, instructions="Answer briefly.", completion_check=False)
    agent.connectors.add(erp)
    rows = Conversation.objects.bulk_create(
        Conversation(organization=org, user=user, agent=agent, title=f"{title} {n}") for n in range(count)
    )
    return [str(c.pk) for c in rows]


def build(*, llm_base_url: str, erp_base_url: str, conversations: int) -> dict[str, object]:
    from platform_core.identity.api_keys.keys import api_token_issue
    from platform_core.models import Role
    from tests.factories import ConnectorActionFactory, member_of

    org, erp = org_with_erp(
        "bench", "Bench", llm_base_url=llm_base_url, erp_base_url=erp_base_url, model_timeout=120
    )
    user = member_of(org, Role.MEMBER, username="bench-user")
    ConnectorActionFactory(
        connector=erp,
        name="get_order",
        description="Look up one purchase order.",
        path_template="/orders/{order_id}",
        parameters={
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        param_locations={"order_id": "path"},
    )
    ConnectorActionFactory(
        connector=erp, name="slow_report", description="A long report.", path_template="/slow"
    )
    ids = agent_conversations(org, user, erp, name="Orders", title="load", count=conversations)
    return {"token": api_token_issue(user=user, name="bench")[1], "conversations": ids}


if __name__ == "__main__":
    world_main(build)
