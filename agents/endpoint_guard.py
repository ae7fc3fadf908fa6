"""Model endpoints go through the SSRF guard, on save and at call time.

An org admin's endpoint may only reach public addresses; the operator can allow private hosts (a
local vLLM or Ollama) with ``MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS``, which an org admin cannot widen.
The environment's default endpoint (``OPENAI_BASE_URL``) is the operator's own: its host is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from agents.engine.llm import ConnectRefusal
from connectors.outbound import validate_outbound_url
from connectors.ssrf import HostResolutionError, normalise_host, refusal_of, resolve

OPERATOR_HINT = "the operator can allow a private model endpoint with MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS"


def model_endpoint_allowed_hosts() -> tuple[str, ...]:
    """The private hosts the operator allows for organisations' model endpoints."""
    hosts = getattr(settings, "MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS", ()) or ()
    return tuple(sorted({normalise_host(h) for h in hosts if h.strip()}))


def operator_endpoint_allowed_hosts(base_url: str) -> tuple[str, ...]:
    """The allowance of the environment's default endpoint: the operator's list and its own host."""
    own = urlsplit(base_url).hostname or ""
    return tuple(sorted({*model_endpoint_allowed_hosts(), *([normalise_host(own)] if own else [])}))


def validate_model_endpoint_url(url: str) -> None:
    """Raise ``ValidationError`` unless an organisation's model endpoint may be saved with ``url``."""
    validate_outbound_url(
        url,
        allowed_private_hosts=model_endpoint_allowed_hosts(),
        allow_hint=_(
            "The operator can allow a private model endpoint (MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS)."
        ),
    )


@dataclass(frozen=True, slots=True)
class ModelEndpointGuard:
    """The engine's :class:`~agents.engine.llm.ConnectGuard` for model endpoints: the SSRF guard with
    the operator's allowance (hashable, so runs on one endpoint share one client)."""

    allowed_private_hosts: tuple[str, ...] = ()

    async def check(self, host: str, port: int) -> Sequence[str] | ConnectRefusal:
        try:
            addresses = await resolve(host, port)
        except HostResolutionError as exc:
            raise OSError(str(exc)) from exc
        refusal = refusal_of(host, addresses, self.allowed_private_hosts)
        if refusal is not None:
            return ConnectRefusal(refusal.message(OPERATOR_HINT))
        return addresses
