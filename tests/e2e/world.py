"""Set up the browser tests' world in the database named by ``DATABASE_URL`` (run as a subprocess).

    DATABASE_URL=sqlite:////tmp/x/e2e.sqlite3 python -m tests.e2e.world --llm URL --site URL --password PW

Creates the organisation ``acme``, the member ``mia``, the organisation's default model endpoint (the
scripted OpenAI-compatible server at ``--llm``) and the agent "Purchasing assistant" with the demo ERP
connector, which points at the server under test (``--site``). Prints the ids it made as JSON.
"""

from __future__ import annotations

from tests.production.processes import world_main


def build(*, llm_base_url: str, site_url: str, password: str) -> dict[str, str]:
    from django.conf import settings

    from agents.models import Agent, ModelConfig
    from connectors.demo.seed import DEMO_CONNECTOR_NAME, demo_connector_seed
    from connectors.models import Connector
    from platform_core.models import Role
    from platform_core.services import membership_set, organization_create, user_get_or_create

    org = organization_create(slug="acme", name="Acme Trading")
    user = user_get_or_create(username="mia", password=password)
    membership_set(organization=org, user=user, role=Role.MEMBER)
    ModelConfig.objects.create(
        organization=org,
        name="scripted",
        base_url=llm_base_url,
        model="scripted-model",
        api_key="sk-scripted-test",
        is_default=True,
        timeout=30,
    )
    settings.DEMO_API_BASE_URL = f"{site_url.rstrip('/')}/demo-api"
    demo_connector_seed(org)
    connector = Connector.objects.unscoped().get(organization=org, name=DEMO_CONNECTOR_NAME)
    agent = Agent.objects.create(
        organization=org,
        name="Purchasing assistant",
        description="Purchase orders and payments in the ERP.",
        instructions="You help the purchasing team. Use the ERP tools; answer briefly.",
        completion_check=False,
    )
    agent.connectors.add(connector)
    return {"org": org.slug, "username": user.get_username(), "agent": str(agent.pk)}


def main() -> None:
    world_main(build, {"--llm": "llm_base_url", "--site": "site_url", "--password": "password"})


if __name__ == "__main__":
    main()
