"""Check again, each in a fresh process, the mutants whose tests mutmut saw fail only by timeout.

mutmut runs a mutant's tests in a worker forked from its own process; a test that starts
threads can deadlock there, and then fails by the suite's per-test timeout whether or not the
mutant changed anything (`scripts/mutation_report.py` calls these "hung"). This runs each hung
mutant's tests again in a new Python process, from a copy of mutants/ with the current tests,
stopping at the first failure, and records the outcome beside mutmut's results (see
`mutation_report.RECHECKED`): exit code 1 when a test fails (a hang there counts: nothing was
forked), 0 when all pass. Run from the project's root after `mutmut run`; name mutants to check
only those.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mutation_report import HUNG, MUTANTS, RECHECKED, read_results

TIMEOUT = "60"  # seconds a test may take outside the fork: twice what the slowest needs


def tests_for(name: str) -> list[str]:
    """The test files holding the tests mutmut runs for the mutant (from its stats).

    Whole files: pytest cannot always parse back the ids mutmut lists (parameters with
    escapes), and more tests can only tell more.
    """
    found = subprocess.run(
        [sys.executable, "-m", "mutmut", "tests-for-mutant", name],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return sorted(
        {line.split("::")[0] for line in found.stdout.splitlines() if line.startswith("tests/")}
    )


def recheck(name: str, copy: Path) -> tuple[str, int, float]:
    """Run the mutant's tests in a new process; 1 when one fails, 0 when all pass, and the time."""
    tests = tests_for(name)
    start = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
         f"--timeout={TIMEOUT}", "--hypothesis-profile=mutation", *tests],
        cwd=copy, env={**os.environ, "MUTANT_UNDER_TEST": name},
        capture_output=True, check=False,
    )  # fmt: skip
    if ran.returncode not in (0, 1):  # not a verdict: pytest could not run the tests
        raise RuntimeError(
            f"{name}: pytest exited {ran.returncode}:\n{ran.stdout.decode()[-2000:]}"
        )
    return name, ran.returncode, time.monotonic() - start


def main() -> int:
    """Re-check every hung mutant, two at a time; print and record each outcome."""
    root = Path.cwd()
    wanted = set(sys.argv[1:])
    hung = [
        (module, name)
        for module, codes in read_results(root).items()
        for name, code in codes.items()
        if code == HUNG and (not wanted or name in wanted)
    ]
    print(f"{len(hung)} hung mutants to check again")
    with tempfile.TemporaryDirectory() as temporary:
        copy = Path(temporary) / "mutants"
        shutil.copytree(root / MUTANTS, copy)
        shutil.rmtree(copy / "tests")
        shutil.copytree(root / "tests", copy / "tests")
        with ThreadPoolExecutor(max_workers=2) as pool:
            outcomes = list(pool.map(lambda item: (item[0], *recheck(item[1], copy)), hung))
    for module, name, code, seconds in outcomes:
        print(f"  {'killed' if code else 'survived':<8}  {name}  ({seconds:.0f} s)")
        meta = root / MUTANTS / Path(*module.split(".")).with_suffix(".py.meta")
        data = json.loads(meta.read_text(encoding="utf-8"))
        data.setdefault(RECHECKED, {})[name] = [code, data["durations_by_key"][name]]
        meta.write_text(json.dumps(data), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
