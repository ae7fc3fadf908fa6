from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from platform_core.crypto import encrypted_fields, rotate_encryption_keys


class Command(BaseCommand):
    help = (
        "Re-encrypt every encrypted field of every model with the first key of FIELD_ENCRYPTION_KEYS. "
        "Put the new key first, keep the old ones after it, run this, then remove the old keys."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        covered = encrypted_fields()
        report = rotate_encryption_keys()
        names = ", ".join(
            f"{model._meta.label}({', '.join(f.name for f in fields)})" for model, fields in covered.items()
        )
        self.stdout.write(f"Models with encrypted fields: {names or 'none'}")
        self.stdout.write(
            self.style.SUCCESS(f"Re-encrypted {report.reencrypted} value(s) with the first key.")
        )
        if report.failed:
            for item in report.failed:
                self.stderr.write(f"could not decrypt {item}: left unchanged")
            raise CommandError(
                f"{len(report.failed)} value(s) could not be decrypted with any configured key; "
                "keep the old keys until they are fixed"
            )
