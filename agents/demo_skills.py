"""The offline demo model and skills: a question that asks for a procedure ("What is our procedure for
approving a purchase?", "采购审批的流程是什么？") reads the listed skill that shares the most words with
it, with the run's skill tool, and the answer quotes the skill. A word heuristic, honest about being one:
the demo model never applies the procedure, it shows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_PROCEDURE_WORDS = (
    "procedure",
    "process",
    "steps",
    "step by step",
    "how do i",
    "how do we",
    "how should",
    "流程",
    "步骤",
    "手续",
)
_LISTED = re.compile(r"^- ([a-z0-9]+(?:-[a-z0-9]+)*): (.+)$")
_READ = re.compile(
    r'^Skill "([^"]+)" \(version (\d+)\):\n\n(.*?)(?:\n\nFiles of this skill \(read one with `file`\): .*)?$',
    re.S,
)
MAX_ANSWER_CHARS = 3000


def asks_procedure(question: str) -> bool:
    lowered = question.lower()
    return any(word in lowered for word in _PROCEDURE_WORDS)


def listed_skills(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The skills the system prompt lists (``agents.engine.skills``): ``(name, description)``."""
    system = next((m for m in messages if m.get("role") == "system"), None)
    text = str(system.get("content") or "") if system is not None else ""
    if "## Skills\n" not in text:
        return []
    listed = text.split("## Skills\n", 1)[1]
    return [(m.group(1), m.group(2)) for line in listed.splitlines() if (m := _LISTED.match(line))]


def skill_to_read(
    tools: Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
    question: str,
    words: Callable[[str], set[str]],
) -> tuple[str, dict[str, str]] | None:
    """The skill tool's name and arguments when ``question`` asks for a procedure that a listed skill
    shares words with (the one sharing most), else ``None``."""
    if not asks_procedure(question):
        return None
    tool = next(
        (
            str(t.get("function", t).get("name"))
            for t in tools
            if str(t.get("function", t).get("name", "")).endswith("__read_skill")
        ),
        None,
    )
    if tool is None:
        return None
    asked = words(question)
    scored = [
        (len(asked & words(f"{name.replace('-', ' ')} {about}")), name)
        for name, about in listed_skills(messages)
    ]
    best = max(scored, default=(0, ""))
    return (tool, {"name": best[1]}) if best[0] > 0 else None


def skill_answer(content: str, *, zh: bool) -> str | None:
    """The answer a skill's read gives (``Skill "<name>" (version n):`` then its body): the skill,
    quoted; ``None`` for any other tool result."""
    found = _READ.match(content.strip())
    if found is None:
        return None
    name, version, body = found.group(1), found.group(2), found.group(3).strip()
    if len(body) > MAX_ANSWER_CHARS:
        body = body[:MAX_ANSWER_CHARS].rstrip() + "…"
    head = (
        f"技能“{name}”（版本 {version}）给出的流程："
        if zh
        else f"The skill “{name}” (version {version}) says:"
    )
    return f"{head}\n\n{body}"
