from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_core.models import Organization
from platform_core.services import organization_create


class Command(BaseCommand):
    help = "Create an organisation: create_org SLUG --name NAME"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)

    def handle(self, *args: Any, slug: str, name: str, **options: Any) -> None:
        if Organization.objects.filter(slug=slug).exists():
            raise CommandError(f"An organisation with the slug {slug!r} already exists.")
        try:
            org = organization_create(slug=slug, name=name)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        self.stdout.write(self.style.SUCCESS(f"Created organisation {org.slug} ({org.name})."))
