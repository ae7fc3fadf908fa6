"""Engine tests: the scripted LLM fixtures come from the root conftest (tests.fakes.llm_fixtures); here,
``endpoint``, a factory of LLMs on the scripted server that take any abilities."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from tests.fakes.llm_fixtures import SCRIPTED_API_KEY


@pytest.fixture
async def endpoint(scripted_llm) -> AsyncIterator[Callable[..., OpenAICompatibleLLM]]:
    """Factory of LLMs on ``scripted_llm`` with tool calls and JSON mode, and the abilities given on top."""

    def factory(**abilities: bool) -> OpenAICompatibleLLM:
        return OpenAICompatibleLLM(
            base_url=scripted_llm.base_url,
            api_key=SCRIPTED_API_KEY,
            model="scripted-model",
            abilities={"tool_call": True, "json_mode": True, **abilities},
            max_retries=0,
            timeout=10.0,
        )

    try:
        yield factory
    finally:
        await aclose_shared_clients()
