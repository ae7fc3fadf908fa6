"""Feishu channels go through the SSRF guard, on save and at call time.

A channel's base URL may only reach public addresses. The operator's own ``FEISHU_BASE_URL`` (the
default of a blank base URL) is trusted; other private hosts (a Feishu gateway inside the network, the
tests' fake) only when the operator lists them in ``FEISHU_ALLOWED_PRIVATE_HOSTS``; an org admin
cannot widen either.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from connectors.outbound import validate_outbound_url
from connectors.ssrf import normalise_host
from hooks.conf import feishu_base_url


def feishu_allowed_private_hosts() -> tuple[str, ...]:
    """The operator's allowance: ``FEISHU_ALLOWED_PRIVATE_HOSTS`` and the host of ``FEISHU_BASE_URL``."""
    hosts = {
        normalise_host(h) for h in getattr(settings, "FEISHU_ALLOWED_PRIVATE_HOSTS", ()) or () if h.strip()
    }
    own = urlsplit(feishu_base_url()).hostname
    if own:
        hosts.add(normalise_host(own))
    return tuple(sorted(hosts))


def validate_feishu_base_url(url: str) -> None:
    """Raise ``ValidationError`` unless a channel may be saved with this base URL (blank: the default)."""
    validate_outbound_url(
        url,
        allowed_private_hosts=feishu_allowed_private_hosts(),
        allow_hint=_("The operator can allow a private Feishu host (FEISHU_ALLOWED_PRIVATE_HOSTS)."),
    )
