"""Pytest plugin: the scripted OpenAI-compatible LLM server and LLMs bound to it.

Fixtures: ``scripted_llm`` (a :class:`ScriptedOpenAIServer`, one per session, reset for every
test) and ``make_llm`` (a factory of :class:`OpenAICompatibleLLM` bound to it). The plugin also
points ``OPENAI_BASE_URL`` at a closed loopback port and sets a dummy ``OPENAI_API_KEY``, so a
request that was not meant for the scripted server fails loudly instead of reaching a provider.

The scripted server listens on loopback, which the SSRF guard refuses for model endpoints: the plugin
allows ``127.0.0.1`` the way an operator would, through ``MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS`` (in this
process and, through the environment, in the servers the end-to-end tests start). Tests of the guard
override it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2
import openai
import pytest
from django.test import override_settings

from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.provider_profiles import ProviderProfile, llm_settings
from tests.fakes.threaded_server import reset_around

# Port 9 (discard) on loopback: nothing listens, so an unintended request is refused at once.
GUARD_BASE_URL = "http://127.0.0.1:9/v1"
GUARD_API_KEY = "sk-test-not-a-real-key"
SCRIPTED_API_KEY = "sk-scripted-test"

MakeLLM = Callable[..., OpenAICompatibleLLM]


LOOPBACK_ALLOWED = ["127.0.0.1"]


def pytest_configure(config: pytest.Config) -> None:
    os.environ["OPENAI_BASE_URL"] = GUARD_BASE_URL
    os.environ["OPENAI_API_KEY"] = GUARD_API_KEY
    os.environ["MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS"] = ",".join(LOOPBACK_ALLOWED)


@pytest.fixture(autouse=True, scope="session")
def _model_endpoints_may_reach_loopback() -> Iterator[None]:
    """The operator's allowance for the scripted server (settings were read before the plugin ran)."""
    with override_settings(MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS=LOOPBACK_ALLOWED):
        yield


@pytest.fixture(scope="session")
def scripted_llm_server() -> Iterator[ScriptedOpenAIServer]:
    """The session's scripted server (prefer ``scripted_llm``, which is reset per test)."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def scripted_llm(scripted_llm_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    """The scripted OpenAI-compatible server, empty at the start of the test.

    Replies left unconsumed at the end of a test are not an error.
    """
    yield from reset_around(scripted_llm_server)


@pytest.fixture
async def make_llm(scripted_llm: ScriptedOpenAIServer) -> AsyncIterator[MakeLLM]:
    """Factory of :class:`OpenAICompatibleLLM` instances talking to ``scripted_llm``."""

    def factory(
        *,
        tool_call: bool = True,
        json_mode: bool = True,
        context_window: int = 128000,
        model: str = "scripted-model",
        timeout: float = 10.0,
        max_retries: int = 0,
        abilities: dict[str, bool] | None = None,
        **kwargs: Any,
    ) -> OpenAICompatibleLLM:
        return OpenAICompatibleLLM(
            base_url=scripted_llm.base_url,
            api_key=SCRIPTED_API_KEY,
            model=model,
            abilities={"tool_call": tool_call, "json_mode": json_mode, **(abilities or {})},
            context_window=context_window,
            timeout=timeout,
            max_retries=max_retries,
            **kwargs,
        )

    try:
        yield factory
    finally:
        await aclose_shared_clients()


@pytest.fixture
async def make_profile_llm(
    scripted_llm: ScriptedOpenAIServer,
) -> AsyncIterator[Callable[..., OpenAICompatibleLLM]]:
    """Factory: puts ``scripted_llm`` in a provider profile and returns an LLM configured for it as an admin
    would (the profile's abilities, Azure's key header and api-version); keyword arguments override, and
    ``abilities`` are merged over the profile's."""

    def factory(profile: ProviderProfile, **overrides: Any) -> OpenAICompatibleLLM:
        scripted_llm.profile = profile
        settings = llm_settings(profile)
        settings["abilities"] = {**settings["abilities"], **overrides.pop("abilities", {})}
        settings.update(overrides)
        settings.setdefault("max_retries", 0)
        settings.setdefault("timeout", 10.0)
        return OpenAICompatibleLLM(
            base_url=scripted_llm.base_url, api_key=SCRIPTED_API_KEY, model="scripted-model", **settings
        )

    try:
        yield factory
    finally:
        await aclose_shared_clients()


@pytest.fixture
async def one_connection_llm(scripted_llm: ScriptedOpenAIServer) -> AsyncIterator[OpenAICompatibleLLM]:
    """An LLM on ``scripted_llm`` whose SDK client has exactly ONE pooled connection (waiting 1 s for
    it): a call that leaves its connection taken makes the next call fail."""
    http_client = httpx2.AsyncClient(
        limits=httpx2.Limits(max_connections=1), timeout=httpx2.Timeout(5.0, pool=1.0)
    )
    client = openai.AsyncOpenAI(
        base_url=scripted_llm.base_url, api_key="sk-test", max_retries=0, http_client=http_client
    )
    try:
        yield OpenAICompatibleLLM(base_url=scripted_llm.base_url, api_key="sk-test", model="m", client=client)
    finally:
        await client.close()
