"""Save-time validation of every URL and database host the server will call on an org admin's behalf.

The verdict is the SSRF guard's (:func:`connectors.ssrf.url_refusal`, :func:`connectors.ssrf.host_refusal`);
this module turns it into a translatable ``ValidationError`` for model forms, ``clean()`` methods and DRF
serializers. The same guard checks the host again at call time, on every connection and redirect hop.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from connectors.ssrf import BadURL, Refusal, host_refusal, url_refusal

# How an org admin lets a connector reach a system inside their network (URLs and DSN hosts alike).
PRIVATE_HOST_HINT = _("If the system is inside your network, add its host to the allowed private hosts.")

# The kinds of address the guard names (connectors.ssrf), as the user reads them.
_KINDS: dict[str, Promise] = {
    "cloud metadata": _("cloud metadata"),
    "unspecified ('this network')": _("unspecified"),
    "unspecified": _("unspecified"),
    "loopback": _("loopback"),
    "private": _("private"),
    "carrier-grade NAT": _("carrier-grade NAT"),
    "benchmarking": _("benchmarking"),
    "link-local": _("link-local"),
    "multicast": _("multicast"),
    "reserved": _("reserved"),
    "IPv4-mapped IPv6": _("IPv4-mapped IPv6"),
    "IPv4-compatible IPv6": _("IPv4-compatible IPv6"),
    "local-use NAT64": _("local-use NAT64"),
    "unique local (private)": _("unique local (private)"),
    "site-local (deprecated)": _("site-local (deprecated)"),
    "not globally routable": _("not globally routable"),
}


def validate_outbound_url(
    url: str, *, allowed_private_hosts: Sequence[str], allow_hint: str | Promise
) -> None:
    """Raise ``ValidationError`` unless the SSRF guard would let the server call ``url``.

    ``allow_hint`` tells the user who can allow a private host (an admin, or the operator's setting).
    A host name that does not resolve now is accepted; the check at call time decides then.
    """
    if not url:
        return
    refusal = url_refusal(url, allowed_private_hosts=allowed_private_hosts)
    if refusal is None:
        return
    if isinstance(refusal, BadURL):
        raise ValidationError(_("Enter an http:// or https:// URL with a host name."), code="bad_url")
    raise _refused(refusal, allow_hint)


def validate_outbound_host(
    host: str, port: int, *, allowed_private_hosts: Sequence[str], allow_hint: str | Promise
) -> None:
    """Raise ``ValidationError`` unless the SSRF guard would let the server connect to ``host``.

    For hosts that are not in a URL, such as a database DSN's: the message names the host only, never
    the DSN it came from. A host name that does not resolve now is accepted, as for URLs.
    """
    refusal = host_refusal(host, port, allowed_private_hosts)
    if refusal is not None:
        raise _refused(refusal, allow_hint)


def _refused(refusal: Refusal, allow_hint: str | Promise) -> ValidationError:
    kind = _KINDS.get(refusal.kind, refusal.kind)
    return ValidationError(
        _(
            "%(target)s is refused: it is a %(kind)s address and the server calls public addresses only. "
            "%(hint)s"
        ),
        code="ssrf",
        params={"target": refusal.target, "kind": kind, "hint": allow_hint},
    )
