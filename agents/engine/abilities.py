"""What an endpoint accepts, as the engine uses it: the abilities it was configured with, minus what it
refused during this LLM instance's life (one run, since the platform builds an LLM per run).

An endpoint configured with an ability it does not have answers the first request that uses it with an
HTTP 400 naming the feature. The engine then records the refusal (:func:`refuse`, logged once with the
endpoint's name) and goes on the next way: the structured-output ladder to its next level, the tool loop
without the refused field. Every later call of the instance skips the feature without asking again.

The tool loop asks what it may send on every model call: a :class:`RunAbilities` answers from what it
resolved at the run's start, and resolves again only when that may have changed (a refusal recorded since,
of any LLM, or an LLM whose ``abilities`` is now another mapping).
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from agents.engine.llm import ContextLengthExceededError, EndpointMisconfiguredError, LLMError

logger = logging.getLogger(__name__)

TOOL_CALL = "tool_call"
JSON_MODE = "json_mode"
FORCED_TOOL_CHOICE = "forced_tool_choice"
PARALLEL_TOOL_CALLS = "parallel_tool_calls"

# The engine's defaults for keys an LLM's ``abilities`` leaves out (``agents.engine.llm.DEFAULT_ABILITIES``
# fills them for OpenAICompatibleLLM; other implementations may not).
_DEFAULTS: Mapping[str, bool] = {
    TOOL_CALL: True,
    JSON_MODE: True,
    FORCED_TOOL_CHOICE: True,
    PARALLEL_TOOL_CALLS: True,
}

# What each provider says when it refuses a field (HTTP 400), matched in the error's message:
# - tool_choice: DeepSeek in thinking mode, "Thinking mode does not support this tool_choice" / "deepseek-reasoner
#   does not support this tool_choice" (https://github.com/deepseek-ai/DeepSeek-V3/issues/1376,
#   https://github.com/vectorize-io/hindsight/issues/1286); any "tool_choice ... not supported".
# - response_format: OpenAI "Invalid parameter: 'response_format' of type 'json_object' is not supported with this
#   model." (https://github.com/openai/openai-node/issues/439); DashScope thinking mode "Json mode response is not
#   supported when enable_thinking is true" (https://github.com/bytedance/deer-flow/issues/80); Volcengine Ark
#   "The parameter `response_format.type` specified in the request are not valid: `json_object` is not supported by
#   this model" (https://github.com/Usagi-org/ai-goofish-monitor/issues/272).
# - parallel_tool_calls: Azure OpenAI deployments of older models, "Unrecognized request argument supplied:
#   parallel_tool_calls" (https://github.com/Azure/azure-sdk-for-net/issues/45719); any endpoint validating the body.
_REFUSALS: Mapping[str, re.Pattern[str]] = {
    FORCED_TOOL_CHOICE: re.compile(r"tool[_ ]?choice", re.IGNORECASE),
    JSON_MODE: re.compile(r"response[_ ]?format|json[_ ]?object|json mode", re.IGNORECASE),
    PARALLEL_TOOL_CALLS: re.compile(r"parallel[_ ]?tool[_ ]?calls", re.IGNORECASE),
}
_REFUSAL_STATUSES = frozenset({400, 422})

_refused: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
# Bumped by every new refusal: a RunAbilities resolved before it resolves again.
_refusals = 0


def _root(llm: Any) -> Any:
    """The LLM behind engine wrappers (they expose it as ``wrapped_llm``)."""
    seen = 0
    while (inner := getattr(llm, "wrapped_llm", None)) is not None and seen < 8:
        llm, seen = inner, seen + 1
    return llm


def declared(llm: Any, key: str) -> bool:
    """The ability as configured (the engine's default when the LLM's ``abilities`` leaves it out)."""
    abilities = getattr(llm, "abilities", None) or {}
    value = abilities.get(key)
    return _DEFAULTS.get(key, False) if value is None else bool(value)


def refused(llm: Any) -> frozenset[str]:
    """The abilities this LLM's endpoint refused so far."""
    try:
        return frozenset(_refused.get(_root(llm), ()))
    except TypeError:  # not weak-referenceable: nothing is remembered
        return frozenset()


def has(llm: Any, key: str) -> bool:
    """Whether the engine may use ``key`` with this LLM: configured and not refused."""
    return declared(llm, key) and key not in refused(llm)


