"""Canonicalisation: `canonicalize` against the standard library's sorted compact JSON.

The payloads are nested JSON values (objects, arrays, strings with non-ASCII text and escapes,
integers, non-integral floats, booleans, null), for which both must write the same text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from repeat_reminder_langchain import canonicalize

from .measure import Row, interleaved, time_batch

__all__ = ["payload", "run", "stdlib"]

TARGET = 1.0
# (label, approximate size of the JSON text in bytes, calls per timed batch)
SIZES = (("100 B", 100, 2_000), ("10 KB", 10_000, 40), ("1 MB", 1_000_000, 1))
_WORDS = ("alpha", "beta", "gamma", "naïve", "café", "東京", "línea\n", 'say "hi"', "tab\there")


def stdlib(value: Any) -> str:
    """Compact, key-sorted JSON that keeps non-ASCII text, by the `json` module."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _record(rng: random.Random, depth: int) -> dict[str, Any]:
    """A nested object of every JSON type; keys come in no particular order."""
    record: dict[str, Any] = {
        "title": f"{rng.choice(_WORDS)} {rng.randrange(10_000)}",
        "count": rng.randrange(-1_000, 1_000_000),
        "score": (rng.randrange(1_000_000) + 0.5) / 1_000,  # never integral
        "active": rng.random() < 0.5,
        "parent": None,
        "tags": [rng.choice(_WORDS) for _ in range(rng.randrange(1, 4))],
    }
    if depth > 0:
        record["children"] = [_record(rng, depth - 1) for _ in range(2)]
    keys = list(record)
    rng.shuffle(keys)
    return {key: record[key] for key in keys}


def payload(size: int, seed: int = 5) -> dict[str, Any]:
    """Tool-call arguments whose JSON text is about `size` bytes (never much less)."""
    rng = random.Random(seed)
    value: dict[str, Any] = {"query": "TODO", "path": "src/é/main.py", "limit": 10}
    if size <= 200:
        return value | {"options": {"case": False, "ratio": 0.25}, "context": 2}
    items: list[dict[str, Any]] = []
    value["items"] = items
    written = len(stdlib(value).encode())
    while written < size:
        items.append(_record(rng, depth=2))
        written += len(stdlib(items[-1]).encode()) + 1  # the record and its comma
    return value


def _compare(
    key: str,
    label: str,
    value: Any,
    expected: str,
    *,
    batch: int,
    rounds: int,
    target: float | None,
) -> Row:
    """Time `canonicalize` and `json.dumps` on `value`, interleaved; check the canonical text."""
    if canonicalize(value) != expected:
        raise AssertionError(f"canonicalize does not write the expected text for {label}")
    cases: dict[str, Callable[[], float]] = {
        "canonicalize": lambda: time_batch(lambda: canonicalize(value), batch),
        "json": lambda: time_batch(lambda: stdlib(value), batch),
    }
    samples = interleaved(cases, rounds)
    ratio, spread = samples.ratio("canonicalize", "json"), samples.spread("canonicalize", "json")
    return Row(key, label, ratio, "ratio", target, spread)


def run(rounds: int) -> list[Row]:
    """Time both on each payload; fail if their texts differ.

    One more payload, shown without a target, holds a single integral float (`10.0`), which
    canonical text writes as `10`: it shows what a value that leaves the fast path costs.
    """
    rows: list[Row] = []
    for label, size, batch in SIZES:
        value = payload(size)
        expected = stdlib(value)
        name = f"canonicalize / json.dumps, {label} ({len(expected.encode()):,} B)"
        key = f"canonicalize.{label.replace(' ', '').lower()}"
        rows.append(_compare(key, name, value, expected, batch=batch, rounds=rounds, target=TARGET))
    plain = payload(10_000)
    expected = stdlib(plain)  # the integral float written as the integer it equals
    whole = plain | {"limit": 10.0}
    label = "canonicalize / json.dumps, 10 KB with one integral float (10.0)"
    rows.append(
        _compare(
            "canonicalize.10kb_integral_float",
            label,
            whole,
            expected,
            batch=40,
            rounds=rounds,
            target=None,
        )
    )
    return rows
