"""The invitation e-mail of a new member says truthfully what happened to it (issue 32): sent through
SMTP (a real SMTP server on loopback), written into the mail folder by the embedded default, or failed:
never a traceback, never a claim of a send that did not happen."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from django.test import override_settings
from django.urls import reverse

from tests.factories import PASSWORD
from tests.fakes.smtp_server import FakeSMTPServer
from tests.platform_core.fresh_process import printed_after_setup

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[4]
SMTP = "django.core.mail.backends.smtp.EmailBackend"
FILES = "django.core.mail.backends.filebased.EmailBackend"


@pytest.fixture
def as_admin(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def invite(client, org, email: str = "nina@example.com"):
    url = reverse("members-invite", kwargs={"org_slug": org.slug})
    return client.post(url, {"email": email, "role": "member"}, headers={"accept-language": "en"})


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_invitation_sent_through_smtp_reaches_the_server_and_the_page_says_so(as_admin, org):
    with (
        FakeSMTPServer() as smtp,
        override_settings(EMAIL_BACKEND=SMTP, EMAIL_HOST="127.0.0.1", EMAIL_PORT=smtp.port),
    ):
        response = invite(as_admin, org)

    page = response.content.decode()
    link = response.context["invited"].set_password_url
    assert [m.recipients for m in smtp.messages] == [["nina@example.com"]]
    assert link in smtp.messages[0].text
    assert "was sent by e-mail to nina@example.com" in page
    assert link in page


def test_a_failed_send_is_reported_as_failed_with_the_link_and_no_traceback(as_admin, org, caplog):
    with (
        override_settings(EMAIL_BACKEND=SMTP, EMAIL_HOST="127.0.0.1", EMAIL_PORT=_closed_port()),
        caplog.at_level(logging.WARNING),
    ):
        response = invite(as_admin, org)

    page = response.content.decode()
    assert response.status_code == 200
    assert "could not be sent" in page
    assert "sent by e-mail" not in page
    assert response.context["invited"].set_password_url in page  # the admin passes it on
    assert not [r for r in caplog.records if r.exc_info], "a failed send logs one line, not a traceback"
    assert any("could not be sent" in r.getMessage() for r in caplog.records)


def test_the_file_backend_writes_the_link_into_the_mail_folder_and_the_page_says_where(
    as_admin, org, tmp_path
):
    folder = tmp_path / "mail"
    with override_settings(EMAIL_BACKEND=FILES, EMAIL_FILE_PATH=str(folder)):
        response = invite(as_admin, org)

    page = response.content.decode()
    link = response.context["invited"].set_password_url
    written = [p.read_text() for p in folder.iterdir()]
    assert len(written) == 1 and link in written[0].replace("=\n", "")
    assert str(folder) in page
    assert "sent by e-mail" not in page
    assert link in page


def _mail_settings(env: dict[str, str]) -> list[str]:
    code = (
        "from django.conf import settings as s; "
        "print(s.EMAIL_BACKEND); print(s.EMAIL_FILE_PATH); print(s.EMAIL_HOST, s.EMAIL_PORT)"
    )
    return printed_after_setup(code, env, dropped=("DJANGO_", "EMAIL_")).splitlines()


def test_the_embedded_default_writes_mail_into_var_mail():
    backend, folder, _host = _mail_settings({})

    assert backend == FILES
    assert Path(folder) == ROOT / "var" / "mail"


def test_a_configured_mail_host_sends_through_smtp():
    backend, _folder, host = _mail_settings({"EMAIL_HOST": "smtp.example.com", "EMAIL_PORT": "587"})

    assert backend == SMTP
    assert host == "smtp.example.com 587"
