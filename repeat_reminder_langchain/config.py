"""The guard's configuration: its fields, their fail-loud validation, and tool matching."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator

__all__ = ["ReminderConfig", "resolve_config"]


def _is_int(value: object) -> bool:
    # bool is an int subclass, but `True` as a threshold is a mistake, not a 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _compile(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """One anchored regex for a list of names where `*` matches anything and all else is literal."""
    if not patterns:
        return None
    alternatives = (".*".join(map(re.escape, pattern.split("*"))) for pattern in patterns)
    return re.compile("|".join(f"(?:{alt})" for alt in alternatives), re.DOTALL)


class ReminderConfig(BaseModel):
    """How the guard counts repeated tool calls and what it tells the model.

    Every field is checked when the object is built; a bad value raises a `ValueError`
    (pydantic's `ValidationError`) naming the field and the rule, never a silent fallback.

    Attributes:
        thresholds: Run lengths at which a reminder is added. The first gets the gentle
            reminder, every later one the detailed reminder. Integers >= 2, no duplicates;
            given in any order, kept sorted.
        include: Tool-name patterns to track (`*` matches any run of characters, every other
            character is literal, whole-name and case-sensitive). Empty means every tool.
        exclude: Tool-name patterns that are transparent to the guard: they neither count
            nor break a run. Exclude wins over include.
        arguments_preview_chars: How many characters of the canonical arguments the
            detailed reminder quotes before cutting them short.
        message_type: `"system"` for a `SystemMessage` reminder, `"human"` for a
            `HumanMessage` wrapped in `<system-reminder>` tags.

    Example:
        >>> config = ReminderConfig(thresholds=[5, 2], exclude=["todo_*"])
        >>> config.thresholds
        (2, 5)
        >>> config.tracks("read_file"), config.tracks("todo_write")
        (True, False)

    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Typed as sequences so that lists type-check at the call site; stored as sorted tuples.
    thresholds: Sequence[int] = (3, 5, 8)
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    arguments_preview_chars: int = 500
    message_type: Literal["system", "human"] = "system"

    _include: re.Pattern[str] | None = PrivateAttr(default=None)
    _exclude: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("thresholds", mode="before")
    @classmethod
    def _check_thresholds(cls, value: Any) -> tuple[int, ...]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise ValueError(f"thresholds must be a list of integers, got {value!r}")
        if not value:
            raise ValueError("thresholds must not be empty")
        for item in value:
            if not _is_int(item) or item < 2:
                raise ValueError(
                    f"thresholds: invalid threshold {item!r} — every threshold must be an "
                    "integer >= 2"
                )
        if len(set(value)) != len(value):
            raise ValueError(f"thresholds must not contain duplicates, got {list(value)}")
        return tuple(sorted(value))

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _check_patterns(cls, value: Any) -> tuple[str, ...]:
        # A bare string is a sequence of one-letter patterns: almost certainly a mistake.
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise ValueError(f"must be a list of tool-name patterns, got {value!r}")
        for item in value:
            if not isinstance(item, str) or not item:
                raise ValueError(f"every pattern must be a non-empty string, got {item!r}")
        return tuple(value)

    @field_validator("arguments_preview_chars", mode="before")
    @classmethod
    def _check_preview(cls, value: Any) -> int:
        if not _is_int(value) or value < 1:
            raise ValueError(f"invalid arguments_preview_chars {value!r} — must be an integer >= 1")
        return int(value)

    def model_post_init(self, __context: Any) -> None:
        """Compile the include and exclude patterns once."""
        self._include = _compile(self.include)
        self._exclude = _compile(self.exclude)

    def tracks(self, tool: str) -> bool:
        """Whether calls to `tool` count, given `include` and `exclude`."""
        if self._include is not None and self._include.fullmatch(tool) is None:
            return False
        return self._exclude is None or self._exclude.fullmatch(tool) is None


def resolve_config(config: ReminderConfig | None, fields: Mapping[str, Any]) -> ReminderConfig:
    """The configuration of a guard built with `config=...` or with the fields as keywords.

    Raises:
        TypeError: Both were given, `config` is not a `ReminderConfig`, or a keyword names no
            field (with the nearest field name when there is one).
        ValueError: A field's value breaks its rule.

    """
    if config is not None and fields:
        raise TypeError("pass either a ReminderConfig or its fields as keywords, not both")
    if config is not None and not isinstance(config, ReminderConfig):
        raise TypeError(f"config must be a ReminderConfig, got {type(config).__name__}")
    known = list(ReminderConfig.model_fields)
    for name in fields:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; fields are {', '.join(known)}"
            raise TypeError(f"unknown ReminderConfig field {name!r}{hint}")
    return config if config is not None else ReminderConfig(**fields)
