"""Configuration from the environment: embedded defaults, production fail-fast, deployment checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "REDIS_", "CELERY_"))
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


PRODUCTION = {
    "DJANGO_ENV": "production",
    "DJANGO_SETTINGS_MODULE": "platform_core.settings",
    "SECRET_KEY": "x" * 30 + "-production-secret-key-with-enough-entropy-7f3a9c",
    "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
    "ALLOWED_HOSTS": "agents.example.com",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
}


def test_check_deploy_is_clean_under_a_production_environment():
    result = _run(
        "import django,sys;from django.core.management import call_command;django.setup();"
        "call_command('check','--deploy','--fail-level','WARNING')",
        PRODUCTION,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_production_refuses_to_start_without_secrets():
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"}
    result = _run("import django;django.setup()", env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_service_urls_switch_database_channel_layer_cache_and_broker():
    code = (
        "import django;django.setup();from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE']);print(s.DATABASES['default']['CONN_MAX_AGE']);"
        "print(bool(s.DATABASES['default']['OPTIONS'].get('pool')));"
        "print(s.CHANNEL_LAYERS['default']['BACKEND']);print(s.CACHES['default']['BACKEND']);"
        "print(s.CELERY_BROKER_URL)"
    )
    lines = _run(code, PRODUCTION).stdout.split()
    assert lines == [
        "django.db.backends.postgresql",
        "0",
        "True",
        "platform_core.wiring.channel_layer.LeanRedisPubSubChannelLayer",
        "django.core.cache.backends.redis.RedisCache",
        "redis://127.0.0.1:6379/0",
    ]


def test_embedded_defaults_need_no_services():
    code = (
        "import django;django.setup();from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE']);print(s.CHANNEL_LAYERS['default']['BACKEND']);"
        "print(s.CELERY_BROKER_URL)"
    )
    result = _run(code, {"DJANGO_SETTINGS_MODULE": "platform_core.settings"})
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "channels.layers.InMemoryChannelLayer",
        "filesystem://",
    ]


def test_bad_boolean_in_the_environment_is_a_clear_error():
    result = _run(
        "import django;django.setup()",
        {"DJANGO_SETTINGS_MODULE": "platform_core.settings", "LLM_TOOL_CALL": "maybe"},
    )
    assert result.returncode != 0 and "LLM_TOOL_CALL must be true or false" in result.stderr
