"""The least work of a guard that compares arguments and keeps its count in the checkpoint.

Not a guard: a floor to measure one against. Per model call it reads its state field and the
last model turn's last call, fingerprints the call's arguments as the guard does (orjson with
sorted keys, 128-bit BLAKE2b) and writes the count back. What it leaves out is what a guard
adds to it: resetting on a user message, knowing a turn is complete, several calls a turn,
arguments orjson refuses, thresholds and reminders, stats, several instances in one state.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any

import orjson
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage

__all__ = ["FloorMiddleware"]

_KEY = "floor"


class FloorMiddleware(AgentMiddleware[Any, Any, Any]):
    """Counts consecutive identical calls of the last model turn into `state["floor"]`."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:  # noqa: D102
        messages = state["messages"]
        if len(messages) < 2:
            return None
        turn = messages[-2]
        if type(turn) is not AIMessage or not turn.tool_calls:
            return None
        stored = state.get(_KEY) or {}
        if stored.get("turn") == turn.id:
            return None
        call = turn.tool_calls[-1]
        text = orjson.dumps(call["args"], option=orjson.OPT_SORT_KEYS)
        key = blake2b(text, digest_size=16).hexdigest()
        same = key == stored.get("key") and call["name"] == stored.get("tool")
        count = stored.get("count", 0) + 1 if same else 1
        return {_KEY: {"turn": turn.id, "tool": call["name"], "key": key, "count": count}}
