"""The SDK's request options for a chat request, built once and copied per request.

``AsyncAPIClient.post`` builds a pydantic ``FinalRequestOptions`` on every call (``construct``: each field
walked, its default deep-copied; 20-50 µs a request). A chat request's options differ from one request to the
next only in the body, so they are built once by the SDK itself (:func:`chat_request_template`) and each
request gets a shallow copy with its body (:func:`request_options_like`), its mutable containers copied so
that nothing the SDK may change on one request's options reaches the next:
``tests/engine/test_llm_request_options.py`` compares the two, field for field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai._models import FinalRequestOptions

CHAT_PATH = "/chat/completions"

# The fields whose values are containers that ``construct`` makes anew per request (the given ones copied by
# ``strip_not_given``, the defaults deep-copied).
_FRESH = ("params", "headers", "security")


def chat_request_template(options: Mapping[str, Any]) -> FinalRequestOptions:
    """The options ``client.post(CHAT_PATH, content=..., options=options)`` builds, without a body."""
    return FinalRequestOptions.construct(
        method="post", url=CHAT_PATH, json_data=None, content=None, files=None, **options
    )


def request_options_like(
    template: FinalRequestOptions, *, content: bytes | None, json_data: Any
) -> FinalRequestOptions:
    """``template`` with this request's body (``content`` bytes, or ``json_data`` for the SDK to encode): the
    options ``client.post`` would have built for it."""
    options = template.model_copy(update={"content": content, "json_data": json_data})
    values = options.__dict__
    for name in _FRESH:
        value = values.get(name)
        if type(value) is dict:
            values[name] = dict(value)
    return options


__all__ = ["CHAT_PATH", "chat_request_template", "request_options_like"]
