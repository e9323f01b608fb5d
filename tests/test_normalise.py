"""Results compared as a person would: the normaliser, its settings, and the counts it changes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._counter import LoopCounter, Turn
from repeat_reminder_langchain._normalise import normalise_result, normaliser, with_patterns
from repeat_reminder_langchain._policy import ToolPolicy, parse_tool_policy

from .helpers import c, play

# -- the guard's normaliser: each form it sets aside ------------------------------------------


@pytest.mark.parametrize(
    ("text", "compared"),
    [
        # UUIDs, of any version and case
        ("job 123e4567-e89b-12d3-a456-426614174000 queued", "job <uuid> queued"),
        ("id=550E8400-E29B-41D4-A716-446655440000", "id=<uuid>"),
        # ISO 8601 dates with a time: extended, with a space, with fraction and zone; basic
        ("checked at 2026-12-05T02:35:14Z.", "checked at <timestamp>."),
        ("at 2026-12-05T02:35:14.120+01:00 ok", "at <timestamp> ok"),
        ("2026-12-05 02:35 pending", "<timestamp> pending"),
        ("stamp 20261205T023514Z", "stamp <timestamp>"),
        # request ids: a provider's token, W3C trace context, a labelled value
        ("rate limited (req_011CRf6s3xKbD9)", "rate limited (<request id>)"),
        ("req_12345678", "<request id>"),  # the shortest text a form matches
        (
            "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "traceparent: <request id>",
        ),
        (
            '{"request_id": "a1b2c3d4e5", "status": 503}',
            '{"request_id": "<request id>", "status": 503}',
        ),
        ("X-Request-ID: 7f3c9a0b11", "X-Request-ID: <request id>"),
        ("traceId=abcdef123456 spanId=0011aabbcc", "traceId=<request id> spanId=<request id>"),
        ("Correlation ID: QX81-77Z", "Correlation ID: <request id>"),
    ],
)
def test_the_guards_normaliser_sets_each_form_aside(text: str, compared: str) -> None:
    assert normalise_result(text) == compared


@pytest.mark.parametrize(
    "text",
    [
        "flight HAT170 on 2024-05-15, seat 12A",  # a date alone is what it says
        "commit e5fa44f2b31c1fb553b6021e7360d07d5d91ff5e",  # a hash is no request id
        "[... 4,210 chars, sha1 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b]",
        "version 1.2.3-rc1, 10:30 meeting, user_id: 42",  # a time alone; a short id
        "request_id: abc",  # too short to be generated
        "req_1234567",  # shorter than any form
        "preq_abcdefghij and 1123e4567-e89b-12d3-a456-426614174000",  # inside a word
    ],
)
def test_the_guards_normaliser_leaves_what_means_something(text: str) -> None:
    assert normalise_result(text) == text


def test_a_result_without_any_form_is_returned_as_it_is() -> None:
    text = "total 12\n-rw-r--r-- 1 root root 3052 Dec  5 01:47 README.md\n" * 20
    assert normalise_result(text) is text  # found by the quick searches, not by substitution


def test_a_tools_patterns_are_set_aside_after_the_normaliser() -> None:
    both = with_patterns(normalise_result, [r"took \d+ ms", "build #\\d+"])
    alone = with_patterns(None, [r"took \d+ ms"])
    assert both is not None and alone is not None
    assert both("ok at 2026-12-05T02:35:14Z, took 12 ms") == "ok at <timestamp>, <set aside>"
    assert both("build #7 green") == "<set aside> green"
    assert (
        alone("ok at 2026-12-05T02:35:14Z, took 12 ms") == "ok at 2026-12-05T02:35:14Z, <set aside>"
    )
    assert with_patterns(normalise_result, ()) is normalise_result


def test_the_setting_is_the_guards_normaliser_none_or_the_users_guarded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert normaliser(True) is normalise_result
    assert normaliser(False) is None
    upper = normaliser(str.upper)
    assert upper is not None and upper("ok") == "OK"

    calls = iter([ValueError("boom"), None])

    def flaky(text: str) -> Any:
        problem = next(calls)
        if problem is not None:
            raise problem
        return problem

    guarded = normaliser(flaky)
    assert guarded is not None
    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        assert guarded("as it came") == "as it came"  # it raised: the text as it is
        assert guarded("as it came") == "as it came"  # it returned no text
    assert [r.getMessage() for r in caplog.records] == [
        "normalise_results failed (ValueError('boom')); the result is compared as it is",
        "normalise_results returned NoneType, not text; the result is compared as it is",
    ]


# -- the setting and the tool's policy -----------------------------------------------------------


def test_normalise_results_takes_true_false_or_a_function_that_works() -> None:
    assert ReminderConfig().normalise_results is True
    assert ReminderConfig(normalise_results=False).rules("t").normalise is None  # type: ignore[union-attr]
    assert ReminderConfig(normalise_results=str.lower).model_dump()["normalise_results"] == (
        "<function str.lower>"
    )
    with pytest.raises(ConfigError, match=r"^normalise_results: must be True, False or a func"):
        ReminderConfig(normalise_results="uuid")
    with pytest.raises(ConfigError, match=r"^normalise_results: the function failed on a sample"):
        ReminderConfig(normalise_results=lambda text, tool: text)
    with pytest.raises(ConfigError, match=r"^normalise_results: the function must return text"):
        ReminderConfig(normalise_results=len)


def test_normalise_results_is_written_to_a_file_as_true_or_false_only(tmp_path: Path) -> None:
    path = tmp_path / "guard.toml"
    ReminderConfig(normalise_results=False).to_file(path)
    assert ReminderConfig.from_file(path).normalise_results is False
    with pytest.raises(ConfigError, match="normalise_results: a function cannot be written"):
        ReminderConfig(normalise_results=str.lower).to_file(path)


def test_a_tool_declares_its_own_patterns_and_a_bad_one_is_refused() -> None:
    policy = parse_tool_policy({"repeat_reminder": {"normalise_results": [r"took \d+ ms"]}})
    assert policy == ToolPolicy(normalise_results=(r"took \d+ ms",))
    rules = ReminderConfig(normalise_results=False).rules("t", policy)
    assert rules is not None and rules.normalise is not None
    assert rules.normalise("2026-12-05T02:35:14Z took 3 ms") == "2026-12-05T02:35:14Z <set aside>"
    with pytest.raises(ValueError, match=r"normalise_results: invalid regular expression '\('"):
        parse_tool_policy({"repeat_reminder": {"normalise_results": ["("]}})
    with pytest.raises(ValueError, match="normalise_results: must be a list of regular-expr"):
        parse_tool_policy({"repeat_reminder": {"normalise_results": "took"}})


# -- what it changes: every comparison of results -----------------------------------------------

NO_NORMALISER = {"normalise_results": False}


def status(n: int) -> str:
    return f"job 7: pending (checked 2026-12-05T02:3{n}:00Z, request_id=a1b2c3d4e{n})"


def between(n: int, **fields: Any) -> list[Any]:
    return [c(tool="other", args={"n": n}, result=f"other {n}", **fields)]


@pytest.mark.parametrize("fields", [{}, NO_NORMALISER])
def test_stale_counts_results_that_differ_only_by_a_timestamp_and_a_request_id(
    fields: dict[str, Any],
) -> None:
    config = ReminderConfig(detect=["stale"], **fields)
    turns = []
    for n in range(3):
        turns += [[c(result=status(n))], between(n)]
    found = play(turns, config)[1]
    assert found == ([] if fields else [("stale", "gentle", "probe", 3)])


@pytest.mark.parametrize("fields", [{}, NO_NORMALISER])
def test_a_new_timestamp_is_no_progress(fields: dict[str, Any]) -> None:
    config = ReminderConfig(progress="result", thresholds=[3], **fields)
    turns = [[c(result=status(n))] for n in range(3)]
    assert play(turns, config)[1] == ([] if fields else [("repeat", "gentle", "probe", 3)])


def test_failures_that_differ_only_by_a_request_id_are_one_error() -> None:
    def failure(n: int) -> Any:
        return c(args={"n": n}, result=f"Error: 503 (req_0123456789ab{n})", failed=True)

    same = ReminderConfig(detect=["same_error"], same_error_thresholds=[3])
    recurring = ReminderConfig(detect=["recurring_error"], recurring_error_thresholds=[2])
    assert play([[failure(n)] for n in range(3)], same)[1] == [("same_error", "gentle", "probe", 3)]
    shown = LoopCounter(same).count({"count": 0}, Turn("t", tuple(failure(n) for n in range(3))))
    assert shown.reminders[0].details["error"] == "Error: 503 (req_0123456789ab2)"  # as it came
    again = [[failure(0)], between(0), [failure(0)]]
    assert play(again, recurring)[1] == [("recurring_error", "gentle", "probe", 2)]


def test_cycles_and_outputs_compare_normalised_results() -> None:
    cycle = ReminderConfig(detect=["cycle"], cycle_thresholds=[2])
    rounds = [
        [c(tool=tool, args={}, result=f"{tool} done at 2026-12-05T02:3{n}:00Z")]
        for n in range(2)
        for tool in ("edit", "run")
    ]
    assert play(rounds, cycle)[1] == [("cycle", "gentle", "run", 2)]

    outputs = ReminderConfig(detect=["same_output"], detectors={"same_output": {"remind": True}})
    long = "FAILED test_x.py::test_y - AssertionError: 1 != 2, session "
    runs = [
        [c(args={"n": n}, result=long + f"123e4567-e89b-12d3-a456-42661417400{n}")]
        for n in range(3)
    ]
    assert play(runs, outputs)[1] == [("same_output", "gentle", "probe", 3)]
    exact = ReminderConfig(
        **{**outputs.model_dump(include={"detect", "detectors"}), **NO_NORMALISER}
    )
    assert play(runs, exact)[1] == []


@pytest.mark.parametrize("fields", [{}, NO_NORMALISER])
def test_content_blocks_are_compared_normalised_or_as_they_came(fields: dict[str, Any]) -> None:
    config = ReminderConfig(detect=["stale"], stale_thresholds=[2], **fields)

    def blocks(n: int) -> list[Any]:
        return [{"type": "text", "text": f"pending at 2026-12-05T02:3{n}:00Z"}]

    _, found = play([[c(result=blocks(0))], between(0), [c(result=blocks(1))]], config)
    assert found == ([] if fields else [("stale", "gentle", "probe", 2)])
    _, found = play([[c(result=blocks(0))], between(0), [c(result=blocks(0))]], config)
    assert found == [("stale", "gentle", "probe", 2)]
