"""SSRF guard: the one check for every URL and database host the server calls on an org admin's behalf.

Connectors, model endpoints, Feishu channels and OAuth token URLs may only reach globally routable
addresses unless a host is allowed explicitly (by an admin for a connector, by the operator for model
endpoints and Feishu). At call time the host is resolved once, without blocking the event loop, and
every address it resolves to is checked; callers then connect to one of the returned addresses (never
to the name again), so a DNS answer that changes between the check and the connection cannot redirect
the request. On save, :func:`host_refusal` gives the same verdict on a host (synchronously), and
:func:`url_refusal` on a URL's host.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges refused with a specific reason. ``is_global`` covers most of them too; naming them keeps the
# refusal explicit on every Python version and makes the error message say why.
_V4_RANGES: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), why)
    for net, why in (
        ("169.254.169.254/32", "cloud metadata"),
        ("0.0.0.0/8", "unspecified ('this network')"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("198.18.0.0/15", "benchmarking"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_V6_RANGES: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), why)
    for net, why in (
        ("fd00:ec2::254/128", "cloud metadata"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::ffff:0:0/96", "IPv4-mapped IPv6"),
        ("::/96", "IPv4-compatible IPv6"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("fc00::/7", "unique local (private)"),
        ("fec0::/10", "site-local (deprecated)"),
        ("fe80::/10", "link-local"),
        ("ff00::/8", "multicast"),
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class SSRFBlocked(Exception):
    """A connector target resolves to an address that is not globally routable and not allowed."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the guard refuses a host: ``address`` (one it resolves to) is of a kind it may not reach."""

    host: str
    address: str
    kind: str

    @property
    def target(self) -> str:
        """The host as the messages name it: the address itself, or the name and what it resolves to."""
        return self.host if self.host == self.address else f"{self.host!r} (resolves to {self.address})"

    def message(self, hint: str) -> str:
        return f"blocked by the SSRF guard: {self.target} is a {self.kind} address; {hint}"


@dataclass(frozen=True, slots=True)
class BadURL:
    """The URL cannot be called at all: not http(s), no host, or an unusable port."""

    reason: str


URLRefusal = Refusal | BadURL


class HostResolutionError(Exception):
    """The host name could not be resolved (no secret or URL in the message, only the host)."""


def address_refusal_reason(ip: str | IPAddress) -> str | None:
    """Why ``ip`` may not be reached without an explicit allowance, or None if it is public."""
    try:
        addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    except ValueError:
        return "not an IP address"
    if addr.version == 6:
        embedded = _embedded_ipv4(addr)
        if embedded is not None:
            inner = address_refusal_reason(embedded)
            return f"{inner} IPv4 ({embedded}) inside an IPv6" if inner else None
    ranges = _V4_RANGES if addr.version == 4 else _V6_RANGES
    for network, why in ranges:
        if addr in network:
            return why
    if addr.is_multicast:
        return "multicast"
    if addr.is_reserved:
        return "reserved"
    if not addr.is_global:
        return "not globally routable"
    return None


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a NAT64 or 6to4 address forwards to (public ones are reachable that way)."""
    if addr in _NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return addr.sixtofour


def is_public_address(ip: str) -> bool:
    """True when ``ip`` is a globally routable unicast address a connector may reach by default."""
    return address_refusal_reason(ip.strip().strip("[]")) is None


def normalise_host(host: str) -> str:
    """The form host names are compared in: lower case, without IPv6 brackets."""
    return host.strip().strip("[]").lower()


def host_is_allowed(host: str, allowed_private_hosts: Sequence[str]) -> bool:
    """Exact, case-insensitive match of the URL's host against the admin's allowed hosts."""
    name = normalise_host(host)
    return bool(name) and any(name == normalise_host(h) for h in allowed_private_hosts)


def refusal_of(
    host: str, addresses: Sequence[str], allowed_private_hosts: Sequence[str] = ()
) -> Refusal | None:
    """The guard's verdict on ``host`` resolving to ``addresses``: every one must be public (a name with
    one private address among public ones is refused as a whole), unless the host is allowed."""
    if host_is_allowed(host, allowed_private_hosts):
        return None
    for ip in addresses:
        kind = address_refusal_reason(ip)
        if kind is not None:
            return Refusal(host=normalise_host(host), address=ip, kind=kind)
    return None


def _addresses(infos: Sequence[tuple]) -> list[str]:
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = str(sockaddr[0]).split("%", 1)[0]
        if ip not in addresses:
            addresses.append(ip)
    return addresses


async def _getaddrinfo(host: str, port: int) -> list[str]:
    """Resolve ``host`` in the event loop's resolver thread; the addresses in the resolver's order."""
    loop = asyncio.get_running_loop()
    return _addresses(await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP))


def _getaddrinfo_sync(host: str, port: int) -> list[str]:
    """Resolve ``host`` in the calling thread (save-time checks run in sync views, never in the loop)."""
    return _addresses(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP))


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (an IP literal resolves to itself)."""
    name = normalise_host(host)
    if not name:
        raise HostResolutionError("empty host name")
    try:
        return [str(ipaddress.ip_address(name))]
    except ValueError:
        pass
    try:
        addresses = await _getaddrinfo(name, port)
    except (OSError, UnicodeError) as exc:
        raise HostResolutionError(f"could not resolve host {host!r}") from exc
    if not addresses:
        raise HostResolutionError(f"host {host!r} has no addresses")
    return addresses


ADMIN_HINT = "an admin can allow this host explicitly"


async def resolve_and_check(
    host: str, port: int, *, allowed_private_hosts: Sequence[str] = (), hint: str = ADMIN_HINT
) -> list[str]:
    """Resolve ``host`` and return its addresses, or raise :class:`SSRFBlocked`.

    Every address must be public: a name that resolves to one public and one private address is
    refused as a whole. A host listed in ``allowed_private_hosts`` skips the address check. ``hint``
    ends the refusal's message: who can allow the host.
    """
    addresses = await resolve(host, port)
    refusal = refusal_of(host, addresses, allowed_private_hosts)
    if refusal is not None:
        raise SSRFBlocked(refusal.message(hint))
    return addresses


def url_host_port(url: str) -> tuple[str, int] | BadURL:
    """The host and port an http(s) URL connects to, or why it cannot be called."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return BadURL("the URL or its port is not valid")
    if parts.scheme not in ("http", "https"):
        return BadURL("only http:// and https:// URLs can be called")
    host = parts.hostname or ""
    if not host:
        return BadURL("the URL has no host")
    return host, port or (443 if parts.scheme == "https" else 80)


def host_refusal(host: str, port: int, allowed_private_hosts: Sequence[str] = ()) -> Refusal | None:
    """The guard's verdict on a host when it is saved (sync: resolves the host in this thread).

    Used for a URL's host and for each host of a database DSN. A host in ``allowed_private_hosts`` is
    not looked up; a name that does not resolve now is accepted: the check at call time decides then.
    """
    name = normalise_host(host)
    if not name or host_is_allowed(name, allowed_private_hosts):
        return None
    try:
        addresses = [str(ipaddress.ip_address(name))]
    except ValueError:
        try:
            addresses = _getaddrinfo_sync(name, port)
        except (OSError, UnicodeError):
            return None
    return refusal_of(name, addresses, allowed_private_hosts)


def url_refusal(url: str, *, allowed_private_hosts: Sequence[str] = ()) -> URLRefusal | None:
    """The guard's verdict on a URL when it is saved (sync: see :func:`host_refusal`)."""
    target = url_host_port(url)
    if isinstance(target, BadURL):
        return target
    host, port = target
    return host_refusal(host, port, allowed_private_hosts)
