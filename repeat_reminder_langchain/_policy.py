r"""Tool policies: what a tool says about itself, and the rules one tool's calls are counted by.

A tool may declare its own policy in its metadata, under `"repeat_reminder"`:

    {"exclude": True}                          # never count it (a poller, say)
    {"thresholds": [5, 10], "repeat_every": 5} # its own thresholds
    {"progress": "result"}                     # a new result is progress, not a repeat
    {"ignore_arguments": ["request_id"]}       # arguments that vary without meaning
    {"normalise_results": ["took \\d+ ms"]}    # what varies in its results, set aside

MCP annotations (`readOnlyHint`, `idempotentHint`) are read too: from an `"annotations"`
mapping or object, or else from the top level of the metadata (see `ReminderConfig.progress`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ._checks import (
    check_paths,
    check_regexes,
    check_repeat_every,
    check_thresholds,
    compile_patterns,
    validation_problems,
)
from ._log import LOGGER_NAME
from ._normalise import Normalise, normalise_result
from ._reminder import Level

__all__ = ["POLICY_KEY", "Levels", "Rules", "ToolPolicies", "ToolPolicy", "parse_tool_policy"]

POLICY_KEY = "repeat_reminder"
"""The metadata key under which a tool declares its policy."""

_HINTS = (("read_only", "readOnlyHint"), ("idempotent", "idempotentHint"))
_DECLARING = (POLICY_KEY, "annotations", *(key for _, key in _HINTS))  # what a policy is read from

logger = logging.getLogger(LOGGER_NAME)


class ToolPolicy(BaseModel):
    """A tool's own policy, read from its metadata. Fields left unset say nothing.

    A field named as one of `ReminderConfig`'s is that field for this tool's calls, checked by
    the same rule (`ReminderConfig.rules` says which wins); its fields are below, each where it
    is declared.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    exclude: bool = False
    """Never count this tool (where `ReminderConfig.exclude` names tools, this one says itself)."""
    thresholds: tuple[int, ...] | None = None
    """Its own `ReminderConfig.thresholds`."""
    repeat_every: int | None = None
    """Its own `ReminderConfig.repeat_every`."""
    progress: Literal["none", "result"] | None = None
    """Its own `ReminderConfig.progress` (`"auto"` is what a tool's hints decide)."""
    ignore_arguments: tuple[str, ...] = ()
    """Its own `ReminderConfig.ignore_arguments`: argument patterns (dotted paths) left out of its
    calls' keys, beside those the configuration gives for it."""
    normalise_results: tuple[str, ...] = ()
    """Regular expressions for what varies in its results without meaning: each match is set
    aside before a result is compared, after `ReminderConfig.normalise_results`."""
    read_only: bool | None = None
    """The MCP annotation `readOnlyHint`."""
    idempotent: bool | None = None
    """The MCP annotation `idempotentHint`."""

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
        return check_paths(value)

    @field_validator("normalise_results", mode="before")
    @classmethod
    def _check_normalise(cls, value: Any) -> tuple[str, ...]:
        return check_regexes(value)


def _hints(metadata: Mapping[str, Any]) -> dict[str, bool]:
    """The MCP hints a tool declares.

    They are read under `annotations` (a mapping or an object), or else at the top level of
    its metadata.
    """
    annotations = metadata.get("annotations")
    found = {}
    for name, key in _HINTS:
        if isinstance(annotations, Mapping):
            hint = annotations.get(key)
        else:
            hint = getattr(annotations, key, None)
        if hint is None:
            hint = metadata.get(key)
        if isinstance(hint, bool):
            found[name] = hint
    return found


def parse_tool_policy(metadata: object) -> ToolPolicy | None:
    """The policy a tool's metadata declares, or None when it declares none.

    Raises:
        ValueError: The metadata declares a policy that breaks a rule.

    Example:
        >>> parse_tool_policy({"repeat_reminder": {"thresholds": [6, 4]}}).thresholds
        (4, 6)
        >>> parse_tool_policy({"readOnlyHint": True}).read_only
        True
    """
    if not isinstance(metadata, Mapping):
        return None
    own = metadata.get(POLICY_KEY)
    hints = _hints(metadata)
    if own is None and not hints:
        return None
    if own is not None and not isinstance(own, Mapping):
        raise ValueError(f"{POLICY_KEY} must be a mapping, got {own!r}")
    try:
        return ToolPolicy.model_validate({**(own or {}), **hints})
    except ValidationError as error:
        problems = validation_problems(error).replace("\n", "; ")
        raise ValueError(f"invalid {POLICY_KEY} policy: {problems}") from None


