"""Seed the fuzzer's world in the database named by ``DATABASE_URL`` (run as a subprocess).

    DATABASE_URL=sqlite:////tmp/x/fuzz.sqlite3 python -m tests.fuzz.world --dead-url http://127.0.0.1:9

Creates the organisation ``fuzz``, its owner ``fuzz-owner`` with a personal API key of every scope, and
one object of each kind an admin configures (a model endpoint, an agent with a conversation, the demo
connector, a Feishu channel, an approval policy, a rate limit), so that the routes with an id have
something to find. Every outbound URL points at ``--dead-url`` (a loopback port nobody listens on): a
check or a test card fails fast and the same way on every run. Prints the key, the slug and the seeded ids
(by route segment) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os

import django


def build(*, dead_url: str) -> dict[str, object]:
    from django.conf import settings

    from agents.models import Agent, Conversation, ModelConfig
    from connectors.demo.seed import DEMO_CONNECTOR_NAME, demo_connector_seed
    from connectors.models import Connector
    from hooks.models import ApprovalPolicy, FeishuChannel, RateLimit
    from platform_core.identity.api_keys.keys import api_key_create
    from platform_core.models import ApiKeyScope, Role
    from platform_core.services import membership_set, organization_create, user_get_or_create

    org = organization_create(slug="fuzz", name="Fuzz Ltd")
    owner = user_get_or_create(username="fuzz-owner", password=None)
    membership_set(organization=org, user=owner, role=Role.OWNER)
    created = api_key_create(name="fuzzer", scopes=ApiKeyScope.values, actor=owner, owner=owner)
    model_config = ModelConfig.objects.create(
        organization=org,
        name="dead",
        base_url=f"{dead_url}/v1",
        model="dead-model",
        api_key="sk-fuzz-not-a-key",
        is_default=True,
        timeout=5,
    )
    settings.DEMO_API_BASE_URL = f"{dead_url}/demo-api"
    demo_connector_seed(org)
    connector = Connector.objects.unscoped().get(organization=org, name=DEMO_CONNECTOR_NAME)
    agent = Agent.objects.create(organization=org, name="Fuzz agent", instructions="Answer briefly.")
    agent.connectors.add(connector)
    conversation = Conversation.objects.create(organization=org, agent=agent, user=owner, title="fuzz")
    channel = FeishuChannel.objects.create(
        organization=org,
        name="fuzz channel",
        app_id="cli_fuzz",
        app_secret="fuzz-app-secret",
        default_chat_id="oc_fuzz",
    )
    policy = ApprovalPolicy.objects.create(organization=org, name="payments", channel=channel)
    policy.connectors.add(connector)
    limit = RateLimit.objects.create(organization=org, name="ten a minute", max_calls=10, period_seconds=60)
    ids: dict[str, str | int] = {
        "model-configs": str(model_config.pk),
        "feishu-channels": str(channel.pk),
        "connectors": str(connector.pk),
        "agents": str(agent.pk),
        "conversations": str(conversation.pk),
        "approval-policies": policy.pk,
        "rate-limits": limit.pk,
    }
    return {"org": org.slug, "key": created.raw, "ids": ids}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dead-url", required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    django.setup()
    print(json.dumps(build(dead_url=args.dead_url.rstrip("/"))))


if __name__ == "__main__":
    main()
