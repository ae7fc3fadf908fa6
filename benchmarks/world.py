"""Set up the load benchmark's organisation in the database named by ``DATABASE_URL`` (a subprocess).

    DATABASE_URL=postgres://…/agent_platform_bench python -m benchmarks.world --llm URL --erp URL --conversations N

One member with a Bearer token, the organisation's model endpoint (the benchmark's streaming model), an
``erp`` connector with ``get_order`` and ``slow_report`` on the benchmark's ERP, an agent using it, and
``N`` conversations. Prints the token and the conversation ids as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os

import django


def build(*, llm_base_url: str, erp_base_url: str, conversations: int) -> dict[str, object]:
    from agents.models import Conversation
    from platform_core.identity.api_keys.keys import api_token_issue
    from platform_core.models import Role
    from tests import factories as _factories  # noqa: F401  (loads the factory modules in their order)
    from tests.agents.factories import AgentFactory, ModelConfigFactory
    from tests.factories import ConnectorActionFactory, ConnectorFactory, OrganizationFactory, member_of

    org = OrganizationFactory(slug="bench", name="Bench")
    user = member_of(org, Role.MEMBER, username="bench-user")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True, timeout=120)
    erp = ConnectorFactory(
        organization=org, name="erp", base_url=erp_base_url, allowed_private_hosts=["127.0.0.1"]
    )
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
    agent = AgentFactory(
        organization=org, name="Orders", instructions="Answer briefly.", completion_check=False
    )
    agent.connectors.add(erp)
    rows = Conversation.objects.bulk_create(
        Conversation(organization=org, user=user, agent=agent, title=f"load {n}")
        for n in range(conversations)
    )
    return {"token": api_token_issue(user=user, name="bench")[1], "conversations": [str(c.pk) for c in rows]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--llm", required=True)
    parser.add_argument("--erp", required=True)
    parser.add_argument("--conversations", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    django.setup()
    world = build(llm_base_url=args.llm, erp_base_url=args.erp, conversations=args.conversations)
    print(json.dumps(world))


if __name__ == "__main__":
    main()
