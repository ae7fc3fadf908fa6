from __future__ import annotations

import pytest

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_login_page_is_served_and_signs_in(client, member):
    page = client.get("/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    response = client.post("/login/", {"username": member.username, "password": PASSWORD})
    assert response.status_code == 302
    home = client.get("/")
    assert b"Acme" in home.content


def test_home_requires_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_wrong_password_shows_an_error(client, member):
    response = client.post("/login/", {"username": member.username, "password": "nope"})
    assert response.status_code == 200 and b'role="alert"' in response.content


def test_pages_speak_simplified_chinese_when_the_browser_asks(client):
    response = client.get("/login/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert response.status_code == 200
    assert "登录".encode() in response.content


def test_sign_out_ends_the_session(client, member):
    client.login(username=member.username, password=PASSWORD)
    client.post("/logout/")
    assert client.get("/").status_code == 302


def test_home_links_approvers_to_the_approvals_inbox_but_not_members(client, member, approver, org):
    client.login(username=approver.username, password=PASSWORD)
    assert f"/o/{org.slug}/approvals/".encode() in client.get("/").content
    client.login(username=member.username, password=PASSWORD)
    page = client.get("/").content
    assert f"/o/{org.slug}/approvals/".encode() not in page and f"/o/{org.slug}/chat/".encode() in page
