from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import ApiKeyScope


class Command(BaseCommand):
    help = (
        "Create a personal API key of USERNAME and print it once (only its hash is stored). Every scope "
        "and no expiry unless --scope and --expires-in-days say otherwise."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label to recognise the key later")
        parser.add_argument(
            "--scope",
            action="append",
            choices=ApiKeyScope.values,
            dest="scopes",
            help="a scope of the key (repeat for several); default: all of them",
        )
        parser.add_argument("--expires-in-days", type=int, default=None, help="the key expires after N days")

    def handle(
        self,
        *args: Any,
        username: str,
        name: str,
        scopes: list[str] | None,
        expires_in_days: int | None,
        **options: Any,
    ) -> None:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user named {username!r}.")
        if expires_in_days is not None and expires_in_days < 1:
            raise CommandError("--expires-in-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
        try:
            created = api_key_create(
                name=name, scopes=scopes or ApiKeyScope.values, expires_at=expires_at, owner=user, actor=None
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        # The bare key on stdout so scripts can capture it; the advice on stderr.
        self.stdout.write(created.raw)
        self.stderr.write("Use it as 'Authorization: Bearer <key>'. It is not shown again.")
