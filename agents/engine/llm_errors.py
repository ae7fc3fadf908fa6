"""The errors of a model call (:class:`LLMError` and its kinds), raised by :mod:`agents.engine.llm`."""

from __future__ import annotations

from typing import Literal

FailureKind = Literal["unreachable", "timed_out", "key_refused", "model_unknown", "server_error", "other"]
"""What a failed provider call comes to, for the user: see ``agents.engine.model_call.LLMFailed``."""


class LLMError(Exception):
    """A provider call failed after the client's own retries."""

    status_code: int | None = None
    """The HTTP status of the provider's answer, when there was one."""
    kind: FailureKind = "other"
    model: str = ""
    """The model the call asked for."""


class ContextLengthExceededError(LLMError):
    """The provider refused the request because the prompt is longer than its context window."""


class RateLimitedError(LLMError):
    """The endpoint answered 429 after the client's own retries. ``retry_after``: the seconds it asked to wait
    (``Retry-After`` / ``retry-after-ms``), when it said."""

    retry_after: float | None = None


class EndpointMisconfiguredError(LLMError):
    """The endpoint's answer means one of its settings is wrong; the message names the setting to change."""


class EndpointRefusedError(LLMError):
    """The connect guard refused the endpoint's address (or a redirect's): nothing was sent, and the
    call is not retried. Its message says why, for the user: it is a configuration error."""


__all__ = [
    "ContextLengthExceededError",
    "EndpointMisconfiguredError",
    "EndpointRefusedError",
    "LLMError",
    "RateLimitedError",
]
