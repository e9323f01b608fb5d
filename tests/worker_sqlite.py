"""One worker process: resumes a thread from a SQLite checkpointer and runs a few tool turns.

Usage: python -m tests.worker_sqlite DB THREAD FIRST_CALL LAST_CALL

The agent stops before every tools step, so each worker runs part of a loop and exits; the
next worker, a new process with a new middleware instance, carries on from the checkpoint.
Prints the reminders and the stored chain as JSON.
"""

from __future__ import annotations

import json
import sqlite3
import sys

from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver

from repeat_reminder_langchain import RepeatToolReminderMiddleware

from .helpers import ask, assert_adjacent, call, probe, reminders, scripted, turn


def main(db: str, thread: str, first: int, last: int) -> None:
    script = [turn(call("probe", {"q": "same"}, f"call_{n}")) for n in range(first, last + 1)]
    model = scripted(script)
    with sqlite3.connect(db, check_same_thread=False) as connection:
        agent = create_agent(
            model,
            tools=[probe],
            middleware=[RepeatToolReminderMiddleware(thresholds=[3, 5])],
            checkpointer=SqliteSaver(connection),
            interrupt_before=["tools"],
        )
        config = {"configurable": {"thread_id": thread}}
        started = bool(agent.get_state(config).next)
        agent.invoke(None if started else ask(), config)
        for _ in range(last - first):
            agent.invoke(None, config)
        values = agent.get_state(config).values
    # The last turn waits for its tools to run in the next worker.
    assert_adjacent(values["messages"][:-1])
    print(
        json.dumps(
            {
                "reminders": reminders(values["messages"]),
                "chain": values.get("repeat_tool_reminder"),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
