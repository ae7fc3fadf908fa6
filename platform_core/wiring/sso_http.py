"""Single sign-on's outbound HTTP through the SSRF guard (the wiring joins the sso package and connectors).

allauth makes every provider request (Feishu's tokens and user info, OIDC discovery, token, userinfo
and JWKS) through its adapter's ``get_requests_session()``
(https://docs.allauth.org/en/latest/socialaccount/adapter.html). Our session resolves each request's
host once, refuses it unless every address is public or the host is allowed, and connects to the
checked address itself, keeping the host name for the ``Host`` header, TLS SNI and certificate checks,
so a DNS answer that changes after the check cannot redirect it. Redirect hops go through the same
check. Allowed: the hosts the operator configured for sign-in (the Feishu origin, each OIDC
``server_url``) and ``SSO_ALLOWED_PRIVATE_HOSTS``; endpoints a discovery document names elsewhere are
checked like any other URL.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

import requests
from allauth.socialaccount import app_settings as socialaccount_settings
from django.conf import settings
from requests.adapters import HTTPAdapter

from connectors import ssrf
from connectors.ssrf import BadURL, normalise_host, refusal_of, url_host_port
from platform_core.sso.adapter import OrgSocialAccountAdapter

HINT = "the operator can allow a private sign-in host with SSO_ALLOWED_PRIVATE_HOSTS"


def sso_allowed_private_hosts() -> tuple[str, ...]:
    """The operator's sign-in hosts and ``SSO_ALLOWED_PRIVATE_HOSTS`` (read at call time)."""
    hosts = {normalise_host(h) for h in getattr(settings, "SSO_ALLOWED_PRIVATE_HOSTS", ()) or () if h.strip()}
    providers = getattr(settings, "SOCIALACCOUNT_PROVIDERS", {}) or {}
    urls = [str(providers.get("feishu", {}).get("BASE_URL") or "")]
    urls += [
        str((a.get("settings") or {}).get("server_url") or "")
        for a in providers.get("openid_connect", {}).get("APPS", [])
    ]
    hosts |= {normalise_host(urlsplit(u).hostname or "") for u in urls if u}
    return tuple(sorted(h for h in hosts if h))


class SSRFRefused(requests.exceptions.ConnectionError):
    """The SSRF guard refused the request's host (nothing was sent)."""


def _resolve(host: str, port: int) -> list[str]:
    """The host's addresses, from the SSRF guard's own resolver (an IP literal resolves to itself)."""
    name = normalise_host(host)
    try:
        return [str(ipaddress.ip_address(name))]
    except ValueError:
        pass
    try:
        return ssrf._getaddrinfo_sync(name, port)  # the guard's resolver: one lookup, then the address
    except (OSError, UnicodeError) as exc:
        raise requests.exceptions.ConnectionError(f"could not resolve host {host!r}") from exc


class GuardedHTTPAdapter(HTTPAdapter):
    """A requests transport adapter that checks, then connects to the checked address."""

    def __init__(self, allowed_private_hosts: Sequence[str], **kwargs: Any) -> None:
        self._allowed = tuple(allowed_private_hosts)
        self._checked_address: WeakKeyDictionary[requests.PreparedRequest, str] = WeakKeyDictionary()
        super().__init__(**kwargs)

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        target = url_host_port(request.url or "")
        if isinstance(target, BadURL):
            raise requests.exceptions.InvalidURL(target.reason)
        host, port = target
        addresses = _resolve(host, port)
        if not addresses:
            raise requests.exceptions.ConnectionError(f"host {host!r} has no addresses")
        refusal = refusal_of(host, addresses, self._allowed)
        if refusal is not None:
            raise SSRFRefused(refusal.message(HINT))
        netloc = urlsplit(request.url or "").netloc.rpartition("@")[2]
        request.headers["Host"] = netloc
        self._checked_address[request] = addresses[0]
        return super().send(request, *args, **kwargs)

    def get_connection_with_tls_context(
        self, request: requests.PreparedRequest, verify: Any, proxies: Any = None, cert: Any = None
    ) -> Any:
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        address = self._checked_address.get(request)
        if address is None:  # send() always sets it; never connect unchecked
            raise SSRFRefused("blocked by the SSRF guard: the request was not checked")
        if host_params["scheme"] == "https":
            pool_kwargs["server_hostname"] = host_params["host"]
            pool_kwargs["assert_hostname"] = host_params["host"]
        host_params["host"] = address
        return self.poolmanager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)


class _TimeoutSession(requests.Session):
    """A session whose requests wait at most ``timeout`` unless the caller passes its own."""

    def __init__(self, timeout: Any) -> None:
        super().__init__()
        self._timeout = timeout

    def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", self._timeout)
        return super().request(method, url, *args, **kwargs)


def guarded_session() -> requests.Session:
    """A session whose every request and redirect hop passes the SSRF guard; no proxies from the env."""
    session = _TimeoutSession(socialaccount_settings.REQUESTS_TIMEOUT)
    session.trust_env = False
    adapter = GuardedHTTPAdapter(sso_allowed_private_hosts())
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class GuardedSocialAccountAdapter(OrgSocialAccountAdapter):
    """The organisation rules of :class:`OrgSocialAccountAdapter`, with provider HTTP behind the guard."""

    def get_requests_session(self) -> requests.Session:
        return guarded_session()
