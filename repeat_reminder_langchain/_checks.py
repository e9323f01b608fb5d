"""The checks a setting passes, the same in `ReminderConfig` and in a tool's own `ToolPolicy`.

Each returns the value in the form the guard keeps (a tuple, sorted thresholds) or raises a
`ValueError` whose message pydantic turns into one line naming the field.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

__all__ = [
    "check_paths",
    "check_patterns",
    "check_regexes",
    "check_repeat_every",
    "check_thresholds",
    "compile_patterns",
    "did_you_mean",
    "is_int",
    "validation_problems",
]


def is_int(value: object) -> bool:
    """Whether `value` is an integer (`True` as a count is a mistake, not a 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def compile_patterns(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """One anchored regex for names where `*` matches anything and all else is literal."""
    if not patterns:
        return None
    alternatives = (".*".join(map(re.escape, pattern.split("*"))) for pattern in patterns)
    return re.compile("|".join(f"(?:{alt})" for alt in alternatives), re.DOTALL)


def check_thresholds(value: Any) -> tuple[int, ...]:
    """Validate thresholds: a non-empty list of distinct integers >= 2, returned sorted."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"must be a list of integers, got {value!r}")
    if not value:
        raise ValueError("must not be empty")
    for item in value:
        if not is_int(item) or item < 2:
            raise ValueError(
                f"invalid threshold {item!r} — every threshold must be an integer >= 2"
            )
    if len(set(value)) != len(value):
        raise ValueError(f"must not contain duplicates, got {list(value)}")
    return tuple(sorted(value))


def check_repeat_every(value: Any) -> int | None:
    """Validate repeat_every: None, or an integer >= 1."""
    if value is not None and (not is_int(value) or value < 1):
        raise ValueError(f"must be an integer >= 1, or None, got {value!r}")
    return value  # type: ignore[no-any-return]


def check_patterns(value: Any, what: str) -> tuple[str, ...]:
    """Validate a list of non-empty pattern strings."""
    # A bare string is a sequence of one-letter patterns: almost certainly a mistake.
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"must be a list of {what} patterns, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise ValueError(f"every pattern must be a non-empty string, got {item!r}")
    return tuple(value)


def check_regexes(value: Any) -> tuple[str, ...]:
    """Validate a list of regular expressions, each compiled to be sure it is one."""
    patterns = check_patterns(value, "regular-expression")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"invalid regular expression {pattern!r}: {error}") from None
    return patterns


def check_paths(value: Any) -> tuple[str, ...]:
    """Validate argument patterns: like tool-name patterns, each dotted segment non-empty."""
    paths = check_patterns(value, "argument")
    for path in paths:
        if "" in path.split("."):
            raise ValueError(
                f"invalid argument pattern {path!r} — every dotted segment must be non-empty "
                "(use * to match any key)"
            )
    return paths


def validation_problems(error: ValidationError) -> str:
    """A pydantic error as one line per problem, naming the field: no URLs, no prefixes."""
    lines = []
    for problem in error.errors():
        field = ".".join(map(str, problem["loc"]))
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{field}: {message}" if field else message)
    return "\n".join(lines)


def did_you_mean(name: object, known: Sequence[str], what: str) -> str:
    """The end of an error about an unknown name: the nearest known one, or all of them."""
    close = difflib.get_close_matches(str(name), known, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; {what} are {', '.join(known)}"


def check_words(
    value: Any,
    detectors: Sequence[str],
    fields: Callable[[str, str], Sequence[str]],
    say: Callable[[str, str, str], object],
) -> dict[str, dict[str, Any]]:
    """Validate reminder words: by detector (or `*`), by level, a format string or a function.

    A format string may name only the `fields` of its detector at its level, and must say
    something when `say` renders it there with a value of every field; a detector must be one
    of `detectors`.
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"must map detector names (or *) to their words by level, got {value!r}")
    levels = ("gentle", "detailed", "final")
    known = (*detectors, "*")
    checked: dict[str, dict[str, Any]] = {}
    for detector, said in value.items():
        if detector not in known:
            if detector in levels:  # a level given where a detector goes: say where it goes
                raise ValueError(
                    f'{detector!r} is a level: levels go under a detector, or under "*" for '
                    f'every one: {{"repeat": {{"{detector}": ...}}}} ([words.repeat] in a '
                    "settings file)"
                )
            hint = did_you_mean(detector, known, "they")
            raise ValueError(f"unknown detector {detector!r}{hint}")
        if not isinstance(said, Mapping):
            raise ValueError(f"{detector}: must map levels to words, got {said!r}")
        for level, words in said.items():
            where = f"{detector}.{level}"
            if level not in levels:
                hint = did_you_mean(level, levels, "levels")
                raise ValueError(f"{detector}: unknown level {level!r}{hint}")
            if isinstance(words, str):
                _check_format(words, fields(detector, level), where)
                try:
                    say(detector, level, words)
                except Exception as error:
                    raise ValueError(f"{where}: cannot be said ({error})") from None
            elif not callable(words):
                raise ValueError(
                    f"{where}: must be a format string or a function of the reminder, got {words!r}"
                )
        checked[detector] = dict(said)
    return checked


def _check_format(words: str, fields: Sequence[str], where: str) -> None:
    if not words.strip():
        raise ValueError(f"{where}: must not be empty")
    try:
        parsed = list(string.Formatter().parse(words))
    except ValueError as error:
        raise ValueError(f"{where}: not a format string ({error})") from None
    for _, name, _, _ in parsed:
        if name is not None and name not in fields:
            raise ValueError(
                f"{where}: unknown field {{{name}}}; the fields are {', '.join(fields)}"
            )
