"""`audit --checkpointer`: the threads real agent runs left in a SQLite file and in PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import operator
import os
import shutil
import sqlite3
import sys
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import urlsplit, urlunsplit

import pytest

# The savers and the PostgreSQL driver are the checkpointers extra (in the dev extra):
# `make test-lowest` runs without them and skips this module.
pytest.importorskip("langgraph.checkpoint.sqlite")
pytest.importorskip("langgraph.checkpoint.postgres")

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._install import install_hint
from repeat_reminder_langchain.tooling import _checkpointer as checkpointer
from repeat_reminder_langchain.tooling import _cli as cli
from repeat_reminder_langchain.tooling._checkpointer import (
    CheckpointerError,
    CheckpointReader,
    Selection,
    public_url,
)
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling.audit import audit

from ..conftest import build
from ..helpers import (
    LoopModel,
    agent_graph,
    ask,
    assert_adjacent,
    model_node,
    one_error,
    probe,
    usage_error,
)

POSTGRES = os.environ.get("REPEAT_REMINDER_POSTGRES_DSN")
NEEDS_POSTGRES = pytest.mark.skipif(
    not POSTGRES,
    reason="no PostgreSQL server: `make test` starts a throwaway one when PostgreSQL is "
    "installed (.ci/run installs it); or set REPEAT_REMINDER_POSTGRES_DSN",
)
PASSWORD_ROLE = "repeat_reminder_password"  # scripts/with-postgres makes it give a password


# --- the databases -----------------------------------------------------------------------------


@dataclass
class Database:
    """A checkpointer's database: the URL the audit reads, and savers that write to it."""

    kind: str
    url: str
    path: Path | None = None

    @contextmanager
    def saver(self, serde: Any = None) -> Iterator[Any]:
        """A saver writing to the database (with its own connection, closed afterwards)."""
        if self.path is not None:
            with closing(sqlite3.connect(self.path, check_same_thread=False)) as conn:
                yield SqliteSaver(conn, serde=serde)
            return
        import psycopg
        from psycopg.rows import dict_row

        with psycopg.connect(
            self.url, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            yield PostgresSaver(conn, serde=serde)

    def execute(self, query: str) -> list[tuple[Any, ...]]:
        """Run SQL on the database, outside the audit (to break it on purpose)."""
        if self.path is not None:
            with closing(sqlite3.connect(self.path)) as conn, conn:
                return conn.execute(query).fetchall()
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(query)
            return cursor.fetchall() if cursor.description else []

    def snapshot(self) -> Any:
        """What the database holds: the file's bytes, or every table's rows, hashed."""
        if self.path is not None:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        found = {}
        for table in (
            "checkpoints",
            "checkpoint_blobs",
            "checkpoint_writes",
            "checkpoint_migrations",
        ):
            rows = self.execute(f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)), "
                                f"count(*) FROM {table} t")  # fmt: skip
            found[table] = rows[0]
        return found


def _database_url(name: str) -> str:
    assert POSTGRES is not None
    return urlunsplit(urlsplit(POSTGRES)._replace(path=f"/{name}"))


@contextmanager
def _postgres_database(tables: bool = True) -> Iterator[Database]:
    """A database of its own on the suite's server, with the checkpoint tables or without."""
    import psycopg

    name = f"audit_{uuid.uuid4().hex[:12]}"
    assert POSTGRES is not None
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    database = Database("postgres", _database_url(name))
    try:
        if tables:
            with PostgresSaver.from_conn_string(database.url) as saver:
                saver.setup()
        yield database
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _sqlite_database(tmp_path: Path) -> Database:
    path = tmp_path / "checkpoints.sqlite"
    return Database("sqlite", f"sqlite:///{path}", path)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=NEEDS_POSTGRES)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A checkpointer's database: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        yield _sqlite_database(tmp_path)
        return
    with _postgres_database() as found:
        yield found


@pytest.fixture
def postgres() -> Iterator[Database]:
    if not POSTGRES:
        pytest.skip("no PostgreSQL server (make test starts one)")
    with _postgres_database() as found:
        yield found


# --- the threads: real runs ----------------------------------------------------------------------


def run_agents(saver: Any) -> dict[str, list[BaseMessage]]:
    """A model that loops, run by each face of the guard and by a plain graph, a thread each."""
    model = LoopModel()
    middleware = build("middleware", model, checkpointer=saver)
    state = build("state", model, checkpointer=saver)
    plain = agent_graph(model, [probe], None, checkpointer=saver)
    found = {
        "a-middleware": middleware.invoke(ask("loop 6"), thread="a-middleware"),
        "b-state": state.invoke(ask("loop 5"), thread="b-state"),
    }
    for thread, loops in [("c-plain", 7), ("d-quiet", 2)]:
        result = plain.invoke(ask(f"loop {loops}"), {"configurable": {"thread_id": thread}})
        assert_adjacent(result["messages"])
        found[thread] = result["messages"]
    return found


