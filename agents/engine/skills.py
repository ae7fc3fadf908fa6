"""The skills a run may read, as its system prompt lists them: each one's name and description only.

A skill is an operation manual read on demand: the model sees the list, and reads a skill's body with
the run's skill tool when a task calls for it. The list is bounded (:data:`MAX_LISTED_SKILLS` skills,
each description cut at :data:`DESCRIPTION_CHARS` characters) so that a large library cannot crowd out
the conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.engine.prompts import SKILLS_LIST

MAX_LISTED_SKILLS = 50
DESCRIPTION_CHARS = 300


@dataclass(frozen=True, slots=True)
class SkillListing:
    """One skill as the system prompt lists it."""

    name: str
    description: str


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1].rstrip() + "…"


def skills_prompt(skills: Sequence[SkillListing], *, tool_name: str) -> str:
    """The system prompt's list of ``skills`` and how to read them with ``tool_name`` ("" for none)."""
    if not skills:
        return ""
    lines = [SKILLS_LIST.format(tool=tool_name)]
    lines.extend(f"- {skill.name}: {_one_line(skill.description)}" for skill in skills[:MAX_LISTED_SKILLS])
    return "\n".join(lines)


def instructions_with_skills(instructions: str, skills: Sequence[SkillListing], *, tool_name: str) -> str:
    """The agent's instructions followed by the list of its skills (the instructions alone without any)."""
    parts = [part for part in (instructions.strip(), skills_prompt(skills, tool_name=tool_name)) if part]
    return "\n\n".join(parts)
