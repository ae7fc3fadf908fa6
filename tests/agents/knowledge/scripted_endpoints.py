"""The embedding and rerank endpoints of the knowledge tests, on the scripted server, and its replies
altered."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from agents.knowledge.endpoint_access import EndpointAccess
from tests.fakes.openai_server import ScriptedOpenAIServer, malformed

E = TypeVar("E", bound=EndpointAccess)


def scripted_endpoint(kind: type[E], server: ScriptedOpenAIServer, *, key: str, model: str) -> E:
    """An endpoint of ``kind`` on the scripted server: a short timeout, no retries, loopback allowed."""
    return kind(
        base_url=server.base_url,
        api_key=key,
        model=model,
        timeout=5.0,
        allowed_private_hosts=("127.0.0.1",),
        max_retries=0,
    )


def altered(answer_of: Callable[[dict[str, Any]], dict[str, Any]], change: Any) -> Any:
    """A scripted reply: the fake's answer to the request (``answer_of``), altered by ``change(answer)``."""

    def reply(body: dict[str, Any]) -> Any:
        answer = answer_of(body)
        change(answer)
        return malformed(json.dumps(answer).encode())

    return reply