class ToolPolicies(dict[str, ToolPolicy]):
    """The policies tools declare, by tool name, learnt from their metadata as they run.

    A policy is re-read whenever what the metadata says changes (compared by value, so a
    tool rebuilt for each request, or metadata edited in place, is read right). A policy that
    breaks a rule is logged once and ignored: tool metadata is read at run time, where the
    guard never fails a run. (A dict, so that the lookup on every counted call runs in C.)
    """

    limit = 10_000  # tool names come from whatever runs; keep the memory bounded

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, object] = {}

    def learn(self, name: object, metadata: object) -> None:
        """Read the policy a tool named `name` declares in `metadata`, if it changed."""
        if not isinstance(name, str):
            return
        if not isinstance(metadata, Mapping) or metadata.keys().isdisjoint(_DECLARING):
            # Nothing that declares a policy (most tools, and the run metadata callbacks get).
            if name in self._seen:
                del self._seen[name]
                self.pop(name, None)
            return
        own = metadata.get(POLICY_KEY)
        # repr, not the canonical text: validation tells 4.0 from 4 and True from 1, so what is
        # compared must too, or metadata corrected from one to the other is never read again.
        said = (None if own is None else repr(own), tuple(_hints(metadata).items()))
        if self._seen.get(name) == said:
            return
        if len(self._seen) >= self.limit:
            self._seen.clear()
            self.clear()
        self._seen[name] = said
        try:
            policy = parse_tool_policy(metadata)
        except ValueError as error:
            logger.warning("tool %r: %s; its policy is ignored", name, error)
            policy = None
        if policy is None:
            self.pop(name, None)
        else:
            self[name] = policy


class Levels(dict[int, "Level | None"]):
    """Which reminder each count draws: `levels[count]`, gentle or detailed, or None.

    Gentle at the first threshold and detailed at the later ones, read from the mapping (a
    count that draws something is looked up, not computed); with `every`, detailed at every
    `every`-th count past the last. Built by `of`; not to be changed once built.

    Example:
        >>> levels = Levels.of((2, 4), every=3)
        >>> [levels[n] for n in (1, 2, 4, 6, 7)]
        [None, 'gentle', 'detailed', None, 'detailed']
    """

    __slots__ = ("every", "last")

    def __init__(self, table: Mapping[int, Level], every: int | None, last: int) -> None:
        super().__init__(table)
        self.every = every
        self.last = last

    @classmethod
    def of(cls, thresholds: Sequence[int], every: int | None = None) -> Levels:
        """The levels of sorted, distinct `thresholds`."""
        table: dict[int, Level] = dict.fromkeys(thresholds, "detailed")
        table[thresholds[0]] = "gentle"
        return cls(table, every, thresholds[-1])

    def __missing__(self, count: int) -> Level | None:
        every = self.every
        if every and count > self.last and (count - self.last) % every == 0:
            return "detailed"
        return None


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules one tool's calls are counted by: the configuration and the tool's policy.

    Attributes:
        thresholds: Run lengths of identical calls that draw a reminder.
        repeat_every: After the last threshold, a detailed reminder every this many repeats.
        result_aware: Whether the same call with a new result starts a new run.
        ignore: Argument paths left out of the key, each a tuple of segment patterns.
        normalise: What a result's text is compared as (`_normalise`); None: as it is.
        levels: The reminder each run length draws (derived from the two first).
    """

    thresholds: tuple[int, ...]
    repeat_every: int | None = None
    result_aware: bool = False
    ignore: tuple[tuple[re.Pattern[str], ...], ...] = ()
    normalise: Normalise | None = normalise_result
    levels: Levels = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", Levels.of(self.thresholds, self.repeat_every))

    def level(self, count: int) -> Level | None:
        """Which reminder a run of `count` identical calls draws, if any."""
        return self.levels[count]

    def keyed(self, args: object) -> object:
        """The arguments that make up the call's key: `args` without the ignored paths."""
        for path in self.ignore:
            args = _without(args, path)
        return args


def compile_paths(patterns: Sequence[str]) -> tuple[tuple[re.Pattern[str], ...], ...]:
    """Dotted argument patterns (`"options.timeout*"`) as tuples of segment patterns."""
    compiled = []
    for pattern in patterns:
        segments = (compile_patterns([segment]) for segment in pattern.split("."))
        compiled.append(tuple(s for s in segments if s is not None))
    return tuple(compiled)


def _without(value: object, path: tuple[re.Pattern[str], ...]) -> object:
    """A copy of `value` without the keys `path` matches; lists on the way are looked through."""
    if isinstance(value, list):
        return [_without(item, path) for item in value]
    if not isinstance(value, Mapping):
        return value
    head, rest = path[0], path[1:]
    kept = {}
    for key, item in value.items():
        matches = isinstance(key, str) and head.fullmatch(key) is not None
        if matches and not rest:
            continue
        kept[key] = _without(item, rest) if matches else item
    return kept
