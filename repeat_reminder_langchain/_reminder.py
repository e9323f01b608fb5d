"""What the guard tells the model: reminders and escalations, their words and their tags."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict, cast

from ._detectors import DETECTORS
from ._exits import EXITS, Exit, ExitBehavior
from ._log import LOGGER_NAME

__all__ = [
    "Escalation",
    "Level",
    "LoopContext",
    "Reminder",
    "ReminderTag",
    "UserWords",
    "WordsOf",
    "preview",
    "reminder_content",
    "sample_words",
    "word_fields",
]

logger = logging.getLogger(LOGGER_NAME)


Level = Literal["gentle", "detailed"]


class ReminderTag(TypedDict):
    """What `additional_kwargs["repeat_tool_reminder"]` of a guard's message holds.

    A message that carries several reminders of one turn names the first (`tool`, `count`,
    `detector`), takes the firmest `level`, sums them all up in `summary` and lists each one's
    tag in `reminders`. A message the guard wrote when it stopped a loop (`level: "escalated"`)
    holds the whole `Escalation`: its `arguments`, `behavior`, `digest`, `position` and `limit`
    besides.
    """

    kind: str
    plugin: str
    form: str
    summary: str
    tool: str
    count: int
    level: str
    detector: str
    reminders: NotRequired[list[ReminderTag]]
    arguments: NotRequired[str]
    behavior: NotRequired[str]
    digest: NotRequired[str]
    position: NotRequired[int]
    limit: NotRequired[int]


@dataclass(frozen=True, slots=True)
class Reminder:
    """One reminder, due because a detector counted `count` for a call to `tool`.

    Attributes:
        tool: The tool's name.
        count: What the detector counted: identical calls in a row (`repeat`), identical
            results of one call (`stale`), or failures in a row with one error (`same_error`).
        level: `"gentle"` at the detector's first threshold, `"detailed"` at every later one.
        arguments: The call's canonical arguments, cut to the preview cap.
        digest: A fingerprint of the full canonical arguments (for logs, in their place).
        detector: Which detector fired.
        position: The call's position among the calls of its model turn.
        details: What the detector adds to the count, by the names its words use (its
            `says`): `error` (`same_error`, `recurring_error`: the error text, cut to the
            preview cap), `variants` (`same_error`, `same_output`: how many argument sets hit
            the error or returned the output), `evidence` (`cycle`: the calls of one round;
            `same_output`: the output).
        summary: A one-line label such as `grep × 5`.
        reminds: Whether its detector reminds the model; False for one that only counts and
            reports (its `remind` setting: `same_output`'s by default), whose reminder is
            logged and sent as an event, never added to the conversation.

    Example:
        >>> reminder = Reminder("grep", 5, "detailed", '{"pattern":"retry_limit"}')
        >>> print(reminder.text.splitlines()[1:4])
        ['- tool: grep', '- consecutive_calls: 5', '- arguments: {"pattern":"retry_limit"}']

    """

    tool: str
    count: int
    level: Level
    arguments: str
    digest: str = ""
    detector: str = "repeat"
    position: int = 0
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)
    reminds: bool = True
    summary: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A field, not a property: the events and log lines that name the reminder read it.
        object.__setattr__(self, "summary", _summary(self.tool, self.count))

    @property
    def text(self) -> str:
        """The words the model reads (the detector's own)."""
        return self.say()

    def say(self, words: WordsOf | None = None) -> str:
        """The words the model reads: the user's for this detector and level, or its own.

        Raises what the user's words raise, and `ValueError` for words that come out empty
        (a guard uses its own words in their place: `UserWords`).
        """
        entry = _entry(words, self.detector, self.level)
        if entry is None:
            parts = DETECTORS[self.detector].words
            own: str | Callable[[Any], str] = (
                parts.gentle if self.level == "gentle" else parts.detailed
            )
        else:
            own = entry[1]
        if callable(own):
            return _text(own(self))
        return _text(
            own.format_map(
                _Said(
                    self.details,
                    tool=self.tool,
                    count=self.count,
                    level=self.level,
                    detector=self.detector,
                    arguments=self.arguments,
                )
            )
        )

    def tag(self) -> ReminderTag:
        """What marks a message as this reminder."""
        return _tag(self.tool, self.count, self.level, self.detector)


@dataclass(frozen=True, slots=True)
class Escalation:
    """A loop the guard stops instead of reminding: a count reached `escalate_after`.

    Attributes:
        tool: The tool called.
        count: What the detector counted, by the last call of the turn that went on with
            the loop (a batch of identical calls runs whole, and is counted whole).
        detector: Which detector reached the limit.
        arguments: The call's canonical arguments, cut to the preview cap.
        behavior: What the guard does: the configured `exit_behavior`, but `"end"` for a
            model that sends a call again after reading its refusal (`"block"`) or after it
            was asked for its answer (`"finish"`), and for a run a human ended when asked
            (`"interrupt"` answered `"end"`).
        digest: A fingerprint of the full canonical arguments.
        position: The call's position among the calls of its model turn.
        limit: The `escalate_after` it reached.
        summary: A one-line label such as `grep × 10`.
    """

    tool: str
    count: int
    detector: str
    arguments: str
    behavior: ExitBehavior
    digest: str = ""
    position: int = 0
    limit: int = 0
    summary: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", _summary(self.tool, self.count))

    @property
    def text(self) -> str:
        """The final words (the guard's own): of a run it ended, or asking for the answer.

        Without what the conversation says of the loop (`say(seen=...)` quotes it).
        """
        return self.say()

    def say(self, words: WordsOf | None = None, seen: LoopContext | None = None) -> str:
        """The final words: the user's for this detector, or its own.

        They end a run the guard ended, or, with `"finish"`, ask the model for its answer.
        `seen`: what the conversation says of the loop, for the words' `request` and `result`
        (said as "" without it).

        Raises what the user's words raise, and `ValueError` for words that come out empty
        (a guard uses its own words in their place: `UserWords`).
        """
        entry = _entry(words, self.detector, "final")
        if entry is None:
            own: str | Callable[[Any], str] = self.exit.words
        else:
            own = entry[1]
        if callable(own):
            return _text(own(self))
        return _text(
            own.format(
                tool=self.tool,
                count=self.count,
                detector=self.detector,
                arguments=self.arguments,
                limit=self.limit,
                what=DETECTORS[self.detector].words.stopped,
                request=(seen or _NO_CONTEXT).request,
                result=(seen or _NO_CONTEXT).result,
            )
        )

    def refusal(self) -> str:
        """The error result of a call the guard did not run, in this loop's name."""
        what = DETECTORS[self.detector].words.stopped
        return self.exit.refusal.format(tool=self.tool, count=self.count, what=what)

    @property
    def exit(self) -> Exit:
        """How the guard stops this loop."""
        return EXITS[self.behavior]

    def tag(self) -> ReminderTag:
        """What marks a message the guard wrote when it stopped this loop: all of it."""
        tag = _tag(self.tool, self.count, "escalated", self.detector)
        tag["arguments"], tag["behavior"], tag["digest"] = (
            self.arguments,
            self.behavior,
            self.digest,
        )
        tag["position"], tag["limit"] = self.position, self.limit
        return tag

    @classmethod
    def from_tag(cls, tag: Mapping[str, Any]) -> Escalation | None:
        """The escalation a message's tag holds.

        None: the tag is no escalation's, or one written before tags held all of it (0.4.0),
        or not what the guard writes.
        """
        kinds = _ESCALATION_FIELDS.items()
        if tag.get("level") != "escalated" or any(type(tag.get(n)) is not k for n, k in kinds):
            return None
        if tag["behavior"] not in EXITS:
            return None
        return cls(**{name: tag[name] for name in _ESCALATION_FIELDS})


WordsOf = Mapping[str, Mapping[str, "str | Callable[[Any], str]"]]
"""Reminder words the user sets: by detector (or `*` for every one), by level (`gentle`,
`detailed`, or `final` for the last message of a run the guard ended), a format string or a
function of the `Reminder` (or `Escalation`) that returns the text."""

# What a tag holds of an escalation, and each value's type (a tag is read back from a
# checkpoint).
_ESCALATION_FIELDS = {
    **dict.fromkeys(("tool", "detector", "arguments", "behavior", "digest"), str),
    **dict.fromkeys(("count", "position", "limit"), int),
}
_REMINDER_FIELDS = ("tool", "count", "level", "detector", "arguments")
_FINAL_FIELDS = ("tool", "count", "detector", "arguments", "limit", "what", "request", "result")


class LoopContext(NamedTuple):
    """What the conversation says of a loop the guard stops, for its final words to quote.

    Attributes:
        request: What the user asked (their latest message), cut to a cap.
        result: The latest result of the looping call, cut to a cap.
    """

    request: str = ""
    result: str = ""


_NO_CONTEXT = LoopContext()


def word_fields(detector: str, level: str) -> tuple[str, ...]:
    """The names words may hold: a run's end's, or a detector's reminder's.

    A reminder's are every reminder's and what its detector says (`says`; every detector's,
    for `*`).
    """
    if level == "final":
        return _FINAL_FIELDS
    shown = DETECTORS.values() if detector == "*" else (DETECTORS[detector],)
    return (*_REMINDER_FIELDS, *dict.fromkeys(name for one in shown for name in one.says))


class _Said(dict[str, Any]):
    """A reminder's values for its words: a name its detector does not say is said as "".

    (Words for every detector, `*`, may name what one of them says and another does not.)
    """

    def __init__(self, details: Mapping[str, Any], **values: Any) -> None:
        super().__init__(details, **values)

    def __missing__(self, name: str) -> str:
        return ""


class UserWords:
    """The user's words as a guard says them: an entry that fails gives way to the guard's own.

    A function that raises or returns no text, or a format string that a reminder's values
    break, must not cost the run its count or its stop: the detector's own words are said in
    its place, and the first failure of each entry (detector or `*`, and level) is logged, once,
    as a warning.
    """

    __slots__ = ("_failed", "_words")

    def __init__(self, words: WordsOf) -> None:
        self._words = words
        self._failed: set[tuple[str, str]] = set()

    def say(self, due: Reminder | Escalation, seen: LoopContext | None = None) -> str:
        """The words of a reminder, or of a run's end: the user's, or the guard's own.

        `seen`: what a run's end may quote of the conversation (`Escalation.say`).
        """
        own: Callable[..., str] = due.say
        level: str = due.level if isinstance(due, Reminder) else "final"
        if isinstance(due, Escalation):
            own = partial(due.say, seen=seen)
        entry = _entry(self._words, due.detector, level)
        if entry is None:
            return own()  # no words of the user's for this one
        try:
            return own(self._words)
        except Exception as error:
            if (entry[0], level) not in self._failed:
                self._failed.add((entry[0], level))
                logger.warning(
                    "repeat reminder words %s.%s failed (%s: %s); the guard's own words are "
                    "said in their place",
                    entry[0],
                    level,
                    type(error).__name__,
                    error,
                )
            return own()


def sample_words(detector: str, level: str, words: str) -> str:
    """`words` said for a detector (or `*`) at `level`, with a value in every field it names."""
    if level == "final":
        told: Reminder | Escalation = Escalation("tool", 9, "repeat", "{}", "end", limit=9)
    else:
        shown = DETECTORS.values() if detector == "*" else (DETECTORS[detector],)
        details = {name: value for one in shown for name, value in one.says.items()}
        told = Reminder("tool", 3, cast("Level", level), "{}", details=details)
    if isinstance(told, Escalation):
        return told.say({"*": {level: words}}, LoopContext("the request", "the result"))
    return told.say({"*": {level: words}})


def _entry(words: WordsOf | None, detector: str, level: str) -> tuple[str, Any] | None:
    """The key and the user's words for a detector at a level (its own, else every one's)."""
    if not words:
        return None
    for key in (detector, "*"):
        own = words.get(key, {}).get(level)
        if own is not None:
            return key, own
    return None


def _text(said: object) -> str:
    """Words said: text that is not empty."""
    if not isinstance(said, str):
        raise TypeError(f"the words are a {type(said).__name__}, not text")
    if not said.strip():
        raise ValueError("the words are empty")
    return said


def _summary(tool: str, count: int) -> str:
    return f"{tool} \u00d7 {count}"


def _tag(tool: str, count: int, level: str, detector: str) -> ReminderTag:
    return {
        "kind": "plugin",
        "plugin": "repeat-tool-reminder",
        "form": "notice",
        "summary": _summary(tool, count),
        "tool": tool,
        "count": count,
        "level": level,
        "detector": detector,
    }


def reminder_content(
    reminders: Sequence[Reminder], words: UserWords | None
) -> tuple[str, ReminderTag]:
    """The text and the tag of the one message that carries a turn's reminders (at least one).

    Each reminder's words (the user's, or the guard's) in a paragraph of their own, in order.
    """
    text = "\n\n".join(r.text if words is None else words.say(r) for r in reminders)
    tag = reminders[0].tag()
    if len(reminders) > 1:
        tags = [reminder.tag() for reminder in reminders]
        tag["summary"] = " \u00b7 ".join(each["summary"] for each in tags)
        if any(reminder.level == "detailed" for reminder in reminders):
            tag["level"] = "detailed"
        tag["reminders"] = tags
    return text, tag


def preview(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how many were left out.

    Example:
        >>> preview("abcdefgh", 3)
        'abc… (+5 more chars)'

    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\u2026 (+{len(text) - limit} more chars)"
