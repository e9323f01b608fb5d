"""`python -m benchmarks`: run every benchmark, print the table, write `results.json`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from repeat_reminder_langchain import RepeatToolReminderMiddleware

from . import arguments, audit, calls, canonicalization, hooks, memory, metrics, overhead, scaling
from .fixtures import hooks_of
from .measure import Row
from .missed import reasons
from .report import load, machine, missed, table, write_json

RESULTS = Path(__file__).with_name("results.json")


def _sections(quick: bool) -> dict[str, Callable[[], list[Row]]]:
    rounds = 5 if quick else 21
    return {
        "overhead": lambda: overhead.run(rounds),
        "hooks": lambda: hooks.run(3 if quick else 15),
        "calls": calls.run,
        "metrics": lambda: metrics.run(3 if quick else 15),
        "step": lambda: scaling.run(rounds),
        "canonicalize": lambda: canonicalization.run(rounds),
        "arguments": lambda: arguments.run(rounds),
        "memory": (lambda: memory.run(100, 1_000)) if quick else memory.run,
        "audit": audit.run,
        "checkpointer": audit.threads,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; exit 1 when a figure misses its target."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions and runs: a smoke test"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=[
            "overhead",
            "hooks",
            "calls",
            "metrics",
            "step",
            "canonicalize",
            "arguments",
            "memory",
            "audit",
            "checkpointer",
        ],
        help="run only this section (repeatable)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON")
    args = parser.parse_args(argv)

    print(f"Machine: {machine()}", flush=True)
    print(f"Load average at start: {load()}", flush=True)
    rows: list[Row] = []
    for name, section in _sections(args.quick).items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        rows.extend(section())
        print(f"  {name}: {time.perf_counter() - start:.0f} s", flush=True)
    print(f"Load average at end: {load()}")
    print(table(rows))
    if any(row.key.startswith("overhead.create_agent") for row in rows):
        hooks = ", ".join(hooks_of(RepeatToolReminderMiddleware))
        print(f"The no-op middleware has the guard middleware's hooks: {hooks}.")
    why = reasons(rows)
    write_json(rows, args.output, why)
    print(f"Wrote {args.output}")
    if why:
        print(f"Missed targets, and why:\n{missed(rows, why)}")
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
