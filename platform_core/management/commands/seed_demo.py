from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from platform_core.demo import DEMO_ADMIN, demo_seed


def _site_url() -> str:
    """Where the platform is served: the origin of DEMO_API_BASE_URL when set (``make run`` sets it)."""
    base = getattr(settings, "DEMO_API_BASE_URL", "") or "http://127.0.0.1:8000/demo-api"
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}"


class Command(BaseCommand):
    help = "Create the demo organisation and its users (idempotent). New passwords are printed once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", default=None, help="the demo admin's password (default: random)")

    def handle(self, *args: Any, password: str | None, **options: Any) -> None:
        result = demo_seed(admin_password=password or secrets.token_urlsafe(9))
        if result.admin_password is not None:
            line = "=" * 64
            self.stdout.write(self.style.SUCCESS(line))
            self.stdout.write(self.style.SUCCESS(f"Demo organisation ready. Sign in at {_site_url()}/login/"))
            self.stdout.write(self.style.SUCCESS(f"  username: {DEMO_ADMIN}"))
            self.stdout.write(self.style.SUCCESS(f"  password: {result.admin_password}"))
            self.stdout.write(self.style.SUCCESS("This password is shown only once."))
            self.stdout.write(self.style.SUCCESS(line))
        else:
            self.stdout.write(
                f"Demo organisation already set up; sign in as {DEMO_ADMIN!r} "
                f"(reset the password with: manage.py changepassword {DEMO_ADMIN})."
            )
