"""OpenAI's chat-completions wire format for an agent's run (plain data in, plain data out).

Request (https://platform.openai.com/docs/api-reference/chat/create): ``model``, ``messages`` (the last
one is the user's question; earlier user and assistant messages start a new conversation's history;
system and developer messages are ignored: the agent's own instructions govern), ``stream``,
``stream_options.include_usage``; the extension ``conversation_id`` continues a stored conversation.

Response: a ``chat.completion`` (or ``chat.completion.chunk`` events ending with ``data: [DONE]``,
https://platform.openai.com/docs/api-reference/chat-streaming) whose content is the agent's answer, with
two extension fields at the top level:

- ``x_agent_steps``: the run's frames that show its work, exactly as the websocket sends them
  (``step`` iteration start/done = a tool call and its result, ``approval``, ``inject``, ``plan``, ``error``);
- ``x_agent``: ``run_id``, ``conversation_id``, ``agent_id``, ``status`` (``done``, ``cancelled``,
  ``failed``, ``waiting_for_approval``, ``in_progress``), ``stop_reason``, ``iterations``, ``elapsed``,
  ``approval`` (the pending approval, if any) and ``error``;
- ``x_citations``: the sources the run's knowledge-base searches returned, each ``number`` (as the
  answer's ``[n]`` marks cite it), ``title``, ``location``, ``preview``, ``url`` and ``source_id``, in
  the order of their numbers (on the final chunk of a stream).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from django.utils.translation import gettext as _

from agents.attachments.inline import base64_decoded, data_url_decoded, file_name_for
from agents.engine.stop_reasons import StopReason

MAX_PRIOR_MESSAGES = 200
STEP_EVENTS = frozenset({"approval", "inject", "plan", "error"})


@dataclass(frozen=True, slots=True)
class SentFile:
    """A file inside the question: an ``image_url`` part's data URL or a ``file`` part's ``file_data``
    (``media_type``: what the client declared, ``""`` when nothing); ``where`` names the part."""

    name: str
    media_type: str
    data: bytes
    where: str


@dataclass(frozen=True, slots=True)
class FileReference:
    """A ``file`` part's ``file_id``: an attachment uploaded before (``POST …/attachments/``)."""

    attachment_id: str
    where: str


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    model: str
    question: str
    prior: tuple[tuple[str, str], ...] = ()
    files: tuple[SentFile | FileReference, ...] = ()
    stream: bool = False
    include_usage: bool = False
    conversation_id: uuid.UUID | None = None
    type: Literal["request"] = "request"


@dataclass(frozen=True, slots=True)
class CompletionRefused:
    """A request that cannot be served; the view answers it as OpenAI's error object."""

    message: str
    param: str | None = None
    code: str = "invalid_request"
    status: int = 400
    type: Literal["refused"] = "refused"


NOT_SENT_AGAIN = "[A file was attached here; it is not sent again.]"


