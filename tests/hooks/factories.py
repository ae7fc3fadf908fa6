"""Factories of the guard rails; every child takes its organisation from its parent."""

from __future__ import annotations

from datetime import timedelta

import factory
from django.utils import timezone

from hooks.models import AgentHookSettings, ApprovalPolicy, ApprovalRequest, FeishuChannel, RateLimit
from tests.agents.factories import AgentFactory
from tests.factories import ConnectorFactory, OrganizationFactory
from tests.fakes.feishu_server import FAKE_APP_ID, FAKE_APP_SECRET, FAKE_ENCRYPT_KEY, FAKE_VERIFICATION_TOKEN


class FeishuChannelFactory(factory.django.DjangoModelFactory):
    """A channel with the fake Feishu server's credentials (point ``base_url`` at the fake)."""

    class Meta:
        model = FeishuChannel

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"feishu-{n}")
    app_id = FAKE_APP_ID
    app_secret = FAKE_APP_SECRET
    verification_token = FAKE_VERIFICATION_TOKEN
    encrypt_key = FAKE_ENCRYPT_KEY
    base_url = "http://127.0.0.1:9"
    default_chat_id = "oc_approvals"
    language = "en"


class ApprovalPolicyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ApprovalPolicy
        skip_postgeneration_save = True

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"policy-{n}")
    approver_open_ids = factory.LazyFunction(lambda: ["ou_boss"])
    timeout_seconds = 600

    @factory.post_generation
    def actions(obj, create, extracted, **kwargs):  # noqa: N805
        if create and extracted:
            obj.actions.set(extracted)

    @factory.post_generation
    def connectors(obj, create, extracted, **kwargs):  # noqa: N805
        if create and extracted:
            obj.connectors.set(extracted)

    @factory.post_generation
    def approver_users(obj, create, extracted, **kwargs):  # noqa: N805
        if create and extracted:
            obj.approver_users.set(extracted)


class ApprovalRequestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ApprovalRequest
        skip_postgeneration_save = True

    organization = factory.SubFactory(OrganizationFactory)
    policy = factory.SubFactory(ApprovalPolicyFactory, organization=factory.SelfAttribute("..organization"))
    policy_name = factory.LazyAttribute(lambda o: o.policy.name)
    agent_name = "Purchasing assistant"
    tool_call_id = factory.Sequence(lambda n: f"call-{n}")
    tool_name = "erp__create_payment"
    arguments = factory.LazyFunction(lambda: {"amount": 60000, "currency": "CNY"})
    approver_open_ids = factory.LazyFunction(lambda: ["ou_boss"])
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=10))
    # bound to its channel's credentials as approval_request_create binds it
    channel_credentials_version = factory.LazyAttribute(
        lambda o: o.channel.credentials_version if getattr(o, "channel", None) else None
    )

    @factory.post_generation
    def approver_users(obj, create, extracted, **kwargs):  # noqa: N805
        if create and extracted:
            obj.approver_users.set(extracted)


class RateLimitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RateLimit

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"limit-{n}")
    max_calls = 10
    period_seconds = 60


class AgentHookSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentHookSettings

    agent = factory.SubFactory(AgentFactory)
    organization = factory.SelfAttribute("agent.organization")


HOOKS_TENANT_FACTORIES = {
    FeishuChannel: lambda org: FeishuChannelFactory(organization=org),
    ApprovalPolicy: lambda org: ApprovalPolicyFactory(
        organization=org, connectors=[ConnectorFactory(organization=org)]
    ),
    ApprovalRequest: lambda org: ApprovalRequestFactory(organization=org),
    RateLimit: lambda org: RateLimitFactory(organization=org),
    AgentHookSettings: lambda org: AgentHookSettingsFactory(agent=AgentFactory(organization=org)),
}
