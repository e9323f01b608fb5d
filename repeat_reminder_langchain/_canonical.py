r"""Canonical arguments: one compact, key-sorted JSON text per argument value.

Two calls are "the same call" when their tool names match and their canonical texts match.
For JSON values the canonical text is compact JSON with object keys sorted at every depth and
non-ASCII characters kept as they are, so key order and whitespace never matter, and numbers
equal as JSON are equal (`1` and `1.0`). Values that are not JSON still get a stable rendering,
whatever they are; `canonicalize` never raises.

Rules beyond plain JSON:

* A float with an integral value renders as that integer (`1.0` → `1`, `-0.0` → `0`); other
  floats in their shortest round-trip form (`0.1`, `1.5e-7`); NaN and infinities as `null`, as
  `JSON.stringify` does, since JSON has no form for them.
* Object keys become strings the way a JSON encoder makes them (`1` → `"1"`), so `{1: x}` and
  `{"1": x}` are the same arguments: they are indistinguishable once sent over the wire.
* Tuples are arrays; sets are arrays sorted by their elements' canonical texts.
* Enums render as their value; pydantic models and dataclasses as objects of their fields;
  dates and times as ISO 8601 strings; bytes as text (undecodable bytes escaped); Decimals as
  numbers; integers too large for decimal conversion as a hexadecimal string; anything else as
  its `str()` (or its type name when even that fails).
* A container met again inside itself renders as the string `"[Circular]"`; nesting depth is
  not limited (the walk uses no recursion).
* Lone surrogates, which UTF-8 cannot carry, are written as `\uXXXX` escapes, so the text
  can always be encoded and sent to a provider.

Plain JSON is serialised by orjson (sorted keys, in C); whatever orjson refuses or renders
otherwise (other types, integral floats, non-string keys, deep nesting) takes the pure path,
which defines the rules above and gives the same text for anything both accept.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import json
import math
import re
from collections.abc import Mapping
from json.encoder import encode_basestring
from operator import itemgetter
from typing import Any

import orjson
from pydantic import BaseModel

__all__ = ["canonicalize", "digest", "result_text"]

_CIRCULAR = '"[Circular]"'
_blake2b = hashlib.blake2b
_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# orjson writes a float with an integral value as `1.0`, or as `1e+16` from 1e16 up.
_WHOLE_FLOAT = re.compile(rb"[:,\[]-?\d+(?:\.0[,\]}]|(?:\.\d+)?e\+)")
_DOT, _PLUS = ord("."), ord("+")
_NUMBER_START = frozenset(b"-0123456789")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BY_KEY = itemgetter(0, 1)

# Work items on the explicit stack: render a value, write literal text, or close a container.
_VALUE, _TEXT, _CLOSE = 0, 1, 2


def canonicalize(value: object) -> str:
    """Return the canonical text of a tool call's arguments.

    Args:
        value: The arguments as the model sent them (usually a dict), or anything else.

    Returns:
        Compact JSON with sorted keys for JSON values; a stable rendering otherwise.

    Examples:
        >>> canonicalize({"b": [1, 2.0], "a": {"y": None, "x": "é"}})
        '{"a":{"x":"é","y":null},"b":[1,2]}'

    """
    try:
        data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: a type, key, integer or depth it refuses
        return _pure_text(value)
    # An integral float is written `1.0` or `1e+16`: text with neither "." nor "+" has none.
    # (A byte value's membership is tested several times faster than a bytes string's.)
    if _DOT not in data and _PLUS not in data:
        return data.decode()  # nearly always
    fast = _with_floats(value, data)
    return fast if fast is not None else _pure_text(value)


def _with_floats(value: object, data: bytes, retry: bool = True) -> str | None:
    """The canonical text of `value`, which orjson wrote as `data`, a text that may hold floats.

    None where only the pure path knows the rules.
    """
    if data[0] in _NUMBER_START:
        return None  # a bare number: rare, and not worth a second pattern
    if (b".0" in data or b"e+" in data) and _WHOLE_FLOAT.search(data):
        if not retry:
            return None
        # An integral float (or text like one inside a string). orjson took the value, so it
        # is plain JSON: write its integral floats as integers, and let orjson try once more.
        value = _whole_floats_as_ints(value)
        try:
            data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
        except TypeError:  # an integral float too large for orjson's integers
            return None
        return _with_floats(value, data, retry=False)
    return data.decode()


def _whole_floats_as_ints(value: Any) -> Any:
    """A copy of a plain JSON value (as orjson accepts it) with integral floats as integers."""
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() else value
    if kind is dict:
        return {key: _whole_floats_as_ints(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_whole_floats_as_ints(item) for item in value]
    return value


def _refuse(value: object) -> object:
    raise TypeError


def _pure_text(value: object) -> str:
    text = _render(value)
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def digest(text: str) -> str:
    """A short, stable fingerprint of a canonical text (128-bit BLAKE2b, hex)."""
    return _blake2b(text.encode(), digest_size=16).hexdigest()


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


def _render(root: object) -> str:
    out: list[str] = []
    stack: list[tuple[int, Any]] = [(_VALUE, root)]
    open_ids: set[int] = set()
    while stack:
        op, item = stack.pop()
        if op == _TEXT:
            out.append(item)
            continue
        if op == _CLOSE:
            open_ids.discard(id(item))
            continue
        scalar = _scalar(item)
        if scalar is not None:
            out.append(scalar)
            continue
        if id(item) in open_ids:
            out.append(_CIRCULAR)
            continue
        # Mark the original object open and keep it referenced until closed, so that a
        # substitute built for it (a model's field dict) cannot reuse its id meanwhile.
        open_ids.add(id(item))
        stack.append((_CLOSE, item))
        if isinstance(item, Mapping):
            _push_object(stack, item)
        elif isinstance(item, (list, tuple)):
            _push_array(stack, item)
        else:
            stack.append((_VALUE, _substitute(item)))
    return "".join(out)


def _scalar(value: Any) -> str | None:
    """The text of a JSON scalar, or None when `value` is a container or not JSON."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return _int_text(value)
    if kind is float:
        return _float_text(value)
    if kind is _Raw:
        return value  # type: ignore[no-any-return]
    if isinstance(value, str) and not isinstance(value, enum.Enum):
        return encode_basestring(str.__str__(value))
    return None


