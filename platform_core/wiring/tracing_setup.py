"""OpenTelemetry for operators: when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, the process gets a tracer
provider exporting over OTLP/HTTP (protobuf) and the engine traces its runs (:mod:`agents.engine.tracing`).
Unset, nothing is installed and runs are not wrapped: tracing costs nothing.

The exporter reads the standard ``OTEL_EXPORTER_OTLP_*`` variables itself (endpoint, headers, timeout;
spans go to ``<endpoint>/v1/traces``), ``OTEL_SERVICE_NAME`` names the service (default ``agent-platform``),
and ``OTEL_TRACE_CONTENT=true`` (debug only) puts prompts and replies on model-call spans.
Called by the ASGI application and the Celery worker processes at start.
SDK: https://opentelemetry.io/docs/languages/python/exporters/ and
https://opentelemetry-python.readthedocs.io/en/latest/sdk/trace.export.html
"""

from __future__ import annotations

import logging
import os

from agents.engine import tracing
from platform_core.env import env_bool, env_str

logger = logging.getLogger(__name__)

_installed_in: int | None = None  # the process that installed it (a forked worker installs its own)
_provider: object | None = None


def tracing_setup() -> bool:
    """Install OTLP tracing in this process if ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (once per process);
    whether tracing is on."""
    global _installed_in, _provider
    if env_str("OTEL_EXPORTER_OTLP_ENDPOINT") is None:
        return False
    if _installed_in == os.getpid():
        return True
    # Imported only when asked for: a deployment without tracing never loads the SDK.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = env_str("OTEL_SERVICE_NAME", "agent-platform") or "agent-platform"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    # The engine is handed the provider: the process's global one stays as it was (libraries' own spans
    # are not exported, and a forked worker does not inherit a provider whose export thread is gone).
    tracing.enable(provider, content=env_bool("OTEL_TRACE_CONTENT", False))
    _installed_in, _provider = os.getpid(), provider
    logger.info("OpenTelemetry tracing on, exporting to %s", env_str("OTEL_EXPORTER_OTLP_ENDPOINT"))
    return True


def tracing_shutdown() -> None:
    """Export what is buffered and stop tracing in this process (the SDK also does it at exit)."""
    global _installed_in, _provider
    provider, _provider, _installed_in = _provider, None, None
    tracing.disable()
    shutdown = getattr(provider, "shutdown", None)
    if shutdown is not None:
        shutdown()
