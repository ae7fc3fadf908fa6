"""Pytest plugin: ``fake_dns``, a resolver for the SSRF guard that knows only the names a test gives it.

``fake_dns["name"] = ["10.0.0.1"]`` makes the guard (async at call time, sync at save time) resolve
``name`` to those addresses; every lookup is recorded in ``fake_dns["<lookups>"]``. A fake name resolved
anywhere else (a second lookup behind the guard's back) fails the test.
"""

from __future__ import annotations

import socket

import pytest

from connectors import ssrf


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names the guard's resolver knows; every lookup is counted in ``fake_dns["<lookups>"]``."""
    answers: dict[str, list[str]] = {"<lookups>": []}

    def lookup(host: str) -> list[str]:
        answers["<lookups>"].append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return answers[host]

    async def resolve(host: str, port: int) -> list[str]:
        return lookup(host)

    def resolve_sync(host: str, port: int) -> list[str]:
        return lookup(host)

    real_getaddrinfo = socket.getaddrinfo

    def no_second_lookup(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        if host in answers:
            raise AssertionError(f"{host} was resolved a second time, outside the guard")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(ssrf, "_getaddrinfo", resolve)
    monkeypatch.setattr(ssrf, "_getaddrinfo_sync", resolve_sync)
    monkeypatch.setattr(socket, "getaddrinfo", no_second_lookup)
    return answers
