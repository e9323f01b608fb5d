"""Several worker processes share one thread through a real checkpointer; the count carries on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The workers (tests/worker.py) keep their thread in these optional peers (the dev extra):
# `make test-lowest` runs without them and skips this module.
pytest.importorskip("langgraph.checkpoint.sqlite")
pytest.importorskip("langgraph.checkpoint.postgres")

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = os.environ.get("REPEAT_REMINDER_POSTGRES_DSN")


class Worker:
    """A worker process of tests/worker.py, driven a step at a time."""

    def __init__(self, backend: str, target: str, thread: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.worker", backend, target, thread],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def step(self) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("step\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(self.stop())
        return json.loads(line)  # type: ignore[no-any-return]

    def stop(self) -> str:
        _, errors = self.process.communicate(timeout=60)
        return errors


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.process.poll() is None:
            worker.stop()


def test_a_second_sqlite_worker_continues_the_count_of_the_first(
    tmp_path: Path, workers: list[Worker]
) -> None:
    db = str(tmp_path / "checkpoints.sqlite")
    first = Worker("sqlite", db, "shared")
    workers.append(first)
    reports = [first.step() for _ in range(3)]
    first.stop()  # the first process exits in the middle of the loop
    assert [r["chain"] and r["chain"]["count"] for r in reports] == [None, 1, 2]
    assert reports[-1]["reminders"] == []

    second = Worker("sqlite", db, "shared")
    workers.append(second)
    reports = [second.step() for _ in range(4)]

    assert [r["chain"]["count"] for r in reports] == [3, 4, 5, 6]
    assert reports[-1]["reminders"] == [["gentle", "probe", 3], ["detailed", "probe", 5]]
    assert reports[-1]["waiting"] is False


@pytest.mark.skipif(
    not POSTGRES,
    reason="no PostgreSQL server: `make test` starts a throwaway one when PostgreSQL is "
    "installed (.ci/run installs it); or set REPEAT_REMINDER_POSTGRES_DSN",
)
def test_two_postgres_workers_alternating_turns_keep_one_count(workers: list[Worker]) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    assert POSTGRES is not None
    with PostgresSaver.from_conn_string(POSTGRES) as saver:
        saver.setup()
    thread = f"alternating-{os.getpid()}"
    pair = [Worker("postgres", POSTGRES, thread), Worker("postgres", POSTGRES, thread)]
    workers.extend(pair)

    reports = [pair[n % 2].step() for n in range(7)]

    assert [r["chain"] and r["chain"]["count"] for r in reports] == [None, 1, 2, 3, 4, 5, 6]
    assert reports[3]["reminders"] == [["gentle", "probe", 3]]
    assert reports[-1]["reminders"] == [["gentle", "probe", 3], ["detailed", "probe", 5]]
    assert reports[-1]["waiting"] is False
