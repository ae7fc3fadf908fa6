"""How the knowledge package reaches a model endpoint that is not a chat: the transport shared by the
embedding calls (:mod:`agents.knowledge.embeddings`) and the rerank calls (:mod:`agents.knowledge.rerank`).

A request goes through the engine's model client, as a chat does (``agents.runtime.llm_for``): the shared
``openai`` SDK client of the endpoint on the running event loop, every connection (redirects included)
through the SSRF guard with the operator's allowance (:class:`~agents.endpoint_guard.ModelEndpointGuard`),
the key in its provider's header, the admin's extra headers and query, the SDK's retries (429/5xx,
connection errors; a long ``Retry-After`` surfaces at once). :func:`endpoint_post` answers the body of a
2xx answer, or why there is none as a :class:`PostFailed` of one :class:`PostFailure` kind, its texts
already cleared of the key and header values; each caller says it in its own words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx2
import openai

from agents.endpoint_guard import ModelEndpointGuard, model_endpoint_allowed_hosts
from agents.endpoint_headers import api_key_sendable, headers_sendable
from agents.engine.endpoint_errors import retry_after_seconds
from agents.engine.llm import EndpointRefusedError, OpenAICompatibleLLM
from agents.model_presets import api_key_header_for

__all__ = [
    "EndpointAccess",
    "EndpointSettings",
    "PostFailed",
    "PostFailure",
    "access_settings_of",
    "endpoint_post",
    "strict_json",
]


class EndpointSettings(Protocol):
    """What is read of a model endpoint (``agents.models.ModelConfig``) to reach it."""

    base_url: str
    api_key: str
    model: str
    provider: str
    timeout: float
    api_version: str

    @property
    def headers(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class EndpointAccess:
    """Where and how to reach an endpoint, as plain values (the key and header values never in the repr)."""

    base_url: str
    api_key: str = field(repr=False)
    model: str
    timeout: float = 60.0
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    query: tuple[tuple[str, str], ...] = ()
    api_key_header: str | None = None
    allowed_private_hosts: tuple[str, ...] = ()
    max_retries: int = 2  # the SDK's retries of a 429, a 5xx or a connection error

    def llm(self) -> OpenAICompatibleLLM:
        """The engine's client for this endpoint, its connections through the SSRF guard (as
        ``agents.runtime.llm_for`` builds a chat endpoint's)."""
        return OpenAICompatibleLLM(
            base_url=self.base_url,
            api_key=self.api_key,
            model=self.model,
            timeout=self.timeout,
            max_retries=self.max_retries,
            guard=ModelEndpointGuard(self.allowed_private_hosts),
            default_headers=dict(self.headers) or None,
            default_query=dict(self.query) or None,
            api_key_header=self.api_key_header,
        )

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or "?"

    def sendable(self) -> bool:
        """Whether the key and the extra headers fit in request headers (visible ASCII)."""
        return api_key_sendable(self.api_key) and headers_sendable(dict(self.headers))

    def redacted(self, text: str) -> str:
        """``text`` without the key or any extra header's value (gateways put tokens in headers)."""
        if self.api_key and len(self.api_key) >= 4:
            text = text.replace(self.api_key, "***")
        for _name, value in self.headers:
            if len(value) >= 4:
                text = text.replace(value, "***")
        return text


def access_settings_of(config: EndpointSettings) -> dict[str, Any]:
    """The :class:`EndpointAccess` fields a model configuration describes (sync: its key and headers are
    decrypted here), as ``agents.runtime.endpoint_of`` maps a chat endpoint's."""
    return {
        "base_url": config.base_url,
        "api_key": config.api_key or "not-needed",
        "model": config.model,
        "timeout": config.timeout,
        "headers": tuple(sorted(config.headers.items())),
        "query": (("api-version", config.api_version),) if config.api_version else (),
        "api_key_header": api_key_header_for(config.provider),
        "allowed_private_hosts": model_endpoint_allowed_hosts(),
    }


class PostFailure(StrEnum):
    ADDRESS_REFUSED = "address_refused"  # the SSRF guard refused the address: nothing was sent
    TIMEOUT = "timeout"  # no answer within the endpoint's timeout
    CONNECTION = "connection"  # connection refused or reset, name not found
    RATE_LIMITED = "rate_limited"  # 429 after the client's retries
    SERVER_ERROR = "server_error"  # 5xx after the client's retries
    CLIENT_ERROR = "client_error"  # another 4xx (the key, the model name, the request)


@dataclass(frozen=True, slots=True)
class PostFailed:
    """Why a request got no 2xx answer. ``message`` (the provider's words, the connection's reason or the
    guard's) holds no key or header value; ``retry_after``: the seconds a 429 asked to wait, if said."""

    kind: PostFailure
    host: str
    message: str = ""
    status: int | None = None
    retry_after: float | None = None


async def endpoint_post(
    access: EndpointAccess, llm: OpenAICompatibleLLM, path: str, body: dict[str, Any]
) -> bytes | PostFailed:
    """``POST {base_url}{path}`` with the JSON ``body``: the answer's bytes, or why none."""
    try:
        response = await llm.client().post(
            path, cast_to=httpx2.Response, body=body, options=llm.request_options()
        )
    except EndpointRefusedError as exc:
        return PostFailed(PostFailure.ADDRESS_REFUSED, access.host, str(exc))
    except openai.APIConnectionError as exc:
        if isinstance(exc.__cause__, EndpointRefusedError):
            return PostFailed(PostFailure.ADDRESS_REFUSED, access.host, str(exc.__cause__))
        # The SDK's transport reports a connection that could not be made (refused, unreachable) as a
        # connect timeout: that is no connection; a timeout after connecting is no answer in time.
        if isinstance(exc, openai.APITimeoutError) and not isinstance(exc.__cause__, httpx2.ConnectTimeout):
            return PostFailed(PostFailure.TIMEOUT, access.host)
        cause = exc.__cause__ or exc
        reason = access.redacted(str(cause) or type(cause).__name__)[:300]
        return PostFailed(PostFailure.CONNECTION, access.host, reason)
    except openai.RateLimitError as exc:
        return PostFailed(
            PostFailure.RATE_LIMITED,
            access.host,
            access.redacted(_message(exc)),
            status=429,
            retry_after=retry_after_seconds(exc.response.headers),
        )
    except openai.APIStatusError as exc:
        kind = PostFailure.SERVER_ERROR if exc.status_code >= 500 else PostFailure.CLIENT_ERROR
        return PostFailed(kind, access.host, access.redacted(_message(exc)), status=exc.status_code)
    return response.content


def _message(exc: openai.APIStatusError) -> str:
    return (getattr(exc, "message", None) or str(exc) or type(exc).__name__)[:500]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def strict_json(content: bytes) -> Any:
    """The JSON value of ``content``; ``ValueError`` when it is not JSON, NaN and Infinity included
    (Python's parser would take them)."""
    return json.loads(content, parse_constant=_no_constant)
