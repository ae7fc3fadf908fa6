"""``make bench-smoke`` covers every benchmark (issue #31): a new script in ``benchmarks/`` cannot be
forgotten, and CI runs the smoke. The smoke itself runs the benchmarks (minutes, PostgreSQL and Redis);
these tests only read the files."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.smoke import HELPERS, SMOKES

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


def test_every_file_of_benchmarks_is_smoked_or_a_helper_of_a_smoked_script():
    smoked = {smoke.script for smoke in SMOKES}
    files = {path.name for path in BENCHMARKS.glob("*.py")}

    forgotten = files - smoked - set(HELPERS)
    assert not forgotten, f"add a tiny run of {sorted(forgotten)} to benchmarks/smoke.py SMOKES"
    assert smoked | set(HELPERS) <= files, "SMOKES or HELPERS name a file that is gone"
    assert not smoked & set(HELPERS)


def test_each_helper_is_run_by_the_smoked_script_named_for_it():
    smoked = {smoke.script for smoke in SMOKES}
    for helper, (_, runner) in HELPERS.items():
        if runner == "smoke.py":
            continue
        assert runner in smoked, f"{helper}: {runner} is not smoked"
        source = (BENCHMARKS / runner).read_text()
        module = Path(helper).stem
        assert re.search(rf"benchmarks[./]{module}\b", source), f"{runner} does not use {helper}"


def test_every_script_that_proves_something_is_smoked_with_its_proof_line():
    # exactly-once decisions, no loss through kills and reconnects, every run of a load completed
    expects = {smoke.script: smoke.expect for smoke in SMOKES}
    assert expects["approval_storm.py"].startswith("OK: every one of 2 requests: exactly one decision")
    assert expects["chaos.py"].startswith("OK: no event lost or duplicated")
    assert expects["ws_load.py"].startswith("OK: every run of")


def test_ci_runs_the_smoke():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^bench-smoke: install-dev\n\t\$\(PY\) -m benchmarks\.smoke", makefile, re.MULTILINE)
    assert re.search(r"^[^#\n]*make bench-smoke", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
