"""``make fuzz``: Schemathesis against a live server of the project, over every route of ``/api/schema/``.

    .venv/bin/python -m tests.fuzz.run [--max-examples 25] [--max-time 150] [--seed 31] [-- extra st args]

The server is daphne on a loopback port, serving a fresh SQLite file (``FUZZ_DATABASE_URL`` names another
database) seeded by :mod:`tests.fuzz.world` with the organisation ``fuzz`` and its owner's API key of every
scope. Every outbound URL of the seeded objects, ``FEISHU_BASE_URL`` and the environment's model endpoint
point at a loopback port nobody listens on, so checks and test cards fail fast. No sign-in provider is
configured (the schema must be valid without one).

Schemathesis loads the schema (refusing an invalid one), then runs its examples, coverage, fuzzing and
stateful phases with the ``not_a_server_error`` check only: any 5xx fails the run. The seed is fixed, so a
failure reproduces; ``--max-time`` bounds the whole run for CI. The exit status is Schemathesis'; the
server's log (with the tracebacks of the 500s) is printed when it fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
START_TIMEOUT = 60.0
ORG = "fuzz"
# Routes the fuzzer must not call: revoking its own key would turn the rest of the run into 401s.
EXCLUDED_PATHS = r"^/api/v1/api-keys/\{id\}/revoke/$"
# The organisation's slug in every path. A 502 is the documented answer of the two routes whose job is to
# reach an outside system (a Feishu test card, an MCP connector's tool list) when it cannot be reached, as
# it cannot from the fuzzer's world; on every other route, and any other 5xx there, the run fails.
CONFIG = """\
[parameters]
"path.org_slug" = "{org}"

[[operations]]
include-path-regex = "/(test-card|sync-tools)/$"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "502"]
"""


def config_toml(world: dict[str, Any]) -> str:
    """The Schemathesis configuration: :data:`CONFIG`, and the seeded ids as the likely values of each
    route's id (``{id}``, ``{connector_pk}``, ``{agent_id}``, ``{conversation_id}``), so that detail routes
    and their actions reach a real object most of the time instead of a 404."""
    parts = [CONFIG.format(org=world["org"])]
    for segment, value in world["ids"].items():
        name = segment.replace("-", "_")
        parts.append(f"[dictionaries.{name}]\nvalues = [{json.dumps(value)}]\n")
        singular = {"connectors": "connector_pk", "agents": "agent_id", "conversations": "conversation_id"}
        for param in ("id", singular.get(segment)):
            if param is None:
                continue
            regex = f"/{segment}/\\\\{{{param}\\\\}}/"
            parts.append(
                f'[[operations]]\ninclude-path-regex = "{regex}"\n'
                f'parameters = {{ "path.{param}" = {{ dictionary = "{name}", probability = 0.8 }} }}\n'
            )
    return "\n".join(parts)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(folder: Path, dead_url: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_URL", "REDIS_URL", "CELERY_", "OIDC_", "FEISHU_", "OPENAI_"))
    }
    env.update(
        {
            "DATABASE_URL": os.environ.get("FUZZ_DATABASE_URL") or f"sqlite:///{folder / 'fuzz.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "platform_core.settings",
            "PYTHONUNBUFFERED": "1",
            "FEISHU_BASE_URL": dead_url,
            "OPENAI_BASE_URL": f"{dead_url}/v1",
            "MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
        }
    )
    return env


def _run(args: list[str], env: dict[str, str], what: str) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def _serve(port: int, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "platform_core.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"daphne exited with {process.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2):
                return process
        except urllib.error.HTTPError:
            return process
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    process.kill()
    sys.exit(f"daphne did not answer within {START_TIMEOUT:.0f} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def server_errors(log: str, limit: int = 60000) -> str:
    """The server log without its access lines and 4xx warnings: what is left are the errors."""
    noise = re.compile(r'"\s\d{3}\s(\d+|-)\s*$|\sWARNING\s|\sINFO\s')
    return "\n".join(line for line in log.splitlines() if not noise.search(line))[-limit:]


def schemathesis_args(*, url: str, key: str, config: Path, options: argparse.Namespace) -> list[str]:
    """The ``st`` command line: every operation, the server-error check, a fixed seed and budget."""
    return [
        str(BIN / "st"),
        "--config-file",
        str(config),
        "run",
        f"{url}/api/schema/",
        "--checks",
        "not_a_server_error",
        "--header",
        f"Authorization: Bearer {key}",
        "--exclude-path-regex",
        EXCLUDED_PATHS,
        "--max-examples",
        str(options.max_examples),
        "--max-time",
        str(options.max_time),
        "--seed",
        str(options.seed),
        "--workers",
        "1",
        "--request-timeout",
        "15",
        "--generation-database",
        "none",
        "--no-color",
        *options.extra,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=25, help="test cases per operation and phase")
    parser.add_argument("--max-time", type=int, default=150, help="seconds for the whole run")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--server-log", type=Path, help="keep a copy of the server's log here")
    parser.add_argument("extra", nargs="*", help="more arguments for `st run` (after --)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        folder = Path(tmp)
        port, dead_url = _free_port(), f"http://127.0.0.1:{_free_port()}"
        env = _env(folder, dead_url)
        _run([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
        world = json.loads(
            _run(
                [sys.executable, "-m", "tests.fuzz.world", "--dead-url", dead_url], env, "seeding"
            ).splitlines()[-1]
        )
        config = folder / "schemathesis.toml"
        config.write_text(config_toml(world))
        log_path = folder / "daphne.log"
        server = _serve(port, env, log_path)
        try:
            args = schemathesis_args(
                url=f"http://127.0.0.1:{port}", key=world["key"], config=config, options=options
            )
            status = subprocess.run(args, cwd=folder, env=env).returncode
        finally:
            _stop(server)
        if options.server_log:
            shutil.copyfile(log_path, options.server_log)
        if status != 0:
            print("\n=== server log: the errors and their tracebacks ===", flush=True)
            print(server_errors(log_path.read_text(errors="replace")), flush=True)
        return status


if __name__ == "__main__":
    sys.exit(main())
