"""The audit's throughput and memory: generated logs and checkpointers, audited in child processes.

A log repeats the conversations of the tests' corpus excerpt (real agents' conversations) until
it reaches its size. The audit runs as a user runs it, `python -m repeat_reminder_langchain
audit`, in a process of its own, with the defaults and with every detector on. Its wall time on
the large log gives the throughput. Its peak resident memory on a small and on a large log gives
the memory each further megabyte of input costs: near zero when memory follows the largest
conversation rather than the file (the process's own start, its imports, is the same in both).

`threads()` does the same for `audit --checkpointer`: the latest states of real runs (a guarded
`create_agent` agent and a plain graph whose model loops, and a guarded agent whose calls all
differ) are written with the saver's `put` under new thread ids, 10,000 threads to a SQLite file
and, when `REPEAT_REMINDER_POSTGRES_DSN` names a server (`scripts/with-postgres`), 3,000 to a
PostgreSQL database of their own. Each is audited whole and with `--limit` a tenth of it: the
difference of the two times gives the threads per second (the process's start left out), the
difference of the two peaks the memory each further 1,000 threads cost. A thread with findings
costs what the report keeps of them (every finding is listed); a quiet one costs nothing, as
the states are read one at a time. It takes about half a minute.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.memory import InMemorySaver

from repeat_reminder_langchain import RepeatToolReminderMiddleware

from .fixtures import RECURSION_LIMIT, agent_graph, ask, middleware_agent, script
from .measure import Row

__all__ = ["run", "threads"]

EXCERPT = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus_excerpt.jsonl"
SMALL, LARGE = 5_000_000, 50_000_000
SETTINGS = {
    "defaults": [],
    "every detector": ["--detect", "all", "--error-pattern", r"\A<returncode>[1-9]"],
}


# Runs the audit, then reports the process's own peak memory (kilobytes) on standard error.
_CHILD = (
    "import resource, runpy, sys\n"
    "sys.argv = ['repeat_reminder_langchain', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('repeat_reminder_langchain', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def _log(directory: Path, size: int) -> Path:
    lines = [line for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = directory / f"log-{size}.jsonl"
    written = 0
    with path.open("w", encoding="utf-8") as log:
        while written < size:
            for line in lines:
                log.write(line + "\n")
                written += len(line) + 1
    return path


def _audit(path: Path, options: list[str]) -> tuple[float, float]:
    """Seconds and peak megabytes of one audit in a process of its own."""
    command = [sys.executable, "-c", _CHILD, "audit", str(path), "--quiet", *options]
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024


def run() -> list[Row]:
    """MB/s, peak memory, and the memory each further MB of input costs, per setting."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        small, large = _log(Path(directory), SMALL), _log(Path(directory), LARGE)
        small_mb, large_mb = small.stat().st_size / 1e6, large.stat().st_size / 1e6
        for name, options in SETTINGS.items():
            _, small_peak = _audit(small, options)
            seconds, large_peak = _audit(large, options)
            key = f"audit.{name.replace(' ', '_')}"
            rows += [
                Row(f"{key}.mb_per_s", f"audit, {name}: MB/s on a {large_mb:.0f} MB log",
                    large_mb / seconds, "mb/s"),
                Row(f"{key}.peak_mb", f"audit, {name}: peak memory on the {large_mb:.0f} MB log "
                    f"(MB; {small_peak:.0f} on a {small_mb:.0f} MB one)", large_peak, "mb"),
                Row(f"{key}.mb_per_mb", f"audit, {name}: memory per further MB of input",
                    (large_peak - small_peak) / (large_mb - small_mb), "mb/mb"),
            ]  # fmt: skip
    return rows


SQLITE_THREADS, POSTGRES_THREADS = 10_000, 3_000

# Runs the audit of a checkpointer, then reports its peak resident memory (kilobytes) from the
# moment everything is imported: on Linux the peak is reset there, so that a higher peak
# while importing, the same whatever the number of threads, cannot hide what the threads cost.
# Elsewhere it is the process's own peak.
_THREADS_CHILD = (
    "import re, resource, sys\n"
    "import langgraph.checkpoint.postgres, langgraph.checkpoint.sqlite, psycopg\n"
    "from repeat_reminder_langchain.tooling import _checkpointer, _logs, _progress, audit\n"
    "from repeat_reminder_langchain.tooling._cli import main\n"
    "try:\n"
    "    with open('/proc/self/clear_refs', 'w') as refs:\n"
    "        refs.write('5')\n"
    "    reset = True\n"
    "except OSError:\n"
    "    reset = False\n"
    "main(sys.argv[1:])\n"
    "if reset:\n"
    "    with open('/proc/self/status') as status:\n"
    "        peak = int(re.search(r'VmHWM:\\s+(\\d+)', status.read())[1])\n"
    "else:\n"
    "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print(peak, file=sys.stderr)\n"
)


