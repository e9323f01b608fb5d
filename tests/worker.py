"""A worker process serving one agent thread from a shared checkpointer.

Usage: python -m tests.worker BACKEND TARGET THREAD FACE [HANG_AT]

BACKEND is `sqlite` (TARGET a file) or `postgres` (TARGET a DSN); FACE is `middleware`
(`create_agent` with the middleware) or `state` (a custom graph with the state-kept node).

Commands, one per line on stdin, each answered by one JSON line on stdout:

* `step`: run the agent up to its next tools step (the agent stops before every tools step).
* `run`: run the agent to its end. With HANG_AT, the HANG_AT-th call of the probe tool that
  this process runs announces itself (`{"hanging": n}`) and never returns, so that the test
  can kill the process in the middle of a looping turn's tool.

Each answer holds the thread's reminders, the stored counts and whether the agent waits.
Several workers can take turns on one thread: each builds its own agent and guard and knows
nothing but what the checkpoint holds.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
import threading
from collections.abc import Iterator
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from repeat_reminder_langchain import (
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
)

from .helpers import LoopModel, ask, assert_adjacent, reminders

FIELD = "repeat_tool_reminder"


@contextlib.contextmanager
def checkpointer(backend: str, target: str) -> Iterator[BaseCheckpointSaver[Any]]:
    if backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with sqlite3.connect(target, check_same_thread=False) as connection:
            yield SqliteSaver(connection)
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(target) as saver:
            yield saver  # tables set up once by the test, not by each worker at the same time


def build(face: str, saver: BaseCheckpointSaver[Any], hang_at: int | None) -> Any:
    ran = 0

    @tool
    def probe(q: str = "") -> str:
        """Look something up."""
        nonlocal ran
        ran += 1
        if ran == hang_at:
            print(json.dumps({"hanging": ran}), flush=True)
            threading.Event().wait()  # until the process is killed
        return f"probed {q}"

    model = LoopModel()
    if face == "middleware":
        guard = RepeatToolReminderMiddleware(thresholds=[3, 5])
        return create_agent(model, tools=[probe], middleware=[guard], checkpointer=saver)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(
        RepeatToolReminderState, input_schema=MessagesState, output_schema=MessagesState
    )
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", RepeatToolReminderNode(thresholds=[3, 5]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "agent")
    return builder.compile(checkpointer=saver)


def stored_counts(face: str, values: dict[str, Any]) -> dict[str, Any] | None:
    field = values.get(FIELD)
    if face == "middleware" and field is not None:
        return field.get("RepeatToolReminderMiddleware")  # type: ignore[no-any-return]
    return field


def main(backend: str, target: str, thread: str, face: str, hang_at: str | None = None) -> None:
    with checkpointer(backend, target) as saver:
        agent = build(face, saver, int(hang_at) if hang_at else None)
        config = {"configurable": {"thread_id": thread}}
        for line in sys.stdin:
            command = line.strip()
            if command not in ("step", "run"):
                continue
            started = bool(agent.get_state(config).values)
            inputs = None if started else ask("loop 6")
            pause = ["tools"] if command == "step" else None
            agent.invoke(inputs, config, interrupt_before=pause)
            state = agent.get_state(config)
            messages = state.values["messages"]
            # While the agent waits before its tools step, the last turn has no results yet.
            assert_adjacent(messages[:-1] if state.next else messages)
            report = {
                "reminders": reminders(messages),
                "counts": stored_counts(face, state.values),
                "waiting": bool(state.next),
                "calls": sum(len(getattr(m, "tool_calls", ())) for m in messages),
            }
            print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])
