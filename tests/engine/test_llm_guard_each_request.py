"""The connect guard is asked for every request to an IP literal (aiohttp connects to one without resolving
it), and for a name once per connection, through the resolver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from agents.engine.llm_client import _is_ip_literal
from tests.fakes.openai_server import text


class CountingGuard:
    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    async def check(self, host: str, port: int) -> Sequence[str]:
        self.asked.append((host, port))
        return ["127.0.0.1"]


async def _three_calls(base_url: str, guard: CountingGuard) -> None:
    llm = OpenAICompatibleLLM(base_url=base_url, api_key="sk-test", model="m", max_retries=0, guard=guard)
    try:
        for _ in range(3):
            assert (await llm.chat([{"role": "user", "content": "hi"}])).content == "ok"
    finally:
        await aclose_shared_clients()


async def test_every_request_to_an_ip_literal_asks_the_guard(scripted_llm: Any) -> None:
    scripted_llm.script(text("ok"), text("ok"), text("ok"))
    guard = CountingGuard()
    await _three_calls(scripted_llm.base_url, guard)
    port = int(scripted_llm.base_url.rsplit(":", 1)[1].split("/")[0])
    assert guard.asked == [("127.0.0.1", port)] * 3


async def test_a_name_is_asked_for_by_the_resolver_per_connection(scripted_llm: Any) -> None:
    scripted_llm.script(text("ok"), text("ok"), text("ok"))
    guard = CountingGuard()
    await _three_calls(scripted_llm.base_url.replace("127.0.0.1", "localhost"), guard)
    assert [host for host, _ in guard.asked] == ["localhost"]  # one keep-alive connection


def test_ip_literals_are_told_from_names() -> None:
    assert _is_ip_literal("127.0.0.1") and _is_ip_literal("::1") and _is_ip_literal("fe80::1")
    assert not _is_ip_literal("localhost") and not _is_ip_literal("api.openai.com")
    assert not _is_ip_literal("127.0.0.1.nip.io") and not _is_ip_literal("")
