"""The mutation score of the core, after `mutmut run` (`make mutate`).

Reads mutmut's results in mutants/ and prints, per mutated module and overall, how many of its
mutants the tests killed, then every mutant that was not killed. A time-out counts as killed (the
mutant made mutmut stop its tests); a crash of the test process too. "Suspicious" (an exit code
mutmut cannot read) is counted apart, and is not a kill. A failure that took as long as the
suite's own per-test timeout (pytest-timeout, `timeout` in pyproject.toml) is "hung", and is not
a kill either: a test stopped by its timeout fails whether the mutant made it wait or the test
deadlocked in mutmut's forked worker (threads do not survive a fork). Running the mutant's tests
outside mutmut (`MUTANT_UNDER_TEST=NAME pytest ...` in a copy of mutants/) tells which, and
`py-spy dump --pid` on the waiting worker shows where it waits (tests/conftest.py drops the
one shared executor that did).

A surviving mutant is either a gap in the tests or a change that cannot change behaviour: the
second kind is listed in tests/mutation-equivalent.txt, one a line, as

    NAME  FINGERPRINT  REASON

where FINGERPRINT is the first 10 hex digits of the sha256 of the mutant's changed lines (this
script prints it for every survivor). mutmut numbers the mutants of a function in order, so an
edit of the function renumbers them: the fingerprint makes sure that a name still means the
mutant that was judged equivalent, and not some other one that took its number.

`--check-list` needs no run: it makes the mutants of the code as it is, as `mutmut run` first
does (some 15 seconds), and checks every entry of the list against them. An entry whose mutant
mutmut now numbers otherwise (its function was edited) is shown with its new name, which
`--renumber` writes; an entry whose mutant is gone or changed must be judged again, and the
mutant that now has its name is shown. `make test` runs it, so that the list stays true of the
code between full runs.

Exits 1 when the overall score is below the floor, when a mutant survived that the list does not
excuse, when an entry of the list no longer matches its mutant (changed, gone or killed), or when
the run did not finish (a mutant not checked). Run from the project's root.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from difflib import unified_diff
from pathlib import Path

FLOOR = 94.0
EQUIVALENT = Path("tests/mutation-equivalent.txt")
MUTANTS = Path("mutants")

# mutmut's exit codes (mutmut.stats.status_by_exit_code), sorted into what this report counts.
KILLED: dict[int | None, str] = {1: "killed", 3: "killed"}
TIMEOUT: dict[int | None, str] = {
    36: "timeout",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
}
CRASHED: dict[int | None, str] = {-11: "segfault", -9: "segfault"}
SURVIVED: dict[int | None, str] = {0: "survived", 5: "no tests", 33: "no tests"}
HUNG = -1000  # not an exit code mutmut writes: a failure that lasted the test timeout
NOT_RUN: dict[int | None, str] = {
    HUNG: "hung",
    None: "not checked",
    2: "interrupted",
    34: "skipped",
    37: "caught by type check",
}

_LINE = re.compile(r"^(?P<name>\S+)\s+(?P<fingerprint>[0-9a-f]{10})\s+(?P<reason>\S.*)$")


@dataclass(frozen=True)
class Survivor:
    """A mutant the tests did not kill."""

    module: str
    name: str
    state: str


@dataclass(frozen=True)
class Entry:
    """One line of the list of equivalent mutants."""

    name: str
    fingerprint: str
    reason: str
    line: int


def read_equivalent(path: Path) -> tuple[dict[str, Entry], list[str]]:
    """The listed mutants by name, and the list's lines that are not of the form."""
    entries: dict[str, Entry] = {}
    errors: list[str] = []
    if not path.exists():
        return entries, errors
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        found = _LINE.match(text)
        if found is None:
            errors.append(f"{path}:{number}: not NAME FINGERPRINT REASON: {text}")
        elif found["name"] in entries:
            errors.append(f"{path}:{number}: {found['name']} is listed twice")
        else:
            entries[found["name"]] = Entry(
                found["name"], found["fingerprint"], found["reason"], number
            )
    return entries, errors


def read_results(root: Path) -> dict[str, dict[str, int | None]]:
    """Each mutated module's mutants and their exit codes, from mutmut's meta files.

    A failure that lasted the per-test timeout reads as the code `HUNG`.
    """
    limit = per_test_timeout(root)
    results: dict[str, dict[str, int | None]] = {}
    for meta in sorted((root / MUTANTS).rglob("*.py.meta")):
        source = meta.relative_to(root / MUTANTS).with_suffix("").with_suffix("")
        module = ".".join(source.parts)
        data = json.loads(meta.read_text(encoding="utf-8"))
        durations = data.get("durations_by_key", {})
        codes: dict[str, int | None] = {}
        for name, code in data["exit_code_by_key"].items():
            if code in KILLED and durations.get(name, 0.0) >= limit:
                codes[name] = HUNG
            else:
                codes[name] = code
        results[module] = codes
    return results


