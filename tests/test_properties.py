"""Properties: canonical texts against JSON equality, and every detector against a reference."""

from __future__ import annotations

import copy
import itertools
import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from repeat_reminder_langchain import ReminderConfig, canonicalize
from repeat_reminder_langchain._canonical import (
    _ORJSON_OPTIONS,
    _pure_text,
    _refuse,
    _with_floats,
)
from repeat_reminder_langchain._conversation import read_turn
from repeat_reminder_langchain._counter import LoopCounter
from repeat_reminder_langchain._messages import reminder_message
from repeat_reminder_langchain._record import Record, read_record

from .conftest import build
from .helpers import ask, reminders, scripted

# Text with every code point, lone surrogates included: they must survive as escapes.
TEXT = st.text(st.characters(exclude_categories=()), max_size=8)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.none() | st.booleans() | st.integers() | FINITE | TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=24,
)


class Tag(str):
    """A str subclass: orjson leaves it to the pure path."""


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: numbers by value, but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def reshaped(value: Any, rnd: random.Random) -> Any:
    """An equal JSON value written differently: keys reordered at every depth, lists as
    tuples, whole floats as ints and ints as floats where exact."""
    if isinstance(value, dict):
        items = [(k, reshaped(v, rnd)) for k, v in value.items()]
        rnd.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        items = [reshaped(v, rnd) for v in value]
        return tuple(items) if rnd.random() < 0.5 else items
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, int) and abs(value) < 2**53 and rnd.random() < 0.5:
        return float(value)
    return value


@given(JSON, st.randoms(use_true_random=False))
def test_equal_json_written_differently_has_one_canonical_text(value: Any, rnd: Any) -> None:
    assert canonicalize(reshaped(value, rnd)) == canonicalize(value)


@given(JSON, JSON)
def test_canonical_texts_are_equal_exactly_when_the_values_are(a: Any, b: Any) -> None:
    assert (canonicalize(a) == canonicalize(b)) == json_equal(a, b)


@given(JSON)
def test_the_canonical_text_is_json_for_the_same_value(value: Any) -> None:
    text = canonicalize(value)
    text.encode("utf-8")
    assert json_equal(json.loads(text), value)


@given(JSON)
def test_a_json_round_trip_keeps_the_canonical_text(value: Any) -> None:
    assert canonicalize(json.loads(json.dumps(value))) == canonicalize(value)
    assert canonicalize(copy.deepcopy(value)) == canonicalize(value)


ANYTHING = st.recursive(
    SCALARS
    | st.floats()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.binary(max_size=4)
    | st.decimals()
    | st.datetimes()
    | st.uuids()
    | st.text(max_size=3).map(Tag),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.integers() | st.none(), inner, max_size=3)
        | st.dictionaries(st.text(max_size=3).map(Tag), inner, max_size=2)
    ),
    max_leaves=16,
)


@given(ANYTHING)
def test_the_orjson_path_gives_the_pure_paths_text_whenever_it_answers(
    value: Any,
) -> None:
    try:
        data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:
        data = None  # orjson refuses it: the pure path alone answers
    fast = None if data is None else _with_floats(value, data)
    if fast is not None:
        assert fast == _pure_text(value)
    assert canonicalize(value) == _pure_text(value)


@given(st.lists(FINITE, max_size=6), st.dictionaries(TEXT, FINITE, max_size=4))
def test_floats_take_the_fast_path_unless_integral(floats: list[float], mapping: Any) -> None:
    value = {"floats": floats, "mapping": mapping, "text": "v1.0 e+ 2.0,"}
    assert canonicalize(value) == _pure_text(value)


@given(st.dictionaries(st.integers(), SCALARS, max_size=5))
def test_integer_keys_are_their_decimal_strings(value: dict[int, Any]) -> None:
    # Decided: once sent as JSON, {1: x} is {"1": x}; the guard keys them alike.
    assert canonicalize(value) == canonicalize({str(k): v for k, v in value.items()})


# -- every detector against a plain reference -------------------------------------------------