def expected(messages: list[BaseMessage], **fields: Any) -> list[tuple[Any, ...]]:
    """The findings of the same messages audited as a list, as `(position, count, level)`."""
    result = audit([messages], ReminderConfig(**fields))
    return [(f.position, f.reasons[0].count, f.level) for f in result.findings]


def latest(saver: Any, thread: str, namespace: str = "") -> str:
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": namespace}}
    found = saver.get_tuple(config)
    assert found is not None
    return str(found.config["configurable"]["checkpoint_id"])


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main([*argv, "--json"]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


class History(TypedDict):
    history: Annotated[list[AnyMessage], add_messages]


def history_graph(saver: Any) -> Any:
    """An agent whose messages are under `history`, not `messages`."""
    model = LoopModel()
    builder = StateGraph(History)
    builder.add_node("agent", lambda state: {"history": [model.invoke(state["history"])]})
    builder.add_node("tools", ToolNode([probe], messages_key="history"))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", lambda state: tools_condition(state, "history"))
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class Counter(TypedDict):
    count: int


def counter_graph(saver: Any) -> Any:
    """A graph whose state holds no messages at all."""
    builder = StateGraph(Counter)
    builder.add_node("count", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "count")
    return builder.compile(checkpointer=saver)


class Log(TypedDict):
    log: Annotated[list[Any], operator.add]


def log_graph(saver: Any, log: list[Any]) -> Any:
    """A harness keeping the provider's own messages (OpenAI chat dicts) in its state."""
    builder = StateGraph(Log)
    builder.add_node("record", lambda state: {"log": log})
    builder.add_edge(START, "record")
    return builder.compile(checkpointer=saver)


def openai_loop(times: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "where is my order?"}]
    for number in range(times):
        messages.append({
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{number}", "type": "function",
                            "function": {"name": "get_order", "arguments": '{"order": "A1"}'}}],
        })  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"c{number}", "content": "pending"})
    return messages


def _fold(messages: list[AnyMessage], writes: list[Any]) -> list[AnyMessage]:
    for write in writes:
        messages = add_messages(messages, write)
    return messages


class Delta(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_fold)]


