"""The models of an agent by role, so plan mode can give each call the model that suits it."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from agents.engine.llm import LLM

logger = logging.getLogger(__name__)

GENERAL = "general"
FAST = "fast"
SMART = "smart"
REASONING = "reasoning"
ROLES = (GENERAL, FAST, SMART, REASONING)


def normalise_role(role: str | None) -> str | None:
    """``role`` as a known role name (case and spaces ignored), or ``None``."""
    if not isinstance(role, str):
        return None
    name = role.strip().lower()
    return name if name in ROLES else None


def model_name(llm: LLM) -> str:
    """The model's name for events and logs (``llm.model`` when it has one)."""
    name = getattr(llm, "model", None)
    return name if isinstance(name, str) and name else type(llm).__name__


class ModelRegistry:
    """LLMs by role: ``general`` (the default, required), ``fast``, ``smart`` and ``reasoning``.

    A role left empty (missing or ``None``) and any unknown role fall back to ``general``. Planner and
    analyser use ``smart``, history summaries ``fast``, each plan step the role of its ``model_hint``.
    """

    def __init__(self, models: Mapping[str, LLM | None]) -> None:
        general = models.get(GENERAL)
        if general is None:
            raise ValueError("a ModelRegistry needs a 'general' model")
        self._models: dict[str, LLM] = {}
        for role, llm in models.items():
            known = normalise_role(role)
            if known is None:
                logger.warning("ignoring the model of unknown role %r", role)
            elif llm is not None:
                self._models[known] = llm

    @classmethod
    def single(cls, llm: LLM) -> ModelRegistry:
        """A registry where every role is ``llm``."""
        return cls({GENERAL: llm})

    def get(self, role: str | None) -> LLM:
        """The LLM of ``role``; ``general`` for an unknown, empty or unconfigured role."""
        known = normalise_role(role)
        return self._models.get(known or GENERAL) or self._models[GENERAL]

    def roles(self) -> dict[str, str]:
        """Every role and the name of the model that serves it (for events and logs)."""
        return {role: model_name(self.get(role)) for role in ROLES}


__all__ = ["FAST", "GENERAL", "REASONING", "ROLES", "SMART", "ModelRegistry", "model_name", "normalise_role"]
