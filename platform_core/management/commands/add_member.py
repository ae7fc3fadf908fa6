from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_core.models import Organization, Role
from platform_core.services import (
    membership_set,
    service_user_refusal,
    user_get_or_create,
    user_is_service_user,
)


class Command(BaseCommand):
    help = (
        "Add a user to an organisation with a role, creating the user if needed: "
        "add_member SLUG USERNAME --role owner|admin|member|approver [--password PW]"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--password", default=None, help="set (or reset) the user's password")
        parser.add_argument("--email", default="")

    def handle(
        self,
        *args: Any,
        slug: str,
        username: str,
        role: str,
        password: str | None,
        email: str,
        **options: Any,
    ) -> None:
        org = Organization.objects.filter(slug=slug).first()
        if org is None:
            raise CommandError(f"No organisation with the slug {slug!r}. Create it with create_org first.")
        existing = get_user_model()._default_manager.filter(username=username).first()
        if existing is not None and user_is_service_user(existing):
            # before anything changes: a password would let someone sign in as the key (issue 31)
            raise CommandError(service_user_refusal().message)
        user = user_get_or_create(username=username, password=password, email=email)
        try:
            membership_set(organization=org, user=user, role=role)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(self.style.SUCCESS(f"{username} is now {role} of {slug}."))
