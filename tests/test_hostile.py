"""Hostile arguments: whatever a model or a caller puts in a tool call, nothing breaks.

Each kind goes through `canonicalize` (no exception, valid UTF-8, the same text every time)
and through real agent runs, three identical calls each, through every face (the handler and
its node, the state-kept node, `create_agent` with the middleware): the run completes and the
third call draws its reminder.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import math
import pathlib
import re
import types
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from repeat_reminder_langchain import RepeatToolReminderMiddleware, canonicalize

from .conftest import Guarded
from .helpers import ask, assert_adjacent, call, other, probe, reminders, scripted, turn

Make = Callable[..., Guarded]


def _cycle_dict() -> Any:
    value: dict[str, Any] = {"a": 1}
    value["self"] = value
    return value


def _cycle_list() -> Any:
    value: list[Any] = [1]
    value.append([value])
    return value


class Node(BaseModel):
    name: str
    child: Any = None


def _cycle_model() -> Any:
    node = Node(name="a")
    node.child = node
    return node


def _deep_dict(levels: int = 10_000) -> Any:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["k"] = {}
        node = node["k"]
    return root


def _deep_list(levels: int = 10_000) -> Any:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        node.append([])
        node = node[0]
    return root


def _deep_tuple_key(levels: int = 1_000) -> Any:
    key: Any = ()
    for _ in range(levels):
        key = (key,)
    return {key: 1}


class Colour(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 3


class Mood(str, enum.Enum):  # noqa: UP042 - a str mixin, as arguments may carry it
    CALM = "calm"


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float
    tags: tuple[str, ...] = ()


@dataclasses.dataclass
class Lazy:
    x: int

    def __getattribute__(self, name: str) -> Any:
        if name == "x":
            raise RuntimeError("field unreadable")
        return super().__getattribute__(name)

    def __str__(self) -> str:
        return "Lazy(?)"


class NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


class NoEq:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    def __hash__(self) -> int:
        return 7

    def __repr__(self) -> str:
        return "NoEq()"


class StrNotStr:
    def __str__(self) -> Any:
        return 42  # noqa: PLE0307 - deliberately broken

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class LoudStr(str):
    def __str__(self) -> str:
        raise RuntimeError("no str")


class Half(float):
    pass


class Big(int):
    pass


class BrokenMapping(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("cannot iterate")

    def __len__(self) -> int:
        return 1

    def __str__(self) -> str:
        return "BrokenMapping()"


def _generator() -> Any:
    def numbers() -> Iterator[int]:
        yield from range(3)

    return numbers()


Pair = collections.namedtuple("Pair", "left right")

SHARED_GENERATOR = _generator()

# name -> a function building the arguments (a dict with string keys at the top, as an
# AIMessage requires; anything at all below). Objects without a value-based text (a default
# repr, a generator) are built once and reused, as a model would repeat the same arguments.
CORPUS: dict[str, Callable[[], Any]] = {
    "cycle-dict": _cycle_dict,
    "cycle-list": lambda: {"x": _cycle_list()},
    "cycle-model": lambda: {"x": _cycle_model()},
    "deep-dict-10000": _deep_dict,
    "deep-list-10000": lambda: {"x": _deep_list()},
    "deep-tuple-key": lambda: {"x": _deep_tuple_key()},
    "nan": lambda: {"x": math.nan},
    "inf": lambda: {"x": math.inf},
    "minus-inf": lambda: {"x": -math.inf},
    "surrogate-value": lambda: {"x": "a\ud800b"},
    "surrogate-key": lambda: {"\udfff": 1},
    "bytes": lambda: {"x": b"\xff\xfe\x00raw"},
    "bytearray": lambda: {"x": bytearray(b"abc")},
    "memoryview": lambda: {"x": memoryview(b"abc")},
    "string-10mb": lambda: {"x": "y" * 10_000_000},
    "int-over-digit-limit": lambda: {"x": 10**5000},
    "negative-int-over-limit": lambda: {"x": -(10**5000)},
    "set-mixed": lambda: {"x": {1, "1", None, (2, 3)}},
    "frozenset-nested": lambda: {"x": frozenset({frozenset({1}), frozenset({2})})},
    "tuple": lambda: {"x": (1, (2, (3,)))},
    "namedtuple": lambda: {"x": Pair(1, 2)},
    "decimal": lambda: {"x": decimal.Decimal("3.14159265358979323846264338327950288")},
    "decimal-nan": lambda: {"x": [decimal.Decimal("NaN"), decimal.Decimal("sNaN")]},
    "decimal-huge-exponent": lambda: {"x": decimal.Decimal("1e999999")},
    "datetime-tz": lambda: {"x": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)},
    "date-time-delta": lambda: {
        "x": [datetime.date(2026, 1, 1), datetime.time(1, 2), datetime.timedelta(hours=1)]
    },
    "uuid": lambda: {"x": uuid.UUID(int=42)},
    "enums": lambda: {"x": [Colour.RED, Size.BIG, Mood.CALM]},
    "pydantic-model": lambda: {"x": Node(name="leaf")},
    "dataclass": lambda: {"x": Point(1.0, 2.5, ("a",))},
    "dataclass-unreadable-field": lambda: {"x": Lazy(1)},
    "repr-raises": lambda: {"x": NO_REPR},
    "eq-raises": lambda: {"x": {NoEq(): NoEq()}},
    "str-returns-non-str": lambda: {"x": STR_NOT_STR},
    "str-subclass-str-raises": lambda: {"x": {LoudStr("k"): LoudStr("quiet")}},
    "number-subclasses": lambda: {"x": [Half(0.5), Big(10**30), Half(2.0)]},
    "non-string-keys": lambda: {"x": {7: "a", 2.5: "b", None: "c", False: "d", (1, 2): "e"}},
    "colliding-keys": lambda: {"x": {1: "int", "1": "str", 1.5: "float", "1.5": "text"}},
    "broken-mapping": lambda: {"x": BROKEN_MAPPING},
    "generator-not-consumed": lambda: {"x": SHARED_GENERATOR},
    "complex": lambda: {"x": complex(1, -2)},
    "callables-and-types": lambda: {"x": [len, int, types]},
    "path-and-pattern": lambda: {"x": [pathlib.PurePosixPath("/tmp/x"), re.compile("a+")]},
    "flat-list-100k": lambda: {"x": list(range(100_000))},
    "empty": dict,
}
NO_REPR, STR_NOT_STR, BROKEN_MAPPING = NoRepr(), StrNotStr(), BrokenMapping()


@pytest.fixture(params=sorted(CORPUS), ids=str)
def hostile(request: pytest.FixtureRequest) -> Any:
    return CORPUS[request.param]()


def test_the_corpus_is_large() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.timeout(20)
def test_canonicalize_never_raises_and_is_stable(hostile: Any) -> None:
    text = canonicalize(hostile)

    assert isinstance(text, str)
    text.encode("utf-8")
    assert canonicalize(hostile) == text


@pytest.mark.timeout(20)
def test_the_generator_is_not_consumed() -> None:
    generator = _generator()
    canonicalize({"x": generator})
    assert list(generator) == [0, 1, 2]


@pytest.mark.timeout(60)
def test_an_agent_run_survives_and_counts(guarded: Make, hostile: Any) -> None:
    agent = guarded(scripted([turn(call("nowhere", hostile)) for _ in range(3)]))

    assert reminders(agent.invoke(ask())) == [("gentle", "nowhere", 3)]


def test_containers_that_fail_while_read_fall_back_to_their_text() -> None:
    assert canonicalize(BROKEN_MAPPING) == '"BrokenMapping()"'
    assert canonicalize(Lazy(1)) == '"Lazy(?)"'


def test_malformed_argument_json_counts_as_its_text() -> None:
    # Each turn: a call the tools answer, and a call whose arguments are not JSON, which never
    # reaches a tool: create_agent answers it with an error result of its own.
    def mixed(n: int) -> AIMessage:
        return AIMessage(
            "",
            tool_calls=[call("other", {"n": n})],
            invalid_tool_calls=[
                {
                    "name": "probe",
                    "args": '{"q": "unterminated',
                    "id": f"bad_{n}",
                    "error": "Unterminated string",
                    "type": "invalid_tool_call",
                }
            ],
        )

    agent = create_agent(
        scripted([mixed(n) for n in range(3)]),
        tools=[probe, other],
        middleware=[RepeatToolReminderMiddleware(thresholds=[3, 4], exclude=["other"])],
    )
    messages = agent.invoke(ask())["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert canonicalize('{"q": "unterminated') == '"{\\"q\\": \\"unterminated"'
