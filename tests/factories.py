"""factory_boy factories. Child factories take their organisation from the parent so objects never
straddle organisations. ``TENANT_FACTORIES`` maps every tenant model to its factory: the admin
isolation meta-test fails for a tenant model admin whose model has none."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from platform_core.models import (
    ApiKey,
    ApiKeyScope,
    AuditLog,
    LinkedIdentity,
    MemberGroup,
    Membership,
    MembershipInvitation,
    Organization,
    Role,
)

PASSWORD = "correct horse battery staple"


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"org-{n}")
    name = factory.LazyAttribute(lambda o: f"Organisation {o.slug}")


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):  # noqa: N805
        if create:
            obj.save()


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


class MemberGroupFactory(factory.django.DjangoModelFactory):
    """A group of an organisation's members (issue 34); ``members`` must be members of it."""

    class Meta:
        model = MemberGroup
        skip_postgeneration_save = True

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"group-{n}")

    @factory.post_generation
    def members(obj, create, extracted, **kwargs):  # noqa: N805
        if create and extracted:
            obj.members.set(extracted)


class AuditLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditLog

    organization = factory.SubFactory(OrganizationFactory)
    action = "test.event"
    target_repr = factory.Sequence(lambda n: f"target {n}")


# --- connectors (issue 4) ---------------------------------------------------------------------------
from connectors.models import Connector, ConnectorAction, ConnectorCallLog  # noqa: E402


class ConnectorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Connector

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"system{n}")
    kind = "http"
    base_url = "https://erp.example.com/api"
    auth_type = "none"


class ConnectorActionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ConnectorAction

    connector = factory.SubFactory(ConnectorFactory)
    organization = factory.SelfAttribute("connector.organization")
    name = factory.Sequence(lambda n: f"action_{n}")
    description = "List the items."
    method = "GET"
    path_template = "/items"
    parameters = factory.LazyFunction(lambda: {"type": "object", "properties": {}})


class ConnectorCallLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ConnectorCallLog

    organization = factory.SubFactory(OrganizationFactory)
    connector = factory.SubFactory(ConnectorFactory, organization=factory.SelfAttribute("..organization"))
    tool_name = factory.LazyAttribute(lambda o: f"{o.connector.name}__list_items")
    status = "ok"
    arguments = factory.LazyFunction(dict)


def loopback_erp(org: Organization, base_url: str) -> Connector:
    """The HTTP connector ``erp`` of ``org`` on a loopback service, loopback allowed as an operator would."""
    return ConnectorFactory(
        organization=org, name="erp", base_url=base_url, allowed_private_hosts=["127.0.0.1"]
    )


# --- end connectors ----------------------------------------------------------------------------------


def member_of(org: Organization, role: str = Role.MEMBER, **user_fields: object):
    """A new user with ``role`` in ``org`` (staff when the role opens the admin)."""
    user_fields.setdefault("is_staff", role in (Role.OWNER, Role.ADMIN))
    user = UserFactory(**user_fields)
    MembershipFactory(organization=org, user=user, role=role)
    return user


def api_key_of_org(org: Organization, **kwargs: object) -> ApiKey:
    """An organisation API key (its raw value is discarded)."""
    from platform_core.identity.api_keys.keys import api_key_create

    options: dict = {"name": "ci", "scopes": [ApiKeyScope.READ], "actor": None, **kwargs}
    return api_key_create(organization=org, **options).key


def _membership_invitation(org: Organization) -> MembershipInvitation:
    """A pending invitation of an existing account into ``org`` (issue 31)."""
    from datetime import timedelta

    from django.utils import timezone

    return MembershipInvitation.objects.create(
        organization=org, user=UserFactory(), role=Role.MEMBER, expires_at=timezone.now() + timedelta(days=14)
    )


def _linked_identity(org: Organization) -> LinkedIdentity:
    """A member's Feishu account linked by hand in ``org`` (issue 20)."""
    user = member_of(org, Role.APPROVER)
    return LinkedIdentity.objects.create(
        user=user, provider="feishu", subject=f"ou_{user.pk}", open_id=f"ou_{user.pk}", organization=org
    )


TENANT_FACTORIES: dict[type, object] = {
    Organization: lambda org: org,
    ApiKey: api_key_of_org,
    Membership: lambda org: MembershipFactory(organization=org),
    MembershipInvitation: _membership_invitation,
    AuditLog: lambda org: AuditLogFactory(organization=org),
    LinkedIdentity: _linked_identity,
    MemberGroup: lambda org: MemberGroupFactory(organization=org),
    # connectors (issue 4)
    Connector: lambda org: ConnectorFactory(organization=org),
    ConnectorAction: lambda org: ConnectorActionFactory(connector__organization=org),
    ConnectorCallLog: lambda org: ConnectorCallLogFactory(organization=org),
}

# Per-app factory modules add their tenant models (imported last: they import the factories above).
from tests.agents.factories import AGENTS_TENANT_FACTORIES  # noqa: E402

TENANT_FACTORIES.update(AGENTS_TENANT_FACTORIES)

# guard rails and approvals (issue 6)
from tests.hooks.factories import HOOKS_TENANT_FACTORIES  # noqa: E402

TENANT_FACTORIES.update(HOOKS_TENANT_FACTORIES)

# single sign-on (issue 20)
from tests.platform_core.sso.factories import SSO_TENANT_FACTORIES  # noqa: E402

TENANT_FACTORIES.update(SSO_TENANT_FACTORIES)
