from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_core.services import api_token_issue


class Command(BaseCommand):
    help = "Issue an API token for USERNAME and print it once (only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label to recognise the token later")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user named {username!r}.")
        _, raw = api_token_issue(user=user, name=name)
        # The bare token on stdout so scripts can capture it; the advice on stderr.
        self.stdout.write(raw)
        self.stderr.write("Use it as 'Authorization: Bearer <token>'. It is not shown again.")
