"""A worker process serving one agent thread from a shared checkpointer, a step at a time.

Usage: python -m tests.worker sqlite FILE THREAD   or   python -m tests.worker postgres DSN THREAD

Each line `step` on stdin runs the agent up to its next tools step (it is compiled to stop
before every tools step) and prints the thread's reminders and stored chain as one JSON line.
Several workers can take turns on one thread: each builds its own agent and middleware and
knows nothing but what the checkpoint holds.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator
from typing import Any

from langchain.agents import create_agent
from langgraph.checkpoint.base import BaseCheckpointSaver

from repeat_reminder_langchain import RepeatToolReminderMiddleware

from .helpers import LoopingModel, ask, assert_adjacent, probe, reminders


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


def main(backend: str, target: str, thread: str) -> None:
    with checkpointer(backend, target) as saver:
        agent = create_agent(
            LoopingModel(turns=6),
            tools=[probe],
            middleware=[RepeatToolReminderMiddleware(thresholds=[3, 5])],
            checkpointer=saver,
            interrupt_before=["tools"],
        )
        config = {"configurable": {"thread_id": thread}}
        for line in sys.stdin:
            if line.strip() != "step":
                continue
            started = bool(agent.get_state(config).values)
            agent.invoke(None if started else ask(), config)
            state = agent.get_state(config)
            messages = state.values["messages"]
            # While the agent waits before its tools step, the last turn has no results yet.
            assert_adjacent(messages[:-1] if state.next else messages)
            report = {
                "reminders": reminders(messages),
                "chain": state.values.get("repeat_tool_reminder"),
                "waiting": bool(state.next),
            }
            print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
