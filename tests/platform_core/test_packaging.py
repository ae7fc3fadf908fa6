"""The installed package: a wheel built from pyproject.toml holds everything ``serve_prod`` needs.

The wheel is built from a copy of the project's packages (pip writes ``build/`` next to the sources) and
unpacked into a directory of its own; the commands then run from there, away from the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _top_level_packages() -> list[Path]:
    return sorted(p for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, unpacked as pip installs it: the directory that goes on ``sys.path``."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in _top_level_packages():
        shutil.copytree(package, source / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    dist = work / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = dist.glob("*.whl")
    site = work / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _run_from(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(site),
        "DJANGO_SETTINGS_MODULE": "platform_core.settings",
    }
    return subprocess.run(
        [sys.executable, *args], cwd=site, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_wheel_holds_the_supervisor_and_the_serve_commands(installed):
    for module in (
        "platform_core/wiring/deploy/stack.py",
        "platform_core/wiring/deploy/services.py",
        "platform_core/wiring/management/commands/serve.py",
        "platform_core/wiring/management/commands/serve_prod.py",
    ):
        assert (installed / module).is_file(), module


def test_serve_prod_loads_from_the_installed_wheel_alone(installed):
    # given only the unpacked wheel on the path (the checkout's editable install comes after it)
    check = _run_from(
        installed,
        "-c",
        "import platform_core, platform_core.wiring.deploy.stack as stack; print(platform_core.__file__); "
        "print(stack.__file__)",
    )
    assert check.returncode == 0, check.stderr
    assert all(line.startswith(str(installed)) for line in check.stdout.split()), check.stdout

    # when Django looks the command up and imports it with everything it loads
    help_text = _run_from(installed, "-m", "django", "serve_prod", "--help")

    # then the command answers from the wheel's modules
    assert help_text.returncode == 0, help_text.stderr
    assert "--ports" in help_text.stdout
    assert "--seed-demo" in help_text.stdout
