"""The demo organisation that ``seed_demo`` (and ``make run``) creates. Later apps extend it with
connectors and agents through :data:`DEMO_SEEDERS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from platform_core.models import Organization, Role
from platform_core.services import membership_set, organization_create, user_get_or_create

DEMO_ORG_SLUG = "demo"
DEMO_ORG_NAME = "Demo Trading Co."
DEMO_ADMIN = "admin"

# Callables taking the demo organisation, run after the core objects exist (idempotent each).
DEMO_SEEDERS: list[Callable[[Organization], None]] = []


@dataclass(frozen=True)
class DemoSeedResult:
    organization: Organization
    admin_password: str | None  # set only when the admin user was created by this call


@transaction.atomic
def demo_seed(*, admin_password: str) -> DemoSeedResult:
    """Create (or complete) the demo organisation with an owner account; idempotent."""
    org = Organization.objects.filter(slug=DEMO_ORG_SLUG).first()
    if org is None:
        org = organization_create(slug=DEMO_ORG_SLUG, name=DEMO_ORG_NAME)
    from django.contrib.auth import get_user_model

    created_password = None
    if not get_user_model().objects.filter(username=DEMO_ADMIN).exists():
        user_get_or_create(username=DEMO_ADMIN, password=admin_password)
        created_password = admin_password
    admin = get_user_model().objects.get(username=DEMO_ADMIN)
    membership_set(organization=org, user=admin, role=Role.OWNER)
    for seeder in DEMO_SEEDERS:
        seeder(org)
    return DemoSeedResult(organization=org, admin_password=created_password)
