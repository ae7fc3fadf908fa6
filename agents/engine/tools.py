"""Tools: what an agent can do, their results and artifacts, and the registry the loop uses.

A tool declares a name, a one-line description and a JSON-schema ``parameters`` object; the
registry compiles one jsonschema validator per tool at registration, so the loop validates the
model's arguments before anything runs without recompiling the schema; for the common shapes of schema a
compiled fast check (:mod:`agents.engine.schema_fast_path`) passes valid arguments first, and jsonschema
decides and explains whatever it does not pass.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import validators as _validators
from jsonschema.exceptions import SchemaError

from agents.engine.schema_fast_path import Check, compile_fast_check
from agents.engine.tool_context import ToolCallContext

RICH_MIME_TYPES = frozenset({"text/html", "text/markdown", "text/x-markdown"})
_CATALOGUE_WIDTH = 80
EMPTY_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class Artifact:
    """A file a tool produced for the user (rendered or offered for download by the UI)."""

    name: str
    mime_type: str
    content: str | bytes

    @property
    def is_rich(self) -> bool:
        """HTML and markdown artifacts are previewed in the UI and never shown to the model."""
        return self.mime_type.split(";", 1)[0].strip().lower() in RICH_MIME_TYPES

    def summary(self) -> str:
        """The line the model sees instead of the artifact's content."""
        if self.is_rich:
            return (
                f"[Artifact generated: {self.name}] The content is rendered as a preview in the UI. "
                "Do not repeat it in your answer; refer to it by name."
            )
        return (
            f"[Artifact generated: {self.name}] ({self.mime_type}) The file is offered to the user in the UI."
        )

    def describe(self) -> dict[str, Any]:
        """The artifact as an event payload for the UI."""
        content = self.content if isinstance(self.content, str) else None
        return {"name": self.name, "mime_type": self.mime_type, "content": content}


@dataclass(frozen=True, slots=True)
class Citation:
    """A source a tool result quotes, numbered as the answer cites it (``[1]``): a knowledge base's
    passage. ``url`` opens the source for people allowed to read it."""

    number: int
    title: str  # the source's name: a document's file name
    location: str = ""  # where in it: "p. 3, Payments > Large payments"
    preview: str = ""  # the passage, shortened
    url: str = ""
    source_id: str = ""  # the document's id

    def describe(self) -> dict[str, Any]:
        """The citation as an event payload (the ``citations`` of a step's done event)."""
        return {
            "number": self.number,
            "title": self.title,
            "location": self.location,
            "preview": self.preview,
            "url": self.url,
            "source_id": self.source_id,
        }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns: text for the model, an error flag and message, artifacts for the user, and
    the sources it quotes (numbered for citations)."""

    content: str = ""
    is_error: bool = False
    error: str | None = None
    artifacts: tuple[Artifact, ...] = ()
    citations: tuple[Citation, ...] = ()

    @classmethod
    def failure(cls, message: str, *, content: str | None = None) -> ToolResult:
        """A failed call: the model sees ``content`` (default: ``"Error: <message>"``)."""
        return cls(
            content=content if content is not None else f"Error: {message}", is_error=True, error=message
        )

    @property
    def observation(self) -> str:
        """The text the model sees: the content, with artifacts replaced by their one-line summaries."""
        if not self.artifacts:
            return self.content
        parts = []
        artifact_bodies = {a.content for a in self.artifacts}
        if self.content and self.content not in artifact_bodies:
            parts.append(self.content)
        parts.extend(a.summary() for a in self.artifacts)
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a run: what was asked, what the model saw, and how it ended.

    ``outcome`` is ``ok``, ``error``, ``timeout``, ``blocked``, ``invalid_args`` or ``unknown_tool``;
    ``error`` is the error message (``None`` when the call succeeded).
    """

    tool_call_id: str
    name: str
    args: Mapping[str, Any]
    observation: str
    error: str | None
    outcome: str
    iteration: int
    elapsed: float
    result: ToolResult


class Tool:
    """Base class of a tool. Subclasses set the attributes and implement :meth:`execute`.

    ``timeout`` (seconds) overrides the agent's per-tool timeout for this tool when set. A ``pinned``
    tool is kept when tool selection narrows the tools (the skill tool: the system prompt names it).
    """

    name: str = ""
    description: str = ""
    parameters: Mapping[str, Any] = EMPTY_PARAMETERS
    timeout: float | None = None
    pinned: bool = False

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult | str:
        """Make one call: ``ctx`` is the call's identity (its run, tool call id, idempotency key and the
        configuration version the guard rails judged it under), ``kwargs`` its validated arguments (an
        argument may share the name ``ctx``: the context is positional only)."""
        raise NotImplementedError


