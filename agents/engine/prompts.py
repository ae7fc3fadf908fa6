"""Every text the engine adds to a conversation, in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.engine.stop_reasons import StopReason

HUMAN_DECISIONS = (
    "Some tool calls pass through guard rails (read-only mode, approval by a human, rate limits). "
    "When a call is blocked or rejected, the observation says why. A call rejected by a human is a "
    "decision: report it to the user, do not retry it, and do not try to reach the same effect "
    "through another tool or other arguments."
)

NATIVE_INSTRUCTIONS = (
    "You can call tools to gather information or act. Call them when they help; you may call several "
    "independent tools at once. When you have what you need, reply with your answer and no tool call."
)

NATIVE_INSTRUCTIONS_ONE_CALL = (
    "You can call tools to gather information or act. Call them when they help, one tool per reply: you "
    "receive its result before the next. When you have what you need, reply with your answer and no tool call."
)

JSON_INSTRUCTIONS = """You solve the task step by step with the tools below. Reply with ONE JSON object and nothing else.

To call a tool:
{{"reasoning": "<why this step>", "action": {{"type": "tool_call", "tool_name": "<name>", "tool_args": {{...}}}}}}

When you have everything you need:
{{"reasoning": "<why you are done>", "action": {{"type": "final_answer", "answer": "<your answer>"}}}}

Call one tool per reply. After each call you receive its observation.

## Tools

{tools}"""

NO_TOOLS = "(no tools are available: answer directly)"

SKILLS_LIST = (
    "## Skills\n"
    "These skills are procedures of the organisation. When a task matches a skill's description, read the "
    "skill first with the tool `{tool}` (its name as `name`) and follow it; read only the skills you need. "
    "Each skill, with what it is for:"
)

PARSE_FAILURE_SENTINEL = "(could not parse LLM output as JSON)"

REFORMAT_REQUEST = (
    "Your previous response could not be parsed as valid JSON. Reply again with exactly one JSON object: "
    '{"reasoning": "...", "action": {"type": "tool_call", "tool_name": "...", "tool_args": {...}}} or '
    '{"reasoning": "...", "action": {"type": "final_answer", "answer": "..."}}.'
)

EMPTY_REPLY_NUDGE = (
    "Your previous reply was empty. Continue the task: call a tool, or give your final answer."
)

CYCLE_WARNING = (
    "You have called `{tool}` with identical arguments {count} times and received the same result. "
    "Please try a different approach or tool."
)

SELF_REFLECTION = """[Self-reflection] You have made {count} tool calls so far. Pause and check before going on:
1. Are you still making progress towards the original goal?
2. Have you been repeating similar actions or going in circles?
3. What is the most direct next step to complete the task?
4. Should you give the final answer now?"""

COMPLETION_CHECKLIST = """[Completion check] Before you give your final answer, verify:
1. Does the answer fully address the original question?
2. Are the key facts verified by tool results?
3. Are there contradictions in the information gathered?
If everything holds, give your final answer again. If something is missing, continue with tool calls."""

USER_FOLLOW_UPS = (
    "[USER INTERRUPT] The user sent this while you were working. Take it into account before you "
    "continue; it may change or add to the task.\n\n{content}"
)

TOOL_SELECTION_SYSTEM = """Pick the tools needed to handle the user's request. Choose at most {max_tools}, the most relevant first, using only names from this catalogue:

{catalogue}

