"""Counting: one agent's streaks, advanced one model turn at a time. Nothing here knows LangChain.

An agent's `Streaks` is a small immutable value, all the guard remembers about it:

* `repeat`: the last tracked call (tool and argument digest) and how many times in a row it
  was made;
* `same_error`: the tool whose calls keep failing, the error's digest, how many calls in a
  row hit it and with how many argument sets;
* `stale`: the latest result of each of the last `STALE_MEMORY` distinct calls and how many
  times in a row that call returned it;
* the model turn counted last, so that a turn seen again (an interrupt and resume, a retry)
  never counts twice, and the escalations so far.

Streaks, calls and tallies are named tuples: they are built on every step of every agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any, NamedTuple, TypedDict

from .canonical import canonicalize, digest
from .config import ReminderConfig
from .policy import Rules, ToolPolicy, level_at
from .reminder import Detector, Escalation, Level, Reminder, preview

__all__ = [
    "STALE_MEMORY",
    "Call",
    "CallTrace",
    "Streaks",
    "StreaksData",
    "Tally",
    "count_turn",
    "result_text",
]

_make = tuple.__new__

STALE_MEMORY = 64
"""How many distinct calls an agent's `stale` detector remembers; the least recent goes first."""

_NOTHING_SEEN: Mapping[str, str] = MappingProxyType({})
_VARIANTS = 16  # argument sets remembered for a failure streak, to say how many there were


class Call(NamedTuple):
    """One tool call a model made.

    Attributes:
        id: The call's id (`tool_call_id`), as the model wrote it (possibly shared, or empty).
        tool: The tool's name, as the model wrote it (it may name no real tool).
        args: The arguments as the model sent them.
        result: What the call returned (a tool message's content); None when unknown.
        error: Whether the result was marked as an error (`status="error"`).
    """

    id: str
    tool: str
    args: object
    result: object = None
    error: bool = False


class StreaksData(TypedDict, total=False):
    """`Streaks` as plain data, as it is kept in a checkpoint."""

    turn: str
    tool: str | None
    digest: str
    count: int
    result: str
    reminded: bool
    failing: str
    error: str
    failures: int
    variants: list[str]
    seen: list[str]
    escalations: int