def _text_of(content: Any) -> str | None:
    """An earlier message's text: a string, or its text parts, a file part standing as a note (its file
    is not read again: the question's files are); ``None``: not a message's content."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict):
                return None
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") in ("image_url", "file"):
                texts.append(NOT_SENT_AGAIN)
            else:
                return None
        return "".join(texts)
    return None


def _question_of(
    content: Any, index: int
) -> tuple[str, tuple[SentFile | FileReference, ...]] | CompletionRefused:
    """The question's text and its files (``image_url`` parts with data URLs, ``file`` parts with
    ``file_data`` or ``file_id``), or why the content cannot be read."""
    if isinstance(content, str):
        return content, ()
    where = f"messages[{index}].content"
    if not isinstance(content, list):
        return CompletionRefused(_("Message content must be text or a list of content parts."), param=where)
    texts: list[str] = []
    files: list[SentFile | FileReference] = []
    for number, part in enumerate(content):
        at = f"{where}[{number}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("image_url", "file"):
            found: SentFile | FileReference | CompletionRefused = (
                _image_of(part.get("image_url"), at, len(files) + 1)
                if kind == "image_url"
                else _file_of(part.get("file"), at, len(files) + 1)
            )
            if isinstance(found, CompletionRefused):
                return found
            files.append(found)
        else:
            return CompletionRefused(_("A content part must be text, image_url or file."), param=at)
    return "".join(texts), tuple(files)


def _image_of(image: Any, where: str, number: int) -> SentFile | CompletionRefused:
    url = image.get("url") if isinstance(image, dict) else None
    decoded = data_url_decoded(url) if isinstance(url, str) else None
    if decoded is None:
        return CompletionRefused(
            _(
                "Send an image as a base64 data: URL, or upload it first (POST …/attachments/) and send a "
                "file part with its id as file_id."
            ),
            param=f"{where}.image_url.url",
            code="image_url_not_supported",
        )
    media_type, data = decoded
    return SentFile(file_name_for(media_type, number, "image"), media_type, data, where)


def _file_of(file: Any, where: str, number: int) -> SentFile | FileReference | CompletionRefused:
    if not isinstance(file, dict):
        return CompletionRefused(_("A file part needs its file object."), param=f"{where}.file")
    if isinstance(file.get("file_id"), str) and file["file_id"].strip():
        return FileReference(file["file_id"].strip(), where)
    raw = file.get("file_data")
    if not isinstance(raw, str) or not raw.strip():
        return CompletionRefused(
            _("A file part needs file_data (base64) or file_id."), param=f"{where}.file", code="bad_file_data"
        )
    media_type, data = "", None
    if raw.lstrip().startswith("data:"):
        decoded = data_url_decoded(raw)
        if decoded is not None:
            media_type, data = decoded
    else:
        data = base64_decoded(raw)
    if data is None:
        return CompletionRefused(
            _("The file's data is not valid base64."), param=f"{where}.file.file_data", code="bad_file_data"
        )
    given = file.get("filename")
    name = given.strip() if isinstance(given, str) and given.strip() else file_name_for(media_type, number)
    return SentFile(name, media_type, data, where)


def completion_request_parse(
    body: Any, *, model_required: bool = True
) -> CompletionRequest | CompletionRefused:
    """The request's parts, or the reason it is refused."""
    if not isinstance(body, dict):
        return CompletionRefused(_("The request body must be a JSON object."))
    model = body.get("model")
    if model_required and (not isinstance(model, str) or not model.strip()):
        return CompletionRefused(_("Name the agent as the model."), param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return CompletionRefused(_("messages must be a non-empty list."), param="messages")
    turns: list[tuple[str, str]] = []
    files: tuple[SentFile | FileReference, ...] = ()
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return CompletionRefused(_("Every message must be an object."), param=f"messages[{index}]")
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        if role not in ("user", "assistant"):
            return CompletionRefused(
                _("Only user, assistant and system messages can be sent to an agent."),
                param=f"messages[{index}].role",
            )
        if role == "user" and index == len(messages) - 1:
            question = _question_of(message.get("content"), index)
            if isinstance(question, CompletionRefused):
                return question
            turns.append((role, question[0]))
            files = question[1]
            continue
        text = _text_of(message.get("content"))
        if text is None:
            if role == "assistant":  # an assistant turn with tool calls only: nothing to keep
                continue
            return CompletionRefused(
                _("Message content must be text (a string or text parts)."),
                param=f"messages[{index}].content",
            )
        turns.append((role, text))
    if not turns or turns[-1][0] != "user":
        return CompletionRefused(_("The last message must be the user's question."), param="messages")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return CompletionRefused(_("stream must be true or false."), param="stream")
    options = body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
    conversation_id = None
    raw_conversation = body.get("conversation_id")
    if raw_conversation not in (None, ""):
        try:
            conversation_id = uuid.UUID(str(raw_conversation))
        except ValueError:
            return CompletionRefused(
                _("conversation_id must be a conversation's id."), param="conversation_id"
            )
    prior = tuple(turns[:-1][-MAX_PRIOR_MESSAGES:])
    return CompletionRequest(
        model=str(model or "").strip(),
        question=turns[-1][1],
        prior=prior,
        files=files,
        stream=stream,
        include_usage=include_usage,
        conversation_id=conversation_id,
    )


def is_step_frame(frame: dict[str, Any]) -> bool:
    """Whether a frame shows the agent's work (goes to ``x_agent_steps``)."""
    event = frame.get("event")
    if event == "step":
        return frame.get("data", {}).get("type") == "iteration"
    return event in STEP_EVENTS


def waiting_note(approval: dict[str, Any]) -> str:
    """What the answer says while a tool call waits for a person."""
    approvers = ", ".join(str(name) for name in approval.get("approvers") or ()) or _("an approver")
    return _(
        "Waiting for approval by %(approvers)s before %(tool)s runs (approval %(id)s). The answer will "
        "follow once it is decided."
    ) % {
        "approvers": approvers,
        "tool": approval.get("tool_name") or _("the tool"),
        "id": approval.get("approval_id"),
    }


def in_progress_note() -> str:
    return _("The agent is still working; its answer will be stored in the conversation.")


def failed_note(error: str | None) -> str:
    return _("The agent could not answer: %(error)s") % {"error": error or _("the run failed")}


@dataclass(slots=True)
class RunFold:
    """What a run's frames say so far, folded into what a completion reports."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    agent_id: uuid.UUID
    streamed: str = ""
    answer: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    approval: dict[str, Any] | None = None
    error: str | None = None
    done: dict[str, Any] | None = None
    citations: dict[int, dict[str, Any]] = field(default_factory=dict)

    def take(self, frame: dict[str, Any]) -> str:
        """Fold one frame in; returns the answer text it adds (for a stream's content)."""
        event, data = frame.get("event"), frame.get("data") or {}
        if is_step_frame(frame):
            self.steps.append(frame)
            for citation in data.get("citations") or ():
                if isinstance(citation, dict) and isinstance(citation.get("number"), int):
                    self.citations[citation["number"]] = citation
        if event == "approval":
            self.approval = data if data.get("status") == "pending" else None
        elif event == "error":
            self.error = str(data.get("message") or data.get("code") or "")
        elif event == "answer" and data.get("status") == "delta":
            piece = str(data.get("content") or "")
            self.streamed += piece
            return piece
        elif event == "answer" and data.get("status") == "done":
            self.answer = str(data.get("content") or "")
            if self.answer.startswith(
                self.streamed
            ):  # a fallback answer that was never streamed, or the rest
                rest = self.answer[len(self.streamed) :]
                self.streamed = self.answer
                return rest
        elif event == "done":
            self.done = data
            self.approval = None
        return ""

    @property
    def status(self) -> str:
        if self.done is None:
            return "waiting_for_approval" if self.approval is not None else "in_progress"
        if self.done.get("cancelled"):
            return "cancelled"
        if self.done.get("stop_reason") == StopReason.ERROR.value:
            return "failed"
        return "done"

    @property
    def content(self) -> str:
        """The completion's content: the answer, or a note that says why there is none (yet)."""
        answer = (self.done or {}).get("answer") or self.answer or self.streamed
        if answer:
            return str(answer)
        match self.status:
            case "waiting_for_approval":
                return waiting_note(self.approval or {})
            case "in_progress":
                return in_progress_note()
            case "failed":
                return failed_note(self.error)
        return ""

    def agent_info(self) -> dict[str, Any]:
        done = self.done or {}
        return {
            "run_id": str(self.run_id),
            "conversation_id": str(self.conversation_id),
            "agent_id": str(self.agent_id),
            "status": self.status,
            "stop_reason": done.get("stop_reason") or None,
            "iterations": done.get("iterations", 0),
            "elapsed": done.get("elapsed"),
            "approval": self.approval,
            "error": self.error,
        }

    def citation_list(self) -> list[dict[str, Any]]:
        """The run's citations in the order of their numbers."""
        return [self.citations[number] for number in sorted(self.citations)]

    def usage(self) -> dict[str, int]:
        usage = (self.done or {}).get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": int(usage.get("total_tokens") or prompt + completion),
        }


def completion_id(run_id: uuid.UUID) -> str:
    return f"chatcmpl-{run_id.hex}"


def completion_object(fold: RunFold, *, model: str, created: int | None = None) -> dict[str, Any]:
    """The ``chat.completion`` of a run (finished, or stopped waiting: see ``x_agent.status``)."""
    return {
        "id": completion_id(fold.run_id),
        "object": "chat.completion",
        "created": created or int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": fold.content, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": fold.usage(),
        "x_agent": fold.agent_info(),
        "x_agent_steps": fold.steps,
        "x_citations": fold.citation_list(),
    }


def chunk_object(
    fold: RunFold,
    *,
    model: str,
    created: int,
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    steps: list[dict[str, Any]] | None = None,
    final: bool = False,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``; the last one (``final``) carries ``x_agent``."""
    chunk: dict[str, Any] = {
        "id": completion_id(fold.run_id),
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason, "logprobs": None}],
    }
    if steps:
        chunk["x_agent_steps"] = steps
    if final:
        chunk["x_agent"] = fold.agent_info()
        chunk["x_citations"] = fold.citation_list()
    return chunk


def usage_chunk(fold: RunFold, *, model: str, created: int) -> dict[str, Any]:
    """The usage chunk of ``stream_options.include_usage`` (no choices)."""
    return {
        "id": completion_id(fold.run_id),
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": fold.usage(),
    }


def error_object(
    message: str, *, status: int, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body (https://platform.openai.com/docs/guides/error-codes)."""
    kinds = {
        401: "authentication_error",
        403: "permission_error",
        404: "invalid_request_error",
        429: "rate_limit_error",
    }
    kind = kinds.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
