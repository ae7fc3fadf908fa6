"""Attachment tests keep their files in a folder of their own, or in a bucket of a real S3-compatible
server (the knowledge bases' ``s3_storage``, SeaweedFS's gateway)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.knowledge.conftest import s3_server, s3_storage  # noqa: F401 - the same real S3 server


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


def stored_files(root: Path) -> list[str]:
    """The files under ``root``, as paths relative to it."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


@pytest.fixture
def key_client():
    """``key_client(user, scopes)``: an API client with a personal key of ``user`` holding only ``scopes``."""
    from rest_framework.test import APIClient

    from platform_core.models import ApiKey, ApiKeyAddress

    def make(user, scopes):
        raw = ApiKey.new_raw()
        key = ApiKey.objects.create(
            user=user,
            name="scoped",
            key_prefix=raw[:12],
            key_hash=ApiKey.hash_raw(raw),
            scopes=scopes,
            last_used_ip="127.0.0.1",
        )
        ApiKeyAddress.objects.create(key=key, ip_address="127.0.0.1")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make