def refuse(llm: Any, key: str, error: BaseException | None = None) -> None:
    """Remember that the endpoint refused ``key``: later calls of this LLM do without it. Logged once."""
    root = _root(llm)
    try:
        keys = _refused.setdefault(root, set())
    except TypeError:
        keys = set()
    if key in keys:
        return
    keys.add(key)
    global _refusals
    _refusals += 1
    logger.warning(
        "%s refused %s (%s); the engine does without it for this run. Switch off %r for this endpoint.",
        endpoint_name(llm),
        key,
        type(error).__name__ if error is not None else "configured off",
        ability_label(key),
    )


def is_refusal(error: BaseException, key: str) -> bool:
    """Whether ``error`` is the endpoint refusing the field of ability ``key`` (an HTTP 400 naming it)."""
    if not isinstance(error, LLMError) or isinstance(
        error, ContextLengthExceededError | EndpointMisconfiguredError
    ):
        return False
    if error.status_code not in _REFUSAL_STATUSES:
        return False
    pattern = _REFUSALS.get(key)
    return pattern is not None and bool(pattern.search(str(error)))


def endpoint_name(llm: Any) -> str:
    """``model at host`` for messages and logs (never a key or a path)."""
    llm = _root(llm)
    model = getattr(llm, "model", None)
    name = model if isinstance(model, str) and model else type(llm).__name__
    base_url = getattr(llm, "base_url", None)
    host = urlsplit(base_url).hostname if isinstance(base_url, str) and base_url else None
    return f"{name} at {host}" if host else name


def tool_request_options(llm: Any) -> dict[str, Any]:
    """The extra fields of a request with ``tools``: ``parallel_tool_calls: false`` for an endpoint without
    parallel tool calls, until it refuses the field.

    OpenAI documents it (https://platform.openai.com/docs/guides/function-calling#parallel-function-calling);
    Azure OpenAI, vLLM and DashScope take it; Azure deployments of older models refuse it with a 400
    (https://github.com/Azure/azure-sdk-for-net/issues/45719), after which it is not sent again.
    """
    if not declared(llm, PARALLEL_TOOL_CALLS) and PARALLEL_TOOL_CALLS not in refused(llm):
        return {"parallel_tool_calls": False}
    return {}


class RunAbilities:
    """What a run may use of an LLM's abilities (:func:`has`, :func:`declared`, :func:`tool_request_options`),
    resolved once and again only when a refusal was recorded since or the LLM's ``abilities`` mapping is
    another one (its endpoint changed): the answers are :func:`has` and the others' at every call."""

    __slots__ = ("llm", "_refusals", "_abilities", "_has", "_declared", "_tool_options")

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self._refusals = -1
        self._abilities: Any = None
        self._has: dict[str, bool] = {}
        self._declared: dict[str, bool] = {}
        self._tool_options: Mapping[str, Any] = {}

    def current(self) -> bool:
        """Resolve again if something changed since the last look; True when it did."""
        abilities = getattr(self.llm, "abilities", None)
        if self._refusals == _refusals and abilities is self._abilities:
            return False
        self._refusals, self._abilities = _refusals, abilities
        self._has.clear()
        self._declared.clear()
        self._tool_options = tool_request_options(self.llm)
        return True

    def has(self, key: str) -> bool:
        """:func:`has` of the run's LLM."""
        self.current()
        value = self._has.get(key)
        if value is None:
            value = self._has[key] = has(self.llm, key)
        return value

    def declared(self, key: str) -> bool:
        """:func:`declared` of the run's LLM."""
        self.current()
        value = self._declared.get(key)
        if value is None:
            value = self._declared[key] = declared(self.llm, key)
        return value

    def tool_request_options(self) -> Mapping[str, Any]:
        """:func:`tool_request_options` of the run's LLM (read only: the same mapping until it changes)."""
        self.current()
        return self._tool_options


_LABELS: Mapping[str, str] = {
    TOOL_CALL: "supports function calling",
    JSON_MODE: "supports JSON mode",
    FORCED_TOOL_CHOICE: "supports forced tool choice",
    PARALLEL_TOOL_CALLS: "supports parallel tool calls",
}


def ability_label(key: str) -> str:
    """The ability's name as the endpoint's settings show it."""
    return _LABELS.get(key, key)


__all__ = [
    "FORCED_TOOL_CHOICE",
    "JSON_MODE",
    "PARALLEL_TOOL_CALLS",
    "TOOL_CALL",
    "RunAbilities",
    "ability_label",
    "declared",
    "endpoint_name",
    "has",
    "is_refusal",
    "refuse",
    "refused",
    "tool_request_options",
]
