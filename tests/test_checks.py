"""The checks a setting passes, in the configuration and in a tool's own policy alike."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._checks import validation_problems
from repeat_reminder_langchain._policy import parse_tool_policy


def test_validation_problems_name_the_field_by_its_dotted_path() -> None:
    class Options(BaseModel):
        retries: int

        @field_validator("retries")
        @classmethod
        def _check(cls, value: int) -> int:
            raise ValueError(f"must be a count, got {value}")

    class Outer(BaseModel):
        options: Options

    with pytest.raises(ValidationError) as caught:
        Outer(options={"retries": -1})  # type: ignore[arg-type]
    assert validation_problems(caught.value) == "options.retries: must be a count, got -1"


@pytest.mark.parametrize(
    ("setting", "value", "problem"),
    [
        ("thresholds", [3, 1], "invalid threshold 1 — every threshold must be an integer >= 2"),
        (
            "thresholds",
            [True, 3],
            "invalid threshold True — every threshold must be an integer >= 2",
        ),
        ("thresholds", "3,5", "must be a list of integers, got '3,5'"),
        ("repeat_every", 0, "must be an integer >= 1, or None, got 0"),
        ("ignore_arguments", ["a..b"], "invalid argument pattern 'a..b'"),
    ],
)
def test_a_tool_policy_is_checked_as_the_configuration_is(
    setting: str, value: object, problem: str
) -> None:
    config_value = {"grep": value} if setting == "ignore_arguments" else value
    with pytest.raises(ConfigError, match=problem):
        ReminderConfig(**{setting: config_value})
    with pytest.raises(ValueError, match=problem):
        parse_tool_policy({"repeat_reminder": {setting: value}})