def per_test_timeout(root: Path) -> float:
    """The suite's per-test timeout in seconds (pytest-timeout), or no limit."""
    with (root / "pyproject.toml").open("rb") as file:
        options = tomllib.load(file).get("tool", {}).get("pytest", {}).get("ini_options", {})
    return float(options.get("timeout", "inf"))


def source_path(module: str) -> Path:
    """The source file of a mutated module, relative to the project's root."""
    return Path(*module.split(".")).with_suffix(".py")


def diff(name: str, module: str) -> str:
    """The mutant's change as a unified diff of its function (mutmut's own `mutmut show`)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    return get_diff_for_mutant(name, path=source_path(module))


def fingerprint(change: str) -> str:
    """What identifies a mutant across renumbering: its removed and added lines, stripped."""
    lines = [
        line[0] + line[1:].strip()
        for line in change.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:10]


def current_mutants(root: Path) -> dict[str, str]:
    """Every mutant of the code as it is, by name, with its change (as `diff`); none is run.

    Each mutated file is made as `mutmut run` makes it ([tool.mutmut] only_mutate), and each
    mutant's function is read beside the function's unmutated copy by the lines mutmut says
    they hold: the fingerprint is of the same changed lines `diff` shows after a run.
    """
    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    with (root / "pyproject.toml").open("rb") as file:
        patterns = tomllib.load(file)["tool"]["mutmut"]["only_mutate"]
    changes: dict[str, str] = {}
    for path in sorted({path for pattern in patterns for path in root.glob(pattern)}):
        source = path.relative_to(root)
        module = ".".join(source.with_suffix("").parts)
        mutated = mutate_file_contents(str(source), path.read_text(encoding="utf-8"))
        lines = mutated.code.splitlines()
        spans = mutated.line_span_by_function_name
        for name in mutated.mutant_names:
            # Both under the name of the function they were made from, as `diff` shows them.
            plain = orig_function_and_class_names_from_key(name)[0]
            original = name.partition("__mutmut_")[0] + "__mutmut_orig"
            before, after = (
                [line.replace(made, plain) for line in lines[span.start - 1 : span.end]]
                for made in (original, name)
                for span in (spans[made],)  # 1-based, both ends in
            )
            changes[f"{module}.{name}"] = "\n".join(unified_diff(before, after, lineterm=""))
    return changes


def check_list(path: Path, changes: dict[str, str], renumber: bool) -> list[str]:
    """What is wrong with the list against the mutants as they are (`current_mutants`).

    With `renumber`, an entry whose mutant moved to another number in its function gets that
    number, in place.
    """
    listed, problems = read_equivalent(path)
    marks = {name: fingerprint(change) for name, change in changes.items()}
    by_mark: dict[tuple[str, str], list[str]] = {}
    for name, mark in marks.items():
        by_mark.setdefault((name.partition("__mutmut_")[0], mark), []).append(name)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True) if listed else []
    for name, entry in listed.items():
        if marks.get(name) == entry.fingerprint:
            continue
        function = name.partition("__mutmut_")[0]
        # Its mutant under another number, unless an entry already names that one.
        moved = [
            n
            for n in by_mark.get((function, entry.fingerprint), [])
            if n not in listed or marks[n] != listed[n].fingerprint
        ]
        if len(moved) == 1 and renumber:
            lines[entry.line - 1] = lines[entry.line - 1].replace(name, moved[0], 1)
            print(f"{path}:{entry.line}: {name} is now {moved[0]}: renumbered")
        elif len(moved) == 1:
            problems.append(f"{path}:{entry.line}: {name} is now {moved[0]} (--renumber)")
        else:
            now = _indent(changes[name]) if name in changes else "      (no such mutant now)"
            problems.append(
                f"{path}:{entry.line}: {name} ({entry.fingerprint}) is gone or changed: judge "
                f"it again; the mutant of that name now:\n{now}"
            )
    if renumber and lines:
        path.write_text("".join(lines), encoding="utf-8")
    return problems


def status(code: int | None) -> str:
    """The name mutmut gives an exit code."""
    for table in (KILLED, TIMEOUT, CRASHED, SURVIVED, NOT_RUN):
        if code in table:
            return table[code]
    return "suspicious"


def score(results: dict[str, dict[str, int | None]]) -> tuple[float, list[Survivor], list[str]]:
    """Print the score per module and overall; the survivors, and the runs left unfinished."""
    totals: Counter[str] = Counter()
    survivors: list[Survivor] = []
    unfinished: list[str] = []
    print(f"{'module':<42} {'killed':>7} {'total':>6} {'score':>7}  other")
    for module, codes in results.items():
        counts = Counter(status(code) for code in codes.values())
        killed = sum(counts[s] for s in ("killed", "timeout", "segfault"))
        counted = len(codes) - counts["skipped"]
        others = ", ".join(
            f"{n} {s}" for s, n in sorted(counts.items()) if s not in ("killed", "skipped")
        )
        print(f"{module:<42} {killed:>7} {counted:>6} {_percent(killed, counted):>6.1f}%  {others}")
        totals.update(counts)
        totals["counted"] += counted
        totals["kills"] += killed
        for name, code in codes.items():
            state = status(code)
            if state in ("survived", "no tests", "suspicious"):
                survivors.append(Survivor(module, name, state))
            elif state in ("not checked", "interrupted"):
                unfinished.append(
                    f"{name}: {state}: the run did not finish; run `mutmut run` again"
                )
            elif state == "hung":
                unfinished.append(
                    f"{name}: hung: its tests failed only by their timeout; run them outside "
                    "mutmut to tell whether the mutant or the forked worker hangs"
                )
    overall = _percent(totals["kills"], totals["counted"])
    print(
        f"{'overall':<42} {totals['kills']:>7} {totals['counted']:>6} {overall:>6.1f}%  "
        f"({totals['timeout']} time-outs and {totals['segfault']} crashes counted as killed; "
        f"{totals['suspicious']} suspicious)"
    )
    return overall, survivors, unfinished


def judge(
    survivors: list[Survivor],
    listed: dict[str, Entry],
    results: dict[str, dict[str, int | None]],
    equivalent_path: Path,
    show_diffs: bool,
) -> tuple[int, list[str]]:
    """Print every survivor with its verdict; how many are equivalent, and what fails."""
    problems: list[str] = []
    equivalent = 0
    if survivors:
        print(f"\nNot killed ({len(survivors)}):")
    for survivor in survivors:
        change = diff(survivor.name, survivor.module)
        mark = fingerprint(change)
        entry = listed.get(survivor.name)
        if entry is not None and entry.fingerprint == mark:
            equivalent += 1
            print(f"  equivalent  {survivor.name}  {mark}  {entry.reason}")
            if show_diffs:
                print(_indent(change))
            continue
        if entry is None:
            problems.append(f"{survivor.name}: {survivor.state}, and not listed as equivalent")
        else:
            problems.append(
                f"{survivor.name}: {equivalent_path}:{entry.line} judged another mutant "
                f"({entry.fingerprint}); this one is {mark}: judge it again"
            )
        print(f"  {survivor.state:<10}  {survivor.name}  {mark}")
        print(_indent(change))
    every = {name: module for module, codes in results.items() for name in codes}
    for name, entry in listed.items():
        if name not in every:
            problems.append(f"{equivalent_path}:{entry.line}: {name} is no mutant any more")
        elif status(results[every[name]][name]) in ("killed", "timeout", "segfault"):
            problems.append(f"{equivalent_path}:{entry.line}: {name} is killed: drop it")
    return equivalent, problems


def main(argv: list[str] | None = None) -> int:
    """Print the report; 0 when the score and the survivors pass, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", type=float, default=FLOOR, help="lowest passing score, %%")
    parser.add_argument("--equivalent", type=Path, default=EQUIVALENT)
    parser.add_argument("--diffs", action="store_true", help="show the diff of every survivor")
    parser.add_argument(
        "--check-list",
        action="store_true",
        help="check the list against the mutants of the code as it is, without a run",
    )
    parser.add_argument(
        "--renumber", action="store_true", help="with --check-list: write moved entries' names"
    )
    args = parser.parse_args(argv)
    if args.check_list:
        problems = check_list(args.equivalent, current_mutants(Path.cwd()), args.renumber)
        for problem in problems:
            print(f"FAIL: {problem}")
        return 1 if problems else 0
    results = read_results(Path.cwd())
    if not results:
        print(f"No results in {MUTANTS}/: run `mutmut run` first.", file=sys.stderr)
        return 1
    listed, problems = read_equivalent(args.equivalent)
    overall, survivors, unfinished = score(results)
    equivalent, verdicts = judge(survivors, listed, results, args.equivalent, args.diffs)
    problems += unfinished + verdicts
    print(
        f"\n{len(survivors) - equivalent} unexplained survivors, {equivalent} equivalent "
        f"(listed in {args.equivalent}); score {overall:.1f}%, floor {args.floor:.1f}%"
    )
    if overall < args.floor:
        problems.append(f"the score {overall:.1f}% is below the floor of {args.floor:.1f}%")
    for problem in problems:
        print(f"FAIL: {problem}")
    return 1 if problems else 0


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 100.0


def _indent(text: str) -> str:
    return "\n".join("      " + line for line in text.splitlines())


if __name__ == "__main__":
    sys.exit(main())
