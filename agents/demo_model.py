"""The offline demo model: a deterministic stand-in for an LLM, used only when no endpoint is configured.

It follows the OpenAI chat contract closely enough for the engine to run the whole flow without an API
key: it picks tools whose names and descriptions share words with the user's question, fills their
arguments from the question (numbers, quoted text, enum values), answers from the observations, and
streams a clearly labelled answer. It never pretends to reason; every answer says it came from the demo
model. In plan mode it makes a fixed two-step plan (see ``agents.demo_plan``). It is never used when an
endpoint is configured.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agents import demo_plan
from agents.demo_intent import arguments_for, question_facts
from agents.demo_memory import (
    is_remember_tool,
    memory_kept_answer,
    memory_to_keep,
    remembered_answer,
    remembered_in_draft,
)
from agents.demo_skills import skill_answer, skill_to_read
from agents.demo_summary import knowledge_answer, tool_result_markdown
from agents.engine.llm import ChatResponse, Message, ToolCallRequest, Usage

DEMO_MODEL_NAME = "offline-demo-model"
LABEL_EN = "Offline demo model"
LABEL_ZH = "离线演示模型"

_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STOP = {
    "the",
    "a",
    "an",
    "of",
    "to",
    "for",
    "and",
    "or",
    "in",
    "on",
    "me",
    "my",
    "is",
    "are",
    "what",
    "show",
    "please",
    "with",
    "by",
    "get",
    "list",
    "all",
    "from",
    "give",
    "tell",
    "do",
    "can",
    "you",
    "i",
    "it",
    "的",
    "了",
    "是",
    "我",
    "请",
    "和",
    "吗",
    "有",
    "在",
    "个",
}
# Common words a question uses for an operation, and the words tool names use for it.
_SYNONYMS = {
    "order": {"orders", "po", "purchase", "订单", "采购"},
    "payment": {"payments", "pay", "paid", "付款", "支付"},
    "create": {"new", "add", "make", "创建", "新建"},
    "approve": {"approval", "批准", "审批"},
    "list": {"all", "show", "列出", "查看"},
}


def _words(text: str) -> set[str]:
    lowered = text.lower()
    words = {w for w in _WORD.findall(lowered) if w not in _STOP}
    for run in _CJK_RUN.findall(lowered):  # Chinese has no spaces: use its two-character words
        words.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    for canonical, alternatives in _SYNONYMS.items():
        if words & alternatives or canonical in words:
            words |= {canonical} | alternatives
    stems = {w[:-1] for w in words if len(w) > 3 and w.endswith("s")}
    return words | stems


def _is_chinese(text: str) -> bool:
    return bool(_CJK.search(text))


def _question(messages: Sequence[Message]) -> str:
    for message in messages:
        if message.get("_query"):
            return str(message.get("content") or "")
    for message in reversed(messages):
        if message.get("role") == "user" and not message.get("_bookkeeping") and not message.get("_summary"):
            return str(message.get("content") or "")
    return ""


def _called_tools(messages: Sequence[Message]) -> list[str]:
    names: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            names.append(call.get("function", {}).get("name", ""))
    return names


def _observations(messages: Sequence[Message]) -> list[str]:
    return [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]


_WRITE_VERBS = {
    "make",
    "create",
    "add",
    "new",
    "approve",
    "update",
    "delete",
    "remove",
    "pay",
    "cancel",
    "submit",
    "set",
    "post",
    "put",
    "patch",
    "reject",
    "send",
}
_WRITE_WORDS_ZH = ("创建", "新建", "添加", "批准", "审批", "更新", "删除", "支付", "付款", "取消", "提交")


def _wants_write(question: str) -> bool:
    words = set(_WORD.findall(question.lower()))
    return bool(words & _WRITE_VERBS) or any(w in question for w in _WRITE_WORDS_ZH)


def _is_write_tool(function: Mapping[str, Any]) -> bool:
    """A tool whose action name starts with a verb that changes things (``erp__create_payment``)."""
    action = str(function.get("name", "")).split("__")[-1].lower()
    first = re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", action)[0] if action else ""
    return first in _WRITE_VERBS


def _action_words(function: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The words of a tool's action verb and of its object (``create_payment``: create, payment)."""
    action = str(function.get("name", "")).split("__")[-1]
    parts = [p for p in re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", action) if p]
    verb = _words(parts[0]) if parts else set()
    return verb, _words(" ".join(parts[1:]))


def _first_mention(tokens: list[set[str]], words: set[str]) -> int:
    return next((index for index, token in enumerate(tokens) if token & words), len(tokens))


def _tokens(question: str) -> list[set[str]]:
    """The question's words in order, each with its synonyms (Chinese as two-character words)."""
    tokens: list[set[str]] = []
    for match in re.finditer(r"[a-z0-9]+|[\u4e00-\u9fff]+", question.lower()):
        piece = match.group(0)
        if _CJK.match(piece):
            tokens += [_words(piece[i : i + 2]) for i in range(max(1, len(piece) - 1))]
        elif piece not in _STOP:
            tokens.append(_words(piece))
    return tokens


def _write_words(question: str) -> set[str]:
    """The write verbs of the question with their synonyms ("pay": pay, payment, 支付…)."""
    words: set[str] = set()
    for token in _WORD.findall(question.lower()):
        if token in _WRITE_VERBS:
            words |= _words(token)
    for word in _WRITE_WORDS_ZH:
        if word in question:
            words |= _words(word)
    return words


# A question about the organisation's rules asks its knowledge base (a tool that searches one).
_POLICY_WORDS = (
    "policy",
    "policies",
    "rule",
    "rules",
    "handbook",
    "guideline",
    "政策",
    "规定",
    "制度",
    "手册",
)


def _searches_knowledge(function: Mapping[str, Any]) -> bool:
    name = str(function.get("name", ""))
    return name.endswith("__search") and "knowledge base" in str(function.get("description", ""))


def _asks_policy(question: str) -> bool:
    lowered = question.lower()
    return any(re.search(rf"(?<![a-z]){word}(?![a-z])", lowered) for word in _POLICY_WORDS)


def _score(tool: Mapping[str, Any], question: str, first_thing: int) -> int:
    """How well a tool fits the question: shared words, the thing named first, the verb, the id it needs."""
    function = tool.get("function", tool)
    if _searches_knowledge(function) and _asks_policy(question):
        return 50
    name_words = _words(re.sub(r"[_\-]+", " ", str(function.get("name", ""))))
    description = str(function.get("description", "")).split("\nSystem:", 1)[0]  # every tool's system line
    description_words = _words(description)
    # Count the question's words (not their synonyms) that the name and the description share.
    tokens = _tokens(question)
    distinct = {frozenset(token) for token in tokens}
    score = sum(3 * bool(token & name_words) + bool(token & description_words) for token in distinct)
    if score <= 0:
        return 0
    verb, thing = _action_words(function)
    # The thing a question names first is what it is about ("the payments of PO-0001": payments).
    if thing and _first_mention(tokens, thing) == first_thing:
        score += 4
    # A write question's own verb picks the write action: "pay" a payment, "approve" an approval.
    if _is_write_tool(function) and (verb | thing) & _write_words(question):
        score += 10
    # A tool that takes a number fits a question that gives one; one that needs a number needs one.
    properties = (function.get("parameters") or {}).get("properties") or {}
    numeric = {name for name, spec in properties.items() if spec.get("type") in ("integer", "number")}
    required = numeric & set((function.get("parameters") or {}).get("required") or ())
    has_value = question_facts(question).has_value
    if numeric and has_value:
        score += 2
    elif (required or (not properties and _fetches_one(function))) and not has_value:
        score -= 4  # a catalogue line has no schema: "get_…" fetches one thing by its id
    return score


def _fetches_one(function: Mapping[str, Any]) -> bool:
    action = str(function.get("name", "")).split("__")[-1].lower()
    return action.split("_", 1)[0] in {"get", "fetch", "read", "retrieve", "show"}


def _pick_tool(
    tools: Sequence[Mapping[str, Any]], question: str, *, hint: str | None = None
) -> Mapping[str, Any] | None:
    """The tool that best fits the question (the hinted one when it may be used), or ``None``."""
    wants_write = _wants_write(question)
    usable = [
        t
        for t in tools
        if (wants_write or not _is_write_tool(t.get("function", t)))
        and not is_remember_tool(t.get("function", t))
    ]
    things = set().union(*(_action_words(t.get("function", t))[1] for t in usable)) if usable else set()
    first_thing = _first_mention(_tokens(question), things)
    candidates = [
        (100 if hint == t.get("function", t).get("name") else _score(t, question, first_thing), -index, t)
        for index, t in enumerate(usable)
    ]
    candidates = [c for c in candidates if c[0] > 0]
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def _pick_from_catalogue(question: str, catalogue: Sequence[tuple[str, str]]) -> str | None:
    """Like :func:`_pick_tool` for a catalogue of ``(name, description)`` (the planner's prompt)."""
    tool = _pick_tool([{"name": name, "description": about} for name, about in catalogue], question)
    return str(tool["name"]) if tool is not None else None


def _structured_value(schema: Mapping[str, Any], messages: Sequence[Message]) -> dict[str, Any]:
    """A value for a forced function call (tool selection and other structured calls)."""
    properties = schema.get("properties") or {}
    question = _question(messages)
    planned = demo_plan.structured_plan_value(properties, messages, question, _pick_from_catalogue)
    if planned is not None:
        return planned
    if "tools" in properties:  # tool selection: the catalogue is in the prompt, one tool per line
        text = "\n".join(str(m.get("content") or "") for m in messages)
        words = _words(question)
        ranked = []
        for line in text.splitlines():
            match = re.match(r"\s*[-*]?\s*([A-Za-z0-9_\-]+)\s*[:\-—]", line)
            if match:
                name = match.group(1)
                ranked.append((len(_words(line) & words), name))
        ranked.sort(key=lambda pair: -pair[0])
        return {"tools": [name for score, name in ranked[:6] if score > 0] or [n for _, n in ranked[:6]]}
    return arguments_for(schema, question_facts(question))


def _final_answer(question: str, messages: Sequence[Message]) -> str:
    observations = _observations(messages)
    zh = _is_chinese(question)
    label = LABEL_ZH if zh else LABEL_EN
    cited = (
        knowledge_answer(observations[-1], zh=zh)
        or skill_answer(observations[-1], zh=zh)
        or memory_kept_answer(observations[-1], zh=zh)
        if observations
        else remembered_answer(messages, question, zh=zh)
    )
    if cited is not None:
        return f"（{label}）{cited}" if zh else f"({label}) {cited}"
    if not observations:
        if zh:
            return f"（{label}）我没有找到与这个问题相关的工具。配置一个模型端点后即可获得真正的回答。"
        return f"({label}) I found no tool related to this question. Configure a model endpoint for real answers."
    head = f"（{label}）根据工具返回的结果：" if zh else f"({label}) Based on the tool results:"
    return head + "\n\n" + "\n\n".join(tool_result_markdown(obs, zh=zh) for obs in observations[-3:])


class DemoLLM:
    """A deterministic model that implements the engine's ``LLM`` protocol offline."""

    model = DEMO_MODEL_NAME

    def __init__(self, *, context_window: int = 32000, stream_delay: float = 0.01) -> None:
        self.abilities = {"tool_call": True, "json_mode": True}
        self.context_window = context_window
        self.stream_delay = stream_delay

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> ChatResponse:
        usage = Usage(
            prompt_tokens=sum(len(str(m.get("content") or "")) for m in messages) // 4,
            completion_tokens=20,
            calls=1,
        )
        usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
        if isinstance(tool_choice, Mapping) and tools:
            function = tools[0].get("function", tools[0])
            value = _structured_value(function.get("parameters") or {}, messages)
            call = ToolCallRequest(
                id="demo-structured",
                name=function.get("name", "output"),
                arguments=json.dumps(value, ensure_ascii=False),
            )
            return ChatResponse(content=None, tool_calls=(call,), usage=usage, model=self.model)
        if response_format is not None:
            return ChatResponse(content=json.dumps({}), usage=usage, model=self.model)

        question = _question(messages)
        # A plan step that builds on earlier steps only restates their results.
        summary = demo_plan.dependency_answer(question)
        if summary is not None and not _called_tools(messages):
            return ChatResponse(content=summary, usage=usage, model=self.model, finish_reason="stop")
        # In a plan step, arguments come from its part of the user's goal (not from the step's wording).
        goal = demo_plan.step_subject(question) or question
        # One tool call per question: the demo model looks one thing up, then answers from it. A question
        # asking for a procedure reads the skill that fits it.
        skill = (
            skill_to_read(tools, messages, goal, _words) if tools and not _called_tools(messages) else None
        )
        if skill is None and tools and not _called_tools(messages):
            skill = memory_to_keep(tools, goal)
        if skill is not None:
            call = ToolCallRequest(
                id="demo-call-1", name=skill[0], arguments=json.dumps(skill[1], ensure_ascii=False)
            )
            return ChatResponse(
                content=None, tool_calls=(call,), usage=usage, model=self.model, finish_reason="tool_calls"
            )
        if tools and not _called_tools(messages):
            tool = _pick_tool(tools, goal, hint=demo_plan.suggested_tool(question))
            if tool is not None:
                function = tool.get("function", tool)
                arguments = arguments_for(function.get("parameters") or {}, question_facts(goal))
                call = ToolCallRequest(
                    id="demo-call-1",
                    name=function["name"],
                    arguments=json.dumps(arguments, ensure_ascii=False),
                )
                return ChatResponse(
                    content=None,
                    tool_calls=(call,),
                    usage=usage,
                    model=self.model,
                    finish_reason="tool_calls",
                )
        return ChatResponse(
            content=_final_answer(goal, messages), usage=usage, model=self.model, finish_reason="stop"
        )

    async def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        usage: Usage | None = None,
    ) -> AsyncIterator[str]:
        text = str(messages[-1].get("content") or "") if messages else ""
        planned = demo_plan.synthesis_answer(text)
        if planned is not None:
            async for piece in self._stream(planned, text, usage):
                yield piece
            return
        question = text.split("Question:\n", 1)[-1].split("\n\nExecution trace:", 1)[0].strip()
        trace = text.split("Execution trace:\n", 1)[-1].split("\n\nDraft answer", 1)[0]
        results = re.findall(r"\[tool result: ([^\]]+)\]\n(.*?)(?=\n\n\[|\Z)", trace, flags=re.S)
        zh = _is_chinese(question)
        label = LABEL_ZH if zh else LABEL_EN
        cited = (
            knowledge_answer(results[-1][1], zh=zh)
            or skill_answer(results[-1][1], zh=zh)
            or memory_kept_answer(results[-1][1], zh=zh)
            if results
            else None
        )
        if cited is not None:
            label = LABEL_ZH if _is_chinese(question) else LABEL_EN
            async for piece in self._stream(
                f"**{label}**：{cited}" if _is_chinese(question) else f"**{label}**: {cited}", text, usage
            ):
                yield piece
            return
        if results:
            intro = (
                f"**{label}**：以下是工具返回的结果。\n\n"
                if zh
                else f"**{label}**: here is what the tools returned.\n\n"
            )
            body = "\n\n".join(
                f"`{name}`\n\n{tool_result_markdown(content, zh=zh)}" for name, content in results
            )
        elif (recalled := remembered_in_draft(text)) is not None:
            intro, body = (f"**{label}**：" if zh else f"**{label}**: "), recalled
        else:
            intro = f"**{label}**：" if zh else f"**{label}**: "
            body = (
                "没有调用任何工具。配置模型端点后即可获得真正的回答。"
                if zh
                else "no tool was needed. Configure a model endpoint to get real answers."
            )
        async for piece in self._stream(intro + body, text, usage):
            yield piece

    async def _stream(self, answer: str, prompt: str, usage: Usage | None) -> AsyncIterator[str]:
        for start in range(0, len(answer), 24):
            if self.stream_delay:
                await asyncio.sleep(self.stream_delay)
            yield answer[start : start + 24]
        if usage is not None:
            usage.add(
                Usage(
                    prompt_tokens=len(prompt) // 4,
                    completion_tokens=len(answer) // 4,
                    total_tokens=(len(prompt) + len(answer)) // 4,
                    calls=1,
                )
            )
