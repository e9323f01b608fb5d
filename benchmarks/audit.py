"""The audit's throughput and memory: generated JSON Lines logs, audited in child processes.

A log repeats the conversations of the tests' corpus excerpt (real agents' conversations) until
it reaches its size. The audit runs as a user runs it, `python -m repeat_reminder_langchain
audit`, in a process of its own, with the defaults and with every detector on. Its wall time on
the large log gives the throughput. Its peak resident memory on a small and on a large log gives
the memory each further megabyte of input costs: near zero when memory follows the largest
conversation rather than the file (the process's own start, its imports, is the same in both).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .measure import Row

__all__ = ["run"]

EXCERPT = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus_excerpt.jsonl"
SMALL, LARGE = 5_000_000, 50_000_000
SETTINGS = {
    "defaults": [],
    "every detector": ["--detect", "all", "--error-pattern", r"\A<returncode>[1-9]"],
}


# Runs the audit, then reports the process's own peak memory (kilobytes) on standard error.
_CHILD = (
    "import resource, runpy, sys\n"
    "sys.argv = ['repeat_reminder_langchain', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('repeat_reminder_langchain', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def _log(directory: Path, size: int) -> Path:
    lines = [line for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = directory / f"log-{size}.jsonl"
    written = 0
    with path.open("w", encoding="utf-8") as log:
        while written < size:
            for line in lines:
                log.write(line + "\n")
                written += len(line) + 1
    return path


def _audit(path: Path, options: list[str]) -> tuple[float, float]:
    """Seconds and peak megabytes of one audit in a process of its own."""
    command = [sys.executable, "-c", _CHILD, "audit", str(path), "--quiet", *options]
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024


def run() -> list[Row]:
    """MB/s, peak memory, and the memory each further MB of input costs, per setting."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        small, large = _log(Path(directory), SMALL), _log(Path(directory), LARGE)
        small_mb, large_mb = small.stat().st_size / 1e6, large.stat().st_size / 1e6
        for name, options in SETTINGS.items():
            _, small_peak = _audit(small, options)
            seconds, large_peak = _audit(large, options)
            key = f"audit.{name.replace(' ', '_')}"
            rows += [
                Row(f"{key}.mb_per_s", f"audit, {name}: MB/s on a {large_mb:.0f} MB log",
                    large_mb / seconds, "mb/s"),
                Row(f"{key}.peak_mb", f"audit, {name}: peak memory on the {large_mb:.0f} MB log "
                    f"(MB; {small_peak:.0f} on a {small_mb:.0f} MB one)", large_peak, "mb"),
                Row(f"{key}.mb_per_mb", f"audit, {name}: memory per further MB of input",
                    (large_peak - small_peak) / (large_mb - small_mb), "mb/mb"),
            ]  # fmt: skip
    return rows
