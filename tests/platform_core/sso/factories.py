"""Factories of the sign-in models (issue 20)."""

from __future__ import annotations

import factory
from django.utils import timezone

from platform_core.models import Role, SignInRule, SignInSettings
from tests.factories import OrganizationFactory


class SignInRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SignInRule

    organization = factory.SubFactory(OrganizationFactory)
    provider = "feishu"
    feishu_tenant_key = factory.Sequence(lambda n: f"tenant-{n}")
    email_domain = ""
    role = Role.MEMBER
    approved_at = factory.LazyFunction(timezone.now)  # approved by an operator; pass None for a bare claim


class SignInSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SignInSettings
        django_get_or_create = ("organization",)

    organization = factory.SubFactory(OrganizationFactory)
    password_login = True


SSO_TENANT_FACTORIES: dict[type, object] = {
    SignInRule: lambda org: SignInRuleFactory(organization=org),
    SignInSettings: lambda org: SignInSettingsFactory(organization=org),
}
