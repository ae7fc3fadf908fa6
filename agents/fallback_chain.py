"""Fallback endpoints of a model endpoint: each :class:`~agents.models.ModelConfig` may name one
``fallback``, which may name its own, so an endpoint's chain is itself, its fallback, that one's fallback...

The chain stays inside the organisation and has no cycle (checked when an endpoint is saved, see
:func:`fallback_problem`); at run time inactive endpoints are left out and the chain is cut at
:data:`MAX_CHAIN` endpoints.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

# A ModelConfig (not imported: the model imports this module, and import cycles are not allowed).
ModelConfig = Any

#: The most endpoints a run tries for one model call (the endpoint and its fallbacks).
MAX_CHAIN = 5


def fallback_problem(config: ModelConfig) -> str | None:
    """Why ``config``'s ``fallback`` cannot be saved (another organisation's endpoint, itself, a cycle),
    or ``None``."""
    fallback = config.fallback
    if fallback is None:
        return None
    if fallback.organization_id != config.organization_id:
        return _("The fallback endpoint must belong to the same organisation.")
    seen = {config.pk}
    step = fallback
    while step is not None:
        if step.pk in seen:
            return _("This fallback makes a cycle: an endpoint would fall back to itself.")
        seen.add(step.pk)
        step = step.fallback
    return None


def fallback_chain(config: ModelConfig) -> list[ModelConfig]:
    """``config``'s active fallbacks, in the order they are tried (without ``config``; sync, one query per
    link of the chain)."""
    chain: list[ModelConfig] = []
    seen = {config.pk}
    step = config.fallback
    while step is not None and step.pk not in seen and len(chain) < MAX_CHAIN - 1:
        seen.add(step.pk)
        if step.active and step.organization_id == config.organization_id:
            chain.append(step)
        step = step.fallback
    return chain