Return JSON: {{"tools": ["tool_name", ...]}}"""

JSON_OBSERVATION = "Observation from `{tool}`:\n{observation}"

SYNTHESIS_SYSTEM = (
    "You write the final answer for the user from an agent's work. Answer the user's question directly, "
    "in markdown. Use the facts in the execution trace; do not invent any. Do not add meta-commentary "
    "(no 'based on the tool results', no description of the steps taken) unless the user asked about the "
    "process. If something could not be done (a failed, blocked or rejected call), say so plainly. "
    "Write in the same language as the user's question."
)


def user_follow_ups(contents: Sequence[str]) -> str:
    """One user message for every follow-up drained at once, marked ``[USER INTERRUPT]`` for the model
    (the model-facing wording is unchanged)."""
    if len(contents) == 1:
        body = contents[0]
    else:
        body = "\n\n".join(f"{i}. {c}" for i, c in enumerate(contents, 1))
    return USER_FOLLOW_UPS.format(content=body)


def system_prompt(
    base: str, *, native: bool, tools_text: str, extra: Sequence[str] = (), parallel: bool = True
) -> str:
    """The tool loop's system prompt: the agent's own prompt, the protocol, the human-decision rule.
    ``parallel=False`` (an endpoint without parallel tool calls) asks for one tool call per reply."""
    parts = [base.strip()] if base and base.strip() else []
    parts.extend(t.strip() for t in extra if t and t.strip())
    if native:
        parts.append(NATIVE_INSTRUCTIONS if parallel else NATIVE_INSTRUCTIONS_ONE_CALL)
    else:
        parts.append(JSON_INSTRUCTIONS.format(tools=tools_text or NO_TOOLS))
    parts.append(HUMAN_DECISIONS)
    return "\n\n".join(parts)


# The answers of runs that end without a final answer, in English and Simplified Chinese: the user's
# interface language, which the run is given (the engine has no Django translation machinery); the
# question's language only when none is known.
_STOP_HEADS: dict[StopReason, tuple[str, str]] = {
    StopReason.MAX_ITERATIONS: (
        "I stopped after reaching the limit of {max_iterations} iterations, before the task was finished.",
        "已达到 {max_iterations} 次迭代上限，任务尚未完成。",
    ),
    StopReason.TOKEN_BUDGET: (
        "I stopped because the token budget ({token_budget} tokens) was used up before the task was finished.",
        "Token 预算（{token_budget}）已用完，任务尚未完成。",
    ),
    StopReason.LLM_ERROR: (
        "I could not finish because of the language model: {error}.",
        "无法完成，语言模型出错：{error}。",
    ),
    StopReason.BUDGET_EXCEEDED: (
        "I stopped before the task was finished: {budget}.",
        "任务尚未完成就已停止：{budget}。",
    ),
    StopReason.EMPTY_RESPONSE: (
        "I could not finish: the language model returned empty replies.",
        "无法完成：语言模型返回了空回复。",
    ),
    StopReason.UNPARSED_OUTPUT: (
        "I could not finish: the language model's replies could not be understood.",
        "无法完成：无法理解语言模型的回复。",
    ),
}
_RESULT_EXCERPT_CHARS = 500


def is_chinese(text: str) -> bool:
    """Whether ``text`` contains CJK ideographs (the question is then answered in Chinese)."""
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def speaks_chinese(*, language: str | None, query: str) -> bool:
    """Whether the user is told things in Chinese: by ``language`` (the user's interface language, a
    language code such as ``zh-hans`` or ``en``) when known, else by whether ``query`` is Chinese."""
    if language:
        return language.strip().lower().replace("_", "-").startswith("zh")
    return is_chinese(query)


def stop_head(reason: StopReason, *, query: str, language: str | None = None, **details: Any) -> str:
    """Why the run stopped (the first line of a fallback answer), in ``language`` (else ``query``'s)."""
    heads = _STOP_HEADS.get(reason, _STOP_HEADS[StopReason.MAX_ITERATIONS])
    return heads[1 if speaks_chinese(language=language, query=query) else 0].format(**details)


def stopped_by_budget(answer: str, *, query: str, budget: str, language: str | None = None) -> str:
    """``answer`` (what the run has) after why it stopped: ``budget`` (the refusal's label) was used up,
    in ``language`` (else ``query``'s)."""
    head = stop_head(StopReason.BUDGET_EXCEEDED, query=query, language=language, budget=budget)
    return f"{head}\n\n{answer}" if answer else head


def fallback_answer(
    reason: StopReason, records: Sequence[Any], *, query: str, language: str | None = None, **details: Any
) -> str:
    """A summary of partial results: why the run stopped, which tools were called, and how they went, in
    ``language`` (else ``query``'s)."""
    zh = speaks_chinese(language=language, query=query)
    head = _STOP_HEADS.get(reason, _STOP_HEADS[StopReason.MAX_ITERATIONS])[1 if zh else 0].format(**details)
    if not records:
        return f"{head}\n\n{'未调用任何工具。' if zh else 'No tool was called.'}"
    by_tool: dict[str, list[Any]] = {}
    for record in records:
        by_tool.setdefault(record.name, []).append(record)
    lines = [head, "", "已调用的工具：" if zh else "Tools called:"]
    for name, calls in by_tool.items():
        ok = [c for c in calls if c.error is None]
        failed = [c for c in calls if c.error is not None]
        if zh:
            line = f"- `{name}`：调用 {len(calls)} 次，成功 {len(ok)} 次，失败 {len(failed)} 次"
            if failed:
                line += f"（最后的错误：{failed[-1].error}）"
        else:
            line = f"- `{name}`: called {len(calls)} time(s), {len(ok)} succeeded, {len(failed)} failed"
            if failed:
                line += f" (last error: {failed[-1].error})"
        lines.append(line)
        if ok:
            excerpt = ok[-1].observation[:_RESULT_EXCERPT_CHARS]
            lines.append(f"  {'最后结果' if zh else 'Last result'}: {excerpt}")
    return "\n".join(lines)


JSON_WORD_NOTE = "Reply with a JSON object."


def with_json_word(messages: Sequence[Any]) -> list[Any]:
    """``messages`` for a JSON-mode request: OpenAI and DashScope refuse ``response_format`` json_object (HTTP 400
    "'messages' must contain the word 'json' in some form") unless a message says "json"; the system prompt
    gets :data:`JSON_WORD_NOTE` when none does.

    Sources: https://platform.openai.com/docs/guides/structured-outputs#json-mode ("you must instruct the model
    to produce JSON"; the 400 quoted in https://github.com/mem0ai/mem0/issues/3559) and DashScope's identical
    400 (https://github.com/agno-agi/agno/pull/5317).
    """
    out = list(messages)
    if any("json" in _text_of(m).lower() for m in out):
        return out
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{JSON_WORD_NOTE}"}
    else:
        out.insert(0, {"role": "system", "content": JSON_WORD_NOTE})
    return out


def _text_of(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(
            p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""
