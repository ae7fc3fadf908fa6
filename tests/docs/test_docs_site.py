"""The documentation site as the platform serves it: /docs/ picks the reader's language, pages come from
the built site (``DOCS_ROOT``) and nothing outside it, a missing build says how to make it, and the top
bar and the admin link to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from platform_core.models import Role
from tests.factories import member_of


@pytest.fixture
def built_docs(tmp_path: Path, settings) -> Path:
    for language, title in (("en", "Budgets"), ("zh", "预算")):
        folder = tmp_path / language / "admin-guide"
        folder.mkdir(parents=True)
        (tmp_path / language / "index.html").write_text(f"<h1>{language} home</h1>", encoding="utf-8")
        (folder / "budgets.html").write_text(f"<h1>{title}</h1>", encoding="utf-8")
        (tmp_path / language / "_static").mkdir()
        (tmp_path / language / "_static" / "docs.css").write_text("body{}", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside the languages' builds", encoding="utf-8")
    settings.DOCS_ROOT = tmp_path
    return tmp_path


def test_docs_home_opens_the_english_build_by_default(client: Client, built_docs: Path):
    response = client.get("/docs/")
    assert response.status_code == 302
    assert response["Location"] == "/docs/en/index.html"


def test_docs_home_opens_the_chinese_build_for_a_chinese_reader(client: Client, built_docs: Path):
    response = client.get("/docs/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert response["Location"] == "/docs/zh/index.html"


def test_a_built_page_is_served_with_its_type(client: Client, built_docs: Path):
    response = client.get("/docs/zh/admin-guide/budgets.html")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert "预算" in b"".join(response.streaming_content).decode()
    css = client.get("/docs/en/_static/docs.css")
    assert css.status_code == 200 and css["Content-Type"].startswith("text/css")


def test_a_language_folder_serves_its_index(client: Client, built_docs: Path):
    response = client.get("/docs/en/")
    assert response.status_code == 200
    assert "en home" in b"".join(response.streaming_content).decode()


@pytest.mark.parametrize(
    "path",
    ["/docs/en/../secret.txt", "/docs/en/%2e%2e/secret.txt", "/docs/fr/index.html", "/docs/en/nope.html"],
)
def test_nothing_outside_a_language_build_is_served(client: Client, built_docs: Path, path: str):
    assert client.get(path).status_code == 404


def test_an_unbuilt_site_says_how_to_build_it(client: Client, tmp_path: Path, settings):
    settings.DOCS_ROOT = tmp_path / "missing"
    response = client.get("/docs/en/index.html")
    assert response.status_code == 503
    assert "make docs" in response.content.decode()


def test_the_top_bar_links_to_the_docs_for_everyone(client: Client, db):
    page = client.get("/login/").content.decode()
    assert 'href="/docs/"' in page
    assert ">Help<" in page


def test_the_top_bar_help_link_is_translated(client: Client, db):
    page = client.get("/login/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert ">帮助<" in page


def test_the_admin_links_to_the_docs(client: Client, org):
    admin = member_of(org, Role.ADMIN, username="doc-ada")
    client.force_login(admin)
    page = client.get("/admin/").content.decode()
    assert 'href="/docs/"' in page
