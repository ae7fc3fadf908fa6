"""The embedding models of the endpoint presets (:mod:`agents.model_presets`): what an endpoint of role
"embedding" is filled with, per provider.

Each figure carries the provider's page it was read on; where that page did not state it, the comment says
so. A knowledge base takes its vectors' dimension from the first answer of its endpoint, so a preset's
``dimension`` tells the admin what to expect; ``max_batch`` bounds the texts of one request
(:func:`agents.model_presets.embedding_batch_size`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class EmbeddingFamily:
    """An embedding model of a provider. ``dimension``: the length of its vectors unless asked otherwise
    (None: the served model's, learnt from its first answer); ``dimensions``: the other lengths it can be
    asked for; ``max_input_tokens`` per text and ``max_batch`` texts per request, as documented (None: not
    stated)."""

    key: str
    label: str | Promise
    model: str
    dimension: int | None
    max_input_tokens: int | None
    max_batch: int | None
    source: str
    dimensions: tuple[int, ...] = ()


# https://platform.openai.com/docs/guides/embeddings : text-embedding-3-small 1,536 dimensions,
# text-embedding-3-large 3,072, both shortened on request with ``dimensions``. Per text at most 8,192 tokens,
# at most 2,048 texts and 300,000 tokens a request (the API reference, as the SDK's docstring of
# ``embeddings.create`` repeats it: https://platform.openai.com/docs/api-reference/embeddings/create).
OPENAI_EMBEDDINGS = (
    EmbeddingFamily(
        "text-embedding-3-small",
        "text-embedding-3-small",
        "text-embedding-3-small",
        1_536,
        8_192,
        2_048,
        "https://platform.openai.com/docs/guides/embeddings",
    ),
    EmbeddingFamily(
        "text-embedding-3-large",
        "text-embedding-3-large",
        "text-embedding-3-large",
        3_072,
        8_192,
        2_048,
        "https://platform.openai.com/docs/guides/embeddings",
    ),
)

# https://www.alibabacloud.com/help/en/model-studio/text-embedding-synchronous-api (and the same page at
# help.aliyun.com/en/model-studio/text-embedding-synchronous-api): OpenAI-compatible at
# <base>/compatible-mode/v1/embeddings; text-embedding-v4 (Qwen3-Embedding) 2,048, 1,536, 1,024 (default),
# 768, 512, 256, 128 or 64 dimensions; text-embedding-v3 1,024 (default), 768, 512 (the Chinese site adds
# 256, 128, 64); both at most 10 texts a request ("batch size" / "max rows") and 8,192 tokens a text.
DASHSCOPE_EMBEDDINGS = (
    EmbeddingFamily(
        "text-embedding-v4",
        "text-embedding-v4 (Qwen3-Embedding)",
        "text-embedding-v4",
        1_024,
        8_192,
        10,
        "https://www.alibabacloud.com/help/en/model-studio/text-embedding-synchronous-api",
        (2_048, 1_536, 768, 512, 256, 128, 64),
    ),
    EmbeddingFamily(
        "text-embedding-v3",
        "text-embedding-v3",
        "text-embedding-v3",
        1_024,
        8_192,
        10,
        "https://www.alibabacloud.com/help/en/model-studio/text-embedding-synchronous-api",
        (768, 512),
    ),
)

# https://docs.bigmodel.cn/api-reference/模型-api/文本嵌入 : POST <base>/embeddings; embedding-3 answers 2,048
# dimensions by default, or 1,024, 512 or 256 on request; at most 3,072 tokens a text and 64 texts a
# request (also https://docs.bigmodel.cn/cn/guide/models/embedding/embedding-3).
ZHIPU_EMBEDDINGS = (
    EmbeddingFamily(
        "embedding-3",
        "Embedding-3",
        "embedding-3",
        2_048,
        3_072,
        64,
        "https://docs.bigmodel.cn/api-reference/%E6%A8%A1%E5%9E%8B-api/%E6%96%87%E6%9C%AC%E5%B5%8C%E5%85%A5",
        (1_024, 512, 256),
    ),
)

# https://www.volcengine.com/docs/82379/1302003 (Ark's text embedding API): POST <base>/embeddings with a
# model ID or an endpoint ID (ep-...), at most 4,096 tokens a text, float or base64; it states no limit on
# texts a request (it advises few for speed). The vectors' length is not on that page: VikingDB's page on
# the same models (https://www.volcengine.com/docs/84313/1254617) gives doubao-embedding 2,048 (512 or 1,024
# on request) and doubao-embedding-large 4,096 (2,048, 1,024, 512) — not verified on Ark; the first answer
# fixes a knowledge base's dimension in any case.
DOUBAO_EMBEDDINGS = (
    EmbeddingFamily(
        "doubao-embedding",
        "Doubao-embedding",
        "doubao-embedding-text-240715",
        2_048,
        4_096,
        None,
        "https://www.volcengine.com/docs/82379/1302003",
        (1_024, 512),
    ),
    EmbeddingFamily(
        "doubao-embedding-large",
        "Doubao-embedding-large",
        "doubao-embedding-large-text-250515",
        4_096,
        4_096,
        None,
        "https://www.volcengine.com/docs/84313/1254617",
        (2_048, 1_024, 512),
    ),
)

# BAAI bge-m3 (multilingual, Chinese included): 1,024 dimensions, 8,192 tokens
# (https://inference.readthedocs.io/en/v1.9.0/models/builtin/embedding/bge-m3.html).
# vLLM serves embedding models as pooling models (--runner pooling, found automatically for *Model
# architectures) at <base>/embeddings: https://docs.vllm.ai/en/latest/models/pooling_models/ . The model
# name is the served one (Hugging Face id).
VLLM_EMBEDDINGS = (
    EmbeddingFamily(
        "bge-m3",
        "BGE-M3",
        "BAAI/bge-m3",
        1_024,
        8_192,
        None,
        "https://docs.vllm.ai/en/latest/models/pooling_models/",
    ),
    EmbeddingFamily(
        "vllm-embedding",
        _("Any served embedding model"),
        "",
        None,
        None,
        None,
        "https://docs.vllm.ai/en/latest/models/pooling_models/",
    ),
)

# Ollama answers /v1/embeddings (https://github.com/ollama/ollama/blob/main/docs/openai.md); bge-m3 as
# above; nomic-embed-text: 768 dimensions, served with an 8,192-token window
# (https://ollama.com/library/nomic-embed-text).
OLLAMA_EMBEDDINGS = (
    EmbeddingFamily(
        "bge-m3",
        "BGE-M3",
        "bge-m3",
        1_024,
        8_192,
        None,
        "https://github.com/ollama/ollama/blob/main/docs/openai.md",
    ),
    EmbeddingFamily(
        "nomic-embed-text",
        "nomic-embed-text",
        "nomic-embed-text",
        768,
        8_192,
        None,
        "https://ollama.com/library/nomic-embed-text",
    ),
)
