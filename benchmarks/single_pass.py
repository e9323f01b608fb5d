"""A quiet turn of the default guard's rules, in one function: what layering the guard costs.

Not a guard: a reference to measure the guard's `before_model` against, as `floor.py` is the
least a guard does. It does the work the default guard does for a turn that draws nothing,
and only for that turn: it reads its record back from the state (checked when it is not the
one it wrote), goes back to the latest model turn, matches every call's result by id, sees
whether the user spoke before or after it, leaves out the arguments a tool's schema fills with
its default, keys each call's arguments (orjson with sorted keys, 128-bit BLAKE2b), reads each
result for `progress="result"` (normalised, then digested) and whether it failed
(`error_pattern`), counts the run, adds the turn to its stats under a lock and writes the
record back. What it leaves out is what a turn that draws something needs (the detectors, the
reminders, the escalation, the report: it counts no such turn, a failure or a run at a
threshold), several tools' policies, and everything a reading of the conversation must survive
that this benchmark's turns never hold (calls without ids, shared ids, invalid calls, missing
results). Any difference between the guard's `before_model`
and it is the cost of the guard's layers: the turn read into values, counted, reported and
applied, each by its own module.
"""

from __future__ import annotations

import re
import threading
from hashlib import blake2b
from typing import Any

import orjson
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._conversation import SOURCE
from repeat_reminder_langchain._normalise import normalise_result
from repeat_reminder_langchain._record import read_record

from .fixtures import lookup

__all__ = ["SinglePassMiddleware"]

_NAME = "RepeatToolReminderMiddleware"
_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_FIELDS = ("turn", "tool", "key", "count", "result", "reminded")


class SinglePassMiddleware(AgentMiddleware[Any, Any, Any]):
    """Counts each finished turn under the default guard's rules, as one function."""

    def __init__(self) -> None:
        super().__init__()
        config = ReminderConfig()
        self._excluded = frozenset(config.exclude)
        self._failure = re.compile(config.error_pattern or r"(?!)")
        self._first = config.thresholds[0]
        # The schema's defaults, by tool (the guard reads them from the model's requests).
        self._defaults = {
            lookup.name: {
                name: field.get_default()
                for name, field in lookup.tool_call_schema.model_fields.items()  # type: ignore[union-attr]
                if not field.is_required()
            }
        }
        self._written: object = None
        self._lock = threading.Lock()
        self.calls = 0

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:  # noqa: PLR0912, PLR0915, D102 - the point is one function
        field = state.get(SOURCE)
        record = field.get(_NAME) if field else None
        if record is None:
            record = {}
        elif record is not self._written:
            record = read_record(record)
        messages = state["messages"]
        index = len(messages) - 1
        spoke_after = False
        while index >= 0:
            item = messages[index]
            kind = type(item)
            if kind is ToolMessage:
                index -= 1
                continue
            if kind is AIMessage:
                break
            spoke_after = spoke_after or (
                isinstance(item, HumanMessage)
                and not isinstance(item.additional_kwargs.get("lc_source"), str)
            )
            index -= 1
        else:
            return None
        turn = item
        if not turn.tool_calls or turn.id == record.get("turn"):
            return None
        results: dict[str, ToolMessage] = {}
        for position in range(index + 1, len(messages)):
            answer = messages[position]
            if type(answer) is ToolMessage:
                results[answer.tool_call_id] = answer
        spoke_before = False
        while index > 0:
            index -= 1
            item = messages[index]
            kind = type(item)
            if kind is ToolMessage:
                continue
            if kind is AIMessage and item.tool_calls:
                break
            spoke_before = spoke_before or (
                isinstance(item, HumanMessage)
                and not isinstance(item.additional_kwargs.get("lc_source"), str)
            )
        if spoke_before:
            record = {}
        tool, key = record.get("tool", ""), record.get("key", "")
        kept, run = record.get("result", ""), record.get("count", 0)
        counted = 0
        for call in turn.tool_calls:
            name = call["name"]
            if name in self._excluded:
                continue
            counted += 1
            args = call["args"]
            defaults = self._defaults.get(name)
            if defaults and not defaults.keys().isdisjoint(args):
                args = {k: v for k, v in args.items() if defaults.get(k, ...) != v}
            new_key = blake2b(orjson.dumps(args, option=_SORTED), digest_size=16).hexdigest()
            answer = results.get(call["id"])
            outcome = ""
            if answer is not None:
                text = answer.content if isinstance(answer.content, str) else str(answer.content)
                if answer.status == "error" or self._failure.search(text) is not None:
                    return None  # shown to the failure detectors: not a quiet turn
                outcome = blake2b(normalise_result(text).encode(), digest_size=16).hexdigest()
            same = name == tool and new_key == key and not (kept and outcome and outcome != kept)
            run = run + 1 if same else 1
            if run >= self._first:
                return None  # at a threshold: not a quiet turn
            tool, key, kept = name, new_key, outcome
        with self._lock:
            self.calls += counted
        new = dict(zip(_FIELDS, (turn.id, tool, key, run, kept, False), strict=True))
        if spoke_after:
            new["count"] = 0
        self._written = new
        return {SOURCE: {_NAME: new}}
