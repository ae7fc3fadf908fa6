"""A document fetched from a URL an admin gave, through the SSRF guard. Django-free.

Every connection, the first and each redirect hop, goes through the connectors' guarded transport
(:class:`connectors.http.transport.GuardedTransport`): a host that resolves to a private, loopback or
metadata address is refused unless the knowledge base's allowed private hosts name it. The body is read
in pieces and given up past ``max_bytes`` (a size the server announces is refused before reading), so a
large or endless answer never fills the worker's memory. The document's name comes from the answer's
``Content-Disposition``, else from the URL's path, with an extension from its content type when the name
has none the platform reads.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import Message
from enum import StrEnum
from pathlib import PurePosixPath
from typing import IO
from urllib.parse import unquote, urlsplit

import httpx

from connectors.http.transport import GuardedTransport
from connectors.ssrf import SSRFBlocked

MAX_REDIRECTS = 5
SPOOL_IN_MEMORY = 8 * 1024 * 1024
USER_AGENT = "agent-platform-knowledge-sync/1"

_EXTENSIONS_BY_TYPE = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/plain": ".txt",
}
_KNOWN = {".pdf", ".docx", ".xlsx", ".pptx", ".csv", ".md", ".markdown", ".html", ".htm", ".txt"}


class FetchFailure(StrEnum):
    REFUSED = "url_refused"  # the SSRF guard refused the host (or a redirect's)
    UNREACHABLE = "url_unreachable"  # no connection, a TLS failure, too many redirects
    TIMEOUT = "url_timeout"
    HTTP_ERROR = "url_http_error"  # the server answered 4xx or 5xx
    TOO_LARGE = "url_too_large"


@dataclass(frozen=True, slots=True)
class Fetched:
    """The body (a temporary file at its start; the caller closes it), its size and the name to store
    it under."""

    name: str
    file: IO[bytes]
    size: int


@dataclass(frozen=True, slots=True)
class FetchFailed:
    code: FetchFailure
    figures: dict[str, int | str] = field(default_factory=dict)


FetchOutcome = Fetched | FetchFailed


async def url_fetched(
    url: str, *, allowed_private_hosts: Sequence[str], max_bytes: int, seconds: float = 30.0
) -> FetchOutcome:
    """GET ``url`` through the SSRF guard, following at most :data:`MAX_REDIRECTS` redirects."""
    transport = GuardedTransport(allowed_private_hosts=allowed_private_hosts)
    async with httpx.AsyncClient(
        transport=transport,
        timeout=httpx.Timeout(seconds),
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        headers={"User-Agent": USER_AGENT},
        trust_env=False,
    ) as client:
        try:
            async with client.stream("GET", url) as response:
                if response.status_code >= 400:
                    return FetchFailed(FetchFailure.HTTP_ERROR, {"status": response.status_code})
                announced = response.headers.get("content-length", "")
                if announced.isdigit() and int(announced) > max_bytes:
                    return FetchFailed(FetchFailure.TOO_LARGE, {"size": int(announced), "limit": max_bytes})
                spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 - handed to the caller
                size = 0
                async for piece in response.aiter_bytes():
                    size += len(piece)
                    if size > max_bytes:
                        spool.close()
                        return FetchFailed(FetchFailure.TOO_LARGE, {"size": size, "limit": max_bytes})
                    spool.write(piece)
                spool.seek(0)
                name = document_name(str(response.url), response.headers)
                return Fetched(name=name, file=spool, size=size)  # type: ignore[arg-type]  # a binary file
        except SSRFBlocked as exc:
            return FetchFailed(FetchFailure.REFUSED, {"reason": str(exc)})
        except httpx.InvalidURL:
            return FetchFailed(FetchFailure.UNREACHABLE, {"error": "InvalidURL"})
        except httpx.TimeoutException:
            return FetchFailed(FetchFailure.TIMEOUT, {"seconds": int(seconds)})
        except httpx.HTTPError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, SSRFBlocked):
                return FetchFailed(FetchFailure.REFUSED, {"reason": str(cause)})
            return FetchFailed(FetchFailure.UNREACHABLE, {"error": type(exc).__name__})


def document_name(url: str, headers: httpx.Headers) -> str:
    """The name to store a fetched body under: ``Content-Disposition``'s file name, else the URL path's
    last segment, with an extension from the content type when it has none the platform reads."""
    name = ""
    disposition = headers.get("content-disposition", "")
    if disposition:
        message = Message()
        message["content-disposition"] = disposition
        name = (message.get_filename() or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name:
        name = unquote(PurePosixPath(urlsplit(url).path).name).strip() or urlsplit(url).hostname or "document"
    if PurePosixPath(name.lower()).suffix not in _KNOWN:
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        name += _EXTENSIONS_BY_TYPE.get(content_type, "")
    return name[:255]
