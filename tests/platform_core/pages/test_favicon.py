"""Browsers ask every site for /favicon.ico, and the pages name an icon of their own: neither is a 404."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static


@pytest.mark.django_db
def test_favicon_ico_leads_to_the_platform_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == static("favicon.svg")
    assert finders.find("favicon.svg")


@pytest.mark.django_db
def test_pages_name_the_platform_icon(client):
    page = client.get("/login/").content.decode()
    assert f'<link rel="icon" href="{static("favicon.svg")}" type="image/svg+xml">' in page
