"""LangGraph's prebuilt `create_react_agent`, with the node as its `pre_model_hook`."""

from __future__ import annotations

import logging

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from repeat_reminder_langchain import (
    RepeatToolReminderAgentState,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderNode,
)

from .helpers import LoopModel, ask, assert_adjacent, probe, reminders

# Deprecated in favour of langchain's create_agent, and still in countless tutorials.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

EXPECTED = [("gentle", "probe", 3), ("detailed", "probe", 5)]


def test_the_handlers_node_reminds_as_a_pre_model_hook() -> None:
    guard = RepeatToolReminderCallbackHandler()
    agent = create_react_agent(LoopModel(), [probe], pre_model_hook=RepeatToolReminderNode(guard))
    messages = agent.invoke(ask("loop 6"), {"callbacks": [guard]})["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED


@pytest.mark.parametrize("runs", [1, 2])
def test_the_state_kept_node_reminds_with_its_state_schema(runs: int) -> None:
    agent = create_react_agent(
        LoopModel(),
        [probe],
        pre_model_hook=RepeatToolReminderNode(),
        state_schema=RepeatToolReminderAgentState,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "react"}}
    for _ in range(runs):
        messages = agent.invoke(ask("loop 6"), config)["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED * runs  # a new user message starts over
    assert agent.get_state(config).values["repeat_tool_reminder"]["count"] == 6


def test_the_log_lines_of_one_run_carry_one_id(caplog: pytest.LogCaptureFixture) -> None:
    agent = create_react_agent(
        LoopModel(),
        [probe],
        pre_model_hook=RepeatToolReminderNode(),
        state_schema=RepeatToolReminderAgentState,
    )
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        assert_adjacent(agent.invoke(ask("loop 6"))["messages"])
        assert_adjacent(agent.invoke(ask("loop 6"))["messages"])

    runs = [
        record.run_id for record in caplog.records if record.name == "repeat_reminder_langchain"
    ]
    assert len(runs) == 4
    assert runs[0] == runs[1] != runs[2] == runs[3]
