"""Configuration from the environment, with the embedded defaults of DESIGN section 6.

Everything the platform reads from the environment goes through this module, so settings.py stays a
plain list of values and ``.env.example`` can list every variable in one place.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import overload

from cryptography.fernet import Fernet

BASE_DIR = Path(__file__).resolve().parent.parent
LOCAL_SECRETS_FILE = BASE_DIR / ".local-secrets.env"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ImproperlyConfiguredEnv(RuntimeError):
    """A required variable is missing or malformed."""


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    """The variable's value; ``default`` when it is unset or empty."""
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfiguredEnv(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name} must be a whole number, not {raw!r}") from exc


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def is_production() -> bool:
    """``DJANGO_ENV=production`` turns off every generated default: secrets must come from the environment."""
    return (env_str("DJANGO_ENV", "development") or "").lower() == "production"


def _read_local_secrets() -> dict[str, str]:
    values: dict[str, str] = {}
    if LOCAL_SECRETS_FILE.exists():
        for line in LOCAL_SECRETS_FILE.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                values[key.strip()] = value.strip()
    return values


def _write_local_secrets(values: dict[str, str]) -> None:
    body = "# Generated on first run for local development. Never commit this file.\n"
    body += "".join(f"{key}={value}\n" for key, value in sorted(values.items()))
    LOCAL_SECRETS_FILE.write_text(body)
    LOCAL_SECRETS_FILE.chmod(0o600)


def local_secret(name: str) -> str:
    """Return ``name`` from the environment, else from the git-ignored local file, generating it there.

    In production nothing is generated: a missing secret stops the process with a clear message.
    """
    value = env_str(name)
    if value:
        return value
    if is_production():
        raise ImproperlyConfiguredEnv(f"{name} must be set in the environment when DJANGO_ENV=production")
    stored = _read_local_secrets()
    if name not in stored:
        stored[name] = _generate(name)
        _write_local_secrets(stored)
    return stored[name]


def _generate(name: str) -> str:
    if name == "FIELD_ENCRYPTION_KEYS":
        return Fernet.generate_key().decode()
    return secrets.token_urlsafe(50)
