"""Several worker processes share one thread through a real checkpointer; the count carries on."""

from __future__ import annotations

import json
import os
import signal
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
    """A worker process of tests/worker.py, driven a command at a time."""

    def __init__(
        self, backend: str, target: str, thread: str, face: str, hang_at: int | None = None
    ) -> None:
        command = [sys.executable, "-m", "tests.worker", backend, target, thread, face]
        self.process = subprocess.Popen(
            [*command, *([str(hang_at)] if hang_at else [])],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def send(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\n")
        self.process.stdin.flush()
        return self.read()

    def step(self) -> dict[str, Any]:
        return self.send("step")

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(self.stop())
        return json.loads(line)  # type: ignore[no-any-return]

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> str:
        _, errors = self.process.communicate(timeout=60)
        return errors


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.communicate(timeout=60)


def counts(report: dict[str, Any]) -> int | None:
    return report["counts"]["count"] if report["counts"] else None


FACES = ["middleware", "state"]
NEEDS_POSTGRES = pytest.mark.skipif(
    not POSTGRES,
    reason="no PostgreSQL server: `make test` starts a throwaway one when PostgreSQL is "
    "installed (.ci/run installs it); or set REPEAT_REMINDER_POSTGRES_DSN",
)


def _postgres() -> str:
    from langgraph.checkpoint.postgres import PostgresSaver

    assert POSTGRES is not None
    with PostgresSaver.from_conn_string(POSTGRES) as saver:
        saver.setup()
    return POSTGRES


@pytest.mark.parametrize("face", FACES)
def test_a_second_sqlite_worker_continues_the_count_of_the_first(
    tmp_path: Path, workers: list[Worker], face: str
) -> None:
    db = str(tmp_path / "checkpoints.sqlite")
    first = Worker("sqlite", db, "shared", face)
    workers.append(first)
    reports = [first.step() for _ in range(3)]
    first.stop()  # the first process exits in the middle of the loop
    assert [counts(r) for r in reports] == [None, 1, 2]
    assert reports[-1]["reminders"] == []

    second = Worker("sqlite", db, "shared", face)
    workers.append(second)
    reports = [second.step() for _ in range(4)]

    assert [counts(r) for r in reports] == [3, 4, 5, 6]
    assert reports[-1]["reminders"] == [["gentle", "probe", 3], ["detailed", "probe", 5]]
    assert reports[-1]["waiting"] is False


@NEEDS_POSTGRES
@pytest.mark.parametrize("face", FACES)
def test_two_postgres_workers_alternating_turns_keep_one_count(
    workers: list[Worker], face: str
) -> None:
    dsn = _postgres()
    thread = f"alternating-{face}-{os.getpid()}"
    pair = [Worker("postgres", dsn, thread, face), Worker("postgres", dsn, thread, face)]
    workers.extend(pair)

    reports = [pair[n % 2].step() for n in range(7)]

    assert [counts(r) for r in reports] == [None, 1, 2, 3, 4, 5, 6]
    assert reports[3]["reminders"] == [["gentle", "probe", 3]]
    assert reports[-1]["reminders"] == [["gentle", "probe", 3], ["detailed", "probe", 5]]
    assert reports[-1]["waiting"] is False


def _killed_and_resumed(workers: list[Worker], backend: str, target: str, face: str) -> Any:
    thread = f"killed-{face}-{os.getpid()}"
    doomed = Worker(backend, target, thread, face, hang_at=4)
    workers.append(doomed)
    doomed.process.stdin.write("run\n")  # type: ignore[union-attr]
    doomed.process.stdin.flush()  # type: ignore[union-attr]
    assert doomed.read() == {"hanging": 4}  # the fourth call's tool is running
    doomed.kill()
    rescuer = Worker(backend, target, thread, face)
    workers.append(rescuer)
    return rescuer.send("run")


@pytest.mark.parametrize("face", FACES)
def test_a_worker_killed_inside_a_tool_is_resumed_by_another_sqlite_worker(
    tmp_path: Path, workers: list[Worker], face: str
) -> None:
    report = _killed_and_resumed(workers, "sqlite", str(tmp_path / "c.sqlite"), face)

    # The killed turn is run again from the last checkpoint and counted once: six calls,
    # counted 1 to 6, reminders at 3 and 5 only.
    assert report["calls"] == 6
    assert counts(report) == 6
    assert report["reminders"] == [["gentle", "probe", 3], ["detailed", "probe", 5]]
    assert report["waiting"] is False


@NEEDS_POSTGRES
@pytest.mark.parametrize("face", FACES)
def test_a_worker_killed_inside_a_tool_is_resumed_by_another_postgres_worker(
    workers: list[Worker], face: str
) -> None:
    report = _killed_and_resumed(workers, "postgres", _postgres(), face)

    assert report["calls"] == 6
    assert counts(report) == 6
    assert report["reminders"] == [["gentle", "probe", 3], ["detailed", "probe", 5]]
    assert report["waiting"] is False
