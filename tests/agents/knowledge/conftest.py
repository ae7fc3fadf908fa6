"""Knowledge-base tests store their documents in a folder of their own."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
