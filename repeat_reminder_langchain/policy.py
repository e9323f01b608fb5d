"""Per-tool policy: what a tool says about itself, and the rules one tool's calls are counted by.

A tool may carry its own policy in its metadata, under `"repeat_reminder"`:

    {"exclude": True}                          # never count it (a poller, say)
    {"thresholds": [5, 10], "repeat_every": 5} # its own thresholds
    {"progress": "result"}                     # a new result is progress, not a repeat
    {"ignore_arguments": ["request_id"]}       # arguments that vary without meaning

and MCP-style annotations (`readOnlyHint`, `idempotentHint`), under `"annotations"` or at
the top level of the metadata, are read too (see `ReminderConfig.progress`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .reminder import Level

__all__ = ["ToolPolicy", "ToolSpec", "ToolSpecs", "compile_patterns", "parse_tool_spec"]

SPEC_KEY = "repeat_reminder"

logger = logging.getLogger("repeat_reminder_langchain")


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
        raise ValueError(f"thresholds must be a list of integers, got {value!r}")
    if not value:
        raise ValueError("thresholds must not be empty")
    for item in value:
        if not is_int(item) or item < 2:
            raise ValueError(
                f"thresholds: invalid threshold {item!r} — every threshold must be an integer >= 2"
            )
    if len(set(value)) != len(value):
        raise ValueError(f"thresholds must not contain duplicates, got {list(value)}")
    return tuple(sorted(value))


def check_repeat_every(value: Any) -> int | None:
    """Validate repeat_every: None, or an integer >= 1."""
    if value is not None and (not is_int(value) or value < 1):
        raise ValueError(f"invalid repeat_every {value!r} — must be an integer >= 1, or None")
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


class ToolSpec(BaseModel):
    """A tool's own policy, read from its metadata. Fields left unset say nothing.

    Attributes:
        exclude: Never count this tool.
        thresholds: Its own thresholds.
        repeat_every: Its own `repeat_every`.
        progress: `"result"` when a new result of the same call is progress.
        ignore_arguments: Argument patterns (dotted paths) left out of its calls' keys.
        read_only: The MCP annotation `readOnlyHint`.
        idempotent: The MCP annotation `idempotentHint`.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    exclude: bool = False
    thresholds: tuple[int, ...] | None = None
    repeat_every: int | None = None
    progress: Literal["none", "result"] | None = None
    ignore_arguments: tuple[str, ...] = ()
    read_only: bool | None = None
    idempotent: bool | None = None

    @field_validator("thresholds", mode="before")
    @classmethod
    def _check_thresholds(cls, value: Any) -> tuple[int, ...] | None:
        return None if value is None else check_thresholds(value)

    @field_validator("repeat_every", mode="before")
    @classmethod
    def _check_repeat_every(cls, value: Any) -> int | None:
        return check_repeat_every(value)

    @field_validator("ignore_arguments", mode="before")
    @classmethod
    def _check_ignore(cls, value: Any) -> tuple[str, ...]:
        return check_patterns(value, "argument")


def parse_tool_spec(metadata: object) -> ToolSpec | None:
    """The policy a tool's metadata declares, or None when it declares none.

    Raises:
        ValueError: The metadata declares a policy that breaks a rule.

    Example:
        >>> spec = parse_tool_spec({"repeat_reminder": {"thresholds": [6, 4]}})
        >>> spec.thresholds
        (4, 6)
    """
    if not isinstance(metadata, Mapping):
        return None
    own = metadata.get(SPEC_KEY)
    annotations = metadata.get("annotations")
    if not isinstance(annotations, Mapping):
        annotations = {
            key: getattr(annotations, key, None) for key in ("readOnlyHint", "idempotentHint")
        }
    hints = {
        field: hint
        for field, key in (("read_only", "readOnlyHint"), ("idempotent", "idempotentHint"))
        if isinstance(hint := annotations.get(key, metadata.get(key)), bool)
    }
    if own is None and not hints:
        return None
    if own is not None and not isinstance(own, Mapping):
        raise ValueError(f"{SPEC_KEY} must be a mapping, got {own!r}")
    try:
        return ToolSpec.model_validate({**(own or {}), **hints})
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
            for e in error.errors()
        )
        raise ValueError(f"invalid {SPEC_KEY} policy: {problems}") from None


