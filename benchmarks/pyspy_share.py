"""What share of a process's sampled CPU went to usage accounting, and to tracing, from py-spy's raw output
(``py-spy record --format raw``: one line per distinct stack, ``frame;frame;... count``).

    python -m benchmarks.pyspy_share var/spy-on-1.txt [...]

A sample counts as *accounting* when its deepest frame of the project's own code (``agents/``,
``platform_core/``, ``hooks/``, ``connectors/``) is accounting code: the meter (``agents/usage/``), the
engine's :mod:`~agents.engine.metering` wrapper, or the event writer's usage columns (``_usage_arrays``).
Library code called from there (``Decimal``, ``uuid``, Django's field preparation) counts with it; the model
call a :class:`~agents.engine.metering.MeteredLLM` wraps does not (its deepest project frame is the LLM
client). As *tracing* counts any sample of OpenTelemetry's export thread (batching, encoding, the HTTP post)
or whose deepest project frame is :mod:`agents.engine.tracing` (the spans' bookkeeping it calls). Sampling error: a share ``p`` of ``n``
samples is ± ``2·sqrt(p(1−p)/n)``.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PROJECT = re.compile(r"\((?:.*/)?(agents|platform_core|hooks|connectors)/[^()]*\)")
ACCOUNTING = ("agents/usage/", "agents/engine/metering.py", "_usage_arrays (")
TRACING_PROJECT = ("agents/engine/tracing.py", "platform_core/wiring/tracing_setup.py")
# py-spy names library files relative to their site-packages package ("trace/__init__.py", not
# "opentelemetry/sdk/trace/__init__.py"): the exporter's thread is told by its frames' names.
TRACING_THREAD = ("BatchProcessor.", "BatchSpanProcessor.", "OTLPSpanExporter.")


@dataclass(frozen=True)
class Shares:
    """Samples of one profile: all of them, and those of accounting and tracing."""

    samples: int
    accounting: int
    tracing: int
    top_accounting: list[tuple[str, int]]

    def percent(self, part: int) -> str:
        p = part / max(1, self.samples)
        error = 2 * math.sqrt(p * (1 - p) / max(1, self.samples))
        return f"{100 * p:.2f} % ± {100 * error:.2f}"


def _deepest_project_frame(frames: list[str]) -> str:
    for frame in reversed(frames):
        if PROJECT.search(frame):
            return frame
    return ""


def shares(text: str) -> Shares:
    total = accounting = tracing = 0
    where: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        deepest = _deepest_project_frame(frames)
        if any(marker in deepest for marker in ACCOUNTING):
            accounting += count
            where[deepest] += count
        in_exporter = any(marker in frame for frame in frames for marker in TRACING_THREAD)
        if in_exporter or any(marker in deepest for marker in TRACING_PROJECT):
            tracing += count
    return Shares(total, accounting, tracing, where.most_common(8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.profiles:
        result = shares(path.read_text(errors="replace"))
        print(
            f"{path}: {result.samples} samples; accounting {result.percent(result.accounting)}; "
            f"tracing {result.percent(result.tracing)}"
        )
        for frame, count in result.top_accounting:
            print(f"    {count:>6}  {frame}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
