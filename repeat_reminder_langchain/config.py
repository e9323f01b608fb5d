"""The guard's configuration: its fields, their fail-loud validation, and tool matching."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator

from .policy import (
    ToolPolicy,
    ToolSpec,
    check_patterns,
    check_repeat_every,
    check_thresholds,
    compile_paths,
    compile_patterns,
    is_int,
)

__all__ = ["ReminderConfig", "resolve_config"]

_UNKNOWN = object()


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
        repeat_every: After the last threshold, a detailed reminder every this many further
            repeats. None (the default) stays silent after the last threshold.
        ignore_arguments: Tool-name patterns mapped to argument patterns left out of a call's
            key, so that varying them does not hide a repeat: `{"run_shell": ["description",
            "timeout*"]}`. An argument pattern is a key pattern, or a dotted path of them
            (`"options.retries"`; lists on the way are looked through).
        progress: `"none"` (the default): every identical call counts. `"result"`: the same
            call with a result different from the previous one is progress and starts a new
            run. `"auto"`: `"result"` for tools that declare `readOnlyHint: true` (and not
            `idempotentHint: true`), `"none"` for the others.
        mode: `"remind"` (the default) adds reminders; `"observe"` counts and reports them
            (events, logs, stats) without adding anything to the conversation.

    A tool can carry its own policy (see `repeat_reminder_langchain.policy`); a field set
    here explicitly wins over it, a field left at its default yields to it.

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
    repeat_every: int | None = None
    ignore_arguments: Mapping[str, Sequence[str]] = {}
    progress: Literal["none", "result", "auto"] = "none"
    mode: Literal["remind", "observe"] = "remind"

    _include: re.Pattern[str] | None = PrivateAttr(default=None)
    _exclude: re.Pattern[str] | None = PrivateAttr(default=None)
    _ignore: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = PrivateAttr(default=())
    _policies: dict[tuple[str, ToolSpec | None], ToolPolicy | None] = PrivateAttr(
        default_factory=dict
    )

    @field_validator("thresholds", mode="before")
    @classmethod
    def _check_thresholds(cls, value: Any) -> tuple[int, ...]:
        return check_thresholds(value)

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _check_patterns(cls, value: Any) -> tuple[str, ...]:
        return check_patterns(value, "tool-name")

    @field_validator("repeat_every", mode="before")
    @classmethod
    def _check_repeat_every(cls, value: Any) -> int | None:
        return check_repeat_every(value)

    @field_validator("ignore_arguments", mode="before")
    @classmethod
    def _check_ignore(cls, value: Any) -> dict[str, tuple[str, ...]]:
        if not isinstance(value, Mapping):
            raise ValueError(
                "must map tool-name patterns to lists of argument patterns, e.g. "
                f'{{"run_shell": ["description"]}}; got {value!r}'
            )
        for tool in value:
            if not isinstance(tool, str) or not tool:
                raise ValueError(
                    f"every tool-name pattern must be a non-empty string, got {tool!r}"
                )
        return {tool: check_patterns(paths, "argument") for tool, paths in value.items()}

    @field_validator("arguments_preview_chars", mode="before")
    @classmethod
    def _check_preview(cls, value: Any) -> int:
        if not is_int(value) or value < 1:
            raise ValueError(f"invalid arguments_preview_chars {value!r} — must be an integer >= 1")
        return int(value)

    def model_post_init(self, __context: Any) -> None:
        """Compile the patterns once."""
        self._include = compile_patterns(self.include)
        self._exclude = compile_patterns(self.exclude)
        self._ignore = tuple(
            (compiled, tuple(paths))
            for pattern, paths in self.ignore_arguments.items()
            if (compiled := compile_patterns([pattern])) is not None
        )

    def tracks(self, tool: str, spec: ToolSpec | None = None) -> bool:
        """Whether calls to `tool` count, given `include`, `exclude` and the tool's policy."""
        return self.policy(tool, spec) is not None

    def policy(self, tool: str, spec: ToolSpec | None = None) -> ToolPolicy | None:
        """The rules calls to `tool` are counted by, or None when they are not counted.

        `spec` is the tool's own policy, if it declares one. Precedence: an `exclude` pattern
        matching the tool wins; then `include`, when given, decides alone; then the tool's own
        `exclude`. For thresholds, `repeat_every` and `progress`, a field set explicitly here
        wins over the tool's own; the tool's own wins over a field left at its default (and
        over `progress="auto"`). Argument patterns from both apply.
        """
        # This runs for every counted call: one read of the private-attribute dict, not the
        # slower attribute lookup pydantic gives private attributes.
        cache = cast("dict[str, Any]", self.__pydantic_private__)["_policies"]
        key = (tool, spec)
        found = cache.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            if len(cache) >= 1024:  # tool names come from the model: keep it bounded
                cache.clear()
            found = cache[key] = self._resolve(tool, spec)
        return found  # type: ignore[no-any-return]

    def _resolve(self, tool: str, spec: ToolSpec | None) -> ToolPolicy | None:
        if self._exclude is not None and self._exclude.fullmatch(tool) is not None:
            return None
        if self._include is not None:
            if self._include.fullmatch(tool) is None:
                return None
        elif spec is not None and spec.exclude:
            return None
        explicit = self.model_fields_set
        thresholds = tuple(self.thresholds)
        repeat_every = self.repeat_every
        progress = self.progress
        ignored = [path for rule, paths in self._ignore if rule.fullmatch(tool) for path in paths]
        if spec is not None:
            if spec.thresholds is not None and "thresholds" not in explicit:
                thresholds = spec.thresholds
            if spec.repeat_every is not None and "repeat_every" not in explicit:
                repeat_every = spec.repeat_every
            if spec.progress is not None and ("progress" not in explicit or progress == "auto"):
                progress = spec.progress
            ignored += spec.ignore_arguments
        if progress == "auto":
            result_aware = spec is not None and spec.read_only is True and not spec.idempotent
        else:
            result_aware = progress == "result"
        return ToolPolicy(thresholds, repeat_every, result_aware, compile_paths(ignored))


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