THRESHOLDS = (2, 3, 5)
LEVELS: dict[str, dict[int, str]] = {
    "repeat": {2: "gentle", 3: "detailed", 5: "detailed"},
    "same_error": {2: "gentle", 4: "detailed"},
    "stale": {2: "gentle", 3: "detailed"},
}
SETTINGS: dict[str, Any] = {
    "thresholds": THRESHOLDS,
    "same_error_thresholds": (2, 4),
    "stale_thresholds": (2, 3),
    "error_pattern": "^Error",
    "exclude": ["todo*"],
    "profile": "seed",  # the reference counts every identical call and never stops
}
# Each detector alone, and every one together.
DETECT = [("repeat",), ("same_error",), ("stale",), ("repeat", "same_error", "stale")]
CALLS = st.tuples(
    st.sampled_from(["probe", "other", "todo_write"]),
    st.sampled_from([{"q": 1}, {"q": 1.0}, {"q": 2}, {"q": [1, {"b": 2, "a": 1}]}]),
    # The call's id: its own, the one of the call before it (some models reuse ids within a
    # turn), or none at all.
    st.sampled_from(["own", "shared", "none"]),
    # Its result, and whether it is marked as an error.
    st.sampled_from(["r", "r2", "Error: no", "Error: other", ""]),
    st.booleans(),
)
Calls = list[tuple[str, dict[str, Any], str, str, bool]]


class Reference:
    """The rules, as plainly as they can be written: every call of a turn counts, in order,
    and draws at most one reminder, `repeat` first, then `same_error`, then `stale`; a loop
    that goes on later in the turn is said once, at the count and firmest level it reached."""

    def __init__(self, detect: tuple[str, ...] = ("repeat",)) -> None:
        self.detect = detect
        self.last: Any = None
        self.count = 0
        self.failing: Any = None  # (tool, error text) of the failure streak
        self.failures = 0
        self.failed_with: set[Any] = set()  # the calls that failed in the streak
        self.spoke = False  # the user spoke since the streak's last failure
        self.seen: dict[Any, tuple[str, int, int]] = {}  # call -> (result, times, changes then)
        self.changes = 0

    def calls(self, calls: Calls) -> list[tuple[str, str, int]]:
        due: list[tuple[str, str, int, str]] = []  # level, tool, count, detector
        for tool, args, kind, result, error in calls:
            if tool.startswith("todo"):
                continue
            key = (tool, json.dumps(args, sort_keys=True).replace("1.0", "1"))
            self.count = self.count + 1 if key == self.last else 1
            self.last = key
            counts = {"repeat": self.count}
            known = kind != "none"  # a call without an id gets no result
            if known and "same_error" in self.detect:
                if error or result.startswith("Error"):
                    # After the user spoke, only calls that failed before go on with it.
                    news = self.spoke and key not in self.failed_with
                    same = self.failing == (tool, result) and not news
                    self.failures = self.failures + 1 if same else 1
                    self.failed_with = {*self.failed_with, key} if same else {key}
                    self.failing = (tool, result)
                    counts["same_error"] = self.failures
                else:
                    self.failing, self.failures, self.failed_with = None, 0, set()
                self.spoke = False
            if known and "stale" in self.detect and result.strip():
                counts["stale"] = self.stale(key, result)
            drawn = None
            for detector in ("repeat", "same_error", "stale"):
                if detector in self.detect and detector in counts:
                    level = LEVELS[detector].get(counts[detector])
                    if level is not None:
                        drawn = (level, tool, counts[detector], detector)
                        break
            kept = []
            for level, name, number, detector in due:
                if name != tool or counts.get(detector) != number + 1:
                    kept.append((level, name, number, detector))
                elif drawn is None or drawn[3] != detector:  # went on, drew nothing new
                    kept.append((level, name, number + 1, detector))
            due = kept
            if drawn is not None:
                due.append(drawn)
        return [(level, tool, number) for level, tool, number, _ in due]

    def stale(self, key: Any, result: str) -> int:
        before = self.seen.pop(key, None)
        times = 1
        if before is not None:
            if before[0] != result:
                self.changes += 1
            elif before[2] == self.changes:
                times = before[1] + 1
        if times > 1 and any(seen[0] == result for seen in self.seen.values()):
            times = 1  # an answer other calls give too is no evidence
        self.seen[key] = (result, times, self.changes)
        return times

    def user(self) -> None:
        self.last, self.count = None, 0
        self.seen, self.changes = {}, 0
        self.spoke = True


