"""Counting: one agent's record, advanced one model turn at a time. Nothing here knows LangChain.

A `ReminderConfig` is compiled once into a `LoopCounter`: each tool's rules are resolved the first
time the tool is seen, and each detector in use (`repeat_reminder_langchain._detectors`) is
built with its level table, so a turn under the defaults runs the repeat rule alone. One loop
counts every configuration and names no detector; a tracing observer (`transcript`, `audit`)
watches it call by call without changing what it does.

All the counter remembers of an agent is its `Record` (`_record`): the run of identical calls,
and each detector's memory under its name. A face keeps it where it keeps things (a state
field, the handler's memory) and hands it back on the next turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, NamedTuple

from ._arguments import ToolSchemas
from ._canonical import canonicalize, digest, result_text
from ._config import ReminderConfig
from ._detectors import DETECTORS, Detector, Seen
from ._exits import EXITS
from ._normalise import Normalise
from ._policy import Levels, Rules, ToolPolicy
from ._record import Record, answer_requested, counted, followed_up, lasting, with_memories
from ._reminder import Escalation, Reminder, preview

__all__ = [
    "NOTHING",
    "Call",
    "CallTrace",
    "Count",
    "LoopCounter",
    "Turn",
]

_RULES_LIMIT = 1024  # tool names come from the model: keep the resolved rules bounded


class Call(NamedTuple):
    """One tool call a model made.

    Attributes:
        id: The call's id (`tool_call_id`), as the model wrote it (possibly shared, or empty).
        tool: The tool's name, as the model wrote it (it may name no real tool).
        args: The arguments as the model sent them.
        result: What the call returned (a tool message's content); None when unknown.
        failed: Whether the result was marked as an error (`status="error"`).
    """

    id: str
    tool: str
    args: object
    result: object = None
    failed: bool = False

    @property
    def text(self) -> str:
        """The result's text, as the detectors read it (`"null"` when unknown)."""
        return result_text(self.result)


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


class CallTrace(NamedTuple):
    """What counting found for one tracked call, as a tracing observer sees it.

    Attributes:
        position: The call's position among its turn's calls.
        call: The call.
        streak: The run of identical calls it reached.
        counts: What each detector in use counted for it.
        reminder: The reminder it drew, if any.
        escalation: The escalation it caused, if any.
        failed: Whether the detectors took its result for a failure (`status="error"`, or
            `error_pattern` where a detector in use reads results).
    """

    position: int
    call: Call
    streak: int
    counts: Mapping[str, int]
    reminder: Reminder | None
    escalation: Escalation | None
    failed: bool = False


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


def _read(result: object, normalise: Normalise | None) -> tuple[str, str, str]:
    """A result's text, that text as compared (normalised), and the result's fingerprint.

    The fingerprint is of the content string, or else of the canonical content, normalised:
    a result without anything to set aside keeps the fingerprint it always had.
    """
    text = result_text(result)
    compared = text if normalise is None else normalise(text)
    if not isinstance(result, list):  # its text is the string, or the canonical content
        return text, compared, digest(compared)
    whole = canonicalize(result)  # the blocks whole: an image is not set aside with them
    return text, compared, digest(whole if normalise is None else normalise(whole))


_UNREAD = ("", "", "")  # a result not read: unknown, or read by nothing in use

Observer = Callable[[CallTrace], object]
_InUse = list[tuple[Detector, "Levels | None", Any]]  # each detector in use, with its memory
_Found = list[tuple[Detector, "Levels | None", Any, int]]  # and what it counted for a call


class LoopCounter:
    """A configuration compiled for counting: call `count` once per finished model turn.

    Example:
        >>> counter = LoopCounter(ReminderConfig(thresholds=[2]))
        >>> turn = Turn("turn-1", (Call("a", "grep", {"q": 1}), Call("b", "grep", {"q": 1.0})))
        >>> found = counter.count({}, turn)
        >>> found.record["count"], found.reminders[0].summary
        (2, 'grep × 2')
    """

    __slots__ = (
        "_by_run",
        "_cut",
        "_exit",
        "_failure",
        "_failures_only",
        "_in_use",
        "_limit",
        "_reads",
        "_remembering",
        "_reporting",
        "_rules",
        "_stateful",
        "config",
    )

    def __init__(self, config: ReminderConfig) -> None:
        self.config = config
        # The detectors in use, in precedence order, each with its level table (None: the
        # tool's own rules) and no memory yet (`_start` gives each its memory of an agent).
        self._in_use: _InUse = [
            (detector(settings), _levels(settings), None)
            for name, detector in DETECTORS.items()
            if name in config.detect
            for settings in (config.detector_settings(name),)
        ]
        detectors = [detector for detector, _, _ in self._in_use]
        # Under the defaults (`repeat` alone) no detector reads a result or keeps memory.
        self._stateful = any(detector.memory is not None for detector in detectors)
        # Whether the detectors without a memory count the run of identical calls (`by_run`):
        # then a call whose run is below the first threshold and the limit draws nothing from
        # them, and is shown to no detector unless one that keeps a memory must see it.
        self._by_run = all(detector.by_run for detector in detectors if detector.memory is None)
        # Whether a detector reads results: then each call's is read once, for every detector, and
        # judged a failure or not (`error_pattern`).
        self._reads = any(detector.reads != "calls" for detector in detectors)
        pattern = config.error_pattern
        self._failure = re.compile(pattern) if pattern is not None else None
        self._limit = config.escalate_after
        self._exit = EXITS[config.exit_behavior]  # what a count at the limit calls for
        # Text cut to the preview cap (arguments, an error): bound once, called where needed.
        self._cut: Callable[[str], str] = partial(preview, limit=config.arguments_preview_chars)
        self._rules: dict[str, tuple[ToolPolicy | None, Rules | None]] = {}
        # The detectors asked what of their memory a new user message leaves in place.
        self._remembering = tuple(detector for detector in detectors if detector.memory is not None)
        # Whether each of them reads failures alone: with nothing remembered of an agent, none
        # has a memory until a call fails (`_start`).
        self._failures_only = all(detector.reads == "failures" for detector in self._remembering)
        # The detectors that count and report, and neither remind nor escalate (`remind` False).
        self._reporting = frozenset(
            detector.name for detector in detectors if not detector.options.remind
        )

    @property
    def remembers(self) -> bool:
        """Whether a detector in use remembers something of an agent, which a user may not end."""
        return bool(self._remembering)

    def failed(self, marked: bool, text: str) -> bool:
        """Whether a call failed: its result marked as an error, or its text `error_pattern`'s."""
        failure = self._failure
        return marked or (failure is not None and failure.search(text) is not None)

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

        The turn stays counted, and each detector keeps what it says of its memory
        (`Detector.after_user`): a call that fails the same way after every user message is still
        a loop.
        """
        memories = record.get("detectors", {})
        return lasting(
            record,
            {
                detector.name: left
                for detector in self._remembering
                if detector.name in memories
                and (left := detector.after_user(memories[detector.name]))
            },
        )

    def count(
        self,
        record: Record,
        turn: Turn,
        policies: Mapping[str, ToolPolicy] | None = None,
        *,
        schemas: ToolSchemas | None = None,
        reminders_reach_model: bool = True,
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
            schemas: How the tools read their arguments (`ToolSchemas`): each call's are read
                so where it is keyed. None: as they were sent.
            reminders_reach_model: Whether the reminders will reach the model (they do not in
                observe mode, or without a node to deliver them): only those are followed up.
            observe: Called with each tracked call's counts, when given.
        """
        reminded = record.get("reminded", False)
        followups: Sequence[bool] = ()
        if turn.answered and reminded:
            followups = [True]
            reminded = False
            record = followed_up(record)
        if turn.waiting or not turn.id:
            kept = self.reset(record) if turn.spoke_after else record
            changed = bool(followups) or kept != record
            return Count(kept if changed else None, followups=followups)
        if turn.spoke_before:
            record = self.reset(record)
            reminded = False
        found = self._calls(
            record,
            turn,
            policies,
            schemas or None,
            reminded=reminded,
            followups=followups,
            reminders_reach_model=reminders_reach_model,
            observe=observe,
        )
        loop = answer_requested(record) if "finishing" in record else None  # most turns: not asked
        if loop and found.escalation is None and turn.calls and not turn.spoke_after:
            # Asked for its answer with no tool to call, the model called one all the same (a
            # provider that ignored that, or a face that cannot hold them back): it ends.
            stopped = self._called_anyway(
                turn.calls[0],
                loop,
                found.record["count"],  # type: ignore[index]
                policies,
                schemas,
            )
            return found._replace(reminders=(), escalation=stopped)
        return found

    def _calls(
        self,
        record: Record,
        turn: Turn,
        policies: Mapping[str, ToolPolicy] | None,
        schemas: ToolSchemas | None,
        *,
        reminded: bool,
        followups: Sequence[bool],
        reminders_reach_model: bool,
        observe: Observer | None,
    ) -> Count:
        """`count`'s loop: each tracked call keyed, its streak, what each detector counted."""
        tool, key, result = record.get("tool", ""), record.get("key", ""), record.get("result", "")
        run = carried = record.get("count", 0)
        in_use, remembers = self._start(record)
        # The user spoke after the calls: nothing they drew is due.
        unanswered = not turn.spoke_after
        # Most turns draw nothing and follow nothing up: no list is made for them.
        reminders: Sequence[Reminder] = ()
        escalation: Escalation | None = None
        tracked = 0
        longest: tuple[str, int] | None = None
        # The model read the last turn's reminders: its first tracked call now says whether it
        # changed course (a later call of that turn was made before it read them).
        followed = reminded
        for position, call in enumerate(turn.calls):
            name = call.tool
            rules = self.rules(name, policies.get(name) if policies else None)
            if rules is None:
                continue
            tracked += 1
            args = call.args if schemas is None else schemas.read(name, call.args)
            arguments = canonicalize(rules.keyed(args) if rules.ignore else args)
            new_key = digest(arguments)
            same = name == tool and new_key == key
            if followed:
                followups, followed = [*followups, not same], False
            same, result, read = self._progress(rules, call, same, result)
            run = run + 1 if same else 1
            tool, key = name, new_key
            if longest is None or run > longest[1]:
                longest = (name, run)
            reminder = stopped = None
            failed = self.failed(call.failed, read[0])
            # The detectors are shown a call that may draw something: its run at a threshold
            # or at the limit, a detector with a memory of the agent (a success makes it
            # forget), a failure (one that reads failures starts its memory). Most calls draw
            # nothing and are shown to none.
            may_be_due = (
                not self._by_run
                or run >= rules.thresholds[0]
                or (self._limit is not None and run >= self._limit)
                or remembers
                or (failed and call.result is not None and self._stateful)
            )
            if may_be_due or observe is not None:
                found, started = self._detect(in_use, call, new_key, run, read, arguments, failed)
                remembers = remembers or started  # a failure started a detector's memory
                if unanswered and may_be_due:
                    # The streak the turn started with was at the limit, and every call since
                    # went on with it: the model read what the limit drew, and insisted.
                    insisted = carried >= (self._limit or 0) and run == carried + tracked
                    stopped = self._escalation(found, call, arguments, new_key, position, insisted)
                    escalation = _reached(escalation, call, found) or stopped
                    if stopped is None:
                        reminder = self._reminder(
                            found, rules, call, arguments, key=new_key, position=position
                        )
                    if reminder is not None or reminders:
                        reminders = _reached_by(reminders, reminder, call, found, self._cut)
                if observe is not None:
                    counts = {detector.name: number for detector, _, _, number in found}
                    observe(CallTrace(position, call, run, counts, reminder, stopped, failed))
        reminded = bool(reminders) and (  # most turns: none, and no generator made for them
            reminders_reach_model and escalation is None and any(r.reminds for r in reminders)
        )
        new = counted(record, turn.id, tool, key, run, result, reminded)
        if remembers:  # most turns: no detector in use remembers anything, nothing to keep
            _keep(in_use, new)
        if not unanswered:
            new = self.reset(new)
        if escalation is not None:
            return Count(new, (), escalation, tracked, longest, followups)
        return Count(new, reminders, None, tracked, longest, followups)

    def _start(self, record: Record) -> tuple[_InUse, bool]:
        """The detectors in use, with what they remember of the agent, for one turn.

        The same every turn when none remembers anything (`repeat` alone; never changed then).
        A detector that reads failures and remembers nothing of the agent gets its memory at
        the first failure (`_detect`): most turns succeed, and a success tells it nothing.
        Also whether one has a memory, which then sees every call.
        """
        if not self._stateful:
            return self._in_use, False
        memories = record.get("detectors")
        if not memories and self._failures_only:
            return self._in_use.copy(), False  # most turns: nothing remembered, nothing failed
        memories = memories or {}
        in_use = [
            (
                detector,
                levels,
                None
                if detector.reads == "failures" and detector.name not in memories
                else detector.start(memories.get(detector.name, {})),
            )
            for detector, levels, _ in self._in_use
        ]
        return in_use, any(kept is not None for _, _, kept in in_use)

    def _progress(
        self, rules: Rules, call: Call, same: bool, result: str
    ) -> tuple[bool, str, tuple[str, str, str]]:
        """Whether the call still repeats, the result kept, and the call's result as read.

        The result is read (`_read`) where a detector in use reads results, or results are
        progress (`result_aware`): then the same call with a new result starts a new run. The
        result as read is the detectors' (unread, `_UNREAD`, when none reads results).
        """
        read = _UNREAD
        if call.result is not None and (rules.result_aware or self._reads):
            read = _read(call.result, rules.normalise)
        if not rules.result_aware:
            return same, "", read
        outcome = read[2]
        if same and result and outcome and outcome != result:
            same = False  # a new result of the same call is progress
        return same, outcome, read if self._reads else _UNREAD

    def predict(
        self,
        record: Record,
        turn: Turn,
        position: int,
        policies: Mapping[str, ToolPolicy] | None = None,
        schemas: ToolSchemas | None = None,
    ) -> Escalation | None:
        """The escalation the call at `position` of a turn still running would cause, if any.

        Used before the call runs, so results are unknown: only the `repeat` count is known.
        """
        found: list[CallTrace] = []
        ahead = turn._replace(calls=turn.calls[: position + 1], spoke_after=False, waiting=False)
        self.count(record, ahead, policies, schemas=schemas, observe=found.append)
        last = found[-1] if found else None
        return last.escalation if last is not None and last.position == position else None

    # -- the detectors ------------------------------------------------------------------------

    def _detect(  # noqa: PLR0917 - one call's facts, as the loop has them
        self,
        in_use: _InUse,
        call: Call,
        key: str,
        run: int,
        read: tuple[str, str, str],
        arguments: str,
        failed: bool,
    ) -> tuple[_Found, bool]:
        """What each detector in use counted for a call, by precedence (`failed`: the call's).

        Also whether the call started a detector's memory of the agent.
        """
        result = call.result
        text, compared, outcome = read
        seen = Seen(call.tool, key, run, result, failed, text, outcome, arguments, compared)
        found = []
        started = False
        for index, (detector, levels, kept) in enumerate(in_use):
            if result is None and detector.reads != "calls":
                continue  # a call whose result is unknown tells it nothing
            memory = kept
            if kept is None and detector.memory is not None:  # it remembers nothing (`_start`)
                if not failed:
                    continue
                memory = detector.start({})
                in_use[index] = (detector, levels, memory)
                started = True
            number = detector.see(memory, seen)
            if number is not None:
                found.append((detector, levels, memory, number))
        return found, started

    def _reminder(
        self, found: _Found, rules: Rules, call: Call, arguments: str, *, key: str, position: int
    ) -> Reminder | None:
        """The one reminder a call draws: that of the first detector, by precedence, due one.

        A detector that only reports gives way to any that reminds.
        """
        reported = None
        for detector, levels, memory, number in found:
            level = (rules.levels if levels is None else levels)[number]
            if level is None:
                continue
            reminder = Reminder(
                call.tool,
                number,
                level,
                self._cut(arguments),
                key,
                detector.name,
                position=position,
                # Details come from what a detector remembers: one that keeps nothing has none.
                details=detector.details(memory, self._cut) if detector.memory is not None else {},
                reminds=detector.name not in self._reporting,
            )
            if reminder.reminds:
                return reminder
            reported = reported or reminder
        return reported

    def _escalation(  # noqa: PLR0917 - called for each call that may be due something
        self, found: _Found, call: Call, arguments: str, key: str, position: int, insisted: bool
    ) -> Escalation | None:
        """The escalation a count at or past `escalate_after` calls for, if any.

        Whether a count calls for one, and which, is the exit's to say (`Exit.due`).
        `insisted`: the model went on with a loop that was at the limit when its turn began.
        """
        limit = self._limit
        if limit is None:
            return None
        for detector, _, _, number in found:
            if detector.name in self._reporting:
                continue  # it reports; it never acts
            due = self._exit.due(
                number, limit, reads_calls=detector.reads == "calls", insisted=insisted
            )
            if due is not None:
                return Escalation(
                    call.tool,
                    number,
                    detector.name,
                    self._cut(arguments),
                    due.name,
                    key,
                    position,
                    limit,
                )
        return None

    def _called_anyway(
        self,
        call: Call,
        asked: Escalation,
        streak: int,
        policies: Mapping[str, ToolPolicy] | None,
        schemas: ToolSchemas | None,
    ) -> Escalation:
        """The end of a run whose model called a tool after it was asked for its answer.

        It names the loop the model was asked to end, not the call: by the count that call
        took the loop to when it is the loop's call again (its arguments keyed as the tool's
        rules key them), by the count it was asked at when it is another call.
        """
        rules = self.rules(call.tool, policies.get(call.tool) if policies else None)
        args = call.args if schemas is None else schemas.read(call.tool, call.args)
        keyed = rules.keyed(args) if rules is not None and rules.ignore else args
        again = call.tool == asked.tool and digest(canonicalize(keyed)) == asked.digest
        return replace(
            asked, count=streak if again else asked.count, behavior=asked.exit.insisted.name
        )


def _levels(settings: object) -> Levels | None:
    """A detector's level table from its thresholds; None: each tool's own rules (`repeat`)."""
    thresholds = getattr(settings, "thresholds", None)
    return None if thresholds is None else Levels.of(thresholds)


def _keep(in_use: _InUse, record: Record) -> None:
    """Each detector's memory, written back into the record (a memory of nothing is left out)."""
    memories = dict(record.get("detectors", {}))
    for detector, _, memory in in_use:
        kept = None if memory is None else detector.keep(memory)
        if kept:
            memories[detector.name] = kept
        else:
            memories.pop(detector.name, None)
    with_memories(record, memories)


def _went_on(
    found: _Found, call: Call, tool: str, detector: str, count: int
) -> tuple[Detector, Any, int] | None:
    """What `call` counted for a loop of its turn it goes on with, if it does.

    A loop of `tool` that `detector` counted to `count` goes on when the call counts it one
    further (a batch of identical calls runs whole): the detector, its memory and the count.
    """
    if call.tool == tool:
        for counted, _, memory, number in found:
            if counted.name == detector and number == count + 1:
                return counted, memory, number
    return None


def _reached_by(
    reminders: Sequence[Reminder],
    reminder: Reminder | None,
    call: Call,
    found: _Found,
    cut: Callable[[str], str],
) -> list[Reminder]:
    """The turn's reminders after a call, each with the count its loop reached by the call.

    The model reads a turn's reminders after its last result: a loop that went on in the
    same turn (two identical calls a turn) is said at the count the model has reached, once,
    at the firmest level it reached (a call's own reminder takes the place of its loop's).
    """
    kept = []
    for earlier in reminders:
        went = _went_on(found, call, earlier.tool, earlier.detector, earlier.count)
        if went is None:
            kept.append(earlier)
        elif reminder is None or reminder.detector != earlier.detector:
            detector, memory, number = went
            # What a detector with a memory says of the loop has moved on with it too.
            details = earlier.details if detector.memory is None else detector.details(memory, cut)
            kept.append(replace(earlier, count=number, details=details))
    if reminder is not None:
        kept.append(reminder)
    return kept


def _reached(escalation: Escalation | None, call: Call, found: _Found) -> Escalation | None:
    """The escalation of a turn, with the count its loop reached by this call."""
    if escalation is None:
        return None
    went = _went_on(found, call, escalation.tool, escalation.detector, escalation.count)
    return escalation if went is None else replace(escalation, count=went[2])
