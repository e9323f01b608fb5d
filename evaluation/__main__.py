"""`python -m evaluation FILE [FILE...]`: the detectors' figures on each file."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence

from .evaluate import ALONE, evaluate
from .labels import table
from .report import as_json, context, text
from .run import CORPUS, ERROR_PATTERN, Settings


def _thresholds(value: str) -> tuple[int, ...]:
    try:
        return tuple(sorted({int(part) for part in value.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {value!r}") from None


def _names(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def main(argv: Sequence[str] | None = None) -> int:
    """Evaluate every file named; print the report (or JSON)."""
    parser = argparse.ArgumentParser(prog="python -m evaluation", description=__doc__)
    parser.add_argument("paths", nargs="+", metavar="FILE", help="a conversation log")
    parser.add_argument("--stale-thresholds", type=_thresholds, default=(3,), metavar="N,...")
    parser.add_argument("--same-error-thresholds", type=_thresholds, default=(3,), metavar="N,...")
    parser.add_argument(
        "--error-pattern",
        default=ERROR_PATTERN,
        metavar="REGEX",
        help="a result matching it is a failure ('' for status='error' only); "
        "default: τ-bench's 'Error: ' or a shell's non-zero return code with output",
    )
    parser.add_argument(
        "--exclude", type=_names, default=(), metavar="TOOL,...", help="tools not counted"
    )
    parser.add_argument(
        "--not-user",
        metavar="REGEX",
        help="user-role messages matching it are not the user (a harness's feedback): "
        "they reset nothing, as the guard's not_user",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--show", choices=ALONE, help="also print this detector's firings in context"
    )
    parser.add_argument(
        "--sample", type=int, metavar="N", help="with --show: N firings drawn at random (seed 0)"
    )
    args = parser.parse_args(argv)
    missing = [path for path in args.paths if path != "-" and not os.path.isfile(path)]
    if missing:  # an unmatched shell pattern arrives as itself
        print(f"no conversations at {' '.join(missing)}: {CORPUS}", file=sys.stderr)
        return 2
    settings = Settings(
        stale_thresholds=args.stale_thresholds,
        same_error_thresholds=args.same_error_thresholds,
        error_pattern=args.error_pattern or None,
        exclude=args.exclude,
        not_user=args.not_user,
    )
    reports = []
    for path in args.paths:
        start = time.perf_counter()
        report = evaluate(path, settings)
        reports.append(report)
        if not args.json:
            print(text(report))
            # The labels are scored under their own settings, whatever the command's.
            print(table(path, report.conversations))
            print(f"   ({time.perf_counter() - start:.1f} s)\n", flush=True)
        if args.show:
            firings = [(f, r) for r in report.replays[args.show] for f in r.firings()]
            if args.sample is not None and args.sample < len(firings):
                firings = random.Random(0).sample(firings, args.sample)
                firings.sort(key=lambda pair: (pair[0].conversation, pair[0].call))
            for firing, replayed in firings:
                print(context(firing, replayed), file=sys.stderr if args.json else sys.stdout)
            print(file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps([as_json(report) for report in reports], indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
