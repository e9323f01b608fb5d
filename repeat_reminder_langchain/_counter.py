"""Counting: one agent's record, advanced one model turn at a time. Nothing here knows LangChain.

A `ReminderConfig` is compiled once into a `Counter`: each tool's rules are resolved the first
time the tool is seen, thresholds become level tables, and each opt-in detector (`same_error`,
`stale`) is a step the loop runs only when it is on, so a turn under the defaults runs the
repeat rule alone. One loop counts every configuration; a tracing observer (`transcript`,
`audit`) watches it call by call without changing what it does.

All the counter remembers of an agent is its `Record`, a flat mapping a face keeps where it
keeps things (a state field, the handler's memory) and hands back on the next turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple, TypedDict

from .canonical import canonicalize, digest
from .config import ReminderConfig
from .policy import Levels, Rules, ToolPolicy
from .reminder import Detector, Escalation, Reminder, preview

__all__ = [
    "NOTHING",
    "STALE_MEMORY",
    "Call",
    "CallTrace",
    "Count",
    "Counter",
    "Record",
    "RecordError",
    "Turn",
    "read_record",
    "result_text",
]

STALE_MEMORY = 64
"""How many distinct calls an agent's `stale` detector remembers; the least recent goes first."""

_VARIANTS = 16  # argument sets remembered for a failure streak, to say how many there were
_RULES_LIMIT = 1024  # tool names come from the model: keep the resolved rules bounded


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


class Turn(NamedTuple):
    """What happened in a conversation since the turn counted last, as a face read it.

    Attributes:
        id: The latest model turn with tool calls; "" when there is none, or it was counted.
        calls: That turn's calls, in the order the model made them, with their results.
        answered: Whether the model answered without a call since the turn counted last.
        spoke_before: Whether the user spoke between the turn before and this one.
        spoke_after: Whether the user spoke after this turn (or, with no turn, at all).
        waiting: Whether some calls of this turn still wait for their results.
    """

    id: str = ""
    calls: Sequence[Call] = ()
    answered: bool = False
    spoke_before: bool = False
    spoke_after: bool = False
    waiting: bool = False


NOTHING = Turn()
"""Nothing happened since the turn counted last: no turn to count, nobody spoke."""


class Record(TypedDict, total=False):
    """All the guard remembers about one agent, as kept in a checkpoint. Every field optional.

    Attributes:
        turn: The model turn whose calls were counted last.
        tool: The last tracked call's tool ("" before any).
        key: The fingerprint of that call's canonical arguments.
        count: How many times in a row that call was made.
        result: The fingerprint of that call's result, where results are progress.
        reminded: Whether that call drew a reminder the model saw (so the next call, or the
            model answering, tells whether it changed course).
        failing: The tool of the current failure streak (`same_error`).
        error: The fingerprint of that streak's error text.
        failures: How many tracked calls in a row failed with it.
        variants: Short fingerprints of the argument sets that hit it.
        seen: For `stale`, the latest distinct calls, oldest first: each call's fingerprint
            maps to `result:times:changes`, the fingerprint of its latest result, how many
            times in a row it returned that, and `changes` when it last did.
        changes: For `stale`, how many times a remembered call returned something new.
        system: Whether reminders were stored as system messages that a model may have to be
            sent as user turns (kept by the middleware).
    """

    turn: str
    tool: str
    key: str
    count: int
    result: str
    reminded: bool
    failing: str
    error: str
    failures: int
    variants: list[str]
    seen: dict[str, str]
    changes: int
    system: bool


class RecordError(ValueError):
    """A stored record that is not what the guard writes; the count starts over."""


_TYPES: dict[str, type] = {
    "turn": str,
    "tool": str,
    "key": str,
    "count": int,
    "result": str,
    "reminded": bool,
    "failing": str,
    "error": str,
    "failures": int,
    "variants": list,
    "seen": dict,
    "changes": int,
    "system": bool,
}


