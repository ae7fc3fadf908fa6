"""Running "Check endpoint" for a stored endpoint, keeping its report, and applying what it found.

``model_config_check`` runs the probes of :mod:`agents.endpoint_check` in a thread of its own (its own
event loop, whose clients are closed afterwards: the runs' shared clients are never touched) and stores the
report on the endpoint; ``model_config_apply_check`` sets the endpoint's abilities to those the last check
found. Both are audited writes (``model_config.updated``), like every change to an endpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents.endpoint_check import PROBE_SECONDS, EndpointCheckReport, ProbeAbilities, check_llm
from agents.endpoint_check_report import PROBES, ProbeOutcome
from agents.endpoint_headers import api_key_sendable, headers_sendable
from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from agents.knowledge.embeddings import embedding_endpoint_of
from agents.knowledge.endpoint_check import EMBEDDING_PROBE, RERANK_PROBE, check_embedding, check_rerank
from agents.knowledge.rerank import rerank_endpoint_of
from agents.model_presets import ABILITY_KEYS
from agents.models import ModelConfig, ModelRole
from agents.runtime import endpoint_of, llm_for
from platform_core.audit.audited import audited_save

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# The abilities a check can decide, in the order the admin shows them.
CHECKED_ABILITIES: tuple[str, ...] = ABILITY_KEYS


async def check_endpoint_async(config: ModelConfig) -> EndpointCheckReport:
    """Probe ``config``'s endpoint (no database access: ``config`` is read before): as its role uses it
    (an embedding endpoint embeds, a rerank endpoint reranks, the others chat)."""
    if config.role == ModelRole.EMBEDDING:
        return await check_embedding(embedding_endpoint_of(config))
    if config.role == ModelRole.RERANK:
        return await check_rerank(rerank_endpoint_of(config))
    endpoint = endpoint_of(config)
    endpoint = dataclasses.replace(endpoint, timeout=min(endpoint.timeout, PROBE_SECONDS))

    def build(abilities: ProbeAbilities) -> OpenAICompatibleLLM:
        llm = llm_for(dataclasses.replace(endpoint, **abilities))
        assert isinstance(llm, OpenAICompatibleLLM)  # a stored endpoint always has a base URL
        llm.max_retries = 0  # a check reports what the endpoint answers (a 429 too) instead of waiting
        return llm

    return await check_llm(build, model=config.model)


def probes_for_role(role: str) -> tuple[str, ...]:
    """The probes a check of an endpoint of ``role`` runs, in order."""
    if role == ModelRole.EMBEDDING:
        return (EMBEDDING_PROBE,)
    if role == ModelRole.RERANK:
        return (RERANK_PROBE,)
    return PROBES


def unsendable_key_report(role: str = ModelRole.GENERAL) -> EndpointCheckReport:
    """The report of an endpoint (of ``role``) whose stored key or headers no request can carry: nothing
    is sent."""
    why = _(
        "The API key or an extra header holds characters a request header cannot carry (visible ASCII "
        "only): nothing was sent."
    )
    return EndpointCheckReport(
        checked_at=timezone.now(),
        elapsed=0.0,
        probes=tuple(ProbeOutcome(probe, "not_checked", why) for probe in probes_for_role(role)),
        abilities={},
        key_verified=False,
    )


def check_endpoint(config: ModelConfig) -> EndpointCheckReport:
    """:func:`check_endpoint_async` from sync code, on an event loop of its own in a worker thread (the
    report's messages in the caller's language). A key or header that cannot be sent is reported, not sent."""
    if not api_key_sendable(config.api_key or "") or not headers_sendable(config.headers):
        return unsendable_key_report(config.role)
    language = translation.get_language()

    async def run() -> EndpointCheckReport:
        try:
            with translation.override(language):
                return await check_endpoint_async(config)
        finally:
            await aclose_shared_clients()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="endpoint-check") as pool:
        return pool.submit(asyncio.run, run()).result()


def model_config_check(
    *, config: ModelConfig, actor: User | None, ip_address: str | None = None
) -> EndpointCheckReport:
    """Check ``config``'s endpoint and store the report on it (one audited write)."""
    report = check_endpoint(config)
    config.last_check = report.as_data()
    config.last_checked_at = report.checked_at
    audited_save(instance=config, actor=actor, ip_address=ip_address)
    return report


def found_abilities(config: ModelConfig) -> dict[str, bool]:
    """The abilities the endpoint's last check decided (empty when it was never checked)."""
    found = (config.last_check or {}).get("abilities") or {}
    return {key: bool(found[key]) for key in CHECKED_ABILITIES if key in found}


def abilities_to_change(config: ModelConfig) -> dict[str, tuple[bool | None, bool]]:
    """Each ability whose stored value differs from what the last check found: (stored, found); only
    ``reasoning_replay`` may be stored as None (by host)."""
    return {
        key: (getattr(config, key), value)
        for key, value in found_abilities(config).items()
        if getattr(config, key) != value
    }


def model_config_apply_check(
    *, config: ModelConfig, actor: User | None, ip_address: str | None = None
) -> dict[str, bool]:
    """Set ``config``'s abilities to those its last check found (one audited write); returns the changes."""
    changes = {key: found for key, (_, found) in abilities_to_change(config).items()}
    if changes:
        for key, value in changes.items():
            setattr(config, key, value)
        audited_save(instance=config, actor=actor, ip_address=ip_address)
    return changes
