"""`repeat_every`: after the last threshold, silence by default, or a detailed reminder every N."""

from __future__ import annotations

from collections.abc import Callable

from repeat_reminder_langchain._policy import Rules

from .conftest import Guarded
from .helpers import ask, reminders, repeat, scripted

SAME = {"q": "same"}
Make = Callable[..., Guarded]


def test_after_the_last_threshold_the_guard_is_silent_by_default(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 7)), thresholds=[2, 3])

    assert reminders(agent.invoke(ask())) == [("gentle", "probe", 2), ("detailed", "probe", 3)]


def test_repeat_every_keeps_reminding_after_the_last_threshold(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 7)), thresholds=[2, 3], repeat_every=2)

    assert reminders(agent.invoke(ask())) == [
        ("gentle", "probe", 2), ("detailed", "probe", 3),
        ("detailed", "probe", 5), ("detailed", "probe", 7),
    ]  # fmt: skip


def test_repeat_every_draws_a_detailed_reminder_every_n_past_the_last_threshold() -> None:
    rules = Rules((3, 5), repeat_every=3)
    assert [n for n in range(1, 15) if rules.level(n)] == [3, 5, 8, 11, 14]
    assert [rules.level(n) for n in (3, 5, 8)] == ["gentle", "detailed", "detailed"]
    assert Rules((3,), repeat_every=1).level(4) == "detailed"
    assert [n for n in range(1, 13) if Rules((3,), repeat_every=3).level(n)] == [3, 6, 9, 12]