def read_record(data: object) -> Record:
    """The record a face stored, checked field by field (a field it does not know is left as is).

    Raises:
        RecordError: `data` is not what the guard writes, naming the field.
    """
    if type(data) is not dict:
        if not isinstance(data, Mapping):
            raise RecordError(f"a stored record must be a mapping, got {type(data).__name__}")
        data = dict(data)
    for name, value in data.items():
        kind = _TYPES.get(name)
        if kind is not None and type(value) is not kind:
            raise RecordError(f"stored {name} must be a {kind.__name__}, got {value!r}")
    if data.get("count", 0) < 0 or data.get("failures", 0) < 0 or data.get("changes", 0) < 0:
        raise RecordError(f"stored counts must be whole numbers from zero, got {data!r}")
    variants = data.get("variants")
    if variants and not all(type(item) is str for item in variants):
        raise RecordError(f"stored variants must be a list of strings, got {variants!r}")
    return data  # type: ignore[return-value]


class CallTrace(NamedTuple):
    """What counting found for one tracked call, as a tracing observer sees it.

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


class Count(NamedTuple):
    """What counting a turn found.

    Attributes:
        record: The record to keep; None when it did not change.
        reminders: The reminders due, in order.
        escalation: The loop to stop, if a count reached `escalate_after` (it replaces the
            turn's reminders).
        calls: How many tracked calls were counted.
        longest: The longest run of identical calls these reached, as `(tool, length)`.
        followups: For each reminder the model saw that was followed (by its next tracked
            call, or by the model answering without one), whether the model changed course.
    """

    record: Record | None
    reminders: Sequence[Reminder] = ()
    escalation: Escalation | None = None
    calls: int = 0
    longest: tuple[str, int] | None = None
    followups: Sequence[bool] = ()


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


class _Memory:
    """The detectors' part of a record while one turn is counted."""

    __slots__ = ("changes", "error", "failing", "failures", "seen", "variants")

    def __init__(self, record: Record, stale: bool) -> None:
        self.failing = record.get("failing", "")
        self.error = record.get("error", "")
        self.failures = record.get("failures", 0)
        self.variants = record.get("variants", [])
        self.seen = dict(record.get("seen", {})) if stale else None
        self.changes = record.get("changes", 0)

    def store(self, record: Record) -> None:
        if self.failing:
            record["failing"], record["error"] = self.failing, self.error
            record["failures"], record["variants"] = self.failures, self.variants
        elif "failing" in record:  # the streak ended: nothing of it is kept
            for name in ("failing", "error", "failures", "variants"):
                record.pop(name, None)  # type: ignore[misc]
        if self.seen is not None:
            record["seen"] = self.seen
            if self.changes:
                record["changes"] = self.changes


Observer = Callable[[CallTrace], object]


def _text_test(not_user: str | Callable[[str], bool] | None) -> Callable[[str], bool] | None:
    """`ReminderConfig.not_user` as a test of a message's text."""
    if isinstance(not_user, str):
        return re.compile(not_user).search  # type: ignore[return-value]
    return not_user


# A named tuple built without its Python-level constructor: this runs on every turn.
_make = tuple.__new__


class Counter:
    """A configuration compiled for counting: call `count` once per finished model turn.

    Example:
        >>> counter = Counter(ReminderConfig(thresholds=[2]))
        >>> turn = Turn("turn-1", (Call("a", "grep", {"q": 1}), Call("b", "grep", {"q": 1.0})))
        >>> found = counter.count({}, turn)
        >>> found.record["count"], found.reminders[0].summary
        (2, 'grep × 2')
    """

    __slots__ = (
        "_errors",
        "_kept",
        "_limit",
        "_pattern",
        "_preview",
        "_repeat",
        "_rules",
        "_stale",
        "blocking",
        "config",
        "not_user",
    )

    def __init__(self, config: ReminderConfig) -> None:
        self.config = config
        detect = config.detect
        self._repeat = "repeat" in detect
        # The opt-in detectors' level tables: None when a detector is off.
        self._errors = Levels.of(config.same_error_thresholds) if "same_error" in detect else None
        self._stale = Levels.of(config.stale_thresholds) if "stale" in detect else None
        pattern = config.error_pattern
        self._pattern = None if pattern is None else re.compile(pattern)
        self._limit = config.escalate_after
        self.blocking = self._limit is not None and config.exit_behavior == "block"
        self._preview = config.arguments_preview_chars
        self._rules: dict[str, tuple[ToolPolicy | None, Rules | None]] = {}
        failure = ("failing", "error", "failures", "variants") if self._errors is not None else ()
        self._kept = ("turn", "system", *failure)  # what a new user message leaves in place
        self.not_user = _text_test(config.not_user)

    def rules(self, tool: str, policy: ToolPolicy | None = None) -> Rules | None:
        """`ReminderConfig.rules`, resolved once per tool and policy."""
        known = self._rules.get(tool)
        if known is not None and known[0] is policy:
            return known[1]
        if len(self._rules) >= _RULES_LIMIT:
            self._rules.clear()
        rules = self.config.rules(tool, policy)
        self._rules[tool] = (policy, rules)
        return rules

    def reset(self, record: Record) -> Record:
        """The record after a new user message: no run of calls, nothing stale.

        The turn stays counted, and a failure streak goes on: a call that fails the same way
        after every user message is still a loop.
        """
        return {name: record[name] for name in self._kept if name in record}  # type: ignore[literal-required,return-value]

    def count(  # noqa: PLR0912, PLR0915 - one frame for the loop that runs for every call
        self,
        record: Record,
        turn: Turn,
        policies: Mapping[str, ToolPolicy] | None = None,
        *,
        sees: bool = True,
        observe: Observer | None = None,
    ) -> Count:
        """Count a turn's calls, in order, and return the reminders they draw.

        Calls to untracked tools are transparent: they neither count nor break a streak. A
        user message before the turn resets the record first; one after it resets it after,
        and then nothing is due: the user has spoken since. A model that answered without a
        call after a reminder it saw has recovered.

        Args:
            record: The agent's record before the turn.
            turn: What happened since the turn counted last.
            policies: The policies tools declare about themselves, by tool name.
            sees: Whether the reminders will reach the model (they do not in observe mode,
                or without a node to deliver them): only those are followed up.
            observe: Called with each tracked call's counts, when given.
        """
        reminded = record.get("reminded", False)
        followups: Sequence[bool] = ()
        if turn.answered and reminded:
            followups = [True]
            reminded = False
            record = {**record, "reminded": False}
        if turn.waiting or not turn.id:
            kept = self.reset(record) if turn.spoke_after else record
            changed = bool(followups) or kept != record
            return Count(kept if changed else None, followups=followups)
        if turn.spoke_before:
            record = self.reset(record)
            reminded = False
        tool = record.get("tool", "")
        key = record.get("key", "")
        run = carried = record.get("count", 0)
        result = record.get("result", "")
        stale, limit = self._stale, self._limit
        memory = (
            None if self._errors is None and stale is None else _Memory(record, stale is not None)
        )
        due = not turn.spoke_after  # the user spoke after the calls: nothing they drew is due
        # Most turns draw nothing and follow nothing up: no list is made for them.
        reminders: Sequence[Reminder] = ()
        escalation: Escalation | None = None
        tracked = 0
        longest: tuple[str, int] | None = None
        for position, call in enumerate(turn.calls):
            name = call.tool
            rules = self.rules(name, policies.get(name) if policies else None)
            if rules is None:
                continue
            tracked += 1
            text = canonicalize(rules.keyed(call.args) if rules.ignore else call.args)
            new_key = digest(text)
            same = name == tool and new_key == key
            if reminded:
                followups = [*followups, not same]
            outcome = ""
            if call.result is not None and (rules.result_aware or stale is not None):
                outcome = _result_digest(call.result)
            if rules.result_aware:
                if same and result and outcome and outcome != result:
                    same = False  # a new result of the same call is progress
                result = outcome
            else:
                result = ""
            run = run + 1 if same else 1
            tool, key = name, new_key
            if longest is None or run > longest[1]:
                longest = (name, run)
            reminder = stopped = None
            # Nothing is due below the first threshold unless another detector or a limit may
            # call for something: most calls under the defaults need nothing more.
            wanted = memory is not None or limit is not None or run >= rules.thresholds[0]
            if wanted or observe is not None:
                # What each detector in use counted, in the order they take precedence.
                counts: dict[Detector, int] = {"repeat": run} if self._repeat else {}
                error = (
                    "" if memory is None else self._detect(memory, call, new_key, outcome, counts)
                )
                if due and wanted:
                    if limit is not None:
                        stopped = self._escalation(counts, call, text, new_key, position)
                        # A refused call (the streak the turn started with was at the limit
                        # already) sent again, after the model read its refusal: a model that
                        # does not listen is ended, not refused until the recursion limit.
                        refused = self.blocking and carried >= limit
                        if refused and stopped is not None and run == carried + tracked:
                            stopped = replace(stopped, behavior="end")
                        escalation = _reached(escalation, call, new_key, counts) or stopped
                    if stopped is None:
                        reminder = self._reminder(
                            counts,
                            rules,
                            call,
                            text,
                            key=new_key,
                            position=position,
                            error=error,
                            memory=memory,
                        )
                        if reminder is not None:
                            reminders = [*reminders, reminder]
                if observe is not None:
                    observe(CallTrace(position, call, run, counts, reminder, stopped))
            reminded = sees and reminder is not None
        new: Record = {
            **record,
            "turn": turn.id,
            "tool": tool,
            "key": key,
            "count": run,
            "result": result,
            "reminded": reminded,
        }
        if memory is not None:
            memory.store(new)
        if not due:
            new = self.reset(new)
        if escalation is not None:
            return Count(new, (), escalation, tracked, longest, followups)
        return _make(Count, (new, reminders, None, tracked, longest, followups))

    def predict(
        self,
        record: Record,
        turn: Turn,
        position: int,
        policies: Mapping[str, ToolPolicy] | None = None,
    ) -> Escalation | None:
        """The escalation the call at `position` of a turn still running would cause, if any.

        Used before the call runs, so results are unknown: only the `repeat` count is known.
        """
        found: list[CallTrace] = []
        ahead = turn._replace(calls=turn.calls[: position + 1], spoke_after=False, waiting=False)
        self.count(record, ahead, policies, observe=found.append)
        last = found[-1] if found else None
        return last.escalation if last is not None and last.position == position else None

    # -- the detectors' steps -----------------------------------------------------------------

    def _detect(
        self, memory: _Memory, call: Call, key: str, outcome: str, counts: dict[Detector, int]
    ) -> str:
        """Run the opt-in detectors on a call; the error text it failed with, or ""."""
        if call.result is None:
            return ""  # a call whose result is unknown tells them nothing
        text = result_text(call.result)
        error = "" if self._errors is None else self._failure(memory, call, text, key, counts)
        # An empty result is no evidence that nothing changed (a write says nothing).
        if self._stale is not None and text.strip():
            counts["stale"] = self._unchanged(memory, call.tool, key, outcome)
        return error

    def _failure(
        self, memory: _Memory, call: Call, text: str, key: str, counts: dict[Detector, int]
    ) -> str:
        """Count the call's failure streak; the error text, or "" when it did not fail."""
        pattern = self._pattern
        if not (call.error or (pattern is not None and pattern.search(text) is not None)):
            memory.failing, memory.error, memory.failures, memory.variants = "", "", 0, []
            return ""
        error, short = digest(text), key[:8]
        if call.tool == memory.failing and error == memory.error:
            memory.failures += 1
            if short not in memory.variants and len(memory.variants) < _VARIANTS:
                memory.variants = [*memory.variants, short]
        else:
            memory.failing, memory.error, memory.failures, memory.variants = (
                call.tool,
                error,
                1,
                [short],
            )
        counts["same_error"] = memory.failures
        return text

    def _unchanged(self, memory: _Memory, tool: str, key: str, outcome: str) -> int:
        """How many times in a row this call returned this result."""
        seen: dict[str, str] = memory.seen  # type: ignore[assignment]
        call, result = digest(f"{tool}\x00{key}")[:16], outcome[:16]
        before = seen.pop(call, None)
        times, since = 1, str(memory.changes)
        if type(before) is str:  # an entry that reads otherwise was not written here: not seen
            last, _, rest = before.partition(":")
            number, _, then = rest.partition(":")
            if last != result:
                # The agent saw something change: anything it read before may read otherwise
                # now, so reading it again is a check, not a loop, and every count starts over.
                memory.changes += 1
                since = str(memory.changes)
            elif number.isdigit() and then == since:
                times = int(number) + 1
        if times > 1:
            # A result other calls return too ("Updated 1 path from the index", a shell's
            # empty output) acknowledges a command: it is no evidence that nothing changed.
            prefix = result + ":"
            if any(type(entry) is str and entry.startswith(prefix) for entry in seen.values()):
                times = 1
        seen[call] = f"{result}:{times}:{since}"
        if len(seen) > STALE_MEMORY:
            del seen[next(iter(seen))]
        return times

    def _reminder(
        self,
        counts: Mapping[Detector, int],
        rules: Rules,
        call: Call,
        text: str,
        *,
        key: str,
        position: int,
        error: str,
        memory: _Memory | None,
    ) -> Reminder | None:
        """The one reminder a call draws: `repeat` first, then `same_error`, then `stale`."""
        for detector, number in counts.items():
            if detector == "repeat":
                level = rules.level(number)
            elif detector == "same_error":
                level = self._errors.at(number)  # type: ignore[union-attr]
            else:
                level = self._stale.at(number)  # type: ignore[union-attr]
            if level is None:
                continue
            arguments = preview(text, self._preview)
            if detector != "same_error":
                return Reminder(
                    call.tool, number, level, arguments, key, detector, position=position
                )
            return Reminder(
                call.tool,
                number,
                level,
                arguments,
                key,
                detector,
                error=preview(error, self._preview),
                variants=len(memory.variants),  # type: ignore[union-attr]
                position=position,
            )
        return None

    def _escalation(
        self, counts: Mapping[Detector, int], call: Call, text: str, key: str, position: int
    ) -> Escalation | None:
        """The escalation a count at or past `escalate_after` calls for, if any."""
        limit: int = self._limit  # type: ignore[assignment]
        for detector, number in counts.items():
            # A run that is stopped stops at the limit; a blocked call is refused at the limit
            # and after. It is refused before it runs, when only the repeat count is known: a
            # stale or failure count depends on a result, so those detectors keep reminding.
            if self.blocking:
                if detector != "repeat" or number < limit:
                    continue
            elif number != limit:
                continue
            arguments = preview(text, self._preview)
            behavior = self.config.exit_behavior
            return Escalation(
                call.tool, number, detector, arguments, behavior, key, position, limit
            )
        return None


def _reached(
    escalation: Escalation | None, call: Call, key: str, counts: Mapping[Detector, int]
) -> Escalation | None:
    """The escalation of a turn, with the count its loop reached by this call.

    Calls of the same turn after the one that reached the limit go on with its loop (a batch
    of identical calls runs whole): what stops it says the count they reached.
    """
    if escalation is None or call.tool != escalation.tool:
        return escalation
    number = counts.get(escalation.detector, 0)
    same = escalation.detector == "same_error" or key == escalation.digest
    if same and number == escalation.count + 1:
        return replace(escalation, count=number)
    return escalation
