"""Set up the multi-process tests' organisation in the database named by ``DATABASE_URL`` (a subprocess).

    DATABASE_URL=postgres://…/scratch python -m tests.production.world --llm URL --erp URL --feishu URL

The purchasing organisation of the guard-rail tests (an ERP connector on the loopback HTTP service, an
agent whose model endpoint is the scripted LLM, a Feishu channel on the fake Feishu server) with a policy
holding payments over 50,000 for the boss (Feishu) or the approver (web). Prints what the tests need as
one JSON line: ids and the Bearer tokens of the requester and the approver.
"""

from __future__ import annotations

from tests.production.processes import world_main

BOSS = "ou_boss"


def build(*, llm_base_url: str, erp_base_url: str, feishu_base_url: str) -> dict[str, str]:
    from platform_core.identity.api_keys.keys import api_token_issue
    from tests import factories as _factories  # noqa: F401  (loads the factory modules in their order)
    from tests.hooks.factories import ApprovalPolicyFactory
    from tests.hooks.scenario import build_purchasing

    world = build_purchasing(
        llm_base_url=llm_base_url, erp_base_url=erp_base_url, feishu_base_url=feishu_base_url
    )
    ApprovalPolicyFactory(
        organization=world.org,
        name="Large payments",
        actions=[world.actions["create_payment"]],
        condition="amount > 50000",
        approver_open_ids=[BOSS],
        approver_users=[world.approver],
        channel=world.channel,
    )
    assert world.channel is not None
    return {
        "org": world.org.slug,
        "agent": str(world.agent.pk),
        "channel": str(world.channel.pk),
        "requester_token": api_token_issue(user=world.requester, name="prod-tests")[1],
        "approver_token": api_token_issue(user=world.approver, name="prod-tests")[1],
        "approver": world.approver.get_username(),
    }


def main() -> None:
    world_main(build, {"--llm": "llm_base_url", "--erp": "erp_base_url", "--feishu": "feishu_base_url"})


if __name__ == "__main__":
    main()