class Streaks(NamedTuple):
    """What the guard remembers about one agent (a named tuple: built on every counted turn).

    Attributes:
        turn: The model turn whose calls were counted last.
        tool: The last tracked call's tool, or None before any.
        digest: The fingerprint of that call's key (its canonical arguments).
        count: How many times in a row that call was made.
        result: The fingerprint of that call's result, where results are compared.
        reminded: Whether that call drew a reminder the model saw (so the next call, or the
            model stopping, tells whether it changed course).
        failing: The tool of the current failure streak ("" when none).
        error: The fingerprint of that streak's error text.
        failures: How many tracked calls in a row failed with it.
        variants: Short fingerprints of the argument sets that hit it.
        seen: For `stale`, the latest distinct calls, oldest first: each call's fingerprint
            maps to its entry as stored, `call:result:times` (the fingerprints of the call
            and of its latest result, and how many times in a row it returned that). Never
            changed once in a `Streaks`: counting copies it.
        escalations: How many times the guard stopped this agent's loop.
    """

    turn: str = ""
    tool: str | None = None
    digest: str = ""
    count: int = 0  # type: ignore[assignment]  # a field, shadowing tuple.count
    result: str = ""
    reminded: bool = False
    failing: str = ""
    error: str = ""
    failures: int = 0
    variants: tuple[str, ...] = ()
    seen: Mapping[str, str] = _NOTHING_SEEN
    escalations: int = 0

    def reset(self) -> Streaks:
        """The streaks after a new user message: none, but the turn stays counted."""
        return Streaks(turn=self.turn, escalations=self.escalations)

    def to_dict(self) -> StreaksData:
        """The streaks as plain data, for a checkpoint: only what is set, digests in short."""
        data: StreaksData = {
            "turn": self.turn,
            "tool": self.tool,
            "digest": self.digest,
            "count": self.count,
            "result": self.result,
            "reminded": self.reminded,
        }
        if self.failing:
            data["failing"] = self.failing
            data["error"] = self.error
            data["failures"] = self.failures
            data["variants"] = list(self.variants)
        if self.seen:
            data["seen"] = list(self.seen.values())
        if self.escalations:
            data["escalations"] = self.escalations
        return data

    @classmethod
    def from_dict(cls, data: object) -> Streaks:
        """The streaks `to_dict` wrote (a field missing, as in older versions, is unset).

        Raises:
            ValueError: `data` is not what `to_dict` writes; the caller starts over.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ValueError(f"stored streaks must be a mapping, got {type(data).__name__}")
        get = data.get
        tool = get("tool")
        fields = {
            "turn": _typed(get("turn", ""), str, "turn"),
            "tool": None if tool is None else _typed(tool, str, "tool"),
            "digest": _typed(get("digest", ""), str, "digest"),
            "count": _count(get("count", 0), "count"),
            "result": _typed(get("result", ""), str, "result"),
            "reminded": _typed(get("reminded", False), bool, "reminded"),
            "failing": _typed(get("failing", ""), str, "failing"),
            "error": _typed(get("error", ""), str, "error"),
            "failures": _count(get("failures", 0), "failures"),
            "variants": tuple(_strings(get("variants", ()), "variants")),
            "seen": _seen(_strings(get("seen", ()), "seen")),
            "escalations": _count(get("escalations", 0), "escalations"),
        }
        return cls(**fields)


def _typed(value: Any, kind: type, name: str) -> Any:
    if type(value) is not kind:
        raise ValueError(f"stored {name} must be a {kind.__name__}, got {value!r}")
    return value


def _count(value: Any, name: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"stored {name} must be a count, got {value!r}")
    return value


def _strings(value: Any, name: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(type(item) is str for item in value):
        raise ValueError(f"stored {name} must be a list of strings, got {value!r}")
    return list(value)


def _seen(items: list[str]) -> dict[str, str]:
    seen = {}
    for item in items:
        call, _, rest = item.partition(":")
        times = rest.partition(":")[2]
        if not call or not times.isdigit():
            raise ValueError(f"stored seen entry must read call:result:times, got {item!r}")
        seen[call] = item
    return seen


class CallTrace(NamedTuple):
    """What counting found for one tracked call (collected only when asked for).

    Attributes:
        position: The call's position among its turn's calls.
        call: The call.
        streak: The run of identical calls it reached.
        counts: What each detector in use counted for it.
        reminder: The reminder it drew, if any.
        escalation: The escalation it caused, if any.
    """

    position: int
    call: Call
    streak: int
    counts: Mapping[Detector, int]
    reminder: Reminder | None
    escalation: Escalation | None


class Tally(NamedTuple):
    """What counting a turn found.

    Attributes:
        streaks: The streaks after the calls.
        reminders: The reminders due, in order.
        escalation: The loop to stop, if a count reached `escalate_after` (it replaces the
            turn's reminders).
        calls: How many tracked calls were counted.
        longest: The longest run of identical calls these reached, as `(tool, length)`.
        followups: For each reminder the model saw that was followed (by its next tracked
            call, or by the model answering without one), whether the model changed course.
        waiting: Whether the latest turn still waits for some of its results.
    """

    streaks: Streaks
    reminders: Sequence[Reminder] = ()
    escalation: Escalation | None = None
    calls: int = 0
    longest: tuple[str, int] | None = None
    followups: Sequence[bool] = ()
    waiting: bool = False


def result_text(result: object) -> str:
    """A tool result's text: the content string, or its text blocks joined."""
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        parts = [
            item if isinstance(item, str) else str(item.get("text", ""))
            for item in result
            if isinstance(item, (str, Mapping))
        ]
        return "\n".join(part for part in parts if part)
    return canonicalize(result)


def _result_digest(result: object) -> str:
    return digest(result if isinstance(result, str) else canonicalize(result))


def count_turn(
    streaks: Streaks,
    turn: str,
    calls: Sequence[Call],
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None = None,
    *,
    seen_by_model: bool = True,
    trace: list[CallTrace] | None = None,
) -> Tally:
    """Count a model turn's calls, in order, and return the reminders they draw.

    A turn already counted (`streaks.turn == turn`) counts nothing. Calls to untracked tools
    are transparent: they neither count nor break a streak.

    Args:
        streaks: The agent's streaks before these calls.
        turn: An identity of the model turn the calls belong to.
        calls: Every call of that turn, in the order the model made them.
        config: Thresholds, tracked tools, detectors and the other rules.
        policies: The policies tools declare about themselves, by tool name.
        seen_by_model: Whether the reminders will reach the model (they do not in observe
            mode, or without a node to deliver them): only those are followed up.
        trace: A list to which each tracked call's counts are appended, when given.

    Returns:
        The new streaks, the reminders or escalation due, and what was counted.

    Example:
        >>> config = ReminderConfig(thresholds=[2])
        >>> calls = [Call("a", "grep", {"q": 1}), Call("b", "grep", {"q": 1.0})]
        >>> tally = count_turn(Streaks(), "turn-1", calls, config)
        >>> tally.streaks.count, tally.reminders[0].summary
        (2, 'grep × 2')
    """
    if streaks.turn == turn:
        return Tally(streaks)
    hot = config.compiled
    if hot.plain and trace is None:
        return _count_repeats(
            streaks, turn, calls, config, policies, known=hot.rules, seen_by_model=seen_by_model
        )
    return _count_all(
        streaks, turn, calls, config, policies, seen_by_model=seen_by_model, trace=trace
    )


def _count_repeats(
    streaks: Streaks,
    turn: str,
    calls: Sequence[Call],
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None,
    *,
    known: Mapping[tuple[str, ToolPolicy | None], Rules | None],
    seen_by_model: bool,
) -> Tally:
    """`count_turn` for the original rule alone (the default): consecutive identical calls.

    The same rules as `_count_all` with only `repeat` in use and no escalation, in one loop:
    this runs for every model turn of every agent. `known` is the configuration's cache of
    resolved rules.
    """
    tool, key, count, result, reminded = streaks[1:6]
    reminders: list[Reminder] = []
    followups: list[bool] = []
    tracked = 0
    longest: tuple[str, int] | None = None
    for position, call in enumerate(calls):
        name = call.tool
        policy = policies.get(name) if policies else None
        rules = known.get((name, policy))
        if rules is None:
            rules = config.rules(name, policy)  # not resolved yet, or not counted
            if rules is None:
                continue
        tracked += 1
        text = canonicalize(rules.keyed(call.args) if rules.ignore else call.args)
        new_key = digest(text)
        same = name == tool and new_key == key
        if reminded:
            followups.append(not same)
        if rules.result_aware:
            outcome = "" if call.result is None else _result_digest(call.result)
            if same and result and outcome and outcome != result:
                same = False  # a new result of the same call is progress
            result = outcome
        else:
            result = ""
        count = count + 1 if same else 1
        tool, key = name, new_key
        if longest is None or count > longest[1]:
            longest = (name, count)
        level = rules.level(count) if count >= rules.thresholds[0] else None
        reminded = False
        if level is not None:
            reminders.append(
                Reminder(
                    name,
                    count,
                    level,
                    preview(text, config.arguments_preview_chars),
                    new_key,
                    position=position,
                )
            )
            reminded = seen_by_model
    # Built with tuple.__new__: a named tuple's own constructor is Python code.
    new = _make(
        Streaks,
        (turn, tool, key, count, result, reminded, *streaks[6:10], _NOTHING_SEEN, streaks[11]),
    )
    return _make(Tally, (new, reminders, None, tracked, longest, followups, False))


def _count_all(
    streaks: Streaks,
    turn: str,
    calls: Sequence[Call],
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None,
    *,
    seen_by_model: bool,
    trace: list[CallTrace] | None,
) -> Tally:
    """`count_turn` with every detector in use, escalation and tracing."""
    counting = _Counting(streaks, config)
    reminders: list[Reminder] = []
    followups: list[bool] = []
    escalation: Escalation | None = None
    tracked = 0
    longest: tuple[str, int] | None = None
    for position, call in enumerate(calls):
        rules = config.rules(call.tool, policies.get(call.tool) if policies else None)
        if rules is None:
            continue
        tracked += 1
        text = canonicalize(rules.keyed(call.args) if rules.ignore else call.args)
        key = digest(text)
        known = call.result is not None
        outcome = _result_digest(call.result) if known and counting.reads_results(rules) else ""
        followed, streak = counting.repeat(call.tool, key, outcome, rules.result_aware)
        if followed is not None:
            followups.append(followed)
        if longest is None or streak > longest[1]:
            longest = (call.tool, streak)
        counts: dict[Detector, int] = {"repeat": streak} if counting.repeat_on else {}
        error = counting.failure(call, key, counts) if known else ""
        if known:
            counting.stale(call.tool, key, outcome, counts)
        found = counting.escalation(counts, call, text, key, position=position)
        reminder = None
        if found is not None:
            escalation = escalation or found
        else:
            reminder = counting.reminder(
                counts, rules.level(streak), call, text, key, position=position
            )
            if reminder is not None and reminder.detector == "same_error":
                reminder = replace(
                    reminder,
                    error=preview(error, config.arguments_preview_chars),
                    variants=len(counting.variants),
                )
        if reminder is not None:
            reminders.append(reminder)
        counting.reminded = reminder is not None and seen_by_model
        if trace is not None:
            trace.append(CallTrace(position, call, streak, counts, reminder, found))
    new = counting.streaks(turn, escalations=streaks.escalations + (escalation is not None))
    if escalation is not None:
        return Tally(new, (), escalation, tracked, longest, followups)
    return Tally(new, reminders, None, tracked, longest, followups)


class _Counting:
    """An agent's streaks while one turn is counted, one detector per method."""

    __slots__ = (
        "count",
        "error",
        "errors_on",
        "failing",
        "failures",
        "hot",
        "key",
        "reminded",
        "repeat_on",
        "result",
        "seen",
        "stale_on",
        "tool",
        "variants",
    )

    def __init__(self, streaks: Streaks, config: ReminderConfig) -> None:
        hot = config.compiled
        self.hot = hot
        self.repeat_on, self.stale_on, self.errors_on = hot.repeat, hot.stale, hot.same_error
        self.tool, self.key, self.count = streaks.tool, streaks.digest, streaks.count
        self.result, self.reminded = streaks.result, streaks.reminded
        self.failing, self.error = streaks.failing, streaks.error
        self.failures, self.variants = streaks.failures, streaks.variants
        self.seen = dict(streaks.seen) if hot.stale else None

    def reads_results(self, rules: Rules) -> bool:
        return rules.result_aware or self.stale_on

    def repeat(
        self, tool: str, key: str, outcome: str, result_aware: bool
    ) -> tuple[bool | None, int]:
        """Count the call's run of identical calls.

        Also returns whether it followed a reminder up with a different call (None when no
        reminder came before it).
        """
        same = tool == self.tool and key == self.key
        followed = (not same) if self.reminded else None
        progressed = result_aware and bool(self.result) and bool(outcome) and outcome != self.result
        self.count = self.count + 1 if same and not progressed else 1
        self.tool, self.key, self.result = tool, key, outcome if result_aware else ""
        return followed, self.count

    def failure(self, call: Call, key: str, counts: dict[Detector, int]) -> str:
        """Count the call's failure streak; the error text, or "" when it did not fail."""
        if not self.errors_on:
            return ""
        text = result_text(call.result)
        pattern = self.hot.error_regex
        failed = call.error or (pattern is not None and pattern.search(text) is not None)
        if not failed:
            self.failing, self.error, self.failures, self.variants = "", "", 0, ()
            return ""
        error, short = digest(text), key[:8]
        if call.tool == self.failing and error == self.error:
            self.failures += 1
            if short not in self.variants and len(self.variants) < _VARIANTS:
                self.variants = (*self.variants, short)
        else:
            self.failing, self.error, self.failures, self.variants = call.tool, error, 1, (short,)
        counts["same_error"] = self.failures
        return text

    def stale(self, tool: str, key: str, outcome: str, counts: dict[Detector, int]) -> None:
        """Count how many times in a row this call returned this result."""
        if self.seen is None:
            return
        short_key, short_result = digest(f"{tool}\x00{key}")[:16], outcome[:16]
        before = self.seen.pop(short_key, None)
        times = 1
        if before is not None:
            _, result, count = before.split(":")  # as `from_dict` checked, or as written here
            if result == short_result:
                times = int(count) + 1
        self.seen[short_key] = f"{short_key}:{short_result}:{times}"
        if len(self.seen) > STALE_MEMORY:
            del self.seen[next(iter(self.seen))]
        counts["stale"] = times

    def reminder(
        self,
        counts: Mapping[Detector, int],
        repeat_level: Level | None,
        call: Call,
        text: str,
        key: str,
        *,
        position: int,
    ) -> Reminder | None:
        """The one reminder a call draws: `repeat` first, then `same_error`, then `stale`."""
        hot = self.hot
        for detector, count in counts.items():
            if detector == "repeat":
                level = repeat_level
            elif detector == "same_error":
                level = level_at(count, hot.same_error_thresholds)
            else:
                level = level_at(count, hot.stale_thresholds)
            if level is not None:
                arguments = preview(text, hot.preview)
                return Reminder(
                    call.tool, count, level, arguments, key, detector, position=position
                )
        return None

    def escalation(
        self,
        counts: Mapping[Detector, int],
        call: Call,
        text: str,
        key: str,
        *,
        position: int,
    ) -> Escalation | None:
        """The escalation a count at or past `escalate_after` calls for, if any."""
        hot = self.hot
        limit = hot.limit
        if limit is None:
            return None
        blocking = hot.blocking
        for detector, count in counts.items():
            # A run that is stopped stops at the limit; a blocked call is refused at the limit
            # and after. It is refused before it runs, when only the repeat count is known: a
            # stale or failure count depends on a result, so those detectors keep reminding.
            due = (detector == "repeat" and count >= limit) if blocking else count == limit
            if due:
                arguments = preview(text, hot.preview)
                return Escalation(
                    call.tool, count, detector, arguments, hot.exit_behavior, key, position
                )
        return None

    def streaks(self, turn: str, *, escalations: int) -> Streaks:
        seen = self.seen
        return Streaks(
            turn=turn,
            tool=self.tool,
            digest=self.key,
            count=self.count,
            result=self.result,
            reminded=self.reminded,
            failing=self.failing,
            error=self.error,
            failures=self.failures,
            variants=self.variants,
            seen=_NOTHING_SEEN if seen is None else seen,
            escalations=escalations,
        )
