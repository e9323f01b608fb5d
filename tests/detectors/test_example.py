"""A detector added the way CONTRIBUTING.md shows: one class, one registry entry, its tests."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
from langchain.agents import create_agent
from typing_extensions import override

from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._detectors import PARTS, Part, Seen, Settings, Words

from ..helpers import ask, assert_adjacent, call, probe, reminders, scripted, turn


class SameTool(Part):
    """The same tool again and again, whatever the arguments."""

    name = "same_tool"
    thresholds = "stale_thresholds"  # the ReminderConfig field it takes its thresholds from
    remembers = True
    needs_result = False
    words = Words(
        gentle="You have called `{tool}` {count} times in a row. Is it getting you closer?",
        detailed="- tool: {tool}\n- calls_in_a_row: {count}\nTry another tool, or finish.",
        stopped="the same tool",
    )

    @override
    def start(self, kept: Mapping[str, Any]) -> dict[str, Any]:
        return dict(kept)

    @override
    def see(self, memory: dict[str, Any], seen: Seen) -> int:
        same = memory.get("tool") == seen.tool
        memory["tool"], memory["times"] = seen.tool, memory.get("times", 0) + 1 if same else 1
        return int(memory["times"])

    @override
    def keep(self, memory: dict[str, Any]) -> dict[str, Any]:
        return memory


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PARTS, SameTool.name, SameTool)  # last: the lowest precedence


def test_a_registered_detector_reminds_through_the_middleware(registered: None) -> None:
    script = [turn(call("probe", {"q": n})) for n in range(4)]
    guard = RepeatToolReminderMiddleware(detect=["same_tool"], stale_thresholds=[3])
    messages = create_agent(scripted(script), tools=[probe], middleware=[guard]).invoke(ask())

    assert_adjacent(messages["messages"])
    assert reminders(messages["messages"]) == [("gentle", "probe", 3)]
    (reminder,) = [m for m in messages["messages"] if m.name == "repeat_tool_reminder"]
    assert "You have called `probe` 3 times in a row." in reminder.text
    assert guard.stats.snapshot()["detectors"] == {"same_tool": {"delivered": 1, "undelivered": 0}}


def test_an_unregistered_detector_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown detector 'same_tool'"):
        RepeatToolReminderMiddleware(detect=["same_tool"])


class SameFailingTool(SameTool):
    """The same tool failing again and again: its results match `error_pattern`."""

    name = "same_failing_tool"
    needs_result = True  # a failure is read from the result

    def __init__(self, config: Settings) -> None:
        # What a detector needs of the configuration it compiles once, when the guard is built.
        self.pattern = re.compile(config.error_pattern or "(?!)")

    @override
    def see(self, memory: dict[str, Any], seen: Seen) -> int | None:
        if not self.pattern.search(seen.text):
            return None  # no failure: nothing to count
        return super().see(memory, seen)


def test_a_registered_detector_is_built_from_the_guards_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(PARTS, SameFailingTool.name, SameFailingTool)
    script = [turn(call("probe", {"q": q})) for q in ("a", "b", "c", "a")]
    guard = RepeatToolReminderMiddleware(
        detect=["same_failing_tool"], error_pattern="^probed [ab]", stale_thresholds=[3]
    )
    messages = create_agent(scripted(script), tools=[probe], middleware=[guard]).invoke(ask())

    assert_adjacent(messages["messages"])
    # `c` did not match the guard's pattern: the count went on from two to three at the last.
    assert reminders(messages["messages"]) == [("gentle", "probe", 3)]
