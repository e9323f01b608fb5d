"""`ignore_arguments`: arguments that vary without meaning are left out of a call's key."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._policy import Rules

from .conftest import Guarded
from .helpers import ask, call, reminders, scripted, turn

Make = Callable[..., Guarded]


@tool
def run_shell(command: str, description: str = "", timeout_s: int = 0, options: Any = None) -> str:
    """Run a shell command."""
    return "ran"


def shell(n: int, **extra: Any) -> AIMessage:
    """`make test` again, described in other words each time."""
    return turn(call("run_shell", {"command": "make test", "description": f"try {n}", **extra}))


def test_a_reworded_description_hides_a_loop_by_default(guarded: Make) -> None:
    agent = guarded(scripted([shell(n) for n in range(3)]), tools=[run_shell])

    assert reminders(agent.invoke(ask())) == []


def test_ignored_arguments_do_not_hide_a_loop_and_the_preview_shows_the_key(
    guarded: Make,
) -> None:
    agent = guarded(
        scripted([shell(n, timeout_s=n) for n in range(5)]),
        tools=[run_shell],
        ignore_arguments={"run_*": ["description", "timeout*"]},
    )
    messages = agent.invoke(ask())

    assert reminders(messages) == [("gentle", "run_shell", 3), ("detailed", "run_shell", 5)]
    detailed = [m for m in messages if is_reminder(m)][-1].content
    assert '- arguments: {"command":"make test"}\n' in detailed


def test_dotted_paths_reach_into_objects_and_through_lists() -> None:
    config = ReminderConfig(ignore_arguments={"edit": ["options.retr*", "edits.note", "*.trace"]})
    edit = config.rules("edit")
    assert edit is not None
    args = {
        "path": "a.py",
        "options": {"retry_after": 3, "retries": 2, "force": True},
        "edits": [{"line": 1, "note": "first"}, {"line": 2, "note": "second"}, "raw"],
        "meta": {"trace": "t-1", "user": "u"},
        3: "not a string key",
    }
    assert edit.keyed(args) == {
        "path": "a.py",
        "options": {"force": True},
        "edits": [{"line": 1}, {"line": 2}, "raw"],
        "meta": {"user": "u"},
        3: "not a string key",
    }
    assert edit.keyed('{"raw": "text"}') == '{"raw": "text"}'  # text arguments stay whole


def test_patterns_for_other_tools_leave_a_tools_rules_as_the_defaults() -> None:
    config = ReminderConfig(ignore_arguments={"other": ["x"]})
    assert config.rules("edit") == Rules((3, 5, 8), result_aware=True)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["description"], "must map tool-name patterns to lists of argument patterns"),
        ({"": ["x"]}, "every tool-name pattern must be a non-empty string, got ''"),
        ({"run": "description"}, "must be a list of argument patterns, got 'description'"),
        ({"run": [""]}, "every pattern must be a non-empty string, got ''"),
        ({"run": ["options..retries"]}, "every dotted segment must be non-empty"),
    ],
)
def test_bad_ignore_arguments_fail_at_construction_naming_the_field(
    value: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"^ignore_arguments: .*{re.escape(message)}"):
        ReminderConfig(ignore_arguments=value)