def _audit_threads(url: str, options: list[str]) -> tuple[float, float]:
    """Seconds and peak megabytes (once imported) of one audit of a checkpointer."""
    command = [sys.executable, "-c", _THREADS_CHILD, "audit", "--checkpointer", url, "--quiet"]
    start = time.perf_counter()
    done = subprocess.run([*command, *options], check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024


def _seeds() -> dict[str, list[Any]]:
    """The latest checkpoints of real runs: agents whose model loops, and one whose calls differ.

    The looping model makes 8 identical calls: the guarded agent is reminded at 3, 5 and 8 and
    goes on (a scripted model does not listen), the plain graph is not reminded at all.
    """
    saver = InMemorySaver()

    def latest(thread: str) -> Any:
        return saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})

    def config(thread: str) -> Any:
        return {"configurable": {"thread_id": thread}, "recursion_limit": RECURSION_LIMIT}

    same = {"query": "same"}
    guard = [RepeatToolReminderMiddleware()]
    middleware_agent(script(8, same), guard, checkpointer=saver).invoke(ask(), config("guarded"))
    plain, slot = agent_graph(None, checkpointer=saver)
    slot.model = script(8, same)
    plain.invoke(ask(), config("plain"))
    middleware_agent(script(8), guard, checkpointer=saver).invoke(ask(), config("quiet"))
    return {"looping": [latest("guarded"), latest("plain")], "quiet": [latest("quiet")]}


def _put(saver: Any, seeds: Sequence[Any], count: int) -> None:
    """`count` threads, each one of the seeds' states written anew through `saver`."""
    for index in range(count):
        seed = seeds[index % len(seeds)]
        config = {"configurable": {"thread_id": f"thread-{index:06d}", "checkpoint_ns": ""}}
        saver.put(config, seed.checkpoint, seed.metadata, seed.checkpoint["channel_versions"])


def _sqlite(path: Path, seeds: Sequence[Any], count: int) -> str:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        conn.execute("PRAGMA synchronous = OFF")  # the writing is not what is measured
        _put(SqliteSaver(conn), seeds, count)
    return f"sqlite:///{path}"


@contextmanager
def _postgres(dsn: str, seeds: Sequence[Any], count: int) -> Iterator[str]:
    """A database of its own on the server, holding `count` threads; dropped afterwards."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))
    try:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
        with PostgresSaver.from_conn_string(url, pipeline=True) as saver:
            _put(saver, seeds, count)
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _rows(key: str, name: str, url: str, count: int, memory: bool) -> list[Row]:
    """Threads per second, and with `memory` the peak and the memory per 1,000 threads."""
    tenth = count // 10
    small_seconds, small_peak = _audit_threads(url, ["--limit", str(tenth)])
    seconds, peak = _audit_threads(url, [])
    rows = [
        Row(f"{key}.threads_per_s", f"audit --checkpointer, {name}: threads per second "
            f"({count:,} threads less {tenth:,})", (count - tenth) / (seconds - small_seconds),
            "threads/s"),
    ]  # fmt: skip
    if memory:
        rows += [
            Row(f"{key}.peak_mb", f"audit --checkpointer, {name}: peak memory once imported, "
                f"{count:,} threads (MB; {small_peak:.1f} at {tenth:,})", peak, "mb"),
            Row(f"{key}.mb_per_1000", f"audit --checkpointer, {name}: memory per further 1,000 "
                "threads", (peak - small_peak) * 1000 / (count - tenth), "mb/1000"),
        ]  # fmt: skip
    return rows


def threads() -> list[Row]:
    """`audit --checkpointer`: threads per second, SQLite and PostgreSQL; memory per thread."""
    seeds = _seeds()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        for kind in ("looping", "quiet"):
            url = _sqlite(Path(directory) / f"{kind}.sqlite", seeds[kind], SQLITE_THREADS)
            name = "SQLite, " + ("looping threads" if kind == "looping" else "quiet threads")
            rows += _rows(f"audit.checkpointer.sqlite.{kind}", name, url, SQLITE_THREADS, True)
    dsn = os.environ.get("REPEAT_REMINDER_POSTGRES_DSN")
    if dsn:
        with _postgres(dsn, seeds["looping"], POSTGRES_THREADS) as url:
            key, name = "audit.checkpointer.postgres", "PostgreSQL, looping threads"
            rows += _rows(key, name, url, POSTGRES_THREADS, False)
    return rows
