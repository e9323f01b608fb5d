"""Configuration: defaults, fail-loud validation naming the field, and tool-name patterns."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from repeat_reminder_langchain import ReminderConfig


def test_defaults() -> None:
    config = ReminderConfig()
    assert config.thresholds == (3, 5, 8)
    assert config.include == config.exclude == ()
    assert config.arguments_preview_chars == 500
    assert config.message_type == "system"


def test_unsorted_thresholds_are_accepted_and_sorted() -> None:
    assert ReminderConfig(thresholds=[8, 3, 5]).thresholds == (3, 5, 8)
    assert ReminderConfig(thresholds=(4,)).thresholds == (4,)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"thresholds": []}, "thresholds must not be empty"),
        ({"thresholds": "3,5"}, "thresholds must be a list of integers"),
        ({"thresholds": 3}, "thresholds must be a list of integers"),
        ({"thresholds": [1, 3]}, "invalid threshold 1 — every threshold must be an integer >= 2"),
        ({"thresholds": [2.5]}, "invalid threshold 2.5"),
        ({"thresholds": [3.0]}, "invalid threshold 3.0"),
        ({"thresholds": [True, 3]}, "invalid threshold True"),
        ({"thresholds": ["3"]}, "invalid threshold '3'"),
        ({"thresholds": [3, 3]}, "thresholds must not contain duplicates"),
        (
            {"arguments_preview_chars": 0},
            "invalid arguments_preview_chars 0 — must be an integer >= 1",
        ),
        ({"arguments_preview_chars": 12.5}, "invalid arguments_preview_chars 12.5"),
        ({"arguments_preview_chars": "500"}, "invalid arguments_preview_chars '500'"),
        ({"include": "probe"}, "include\n.*must be a list of tool-name patterns"),
        ({"exclude": ["ok", 3]}, "exclude\n.*every pattern must be a non-empty string, got 3"),
        ({"exclude": [""]}, "every pattern must be a non-empty string, got ''"),
        ({"message_type": "assistant"}, "message_type\n.*'system' or 'human'"),
        ({"treshold": [3]}, "treshold\n.*Extra inputs are not permitted"),
    ],
)
def test_bad_values_fail_at_construction_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        ReminderConfig(**fields)
    assert isinstance(caught.value, ValueError)
    assert next(iter(fields)) in str(caught.value)


def test_the_configuration_is_frozen() -> None:
    config = ReminderConfig()
    with pytest.raises(ValidationError, match="frozen"):
        config.thresholds = (2,)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("include", "exclude", "tracked", "untracked"),
    [
        ([], [], ["probe", "anything"], []),
        (["pro*"], [], ["probe", "pro", "pro_x"], ["other", "aprobe"]),
        ([], ["todo_*"], ["probe", "todo"], ["todo_write", "todo_"]),
        ([], ["pr.be"], ["probe", "prxbe"], ["pr.be"]),
        (
            [],
            ["a?c", "x+y", "(z)", "[q]", "b|c", "^d$"],
            ["abc", "xxy", "z", "q", "b"],
            ["a?c", "x+y", "(z)", "[q]", "b|c", "^d$"],
        ),
        (["*_read", "grep"], ["secret_*"], ["file_read", "grep"], ["secret_read", "grep2", "Grep"]),
        (["mcp_*"], [], ["mcp_"], ["probe"]),
        (["a*b*c"], [], ["abc", "a__b__c", "a\nb\nc"], ["ab", "acb"]),
    ],
)
def test_patterns_match_whole_names_with_star_as_the_only_wildcard(
    include: list[str], exclude: list[str], tracked: list[str], untracked: list[str]
) -> None:
    config = ReminderConfig(include=include, exclude=exclude)
    assert [name for name in tracked if not config.tracks(name)] == []
    assert [name for name in untracked if config.tracks(name)] == []


def test_exclude_wins_over_include() -> None:
    config = ReminderConfig(include=["*"], exclude=["probe"])
    assert not config.tracks("probe")
    assert config.tracks("other")