def _int_text(value: int) -> str:
    try:
        return int.__repr__(value)
    except ValueError:
        # Beyond the interpreter's digit limit for decimal conversion: hex is exact and linear.
        return encode_basestring(f"<int {int.__index__(value):#x}>")


def _float_text(value: float) -> str:
    if not math.isfinite(value):
        return "null"
    if value.is_integer():
        return int.__repr__(int(value))
    return orjson.dumps(value).decode()


def _push_object(stack: list[tuple[int, Any]], mapping: Mapping[Any, Any]) -> None:
    try:
        items = list(mapping.items())
    except Exception:
        stack.append((_VALUE, _fallback(mapping)))
        return
    entries = [(_key_text(key), type(key).__name__, value) for key, value in items]
    entries.sort(key=_BY_KEY)
    stack.append((_TEXT, "}"))
    for index in range(len(entries) - 1, -1, -1):
        key, _, value = entries[index]
        stack.append((_VALUE, value))
        stack.append((_TEXT, ("," if index else "") + encode_basestring(key) + ":"))
    stack.append((_TEXT, "{"))


def _push_array(stack: list[tuple[int, Any]], items: list[Any] | tuple[Any, ...]) -> None:
    stack.append((_TEXT, "]"))
    for index in range(len(items) - 1, -1, -1):
        stack.append((_VALUE, items[index]))
        if index:
            stack.append((_TEXT, ","))
    stack.append((_TEXT, "["))


def _key_text(key: Any) -> str:
    if type(key) is str:
        return key
    # As a JSON encoder would: a key that renders as a string is that string, any other key
    # is its JSON text.
    text = _render(key)
    return json.loads(text) if text.startswith('"') else text


def _substitute(value: object) -> object:
    """Map a value that is not plain JSON onto one that is (or onto its text)."""
    # Sets order their elements by rendering each one: sets nested in sets thousands deep end
    # in a RecursionError here, caught like any other failure.
    try:
        return _substitute_unsafe(value)
    except Exception:
        return _fallback(value)


def _substitute_unsafe(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name, None) for field in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return [_Raw(text) for text in sorted(_render(element) for element in value)]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, decimal.Decimal):
        return _decimal_value(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return _fallback(value)


def _decimal_value(value: decimal.Decimal) -> object:
    if not value.is_finite():
        return None
    if value == value.to_integral_value() and value.adjusted() < 64:
        return int(value)
    return _Raw(str(value))


class _Raw(str):
    """Text that is already canonical: written as it is, not as a JSON string."""


def _fallback(value: object) -> str:
    for render in (str, repr):
        try:
            return render(value)
        except Exception:
            continue
    return f"<{type(value).__qualname__}>"
