"""A detector added the way CONTRIBUTING.md shows: one class, one registry entry, its tests.

It has thresholds of its own and an option of its own, both reaching it by its name
(`detectors={"same_tool": {...}}`), and says one thing beside the count (`variants`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest
from langchain.agents import create_agent
from typing_extensions import override

from repeat_reminder_langchain import ConfigError, ReminderConfig, RepeatToolReminderMiddleware
from repeat_reminder_langchain._detectors import PARTS, Part, Seen, Settings, Words

from ..helpers import ask, assert_adjacent, call, probe, reminders, scripted, turn


class SameTool(Part):
    """The same tool again and again, whatever the arguments."""

    name = "same_tool"
    settings: ClassVar[Mapping[str, Any]] = {"thresholds": (4,), "count_failures": True}
    says: ClassVar[Mapping[str, Any]] = {"variants": 2}  # what `details` gives, with a sample
    remembers = True
    words = Words(
        gentle="You have called `{tool}` {count} times in a row ({variants} argument sets).",
        detailed="- tool: {tool}\n- calls_in_a_row: {count}\nTry another tool, or finish.",
        stopped="the same tool",
    )

    def __init__(self, config: Settings, settings: Mapping[str, Any]) -> None:
        # Its own settings, resolved: the defaults above under what the user gave.
        self.count_failures = settings["count_failures"]

    @override
    def start(self, kept: Mapping[str, Any]) -> dict[str, Any]:
        return {"tool": kept.get("tool", ""), "keys": list(kept.get("keys", []))}

    @override
    def see(self, memory: dict[str, Any], seen: Seen) -> int | None:
        if seen.failed and not self.count_failures:
            return None  # left out: it neither counts nor breaks the run
        if memory["tool"] != seen.tool:
            memory["tool"], memory["keys"] = seen.tool, []
        memory["keys"].append(seen.key[:8])
        return len(memory["keys"])

    @override
    def keep(self, memory: dict[str, Any]) -> dict[str, Any]:
        return memory

    @override
    def details(self, memory: dict[str, Any], cut: Callable[[str], str]) -> Mapping[str, Any]:
        return {"variants": len(set(memory["keys"]))}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PARTS, SameTool.name, SameTool)  # last: the lowest precedence


def run(guard: RepeatToolReminderMiddleware, queries: str) -> list[Any]:
    script = [turn(call("probe", {"q": q})) for q in queries]
    messages = create_agent(scripted(script), tools=[probe], middleware=[guard]).invoke(ask())
    assert_adjacent(messages["messages"])
    return list(messages["messages"])


def test_a_registered_detector_is_configured_by_its_name(registered: None) -> None:
    guard = RepeatToolReminderMiddleware(
        detect=["same_tool"], detectors={"same_tool": {"thresholds": [2, 3]}}
    )
    messages = run(guard, "abab")

    assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    gentle = next(m for m in messages if m.name == "repeat_tool_reminder")
    assert "You have called `probe` 2 times in a row (2 argument sets)." in gentle.text
    assert guard.stats.snapshot()["detectors"] == {"same_tool": {"delivered": 2, "undelivered": 0}}
    assert guard.config.detector_settings("same_tool") == {
        "thresholds": (2, 3),
        "count_failures": True,
    }


def test_a_registered_detector_keeps_its_own_defaults(registered: None) -> None:
    messages = run(RepeatToolReminderMiddleware(detect=["same_tool"]), "abcab")
    assert reminders(messages) == [("gentle", "probe", 4)]


def test_a_registered_detectors_own_option_reaches_it(registered: None) -> None:
    # Every result fails by the pattern; the option leaves failures out of the count.
    settings = {"detect": ["same_tool"], "error_pattern": "^probed"}
    counted = RepeatToolReminderMiddleware(**settings)
    assert reminders(run(counted, "abcd")) == [("gentle", "probe", 4)]
    left_out = RepeatToolReminderMiddleware(
        **settings, detectors={"same_tool": {"count_failures": False}}
    )
    assert reminders(run(left_out, "abcd")) == []


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"detectors": {"same_tool": {"count_failures": "no"}}},
            "detectors: same_tool.count_failures: must be a bool, got 'no'",
        ),
        (
            {"detectors": {"same_tool": {"count_failure": False}}},
            "detectors: same_tool: unknown setting 'count_failure'; did you mean 'count_failures'?",
        ),
        (
            {"detectors": {"same_tool": {"thresholds": [1]}}},
            "detectors: same_tool.thresholds: invalid threshold 1",
        ),
        (
            {"detectors": {"same_tool": {"thresholds": [3, 6]}}, "escalate_after": 5},
            "pass detectors.same_tool.thresholds=[3] (reminders before the stop)",
        ),
        (
            {"words": {"same_tool": {"gentle": "{tool}: {error}"}}},
            "words: same_tool.gentle: unknown field {error}; the fields are tool, count, level, "
            "detector, arguments, variants",
        ),
    ],
)
def test_a_registered_detectors_settings_are_checked_at_construction(
    registered: None, fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        RepeatToolReminderMiddleware(detect=["same_tool"], **fields)


def test_an_unregistered_detector_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown detector 'same_tool'"):
        RepeatToolReminderMiddleware(detect=["same_tool"])
    with pytest.raises(ConfigError, match="detectors: unknown detector 'same_tool'"):
        ReminderConfig(detectors={"same_tool": {}})


class SameFailingTool(SameTool):
    """The same tool failing again and again: its results match `error_pattern`."""

    name = "same_failing_tool"

    def __init__(self, config: Settings, settings: Mapping[str, Any]) -> None:
        # What a detector needs of the configuration it compiles once, when the guard is built.
        super().__init__(config, settings)
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
    guard = RepeatToolReminderMiddleware(
        detect=["same_failing_tool"],
        error_pattern="^probed [ab]",
        detectors={"same_failing_tool": {"thresholds": [3]}},
    )
    # `c` did not match the guard's pattern: the count went on from two to three at the last.
    assert reminders(run(guard, "abca")) == [("gentle", "probe", 3)]
