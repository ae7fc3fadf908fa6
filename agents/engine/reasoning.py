"""Whether an endpoint receives the model's reasoning back, and the messages it is sent.

Thinking models return their reasoning next to ``content`` (see
:data:`~agents.engine.completion.REASONING_FIELDS`). The history keeps it on every assistant message that
carries tool calls; what goes out depends on the endpoint's ``reasoning_replay`` ability:

- on: the reasoning fields of assistant messages WITH ``tool_calls`` are sent back; other messages go
  without them (no provider needs the reasoning of a plain answer, and DeepSeek ignores it).
- off: no reasoning field is ever sent.

The providers' rules (checked against their documentation, 2026):

- DeepSeek (api.deepseek.com), "Thinking Mode", https://api-docs.deepseek.com/guides/thinking_mode :
  thinking is on by default; between two user messages, when the model called tools, that turn's
  ``reasoning_content`` MUST be passed back in all subsequent requests, or the API answers 400 "The
  `reasoning_content` in the thinking mode must be passed back to the API."; without tool calls it is
  ignored.
- Kimi / Moonshot (api.moonshot.cn, api.moonshot.ai), "使用思考模型",
  https://platform.moonshot.cn/docs/guide/use-kimi-k2-thinking-model : kimi-k2-thinking and kimi-k2.5/k2.6
  (thinking on by default) return ``reasoning_content``, streamed before ``content``; in multi-step tool
  use it must stay in the context, or the API answers 400 "thinking is enabled but reasoning_content is
  missing in assistant tool call message at index N" (reported in github.com/anomalyco/opencode/issues/25758).
- GLM / Zhipu (open.bigmodel.cn, api.z.ai), "思考模式", https://docs.bigmodel.cn/cn/guide/capabilities/thinking-mode
  (https://docs.z.ai/guides/capabilities/thinking-mode): GLM-4.7 and later think by default and interleave
  thinking with tool calls; the ``reasoning_content`` must be kept explicitly and returned with the tool
  results. ("Preserved thinking" across user turns needs ``"clear_thinking": false``, not set here.)
- Qwen / DashScope (dashscope.aliyuncs.com, dashscope-intl.aliyuncs.com), "深度思考",
  https://help.aliyun.com/zh/model-studio/deep-thinking : ``enable_thinking`` switches thinking (on by default
  for Qwen3.5, off for Qwen3 commercial models); the reasoning comes in ``reasoning_content``; sending it back
  is accepted (Qwen3.5 keeps it across turns with ``preserve_thinking``), so it goes back like the others.
- OpenAI (api.openai.com) and Azure OpenAI never return these fields in Chat Completions, and validate the
  request schema strictly: nothing is sent to them. An admin can switch the ability off for any gateway
  that refuses the field (Baidu Qianfan documented a 400 for ``reasoning_content`` in the input of its
  older DeepSeek-R1 deployment, https://cloud.baidu.com/doc/qianfan-docs/s/Wm95lyynv).

Any other endpoint (self-hosted vLLM, SGLang, Ollama, gateways) defaults to on: the fields are only in the
history when the endpoint itself produced them, and the servers that produce them take them back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from agents.engine.completion import REASONING_FIELDS

REASONING_REPLAY = "reasoning_replay"
"""The ability key: whether the endpoint receives the reasoning of tool-calling turns back."""

# Hosts (or their parent domains) whose Chat Completions API takes no reasoning field in messages.
_NO_REPLAY_HOSTS: tuple[str, ...] = (
    "api.openai.com",
    "openai.azure.com",
    "cognitiveservices.azure.com",
    "services.ai.azure.com",
)

_REASONING = frozenset(REASONING_FIELDS)


def reasoning_replay_default(base_url: str) -> bool:
    """The ``reasoning_replay`` ability an endpoint gets when nobody set it: off for OpenAI and Azure."""
    host = (urlsplit(base_url).hostname or "").lower().rstrip(".")
    return not any(host == h or host.endswith("." + h) for h in _NO_REPLAY_HOSTS)


def reasoning_replay(abilities: Mapping[str, bool], base_url: str) -> bool:
    """The endpoint's ``reasoning_replay`` ability: as set in ``abilities``, else the host's default."""
    value = abilities.get(REASONING_REPLAY)
    return reasoning_replay_default(base_url) if value is None else bool(value)


def wire_messages(messages: Sequence[Mapping[str, Any]], *, replay: bool) -> list[dict[str, Any]]:
    """Copies of ``messages`` as they are sent: without the engine's ``_`` keys, and with reasoning fields
    only on assistant messages with tool calls, and only when ``replay``."""
    sent: list[dict[str, Any]] = []
    for message in messages:
        keep = replay and bool(message.get("tool_calls"))
        sent.append(
            {k: v for k, v in message.items() if not k.startswith("_") and (keep or k not in _REASONING)}
        )
    return sent


__all__ = ["REASONING_REPLAY", "reasoning_replay", "reasoning_replay_default", "wire_messages"]
