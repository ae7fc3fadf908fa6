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
