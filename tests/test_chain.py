"""Counting one agent's turns: streaks, thresholds, transparency and turn-level de-duplication."""

from __future__ import annotations

from typing import Any

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain.chain import Call, Chain, count_calls
from repeat_reminder_langchain.policy import ToolPolicy

CONFIG = ReminderConfig(thresholds=[2, 4])


def play(turns: list[list[Call]], config: ReminderConfig = CONFIG) -> tuple[Chain, list[Any]]:
    chain, found = Chain(), []
    for number, calls in enumerate(turns):
        tally = count_calls(chain, f"turn-{number}", calls, config)
        chain = tally.chain
        found += [(r.level, r.tool, r.count) for r in tally.reminders]
    return chain, found


def c(call_id: str, tool: str = "probe", args: Any = None) -> Call:
    return Call(call_id, tool, {"q": 1} if args is None else args)


def test_levels_follow_the_sorted_thresholds() -> None:
    assert [ToolPolicy((2, 4, 6)).level(n) for n in range(1, 8)] == [
        None, "gentle", None, "detailed", None, "detailed", None,
    ]  # fmt: skip


def test_identical_calls_build_a_streak_and_draw_reminders_at_thresholds() -> None:
    chain, found = play([[c(f"{i}")] for i in range(5)])
    assert found == [("gentle", "probe", 2), ("detailed", "probe", 4)]
    assert (chain.tool, chain.count) == ("probe", 5)


def test_a_different_tool_or_different_arguments_start_a_new_streak() -> None:
    _, found = play([[c("1")], [c("2", tool="other")], [c("3")], [c("4", args={"q": 2})], [c("5")]])
    assert found == []


def test_untracked_calls_neither_count_nor_reset() -> None:
    config = ReminderConfig(thresholds=[3], exclude=["todo"])
    chain, found = play([[c("1"), c("2", "todo"), c("3"), c("4", "todo"), c("5")]], config)
    assert found == [("gentle", "probe", 3)]
    assert chain.counted == ("1", "2", "3", "4", "5")


def test_a_call_seen_again_in_its_turn_does_not_count_again() -> None:
    first = count_calls(Chain(), "t", [c("a")], CONFIG)
    again = count_calls(first.chain, "t", [c("a"), c("b")], CONFIG)
    assert first.reminders == []
    assert [(r.level, r.count) for r in again.reminders] == [("gentle", 2)]
    assert again.chain.counted == ("a", "b")
    assert again.calls == 1
    # The same id in a later turn is a new call (some providers number calls per turn).
    later = count_calls(again.chain, "u", [c("a")], CONFIG)
    assert later.chain.count == 3
    assert later.chain.counted == ("a",)


def test_reset_clears_the_streak_but_keeps_the_turn_counted() -> None:
    chain = count_calls(Chain(), "t", [c("a"), c("b")], CONFIG).chain
    cleared = chain.reset()
    assert (cleared.tool, cleared.count, cleared.turn, cleared.counted) == (
        None,
        0,
        "t",
        ("a", "b"),
    )
    again = count_calls(cleared, "t", [c("a"), c("b")], CONFIG)
    assert again.chain == cleared
    assert again.reminders == []


def test_the_reminder_quotes_the_capped_canonical_arguments() -> None:
    config = ReminderConfig(thresholds=[2], arguments_preview_chars=5)
    reminders = count_calls(
        Chain(), "t", [c("a", args={"b": 1, "a": 2})] * 1 + [c("b", args={"a": 2, "b": 1})], config
    ).reminders
    assert reminders[0].arguments == '{"a":… (+8 more chars)'