class StreaksMachine(RuleBasedStateMachine):
    """Random conversations: turns of one to three calls, with their own, shared or no ids,
    results that repeat, change, fail or say nothing, answered at once or in two goes, user
    messages, and repeated looks at an unchanged conversation; each set of detectors."""

    @initialize(detect=st.sampled_from(DETECT))
    def start(self, detect: tuple[str, ...]) -> None:
        self.messages: list[BaseMessage] = [HumanMessage("go")]
        self.counter = LoopCounter(ReminderConfig(detect=detect, **SETTINGS))
        self.record: Record = {}
        self.reference = Reference(detect)
        self.ids = itertools.count()
        self.got: list[tuple[str, str, int]] = []
        self.expected: list[tuple[str, str, int]] = []

    def look(self) -> None:
        turn = read_turn(self.messages, self.record.get("turn", ""))
        tally = self.counter.count(self.record, turn)
        if tally.record is not None:
            self.record = read_record(copy.deepcopy(tally.record))  # as a checkpoint keeps it
        self.got += [(r.level, r.tool, r.count) for r in tally.reminders]
        self.messages += [reminder_message(r) for r in tally.reminders]

    def ask(self, calls: Calls) -> list[ToolMessage]:
        """The model's turn making `calls`; the results due, one per call with an id."""
        tool_calls: list[dict[str, Any]] = []
        for tool, args, kind, _, _ in calls:
            if kind == "none":
                call_id = ""
            elif kind == "shared" and tool_calls and tool_calls[-1]["id"]:
                call_id = tool_calls[-1]["id"]
            else:
                call_id = f"c{next(self.ids)}"
            tool_calls.append({"name": tool, "args": args, "id": call_id})
        self.messages.append(AIMessage("", tool_calls=tool_calls, id=f"m{next(self.ids)}"))
        return [
            ToolMessage(result, tool_call_id=c["id"], status="error" if error else "success")
            for c, (_, _, _, result, error) in zip(tool_calls, calls, strict=True)
            if c["id"]
        ]

    @rule(calls=st.lists(CALLS, min_size=1, max_size=3))
    def turn(self, calls: Calls) -> None:
        results = self.ask(calls)
        ids = [result.tool_call_id for result in results]
        # Results in any order, unless calls share an id: then they answer in order.
        self.messages += reversed(results) if len(set(ids)) == len(ids) else results
        self.expected += self.reference.calls(calls)
        self.look()

    @rule(calls=st.lists(CALLS, min_size=2, max_size=3))
    def turn_answered_in_two_goes(self, calls: Calls) -> None:
        results = self.ask(calls)
        if len(results) >= 2:
            self.messages.append(results[0])
            self.look()  # a turn still waiting for results counts nothing yet
            results = results[1:]
        self.messages += results
        self.expected += self.reference.calls(calls)
        self.look()

    @rule()
    def user_message(self) -> None:
        self.messages.append(HumanMessage("new instructions"))
        self.reference.user()
        self.look()

    @rule()
    def look_again(self) -> None:
        self.look()

    @invariant()
    def reminders_match_the_reference(self) -> None:
        assert self.got == self.expected
        if self.reference.count:
            assert self.record["count"] == self.reference.count


TestStreaksMachine = StreaksMachine.TestCase
TestStreaksMachine.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)


# -- the same, through the faces users wire ----------------------------------------------------

ONE_CALL = st.tuples(
    st.sampled_from(["probe", "other"]),
    st.sampled_from([{"q": 1}, {"q": 2}]),
    st.sampled_from(["r", "r2", "Error: no", "Error: other", ""]),
)


@pytest.mark.parametrize("detect", DETECT, ids="+".join)
@pytest.mark.parametrize("face", ["middleware", "handler"])
@given(turns=st.lists(ONE_CALL, min_size=1, max_size=12))
@settings(max_examples=20, deadline=None)
def test_every_detector_reminds_as_the_reference_through_the_faces(
    face: str, detect: tuple[str, ...], turns: list[tuple[str, dict[str, Any], str]]
) -> None:
    outputs = iter([result for _, _, result in turns])

    def answer(q: Any = None) -> str:
        return next(outputs)  # one call a turn: the results come in the order of the calls

    tools = [
        StructuredTool.from_function(answer, name=name, description="Answer.")
        for name in ("probe", "other")
    ]
    script = [
        AIMessage("", tool_calls=[{"name": tool, "args": args, "id": f"c{n}"}])
        for n, (tool, args, _) in enumerate(turns)
    ]
    agent = build(face, scripted(script), tools, detect=list(detect), **SETTINGS)
    messages = agent.invoke(ask())

    reference = Reference(detect)  # one call a turn
    expected = [
        due
        for tool, args, result in turns
        for due in reference.calls([(tool, args, "own", result, False)])
    ]
    assert reminders(messages) == expected