def delta_graph(saver: Any) -> Any:
    """An agent whose messages are a DeltaChannel: checkpoints keep the changes, not the list."""
    builder = StateGraph(Delta)
    builder.add_node("agent", model_node(LoopModel()))
    builder.add_node("tools", ToolNode([probe]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


REBUILT: list[int] = []


@dataclass
class Ticket:
    """A value of the graph's own type in its state: rebuilding it runs the graph's code."""

    number: int

    def __post_init__(self) -> None:
        REBUILT.append(self.number)


class Ticketed(MessagesState):
    ticket: Ticket


def ticket_graph(saver: Any) -> Any:
    builder = StateGraph(Ticketed)
    builder.add_node("open", lambda state: {"ticket": Ticket(7)})
    builder.add_node("agent", model_node(LoopModel()))
    builder.add_node("tools", ToolNode([probe]))
    builder.add_edge(START, "open")
    builder.add_edge("open", "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class Compressed(JsonPlusSerializer):
    """A serializer of another kind: msgpack, then zlib, under a type tag of its own."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        return f"{kind}+zlib", zlib.compress(data)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        return super().loads_typed((kind.removesuffix("+zlib"), zlib.decompress(payload)))


# --- what it reads and finds ---------------------------------------------------------------------


def test_each_thread_is_audited_as_its_messages_are(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        runs = run_agents(saver)
        checkpoints = {thread: latest(saver, thread) for thread in runs}
    before = database.snapshot()

    found = run_json(capsys, ["audit", "--checkpointer", database.url])

    assert found["sources"] == [database.url]
    assert found["conversations"] == 4
    assert [c["id"] for c in found["flagged"]] == ["a-middleware", "b-state", "c-plain"]
    for flagged in found["flagged"]:
        thread = flagged["id"]
        assert flagged["checkpoint"] == checkpoints[thread]
        findings = [f for f in found["findings"] if f["id"] == thread]
        assert {f["checkpoint"] for f in findings} == {checkpoints[thread]}
        assert [(f["position"], f["count"], f["level"]) for f in findings] == expected(runs[thread])
    assert expected(runs["c-plain"]) == [(5, 3, "gentle"), (9, 5, "detailed")]
    assert list(found["findings"][0])[:4] == ["conversation", "id", "checkpoint", "position"]
    # The guard ran on the first two threads: the reminders it sent are there, and marked.
    assert {(f["id"], f["sent"]) for f in found["findings"]} == {
        ("a-middleware", True),
        ("b-state", True),
        ("c-plain", False),
    }
    assert database.snapshot() == before  # read, never written


def test_the_text_and_html_name_the_thread_and_its_checkpoint(
    database: Database, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with database.saver() as saver:
        run_agents(saver)
        plain = latest(saver, "c-plain")
    report = tmp_path / "report.html"

    assert main(["audit", "--checkpointer", database.url, "--html", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "4 threads · 20 tool calls · thresholds 3, 5, 8"
    start = lines.index("findings: the reminders the guard sent (sent: yes) or would have sent")
    header = lines[start + 1].split()
    assert header[:4] == ["conversation", "thread", "checkpoint", "message"]
    assert header[-2:] == ["sent", "arguments"]
    assert [line.split()[1:4] for line in lines[start + 2 :] if "c-plain" in line] == [
        ["c-plain", plain, "5"],
        ["c-plain", plain, "9"],
    ]
    page = report.read_text(encoding="utf-8")
    assert f"conversation 2 · thread c-plain · checkpoint {plain}" in page
    assert "<th>thread</th><th>checkpoint</th>" in page
    assert "Findings: the reminders the guard sent (sent: yes) or would have sent" in page


def test_fail_on_works_on_threads(database: Database, capsys: pytest.CaptureFixture[str]) -> None:
    with database.saver() as saver:
        run_agents(saver)

    assert main(["audit", "--checkpointer", database.url, "--fail-on", "detailed"]) == 1
    assert capsys.readouterr().err == (
        "audit: 3 detailed reminders or stopped loops found (--fail-on detailed)\n"
    )
    argv = ["audit", "--checkpointer", database.url, "--thread", "d-quiet", "--fail-on", "gentle"]
    assert main(argv) == 0


# --- which threads -------------------------------------------------------------------------------


def test_threads_named_limited_and_recent(
    database: Database, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with database.saver() as saver:
        run_agents(saver)
        between = datetime.now(UTC)
        plain = agent_graph(LoopModel(), [probe], None, checkpointer=saver)
        result = plain.invoke(ask("loop 3"), {"configurable": {"thread_id": "e-late"}})
        assert_adjacent(result["messages"])
    monkeypatch.setattr(checkpointer, "_PAGE", 2)  # listed two at a time: pages meet
    url = ["audit", "--checkpointer", database.url]

    def ids(*options: str) -> list[str]:
        found = run_json(capsys, [*url, *options])
        return [f"{c['id']}" for c in found["flagged"]] + [f"{found['conversations']}"]

    assert ids() == ["a-middleware", "b-state", "c-plain", "e-late", "5"]
    assert ids("--thread", "c-plain", "--thread", "a-middleware") == [
        "c-plain",
        "a-middleware",
        "2",
    ]
    assert ids("--limit", "2") == ["a-middleware", "b-state", "2"]
    assert ids("--since", between.isoformat()) == ["e-late", "1"]
    naive = between.astimezone(UTC).replace(tzinfo=None).isoformat()
    assert ids("--since", naive, "--thread", "e-late", "--thread", "a-middleware") == [
        "e-late",
        "1",
    ]
    tomorrow = (between + timedelta(days=1)).date().isoformat()
    assert ids("--since", tomorrow) == ["0"]
    assert ids("--since", "2000-01-01", "--limit", "1") == ["a-middleware", "1"]
    for selection, count in [(Selection(), 5), (Selection(limit=3), 3), (Selection(("x", "y")), 2)]:
        reader = CheckpointReader(database.url, selection)
        assert reader.count() == count
        reader.close()
        reader.close()  # closed once


def test_a_thread_named_that_has_no_checkpoint(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        run_agents(saver)
    argv = ["audit", "--checkpointer", database.url, "--thread", "nobody"]

    assert one_error(capsys, argv) == (
        f"{database.url}: thread nobody: no checkpoint in the root namespace"
    )
    assert one_error(capsys, [*argv, "--namespace", "child"]) == (
        f"{database.url}: thread nobody: no checkpoint in namespace 'child'"
    )
    found = run_json(capsys, [*argv, "--thread", "c-plain", "--skip-bad"])
    assert (found["conversations"], found["skipped"]) == (1, 1)


def test_the_messages_key_names_another_state_key(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        graph = history_graph(saver)
        inputs = {"history": [HumanMessage("loop 4")]}
        result = graph.invoke(inputs, {"configurable": {"thread_id": "h"}})
        assert_adjacent(result["history"])
        log_graph(saver, openai_loop(3)).invoke({"log": []}, {"configurable": {"thread_id": "o"}})
    url = ["audit", "--checkpointer", database.url]

    found = run_json(capsys, [*url, "--messages-key", "history", "--thread", "h"])
    assert [(f["position"], f["count"]) for f in found["findings"]] == [(5, 3)]
    assert expected(result["history"]) == [(5, 3, "gentle")]
    found = run_json(capsys, [*url, "--messages-key", "log", "--thread", "o"])
    assert [(f["tool"], f["position"], f["count"]) for f in found["findings"]] == [
        ("get_order", 5, 3)
    ]
    assert one_error(capsys, url) == (
        f"{database.url}: thread h: its state has no 'messages' (its keys: history); name the "
        "key holding the messages with --messages-key"
    )


def test_a_subgraphs_namespace_in_every_run(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        outer = StateGraph(MessagesState)
        outer.add_node("child", agent_graph(LoopModel(), [probe], None))
        outer.add_edge(START, "child")
        graph = outer.compile(checkpointer=saver)
        for loops in (4, 3):
            result = graph.invoke(ask(f"loop {loops}"), {"configurable": {"thread_id": "s"}})
            assert_adjacent(result["messages"])
        root = latest(saver, "s")
        listed = list(saver.list({"configurable": {"thread_id": "s"}}))
        namespaces = {t.config["configurable"]["checkpoint_ns"] for t in listed} - {""}
        runs = sorted((latest(saver, "s", namespace), namespace) for namespace in namespaces)
    (first_id, first), (last_id, _) = runs[0], runs[-1]
    assert len({namespace for _, namespace in runs}) == 2
    url = ["audit", "--checkpointer", database.url]

    assert run_json(capsys, url)["flagged"][0]["checkpoint"] == root
    found = run_json(capsys, [*url, "--namespace", "child"])
    assert (found["conversations"], found["flagged"][0]["checkpoint"]) == (1, last_id)
    found = run_json(capsys, [*url, "--namespace", first])
    assert (found["conversations"], found["flagged"][0]["checkpoint"]) == (1, first_id)
    for namespace in ("child|grandchild", "chi_d"):
        assert one_error(capsys, [*url, "--namespace", namespace]) == (
            f"{database.url}: no checkpoint is in namespace {namespace!r}; its namespaces: "
            "'' (the graph itself), 'child'"
        )
    # A namespace that is there, whose threads --since leaves out: none to audit, and no error.
    found = run_json(capsys, [*url, "--namespace", "child", "--since", "2999-01-01"])
    assert found["conversations"] == 0


def test_a_namespace_in_a_database_without_checkpoints(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        saver.setup()
    argv = ["audit", "--checkpointer", database.url, "--namespace", "child"]
    assert one_error(capsys, argv) == (
        f"{database.url}: no checkpoint is in namespace 'child'; its namespaces: none, it holds "
        "no checkpoint"
    )


# --- bad input -----------------------------------------------------------------------------------


def test_a_thread_without_messages_and_skip_bad(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        run_agents(saver)
        counter = counter_graph(saver)
        for thread in ("b-counter", *(f"z-counter-{n}" for n in range(5))):
            counter.invoke({"count": 0}, {"configurable": {"thread_id": thread}})
    url = ["audit", "--checkpointer", database.url]

    assert one_error(capsys, url) == (
        f"{database.url}: thread b-counter: its state has no 'messages' (its keys: count); "
        "name the key holding the messages with --messages-key"
    )
    assert main([*url, "--skip-bad"]) == 0
    captured = capsys.readouterr()
    warnings = captured.err.splitlines()
    assert warnings[0] == (
        f"warning: skipped {database.url}: thread b-counter: its state has no 'messages' "
        "(its keys: count); name the key holding the messages with --messages-key"
    )
    assert len(warnings) == 5  # the first five: the output counts them all
    assert captured.out.startswith("4 threads · 20 tool calls · 6 unreadable skipped ·")
    assert f"skipped: {database.url}: thread b-counter: its state" in captured.out
    line = one_error(
        capsys, [*url, "--thread", "b-state", "--messages-key", "repeat_tool_reminder"]
    )
    assert line == (
        f"{database.url}: thread b-state: its 'repeat_tool_reminder' holds dict, not a list of "
        "messages"
    )


def test_messages_of_no_known_format(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        log_graph(saver, ["hello", 4]).invoke({"log": []}, {"configurable": {"thread_id": "x"}})

    argv = ["audit", "--checkpointer", database.url, "--messages-key", "log"]
    assert one_error(capsys, argv) == (
        f"{database.url}: thread x: its 'log': message 0 is a string, not a message of a known "
        "format"
    )


def test_a_checkpoint_written_by_another_serializer(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        run_agents(saver)
    with database.saver(serde=Compressed()) as saver:
        graph = agent_graph(LoopModel(), [probe], None, checkpointer=saver)
        result = graph.invoke(ask("loop 3"), {"configurable": {"thread_id": "c-other"}})
        assert_adjacent(result["messages"])
        other = latest(saver, "c-other")
    url = ["audit", "--checkpointer", database.url]

    assert one_error(capsys, url) == (
        f"{database.url}: thread c-other: cannot decode checkpoint {other} (Unknown "
        "serialization type: msgpack+zlib): was it written with another serializer?"
    )
    assert main([*url, "--skip-bad", "--json"]) == 0
    captured = capsys.readouterr()
    found = json.loads(captured.out)
    assert (found["conversations"], found["skipped"]) == (4, 1)
    assert captured.err.startswith(f"warning: skipped {database.url}: thread c-other: cannot ")


def test_no_class_a_checkpoint_names_is_rebuilt_but_the_messages(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        result = ticket_graph(saver).invoke(ask("loop 3"), {"configurable": {"thread_id": "t"}})
        assert_adjacent(result["messages"])
        REBUILT.clear()
        saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        assert REBUILT == [7]  # what the savers' default serializer does
    REBUILT.clear()

    found = run_json(capsys, ["audit", "--checkpointer", database.url])
    assert [(f["position"], f["count"]) for f in found["findings"]] == [(5, 3)]
    assert REBUILT == []


def test_a_list_of_messages_with_something_else_in_it(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with database.saver() as saver:
        run_agents(saver)
        found = saver.get_tuple({"configurable": {"thread_id": "c-plain", "checkpoint_ns": ""}})
        assert found is not None
        values = found.checkpoint["channel_values"]
        messages = list(values["messages"])
        messages[3] = Ticket(9)  # a tampered checkpoint: a class of its choosing among them
        saver.put(
            {"configurable": {"thread_id": "t-tampered", "checkpoint_ns": ""}},
            {**found.checkpoint, "channel_values": {**values, "messages": messages}},
            found.metadata,
            found.checkpoint["channel_versions"],
        )
    REBUILT.clear()

    argv = ["audit", "--checkpointer", database.url, "--thread", "t-tampered"]
    assert one_error(capsys, argv) == (
        f"{database.url}: thread t-tampered: its 'messages': message 3 is an object, not a message"
    )
    assert REBUILT == []


def test_messages_kept_as_changes(database: Database, capsys: pytest.CaptureFixture[str]) -> None:
    with database.saver() as saver:
        result = delta_graph(saver).invoke(ask("loop 3"), {"configurable": {"thread_id": "d"}})
        assert_adjacent(result["messages"])

    assert one_error(capsys, ["audit", "--checkpointer", database.url]) == (
        f"{database.url}: thread d: its 'messages' is a DeltaChannel (beta), which keeps changes "
        "rather than the list: the audit does not rebuild it"
    )


def test_a_thread_deleted_while_the_audit_reads(database: Database) -> None:
    with database.saver() as saver:
        run_agents(saver)
        reader = CheckpointReader(database.url, skip_bad=True)
        threads = reader.read()
        assert next(threads).id == "a-middleware"  # the page listing b-state is read
        saver.delete_thread("b-state")
        assert [c.id for c in threads] == ["c-plain", "d-quiet"]
    assert reader.skipped == 1
    assert reader.problems[0].startswith(f"{database.url}: thread b-state: checkpoint ")
    assert reader.problems[0].endswith(" is gone")


def test_a_time_that_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = _sqlite_database(tmp_path)
    with database.saver() as saver:
        run_agents(saver)
        found = saver.get_tuple({"configurable": {"thread_id": "c-plain", "checkpoint_ns": ""}})
        assert found is not None
        saver.put(
            {"configurable": {"thread_id": "z-untimed", "checkpoint_ns": ""}},
            {**found.checkpoint, "ts": "yesterday"},
            found.metadata,
            found.checkpoint["channel_versions"],
        )

    argv = ["audit", "--checkpointer", database.url, "--since", "2000-01-01"]
    assert one_error(capsys, argv) == (
        f"{database.url}: thread z-untimed: its checkpoint has no time (ts) to compare with --since"
    )
    assert run_json(capsys, argv[:3])["conversations"] == 5  # without --since, no time is read


def test_a_sqlite_file_that_is_no_checkpointer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE checkpoints (id TEXT)")
    text = tmp_path / "notes.db"
    text.write_text("not a database, just text that is long enough to have a header\n" * 20)
    os.mkfifo(tmp_path / "pipe")  # not waited on: a reader would wait for a writer
    long = "x" * 300
    columns = tmp_path / "columns.db"  # the tables, but not as the saver writes them
    with closing(sqlite3.connect(columns)) as conn, conn:
        conn.execute("CREATE TABLE checkpoints (id TEXT)")
        conn.execute("CREATE TABLE writes (id TEXT)")
    wanted = {
        f"sqlite:///{other}": f"sqlite:///{other}: holds no LangGraph checkpoints (no table "
        "writes): is it the checkpointer's database?",
        f"sqlite:///{text}": f"sqlite:///{text}: not an SQLite database (file is not a database)",
        f"sqlite:///{tmp_path / 'none.db'}": f"sqlite:///{tmp_path / 'none.db'}: no such file",
        f"sqlite:///{tmp_path}": f"sqlite:///{tmp_path}: is a directory",
        f"sqlite:///{tmp_path / 'pipe'}": f"sqlite:///{tmp_path / 'pipe'}: is not a regular file",
        f"sqlite:///{tmp_path / long}": f"sqlite:///{tmp_path / long}: File name too long",
        f"sqlite:///{columns}": f"sqlite:///{columns}: cannot read the checkpoints (no such "
        "column: c.thread_id)",
        "sqlite://x.db": "sqlite://x.db: a SQLite file is named sqlite:///PATH (relative) or "
        "sqlite:////PATH (absolute)",
        "sqlite:///": "sqlite:///: a SQLite file is named sqlite:///PATH (relative) or "
        "sqlite:////PATH (absolute)",
        "mysql://db/langgraph": "mysql://db/langgraph: expected a "
        "postgresql://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:///PATH URL",
    }
    for url, line in wanted.items():
        assert one_error(capsys, ["audit", "--checkpointer", url]) == line
    before = other.read_bytes()
    one_error(capsys, ["audit", "--checkpointer", f"sqlite:///{other}"])
    assert other.read_bytes() == before


def _journal_database(tmp_path: Path) -> Database:
    """A SQLite file of the agents' threads in rollback journal mode, which SqliteSaver.setup
    would have switched to WAL."""
    database = _sqlite_database(tmp_path)
    with database.saver() as saver:
        run_agents(saver)
    database.execute("PRAGMA journal_mode=DELETE")
    return database


def test_a_sqlite_file_in_rollback_journal_mode_is_read_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database = _journal_database(tmp_path)
    before = database.snapshot()
    monkeypatch.chdir(tmp_path)  # and a relative path

    assert (
        run_json(capsys, ["audit", "--checkpointer", "sqlite:///checkpoints.sqlite"])[
            "conversations"
        ]
        == 4
    )
    assert database.snapshot() == before
    assert database.execute("PRAGMA journal_mode") == [("delete",)]


NOBODY = 65534  # the user of no one, on Linux


@contextmanager
def as_another_user() -> Iterator[None]:
    """This process as a user that file permissions hold back: root reads any file."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.fixture
def shared_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder any user may enter (pytest's own are the running user's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="repeat-reminder-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o700)
        shutil.rmtree(folder)


def test_a_sqlite_file_this_user_may_not_read(
    tmp_path: Path, shared_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = _sqlite_database(tmp_path)
    with database.saver() as saver:
        run_agents(saver)
    assert database.path is not None
    unreadable = shared_folder / "unreadable.sqlite"
    shutil.copy(database.path, unreadable)
    unreadable.chmod(0)
    shut = shared_folder / "shut"
    shut.mkdir()
    shutil.copy(database.path, shut / "threads.sqlite")
    shut.chmod(0)

    with as_another_user():
        read = one_error(capsys, ["audit", "--checkpointer", f"sqlite:///{unreadable}"])
        enter = one_error(capsys, ["audit", "--checkpointer", f"sqlite:///{shut}/threads.sqlite"])
    assert read == f"sqlite:///{unreadable}: permission denied: this user may not read it"
    assert enter == (
        f"sqlite:///{shut}/threads.sqlite: permission denied: this user may not enter a "
        "directory of its path"
    )


def test_a_sqlite_file_another_process_writes_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database = _journal_database(tmp_path)  # where a writer shuts readers out
    monkeypatch.setattr(checkpointer, "_LOCK_WAIT", 0.05)
    assert database.path is not None
    with closing(sqlite3.connect(database.path, isolation_level=None)) as writer:
        writer.execute("BEGIN EXCLUSIVE")
        line = one_error(capsys, ["audit", "--checkpointer", database.url])
        writer.execute("ROLLBACK")
    assert line == (
        f"{database.url}: locked by another process, which is writing to it (waited 0.05 s): "
        "audit it when that is done, or a copy of it"
    )
    assert run_json(capsys, ["audit", "--checkpointer", database.url])["conversations"] == 4


@NEEDS_POSTGRES
def test_a_role_without_a_grant(postgres: Database, capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    role = "repeat_reminder_reader"
    assert POSTGRES is not None
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            admin.execute(f"CREATE ROLE {role} LOGIN")
    with postgres.saver() as saver:
        run_agents(saver)
    parts = urlsplit(postgres.url)
    url = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))
    needs = (
        "the role needs SELECT on checkpoints, checkpoint_blobs, checkpoint_writes, "
        "checkpoint_migrations"
    )

    postgres.execute(f"GRANT SELECT ON checkpoints, checkpoint_blobs, checkpoint_writes TO {role}")
    assert one_error(capsys, ["audit", "--checkpointer", url]) == (
        f"{url}: cannot read the checkpoints (permission denied for table checkpoint_migrations)"
        f": {needs}"
    )
    postgres.execute(f"GRANT SELECT ON checkpoint_migrations TO {role}")
    postgres.execute(f"REVOKE SELECT ON checkpoint_blobs FROM {role}")
    assert one_error(capsys, ["audit", "--checkpointer", url]) == (
        f"{url}: cannot read the checkpoints (permission denied for table checkpoint_blobs)"
        f": {needs}"
    )


@NEEDS_POSTGRES
def test_servers_that_cannot_be_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert POSTGRES is not None
    port = urlsplit(POSTGRES).port
    refused = "postgresql://audit:s3cret@127.0.0.1:1/langgraph?connect_timeout=5"
    line = one_error(capsys, ["audit", "--checkpointer", refused])
    assert line.startswith(
        "postgresql://audit:***@127.0.0.1:1/langgraph?connect_timeout=5: cannot connect "
        '(connection to server at "127.0.0.1", port 1 failed: Connection refused'
    )
    assert "s3cret" not in line
    missing = _database_url("no_such_database")
    assert one_error(capsys, ["audit", "--checkpointer", missing]) == (
        f'{missing}: cannot connect (connection to server at "127.0.0.1", port {port} failed: '
        'FATAL: database "no_such_database" does not exist)'
    )


@NEEDS_POSTGRES
def test_a_wrong_password_and_a_role_that_may_only_read(
    postgres: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    assert POSTGRES is not None
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        checked = admin.execute(
            "SELECT count(*) FROM pg_hba_file_rules WHERE %s = ANY(user_name)", (PASSWORD_ROLE,)
        ).fetchone()
        if not checked or not checked[0]:
            pytest.skip("the server trusts every role: scripts/with-postgres makes one that is not")
        if not admin.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", (PASSWORD_ROLE,)
        ).fetchone():
            admin.execute(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD 'right'")
    with postgres.saver() as saver:
        run_agents(saver)
    tables = "checkpoints, checkpoint_blobs, checkpoint_writes, checkpoint_migrations"
    postgres.execute(f"GRANT SELECT ON {tables} TO {PASSWORD_ROLE}")  # and nothing more
    parts = urlsplit(postgres.url)

    def url(password: str) -> str:
        host = f"{parts.hostname}:{parts.port}"
        return urlunsplit(parts._replace(netloc=f"{PASSWORD_ROLE}:{password}@{host}"))

    line = one_error(capsys, ["audit", "--checkpointer", url("wrong")])
    assert line == (
        f'{url("***")}: cannot connect (connection to server at "127.0.0.1", port '
        f'{parts.port} failed: FATAL: password authentication failed for user "{PASSWORD_ROLE}")'
    )
    assert run_json(capsys, ["audit", "--checkpointer", url("right")])["conversations"] == 4


@NEEDS_POSTGRES
def test_a_postgres_database_without_the_checkpoint_tables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _postgres_database(tables=False) as empty:
        assert one_error(capsys, ["audit", "--checkpointer", empty.url]) == (
            f"{empty.url}: holds no LangGraph checkpoint tables (checkpoints, checkpoint_blobs, "
            "checkpoint_writes, checkpoint_migrations): is it the checkpointer's database?"
        )
        empty.execute("CREATE TABLE checkpoints (thread_id TEXT)")
        line = one_error(capsys, ["audit", "--checkpointer", empty.url])
        assert line.startswith(f"{empty.url}: its checkpoint tables are at migration v-1: ")
        assert line.endswith(" reads v9: run its setup() once, as the server does (the audit "
                             "only reads)")  # fmt: skip


@NEEDS_POSTGRES
def test_checkpoint_tables_of_another_version(
    postgres: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    postgres.execute("DELETE FROM checkpoint_migrations WHERE v = 9")
    line = one_error(capsys, ["audit", "--checkpointer", postgres.url])
    assert line.startswith(f"{postgres.url}: its checkpoint tables are at migration v8: ")
    postgres.execute("INSERT INTO checkpoint_migrations VALUES (9), (10)")
    line = one_error(capsys, ["audit", "--checkpointer", postgres.url])
    assert line.startswith(f"{postgres.url}: its checkpoint tables are at migration v10: ")
    assert ": upgrade langgraph-checkpoint-postgres (" in line
    assert line.endswith(" reads up to v9)")


@NEEDS_POSTGRES
def test_a_server_lost_in_the_middle_of_the_audit(postgres: Database) -> None:
    import psycopg

    with postgres.saver() as saver:
        run_agents(saver)
    reader = CheckpointReader(postgres.url)
    threads = reader.read()
    assert next(threads).id == "a-middleware"
    name = urlsplit(postgres.url).path.lstrip("/")
    assert POSTGRES is not None
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
        )
    with pytest.raises(CheckpointerError, match=r": cannot read the checkpoints \(.*\)$") as raised:
        next(threads)
    assert str(raised.value).startswith(f"{postgres.url}: cannot read the checkpoints (")


@NEEDS_POSTGRES
def test_the_postgres_session_refuses_writes(postgres: Database) -> None:
    with postgres.saver() as saver:
        run_agents(saver)
    reader = CheckpointReader(postgres.url)
    threads = reader.read()
    conversation = next(threads)
    # The saver the audit reads through, asked to write: the session refuses.
    store = reader._store
    assert store is not None
    with pytest.raises(Exception, match="read-only transaction"):
        store.saver.delete_thread(conversation.id)
    threads.close()
    assert reader._store is None  # closed with the reading


def test_without_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)
    monkeypatch.setitem(sys.modules, "psycopg", None)

    line = one_error(capsys, ["audit", "--checkpointer", "sqlite:///threads.db"])
    assert line == (
        "--checkpointer sqlite:///: needs the checkpointers extra (langgraph.checkpoint.sqlite "
        f"is not installed): {install_hint('checkpointers')}"
    )
    line = one_error(capsys, ["audit", "--checkpointer", "postgres://db/langgraph"])
    assert line == (
        f"--checkpointer postgresql://: needs the checkpointers extra (psycopg is not "
        f"installed): {install_hint('checkpointers')}"
    )


# --- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        ([], "name the FILE(s) to audit, or a --checkpointer URL"),
        (["run.json", "--thread", "t"], "--thread selects threads: it needs --checkpointer"),
        (["run.json", "--limit", "3"], "--limit selects threads: it needs --checkpointer"),
        (["run.json", "--checkpointer", "sqlite:///x.db"],
         "audit FILEs or a --checkpointer, not both"),
        (["--checkpointer", "sqlite:///x.db", "--id-key", "k"],
         "--id-key names a record field: a thread's id is its own"),
        (["--checkpointer", "sqlite:///x.db", "--since", "last week"],
         "argument --since: expected an ISO 8601 date or time, like 2025-06-01 or "
         "2025-06-01T12:00:00+02:00; got 'last week'"),
        (["--checkpointer", "sqlite:///x.db", "--limit", "0"],
         "argument --limit: expected a whole number >= 1; got '0'"),
    ],
)  # fmt: skip
def test_options_that_go_with_files_or_threads(
    capsys: pytest.CaptureFixture[str], argv: list[str], wanted: str
) -> None:
    assert usage_error(capsys, ["audit", *argv], "audit") == wanted


def test_passwords_are_not_shown() -> None:
    assert public_url("postgresql://u:p@h/d?password=q&sslmode=require") == (
        "postgresql://u:***@h/d?password=***&sslmode=require"
    )
    assert public_url("postgresql://u@h/d") == "postgresql://u@h/d"
    assert public_url("sqlite:///a.db") == "sqlite:///a.db"


class Terminal:
    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, text: str) -> None:
        self.written.append(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_the_progress_bar_counts_threads(
    database: Database, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with database.saver() as saver:
        run_agents(saver)
        counter_graph(saver).invoke({"count": 0}, {"configurable": {"thread_id": "b-counter"}})
    monkeypatch.setattr("repeat_reminder_langchain.tooling._progress.MANY", 2)
    screen = Terminal()
    monkeypatch.setattr(cli.sys, "stderr", screen)

    assert main(["audit", "--checkpointer", database.url, "--skip-bad", "--quiet"]) == 0
    assert [line for line in screen.written if "audit [" in line] == []
    assert main(["audit", "--checkpointer", database.url, "--skip-bad"]) == 0
    drawn = "".join(screen.written)
    assert "\raudit [######........................]  20% · 1 of 5 threads · 1 audited" in drawn
    assert "warning: skipped" in drawn


def test_a_sqlite_audit_writes_nothing_beside_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was: a database in WAL mode (SqliteSaver's) got -wal and -shm files from the audit.
    database = _sqlite_database(tmp_path)
    with database.saver() as saver:
        run_agents(saver)
    before = sorted(os.listdir(tmp_path))
    argv = ["audit", "--checkpointer", database.url]
    found = run_json(capsys, argv)["conversations"]
    assert found > 0 and sorted(os.listdir(tmp_path)) == before
    # A server that has it open: its -wal and -shm are there, and its writes are read.
    assert database.path is not None
    with database.saver() as saver:
        live = agent_graph(LoopModel(), [probe], None, checkpointer=saver)
        live.invoke(ask("loop 2"), {"configurable": {"thread_id": "e-live"}})
        sides = {f"{database.path.name}-wal", f"{database.path.name}-shm"}
        assert sides <= set(os.listdir(tmp_path))
        assert run_json(capsys, argv)["conversations"] == found + 1
