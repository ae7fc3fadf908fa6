"""A minimal SMTP server on loopback for tests: it accepts every message and keeps it in ``messages``.

Enough of RFC 5321 for Python's ``smtplib`` (what Django's SMTP backend uses): greeting, EHLO/HELO,
MAIL, RCPT, DATA with dot-stuffing, RSET, NOOP and QUIT; no TLS, no authentication.
"""

from __future__ import annotations

import socketserver
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any, Self


@dataclass
class ReceivedMail:
    """One message as the server received it."""

    sender: str
    recipients: list[str]
    data: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = message_from_bytes(self.data, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed

    @property
    def text(self) -> str:
        body = self.message.get_body(preferencelist=("plain",))
        return body.get_content() if body is not None else ""


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def reply(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode("ascii"))

    def handle(self) -> None:
        sender, recipients = "", []
        self.reply("220 fake-smtp ready")
        while line := self.rfile.readline():
            verb, _space, arg = line.decode("ascii", "replace").strip().partition(" ")
            verb = verb.upper()
            if verb == "EHLO":
                self.wfile.write(b"250-fake-smtp\r\n250 8BITMIME\r\n")
            elif verb in {"HELO", "NOOP"}:
                self.reply("250 ok")
            elif verb == "MAIL":
                sender, recipients = arg.partition(":")[2].strip().strip("<>"), []
                self.reply("250 ok")
            elif verb == "RCPT":
                recipients.append(arg.partition(":")[2].strip().strip("<>"))
                self.reply("250 ok")
            elif verb == "DATA":
                self.reply("354 end with <CRLF>.<CRLF>")
                self.server.owner.received(ReceivedMail(sender, recipients, self._data()))
                self.reply("250 queued")
            elif verb == "RSET":
                sender, recipients = "", []
                self.reply("250 ok")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not implemented")

    def _data(self) -> bytes:
        lines = []
        while (line := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)
        return b"".join(lines)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: FakeSMTPServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


@dataclass
class FakeSMTPServer:
    """``with FakeSMTPServer() as smtp:`` serves on ``smtp.port`` until the block ends."""

    messages: list[ReceivedMail] = field(default_factory=list)
    _server: _Server | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeSMTPServer is not started")
        return int(self._server.server_address[1])

    def received(self, mail: ReceivedMail) -> None:
        with self._lock:
            self.messages.append(mail)

    def start(self) -> None:
        self._server = _Server(self)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
