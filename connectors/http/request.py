"""Turn an HTTP action and the LLM's arguments into the parts of a request (no I/O, no secrets)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from connectors.adapter_types import HttpActionSpec

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# An action with one of these methods writes data, unless an admin declared it a read.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_QUERY_BY_DEFAULT = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
_PLACEHOLDER = re.compile(r"{([^{}]+)}")
_DEFAULT_HEADERS = {
    "Accept": "application/json, text/plain;q=0.9, */*;q=0.8",
    "User-Agent": "agent-platform-connector/1",
}


class RequestBuildError(ValueError):
    """The arguments do not fit the action (missing path parameter, bad value type, bad base URL)."""


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """A request before authentication: ``url`` has no query string; ``query`` is in order."""

    method: str
    url: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None


def split_base_url(base_url: str) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """``(scheme, netloc, path, query pairs)`` of a connector's base URL, or RequestBuildError."""
    try:
        parts = urlsplit(base_url.strip())
    except ValueError as exc:
        raise RequestBuildError("the connector's base URL is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestBuildError("the connector's base URL must be an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise RequestBuildError("the connector's base URL must not contain credentials")
    return parts.scheme, parts.netloc, parts.path, tuple(parse_qsl(parts.query, keep_blank_values=True))


def _scalar(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise RequestBuildError(f"argument {name!r} must be a string, number or boolean")


def _query_values(name: str, value: Any) -> list[tuple[str, str]]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [(name, _scalar(name, item)) for item in value if item is not None]
    if isinstance(value, dict):
        return [(name, json.dumps(value, ensure_ascii=False, separators=(",", ":")))]
    return [(name, _scalar(name, value))]


def _fill_path(template: str, path_args: Mapping[str, Any]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in path_args or path_args[name] is None:
            raise RequestBuildError(f"missing required path parameter {name!r}")
        text = _scalar(name, path_args[name])
        if text in ("", ".", ".."):
            raise RequestBuildError(f"path parameter {name!r} must not be empty, '.' or '..'")
        return quote(text, safe="")

    return _PLACEHOLDER.sub(replace, template)


def build_request(
    base_url: str, action: HttpActionSpec, args: Mapping[str, Any], default_headers: Mapping[str, str]
) -> PreparedRequest:
    """Place each argument in the path, query, a header or the JSON body, as the action says."""
    method = action.method.upper().strip()
    if method not in METHODS:
        raise RequestBuildError(f"unsupported HTTP method {action.method!r}")
    scheme, netloc, base_path, base_query = split_base_url(base_url)
    default_location = "query" if method in _QUERY_BY_DEFAULT else "body"
    path_args: dict[str, Any] = {}
    query: list[tuple[str, str]] = list(base_query)
    headers: dict[str, str] = {**_DEFAULT_HEADERS, **default_headers}
    body: dict[str, Any] = {}
    for name, value in args.items():
        location = action.param_locations.get(name) or default_location
        if location == "path":
            path_args[name] = value
        elif location == "query":
            query.extend(_query_values(name, value))
        elif location == "header":
            if value is not None:
                text = _scalar(name, value)
                if "\r" in text or "\n" in text:
                    raise RequestBuildError(f"header argument {name!r} must not contain line breaks")
                headers[name] = text
        else:
            body[name] = value
    path = _fill_path(action.path_template, path_args)
    if path:
        path = base_path.rstrip("/") + "/" + path.lstrip("/")
    else:
        path = base_path or "/"
    payload = None
    if body:
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        headers["Content-Type"] = "application/json"
    return PreparedRequest(
        method=method,
        url=urlunsplit((scheme, netloc, path, "", "")),
        query=tuple(query),
        headers=tuple(headers.items()),
        body=payload,
    )


def with_header(prepared: PreparedRequest, name: str, value: str) -> PreparedRequest:
    """``prepared`` with header ``name`` set to ``value``, replacing any header of that name."""
    kept = tuple((k, v) for k, v in prepared.headers if k.lower() != name.lower())
    return replace(prepared, headers=(*kept, (name, value)))