class FunctionTool(Tool):
    """A tool made from an async function taking the tool's arguments as keyword arguments (and not the
    call's context: a tool that needs it subclasses :class:`Tool`)."""

    def __init__(
        self,
        name: str,
        description: str,
        fn: Callable[..., Awaitable[ToolResult | str]],
        *,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.parameters = parameters if parameters is not None else EMPTY_PARAMETERS
        self.timeout = timeout
        self._fn = fn

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult | str:
        return await self._fn(**kwargs)


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: Tool
    validator: Any
    fast_check: Check | None
    schema: Mapping[str, Any]
    catalogue_line: str


# The drafts whose semantics the fast check has (a float with an integral value is an integer).
_FAST_DRAFTS = (
    _validators.Draft6Validator,
    _validators.Draft7Validator,
    _validators.Draft201909Validator,
    _validators.Draft202012Validator,
)


def _checked(schema: dict[str, Any]) -> tuple[Any, Check | None]:
    cls = _validators.validator_for(schema)
    cls.check_schema(schema)
    fast = compile_fast_check(schema) if cls in _FAST_DRAFTS else None
    return cls(schema), fast


@functools.lru_cache(maxsize=2048)
def _validator_for_json(schema_json: str) -> tuple[Any, Check | None]:
    return _checked(json.loads(schema_json))


def _validator_for(params: dict[str, Any]) -> tuple[Any, Check | None]:
    """The checked, compiled validator of a schema and its fast check (``None`` for a shape it does not
    cover); the same schema is checked and compiled once per process (every run of an agent registers the
    same connector tools, and checking a schema against the metaschema costs far more than validating
    arguments with it)."""
    try:
        schema_json = json.dumps(params, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):  # not plain JSON: compile it for this registration only
        return _checked(params)
    return _validator_for_json(schema_json)


def _compile(tool: Tool) -> _Entry:
    if not tool.name or not isinstance(tool.name, str):
        raise ValueError(f"tool {tool!r} has no name")
    params = dict(tool.parameters) if tool.parameters else dict(EMPTY_PARAMETERS)
    try:
        validator, fast_check = _validator_for(params)
    except SchemaError as exc:
        raise ValueError(f"tool {tool.name!r} has an invalid parameters schema: {exc.message}") from exc
    schema = {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description or "", "parameters": params},
    }
    first_line = (tool.description or "").strip().splitlines()[0] if (tool.description or "").strip() else ""
    line = f"{tool.name}: {first_line}" if first_line else tool.name
    if len(line) > _CATALOGUE_WIDTH:
        line = line[: _CATALOGUE_WIDTH - 1] + "…"
    return _Entry(tool=tool, validator=validator, fast_check=fast_check, schema=schema, catalogue_line=line)


@dataclass(frozen=True, slots=True)
class ArgumentProblem:
    """One way the model's arguments break the tool's schema."""

    path: str
    message: str


class ToolRegistry:
    """The tools available to an agent, by name, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._entries: dict[str, _Entry] = {}
        self._schemas: list[Mapping[str, Any]] | None = None
        self._catalogue: str | None = None
        self._json_descriptions: str | None = None
        for tool in tools:
            self.register(tool)

    @classmethod
    def _from_entries(cls, entries: Iterable[_Entry]) -> ToolRegistry:
        registry = cls()
        registry._entries = {e.tool.name: e for e in entries}
        return registry

    def register(self, tool: Tool) -> Tool:
        """Add a tool (its schema is checked and compiled now); a duplicate name is an error."""
        if tool.name in self._entries:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._entries[tool.name] = _compile(tool)
        self._schemas = self._catalogue = self._json_descriptions = None
        return tool

    def get(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return entry.tool if entry is not None else None

    def names(self) -> list[str]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Tool]:
        return (e.tool for e in self._entries.values())

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with only the named tools (unknown names ignored), sharing compiled validators."""
        return ToolRegistry._from_entries(
            self._entries[n] for n in dict.fromkeys(names) if n in self._entries
        )

    def openai_schemas(self) -> list[Mapping[str, Any]]:
        """The ``tools`` parameter of a chat-completions request; built once and reused."""
        if self._schemas is None:
            self._schemas = [e.schema for e in self._entries.values()]
        return self._schemas

    def catalogue(self) -> str:
        """A compact catalogue, one line of at most ~80 characters per tool (name and description)."""
        if self._catalogue is None:
            self._catalogue = "\n".join(f"- {e.catalogue_line}" for e in self._entries.values())
        return self._catalogue

    def json_mode_descriptions(self) -> str:
        """Full tool descriptions with their parameter schemas, for the JSON-mode system prompt."""
        if self._json_descriptions is None:
            blocks = []
            for e in self._entries.values():
                params = json.dumps(e.tool.parameters or EMPTY_PARAMETERS, ensure_ascii=False)
                blocks.append(f"### {e.tool.name}\n{e.tool.description}\nParameters (JSON schema): {params}")
            self._json_descriptions = "\n\n".join(blocks)
        return self._json_descriptions

    def validate(self, name: str, args: Mapping[str, Any]) -> list[ArgumentProblem]:
        """Problems of ``args`` against the tool's schema (empty when valid or the tool is unknown)."""
        entry = self._entries.get(name)
        if entry is None:
            return []
        if entry.fast_check is not None and entry.fast_check(args):
            return []
        validator = entry.validator
        if validator.is_valid(args):
            return []
        problems = []
        for err in sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path)):
            path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            problems.append(ArgumentProblem(path=path, message=err.message))
        return problems


def invalid_arguments_observation(tool_name: str, problems: list[ArgumentProblem]) -> str:
    """The structured error the model sees when its arguments break the schema (the tool did not run)."""
    return json.dumps(
        {
            "error": "invalid_arguments",
            "tool": tool_name,
            "problems": [{"path": p.path, "message": p.message} for p in problems],
            "hint": "The tool was not run. Fix the arguments to match its parameter schema and call it again.",
        },
        ensure_ascii=False,
    )


def unknown_tool_observation(tool_name: str, available: list[str]) -> str:
    """The error the model sees when it names a tool that does not exist."""
    listed = ", ".join(available) if available else "(none)"
    return f"Error: there is no tool named '{tool_name}'. Available tools: {listed}."


def coerce_result(value: Any) -> ToolResult:
    """Normalise what ``execute()`` returned into a :class:`ToolResult`."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    if value is None:
        return ToolResult(content="")
    try:
        return ToolResult(content=json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ToolResult(content=str(value))


__all__ = [
    "Artifact",
    "ArgumentProblem",
    "FunctionTool",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "coerce_result",
    "invalid_arguments_observation",
    "unknown_tool_observation",
]