class ToolSpecs(Mapping[str, ToolSpec]):
    """The policies tools declare, by tool name, learnt from their metadata as they are seen.

    A policy that breaks a rule is logged once and ignored: tool metadata is read at run time,
    where the guard never fails a run.
    """

    limit = 10_000

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._seen: dict[str, tuple[int, int, object, object]] = {}

    def learn(self, name: object, metadata: object) -> None:
        """Read the policy a tool named `name` declares in `metadata`, if it changed."""
        if not isinstance(name, str) or not isinstance(metadata, Mapping):
            return
        annotations = metadata.get("annotations")
        signature = (
            id(metadata.get(SPEC_KEY)),
            id(annotations),
            metadata.get("readOnlyHint"),
            metadata.get("idempotentHint"),
        )
        if self._seen.get(name) == signature:
            return
        if len(self._seen) >= self.limit:
            self._seen.clear()
            self._specs.clear()
        self._seen[name] = signature
        try:
            spec = parse_tool_spec(metadata)
        except ValueError as error:
            logger.warning("tool %r: %s; its policy is ignored", name, error)
            spec = None
        if spec is None:
            self._specs.pop(name, None)
        else:
            self._specs[name] = spec

    def __getitem__(self, name: str) -> ToolSpec:
        return self._specs[name]

    def get(self, name: str, default: Any = None) -> Any:
        """The policy of `name`, or `default` (a plain dict lookup: this runs on every call)."""
        return self._specs.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The rules one tool's calls are counted by.

    Attributes:
        thresholds: Run lengths that draw a reminder.
        repeat_every: After the last threshold, a detailed reminder every this many repeats.
        result_aware: Whether the same call with a new result starts a new run.
        ignore: Argument paths left out of the key, each a tuple of segment patterns.
    """

    thresholds: tuple[int, ...]
    repeat_every: int | None = None
    result_aware: bool = False
    ignore: tuple[tuple[re.Pattern[str], ...], ...] = ()

    def level(self, count: int) -> Level | None:
        """Which reminder a run of `count` calls draws, if any."""
        if count == self.thresholds[0]:
            return "gentle"
        if count in self.thresholds:
            return "detailed"
        last = self.thresholds[-1]
        if self.repeat_every and count > last and (count - last) % self.repeat_every == 0:
            return "detailed"
        return None

    def keyed(self, args: object) -> object:
        """The arguments that make up the call's key: `args` without the ignored paths."""
        for path in self.ignore:
            args = _without(args, path)
        return args


def compile_paths(patterns: Sequence[str]) -> tuple[tuple[re.Pattern[str], ...], ...]:
    """Dotted argument patterns (`"options.timeout*"`) as tuples of segment patterns."""
    compiled = []
    for pattern in patterns:
        segments = [compile_patterns([segment or "*"]) for segment in pattern.split(".")]
        compiled.append(tuple(s for s in segments if s is not None))
    return tuple(compiled)


def _without(value: object, path: tuple[re.Pattern[str], ...]) -> object:
    """A copy of `value` without the keys `path` matches; lists are looked through."""
    if isinstance(value, list):
        return [_without(item, path) for item in value]
    if not isinstance(value, Mapping) or not path:
        return value
    head, rest = path[0], path[1:]
    kept = {}
    for key, item in value.items():
        matches = isinstance(key, str) and head.fullmatch(key) is not None
        if matches and not rest:
            continue
        kept[key] = _without(item, rest) if matches else item
    return kept
