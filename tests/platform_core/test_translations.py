"""Every user-facing string ships in Simplified Chinese.

The test extracts the strings of the code as it is now (Django's ``makemessages``, for templates, Python
and the chat's JavaScript) into a scratch copy of the catalogues, so a string added without a translation
fails here, not in front of a user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IGNORES = [
    "--ignore=.venv",
    "--ignore=tests",
    "--ignore=var",
    "--ignore=staticfiles",
    "--ignore=benchmarks",
    "--ignore=docs",
]


def _untranslated(po_file: Path) -> list[str]:
    """msgids with an empty translation or marked fuzzy (the header entry excluded)."""
    text = po_file.read_text(encoding="utf-8")
    problems = []
    for block in text.split("\n\n"):
        if "msgid" not in block or block.lstrip().startswith("#~"):
            continue
        msgid = "".join(re.findall(r'^(?:msgid|msgid_plural)? ?"(.*)"$', block.split("msgstr")[0], re.M))
        if not msgid:
            continue  # the header
        strs = re.findall(r'msgstr(?:\[\d\])? ((?:".*"\n?)+)', block)
        empty = not strs or any("".join(re.findall(r'"(.*)"', s)) == "" for s in strs)
        if empty or re.search(r"^#,.*\bfuzzy\b", block, re.M):
            problems.append(msgid)
    return problems


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    if shutil.which("xgettext") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("gettext (xgettext) is needed to check the translations", pytrace=False)
        pytest.skip("gettext (xgettext) is not installed")
    # makemessages writes next to the code it reads: work on a scratch copy of the source tree.
    scratch = tmp_path_factory.mktemp("source") / "project"
    shutil.copytree(
        ROOT,
        scratch,
        ignore=shutil.ignore_patterns(
            ".venv",
            ".git",
            "var",
            "staticfiles",
            "docs",
            "node_modules",
            "__pycache__",
            "*.sqlite3",
            ".pytest_cache",
            ".ruff_cache",
        ),
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "platform_core.settings"}
    env.pop("DATABASE_URL", None)
    for domain in ("django", "djangojs"):
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "makemessages",
                "-l",
                "zh_Hans",
                "-d",
                domain,
                "--no-obsolete",
                *IGNORES,
            ],
            cwd=scratch,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
    return scratch / "locale" / "zh_Hans" / "LC_MESSAGES"


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_every_user_facing_string_has_a_simplified_chinese_translation(extracted, domain):
    missing = _untranslated(extracted / f"{domain}.po")
    assert not missing, (
        f"{len(missing)} strings have no Chinese translation in {domain}.po "
        f"(run `make messages` and translate them): {missing[:20]}"
    )


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_shipped_catalogues_are_compiled(domain):
    po = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po"
    mo = po.with_suffix(".mo")
    assert mo.exists() and mo.stat().st_size > 0
    assert not _untranslated(po)
