"""Feishu channels go through the SSRF guard, on save and at call time.

A channel's base URL may only reach public addresses. The operator's own ``FEISHU_BASE_URL`` (the
default of a blank base URL) is trusted as an origin: scheme, host and port, so a channel on another port
of that host is judged like any other URL (as model endpoints trust only their default endpoint). Other
private hosts (a Feishu gateway inside the network, the tests' fake) only when the operator lists them in
``FEISHU_ALLOWED_PRIVATE_HOSTS``; an org admin cannot widen either.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from connectors.outbound import validate_outbound_url
from connectors.ssrf import normalise_host
from hooks.conf import feishu_base_url

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of ``url``, the port spelled out; ``None`` when it has no usable host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not parts.hostname or scheme not in _DEFAULT_PORTS:
        return None
    return scheme, normalise_host(parts.hostname), port or _DEFAULT_PORTS[scheme]


def feishu_allowed_private_hosts(base_url: str = "") -> tuple[str, ...]:
    """The operator's allowance for a channel on ``base_url`` (blank: the default): the hosts of
    ``FEISHU_ALLOWED_PRIVATE_HOSTS``, and the host of ``FEISHU_BASE_URL`` when ``base_url`` is on its origin."""
    hosts = {
        normalise_host(h) for h in getattr(settings, "FEISHU_ALLOWED_PRIVATE_HOSTS", ()) or () if h.strip()
    }
    own = _origin(feishu_base_url())
    if own is not None and (not base_url or _origin(base_url) == own):
        hosts.add(own[1])
    return tuple(sorted(hosts))


def validate_feishu_base_url(url: str) -> None:
    """Raise ``ValidationError`` unless a channel may be saved with this base URL (blank: the default)."""
    validate_outbound_url(
        url,
        allowed_private_hosts=feishu_allowed_private_hosts(url),
        allow_hint=_("The operator can allow a private Feishu host (FEISHU_ALLOWED_PRIVATE_HOSTS)."),
    )
