"""`progress="result"`: the same call with a new result is progress and starts a new run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ..conftest import Guarded
from ..helpers import ask, kept_record, reminders, repeat, scripted

SAME = {"q": "same"}
Make = Callable[..., Guarded]


def job_tool(results: list[str]) -> Any:
    """A job-status tool that returns `results` in turn."""

    @tool
    def job_status(job_id: str) -> str:
        """Report a job's status."""
        return results.pop(0)

    return job_status


def polls(n: int) -> list[AIMessage]:
    return repeat("job_status", {"job_id": "7"}, n)


def test_a_moving_result_is_progress_when_results_count(guarded: Make) -> None:
    moving = [f"running, {p}% done" for p in range(10, 60, 10)]
    by_default = guarded(scripted(polls(5)), tools=[job_tool(list(moving))])
    by_result = guarded(scripted(polls(5)), tools=[job_tool(list(moving))], progress="result")

    assert reminders(by_default.invoke(ask())) == [
        ("gentle", "job_status", 3), ("detailed", "job_status", 5),
    ]  # fmt: skip
    assert reminders(by_result.invoke(ask())) == []


def test_the_same_result_still_counts_when_results_count(guarded: Make) -> None:
    results = ["running", "running", "done", "done", "done"]
    agent = guarded(
        scripted(polls(5)), tools=[job_tool(results)], progress="result", thresholds=[2, 3]
    )

    # Runs: 1, 2 (gentle), then a new result starts over: 1, 2 (gentle), 3 (detailed).
    assert reminders(agent.invoke(ask())) == [
        ("gentle", "job_status", 2), ("gentle", "job_status", 2), ("detailed", "job_status", 3),
    ]  # fmt: skip


def test_errors_compare_by_their_text(guarded: Make) -> None:
    agent = guarded(scripted(repeat("missing_tool", SAME, 3)), progress="result")

    assert reminders(agent.invoke(ask())) == [("gentle", "missing_tool", 3)]


@pytest.mark.parametrize("progress", ["result", "none"])
def test_results_are_only_fingerprinted_when_they_count(
    guarded: Make, progress: str, thread: str
) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 2)),
        checkpointer=InMemorySaver(),
        progress=progress,
        thresholds=[2],
    )
    agent.invoke(ask(), thread)

    record = kept_record(agent, thread)
    assert record["count"] == 2
    assert len(record["result"]) == (32 if progress == "result" else 0)
