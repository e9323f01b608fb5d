"""Canonical arguments: JSON-equal values share one text; anything else renders stably."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from collections import OrderedDict
from typing import Any

import pytest
from pydantic import BaseModel

from repeat_reminder_langchain import canonicalize
from repeat_reminder_langchain._canonical import digest


def test_json_values_render_as_compact_json_with_sorted_keys_and_unicode_kept() -> None:
    value = {"b": [1, {"d": None, "c": True}], "a": 'é ✓ "q"\n'}
    assert canonicalize(value) == '{"a":"é ✓ \\"q\\"\\n","b":[1,{"c":true,"d":null}]}'
    assert canonicalize(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def test_key_order_never_matters_at_any_depth() -> None:
    a = {"a": 1, "nested": {"x": [1, 2], "y": {"p": 1, "q": 2}}}
    b = {"nested": {"y": {"q": 2, "p": 1}, "x": [1, 2]}, "a": 1}
    assert canonicalize(a) == canonicalize(b)
    assert canonicalize(OrderedDict(reversed(list(a.items())))) == canonicalize(a)


def test_array_order_matters() -> None:
    assert canonicalize([1, 2]) != canonicalize([2, 1])


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (1, 1.0),
        (-0.0, 0),
        (1e16, 10**16),
        ({"n": 3}, {"n": 3.0}),
        ({"n": 1e16}, {"n": 10**16}),
        ({"n": -2.5e20}, {"n": -25 * 10**19}),
        ((1, 2), [1, 2]),
    ],
)
def test_numbers_and_arrays_equal_as_json_share_a_text(left: Any, right: Any) -> None:
    assert canonicalize(left) == canonicalize(right)


def test_floats_keep_their_shortest_form() -> None:
    assert canonicalize([0.1, 1.5e-07, 2.5, -3.25, 1e-5]) == "[0.1,1.5e-7,2.5,-3.25,0.00001]"
    # The same text whether orjson writes it or the pure path does (an int key forces that).
    assert canonicalize({"k": 1.5e-07, "x": {1: 2}}) == '{"k":1.5e-7,"x":{"1":2}}'


def test_non_finite_floats_render_as_null_as_json_stringify_does() -> None:
    assert canonicalize([float("nan"), float("inf"), float("-inf")]) == "[null,null,null]"
    # The same through the pure path (an integer key keeps orjson out).
    assert canonicalize({1: [float("nan"), float("-inf")]}) == '{"1":[null,null]}'


def test_keys_are_what_a_json_encoder_makes_of_them() -> None:
    assert canonicalize({1: "a"}) == canonicalize({"1": "a"}) == '{"1":"a"}'
    assert canonicalize({None: 1, True: 2, (1, 2): 3}) == '{"[1,2]":3,"null":1,"true":2}'
    # Colliding keys still order deterministically, whatever the insertion order.
    assert canonicalize({1: "i", "1": "s"}) == canonicalize({"1": "s", 1: "i"})


def test_a_malformed_argument_string_is_its_own_value() -> None:
    assert canonicalize('{"q": "unterminated') == '"{\\"q\\": \\"unterminated"'
    assert canonicalize('{"q": "unterminated') != canonicalize({"q": "unterminated"})


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Query(BaseModel):
    text: str
    limit: int = 10


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Tag(str):
    pass


class Count(int):
    pass


class Ratio(float):
    pass


def test_values_that_are_not_json_render_as_their_natural_json() -> None:
    value = {
        "enum": Colour.RED,
        "intenum": Level.HIGH,
        "model": Query(text="hi"),
        "point": Point(1.0, 2.5),
        "when": datetime.datetime(2026, 1, 2, 3, 4, 5),
        "day": datetime.date(2026, 1, 2),
        "bytes": b"ab\xff",
        "set": {3, 1, 2},
        "frozen": frozenset({"b", "a"}),
        "decimal": decimal.Decimal("1.10"),
        "whole": decimal.Decimal("1E+2"),
        "tag": Tag("t"),
        "count": Count(7),
        "ratio": Ratio(2.0),
    }
    assert canonicalize(value) == (
        '{"bytes":"ab\\\\xff","count":7,"day":"2026-01-02","decimal":1.10,"enum":"red",'
        '"frozen":["a","b"],"intenum":3,"model":{"limit":10,"text":"hi"},"point":{"x":1,"y":2.5},'
        '"ratio":2,"set":[1,2,3],"tag":"t","when":"2026-01-02T03:04:05","whole":100}'
    )


def test_decimals_beyond_plain_numbers() -> None:
    assert canonicalize(decimal.Decimal("NaN")) == "null"
    assert canonicalize(decimal.Decimal("sNaN")) == "null"
    assert canonicalize(decimal.Decimal("1E+999999")) == "1E+999999"


def test_other_objects_render_as_their_text() -> None:
    ident = uuid.UUID(int=5)
    assert canonicalize(ident) == f'"{ident}"'
    assert canonicalize(range(3)) == '"range(0, 3)"'


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    __hash__ = object.__hash__


class WrongStr:
    def __str__(self) -> Any:
        return 42  # noqa: PLE0307 - deliberately broken

    def __repr__(self) -> Any:
        return None


def test_objects_whose_str_fails_render_as_their_type_name() -> None:
    assert canonicalize(Unprintable()) == '"<Unprintable>"'
    assert canonicalize({Unprintable(): [Unprintable()]}) == '{"<Unprintable>":["<Unprintable>"]}'
    assert canonicalize(WrongStr()) == '"<WrongStr>"'


def test_cycles_render_as_a_marker() -> None:
    looped: dict[str, Any] = {"name": "a"}
    looped["self"] = looped
    items: list[Any] = [1]
    items.append(items)
    assert canonicalize(looped) == '{"name":"a","self":"[Circular]"}'
    assert canonicalize(items) == '[1,"[Circular]"]'


def test_a_model_that_contains_itself_renders_a_marker() -> None:
    class Node(BaseModel):
        child: Any = None

    node = Node()
    node.child = node
    assert canonicalize(node) == '{"child":"[Circular]"}'


def test_a_value_shared_twice_is_not_a_cycle() -> None:
    shared = [1, 2]
    assert canonicalize({"a": shared, "b": shared}) == '{"a":[1,2],"b":[1,2]}'


def test_nesting_ten_thousand_deep_renders_in_full() -> None:
    root: dict[str, Any] = {}
    node = root
    for _ in range(10_000):
        node["k"] = {}
        node = node["k"]
    assert canonicalize(root) == '{"k":' * 10_000 + "{}" + "}" * 10_000


def test_sets_nested_beyond_the_recursion_limit_still_render() -> None:
    nested: Any = frozenset()
    for _ in range(5_000):
        nested = frozenset([nested])
    text = canonicalize(nested)
    assert text == canonicalize(nested)
    assert text.startswith("[[[[") and '"<frozenset>"' in text


def test_integers_beyond_the_decimal_digit_limit_render_in_hex() -> None:
    huge = 10**5000
    text = canonicalize({"n": huge})
    assert text == '{"n":"<int ' + hex(huge) + '>"}'
    assert canonicalize({"n": huge}) == text
    assert canonicalize(Count(huge)) == '"<int ' + hex(huge) + '>"'


def test_lone_surrogates_are_escaped_so_the_text_is_valid_utf8() -> None:
    text = canonicalize({"k": "a\ud800b", "\udfff": 1})
    assert text == '{"k":"a\\ud800b","\\udfff":1}'
    text.encode("utf-8")
    assert json.loads(text) == {"k": "a\ud800b", "\udfff": 1}


def test_the_same_value_always_gives_the_same_text_and_digest() -> None:
    value = {"x": [Point(1, 2), {3, 4}, Colour.RED], "y": "z"}
    assert canonicalize(value) == canonicalize(value)
    assert digest(canonicalize(value)) == digest(canonicalize(value))
    assert digest("a") != digest("b")
    assert len(digest("a")) == 32


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"q": "[1.0]"}, '{"q":"[1.0]"}'),
        (["x:2.0}", 1.5], '["x:2.0}",1.5]'),
        ({"b": 2.0, "a": "[1e+16]"}, '{"a":"[1e+16]","b":2}'),
        ("[3.0]", '"[3.0]"'),
    ],
)
def test_strings_that_look_like_whole_floats_are_kept_as_written(value: Any, text: str) -> None:
    assert canonicalize(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (decimal.Decimal("1E+63"), "1" + "0" * 63),
        (decimal.Decimal("9" * 64), "9" * 64),
        (decimal.Decimal("1E+64"), "1E+64"),
        (decimal.Decimal("-1.0E+64"), "-1.0E+64"),
    ],
)
def test_whole_decimals_render_as_integers_up_to_64_digits(
    value: decimal.Decimal, text: str
) -> None:
    assert canonicalize(value) == text


@dataclasses.dataclass
class Job:
    name: str
    result: int = dataclasses.field(init=False)


def test_a_dataclass_field_not_yet_set_renders_as_null() -> None:
    assert canonicalize(Job("build")) == '{"name":"build","result":null}'


class NoStr:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        return "NoStr()"


def test_an_object_whose_str_fails_renders_as_its_repr() -> None:
    assert canonicalize(NoStr()) == '"NoStr()"'
    assert canonicalize({"k": NoStr()}) == '{"k":"NoStr()"}'


class Label:
    def __str__(self) -> str:
        return "k"


def test_keys_of_one_type_rendering_alike_keep_every_entry() -> None:
    first, second = Label(), Label()
    text = canonicalize({first: [1], second: {"a": 1}})
    assert text in ('{"k":[1],"k":{"a":1}}', '{"k":{"a":1},"k":[1]}')
    assert canonicalize({float("nan"): "x", float("nan"): 1}) in (
        '{"null":"x","null":1}',
        '{"null":1,"null":"x"}',
    )


class Masked(str):
    def __str__(self) -> str:
        return "***"


def test_a_str_subclass_renders_as_its_content_as_a_json_encoder_writes_it() -> None:
    value = {"token": Masked("abc"), "n": 1.0}
    assert canonicalize(value) == '{"n":1,"token":"abc"}'
    assert canonicalize(value) == canonicalize({"token": "abc", "n": 1})
