"""The guard on a real LangGraph API server (`langgraph dev`), driven through `langgraph-sdk`.

The server serves the three graphs of `examples/langgraph_server`: the middleware, the state-kept
node, and the handler with its node. Everything stays on 127.0.0.1 and the model is scripted.
The tests that need the server are skipped, with its output, only when it cannot start.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

langgraph_sdk = pytest.importorskip("langgraph_sdk")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "langgraph_server"
GRAPHS = ("middleware_agent", "state_node_agent", "handler_node_agent")
KEPT_IN_STATE = ("middleware_agent", "state_node_agent")
FIELD = "repeat_tool_reminder"
THRESHOLDS = (3, 5, 8)
# Long loops go past langchain-core's default of 25 steps under stream_mode="events".
CONFIG = {"recursion_limit": 200}
START_DEADLINE = 90.0  # seconds; a bound on the wait, which a working server ends in a few
STOP_DEADLINE = 15.0
# Keep the server off the network: no CLI analytics, no version check against the package
# index, no tracing, and no key that would start the licence or metadata loops.
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LOG_COLOR": "false",  # plain text, for a skip reason that quotes the server's output
    "PYTHONUNBUFFERED": "1",  # each line in the log once written: a test reads the guard's
}
SECRET_ENV = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
    "LANGSMITH_CONTROL_PLANE_API_KEY",
)


def expected(loop: int) -> list[int]:
    """The counts a loop of `loop` identical calls is reminded at."""
    return [t for t in THRESHOLDS if t <= loop]


# -- the server -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    # The CLI runs uvicorn, which may start children: end the whole group it leads.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_DEADLINE)
            return
        except subprocess.TimeoutExpired:
            continue


def _start(workdir: Path, log_path: Path) -> tuple[subprocess.Popen[bytes], str] | str:
    """The running server and its URL, or why it could not start."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV} | OFFLINE_ENV
    command = [
        *(sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload"),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--n-jobs-per-worker", "32", "--config", "langgraph.json"),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_DEADLINE
    try:
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/ok", timeout=2.0).status_code == 200:
                    return process, url
            except httpx.TransportError:
                pass
            try:
                # Waits between tries, and returns at once if the server has died.
                code = process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            _stop(process)  # children of its group may outlive it
            return f"exited with code {code}"
        _stop(process)
        return f"not ready after {START_DEADLINE:.0f} s"
    except BaseException:
        _stop(process)
        raise


def _copy_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example to serve from.

    The in-memory runtime keeps its files (.langgraph_api/) in the working directory: in a
    copy they land outside the work tree, and no thread survives from an earlier session.
    """
    workdir = tmp_path_factory.mktemp("langgraph_server") / "app"
    shutil.copytree(
        EXAMPLE, workdir, ignore=shutil.ignore_patterns(".langgraph_api", "__pycache__")
    )
    return workdir


@contextlib.contextmanager
def serving(workdir: Path) -> Iterator[str]:
    """The URL of a `langgraph dev` server for `workdir`, stopped on leaving."""
    for package in ("langgraph_cli", "langgraph_api"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed: pip install 'langgraph-cli[inmem]'")
    log_path = workdir.parent / "server.log"
    failures = []
    for _ in range(3):  # a free port can be taken before the server binds it
        started = _start(workdir, log_path)
        if not isinstance(started, str):
            break
        output = log_path.read_text(errors="replace")
        failures.append(f"{started}:\n{output[-4000:]}")
        if "address already in use" not in output.lower():
            break
    if isinstance(started, str):
        pytest.skip("the LangGraph dev server did not start: " + "\n---\n".join(failures))
    process, url = started
    try:
        yield url
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory the module's server serves from; its log is `server.log` beside it."""
    return _copy_example(tmp_path_factory)


@pytest.fixture(scope="module")
def server(workdir: Path) -> Iterator[str]:
    """One server for the module's tests."""
    with serving(workdir) as url:
        yield url


@pytest.fixture
async def client(server: str) -> AsyncIterator[Any]:
    sdk = langgraph_sdk.get_client(url=server)
    try:
        yield sdk
    finally:
        await sdk.aclose()


# -- reading the thread -----------------------------------------------------------------------


def ask(loop: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"loop {loop}"}]}


def reminders(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, int]]:
    """`(level, tool, count)` of every reminder message, in order."""
    found = []
    for message in messages:
        tag = (message.get("additional_kwargs") or {}).get(FIELD)
        if isinstance(tag, Mapping):
            assert message["name"] == FIELD
            found.append((tag["level"], tag["tool"], tag["count"]))
    return found


def counts(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    found = reminders(messages)
    assert all(tool == "check_job" for _, tool, _ in found), found
    return [count for _, _, count in found]


def assert_adjacent(messages: Sequence[Mapping[str, Any]]) -> None:
    """Each assistant turn with tool calls is followed at once by one result per call id."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") if message["type"] == "ai" else None
        if not calls:
            continue
        wanted = sorted(call["id"] for call in calls)
        block = messages[index + 1 : index + 1 + len(wanted)]
        got = sorted(m.get("tool_call_id") for m in block if m["type"] == "tool")
        assert got == wanted, f"turn {index} answered by {got}, wanted {wanted}"


def tool_results(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(message["type"] == "tool" for message in messages)


async def final_messages(client: Any, thread_id: str) -> list[dict[str, Any]]:
    """The messages of a thread whose run has finished, checked for call/result adjacency."""
    state = await client.threads.get_state(thread_id)
    assert state["next"] == [], f"the thread stopped before {state['next']}"
    messages: list[dict[str, Any]] = state["values"]["messages"]
    assert_adjacent(messages)
    return messages


async def loop_on_new_thread(
    client: Any, graph: str, loop: int, config: Mapping[str, Any] | None = CONFIG
) -> tuple[str, list[int]]:
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], graph, input=ask(loop), config=config)
    messages = await final_messages(client, thread["thread_id"])
    assert tool_results(messages) == loop
    return thread["thread_id"], counts(messages)


async def stream_on_new_thread(
    client: Any, graph: str, loop: int, mode: str, config: Mapping[str, Any] | None = CONFIG
) -> tuple[str, list[Any]]:
    """The new thread's id and every part streamed by its run in `mode`."""
    thread_id = (await client.threads.create())["thread_id"]
    parts = [
        part
        async for part in client.runs.stream(
            thread_id, graph, input=ask(loop), stream_mode=mode, config=config
        )
    ]
    return thread_id, parts


async def stop_after_two_calls(client: Any, graph: str) -> str:
    """A thread asked for a loop of 5, stopped by two runs before its tools: 2 calls, 1 result."""
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(
        thread_id, graph, input=ask(5), config=CONFIG, interrupt_before=["tools"]
    )
    await client.runs.wait(thread_id, graph, input=None, config=CONFIG, interrupt_before=["tools"])
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["tools"]
    messages = state["values"]["messages"]
    assert sum(bool(m.get("tool_calls")) for m in messages) == 2
    assert tool_results(messages) == 1
    assert counts(messages) == []
    return str(thread_id)


async def finish_loop(client: Any, graph: str, thread_id: str) -> list[int]:
    """Resume the thread to the end of its loop of 5; the counts it was reminded at."""
    await client.runs.wait(thread_id, graph, input=None, config=CONFIG)
    messages = await final_messages(client, thread_id)
    assert tool_results(messages) == 5
    return counts(messages)


# -- the tests --------------------------------------------------------------------------------


def test_example_graphs_build() -> None:
    # The server fixture skips when the server does not start; a broken example must fail.
    spec = importlib.util.spec_from_file_location("langgraph_server_agents", EXAMPLE / "agents.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for graph in GRAPHS:
        assert hasattr(getattr(module, graph), "astream"), graph


@pytest.mark.parametrize("graph", GRAPHS)
async def test_reminders_at_3_5_and_8(client: Any, graph: str) -> None:
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], graph, input=ask(9), config=CONFIG)
    messages = await final_messages(client, thread["thread_id"])

    assert tool_results(messages) == 9
    assert reminders(messages) == [
        ("gentle", "check_job", 3),
        ("detailed", "check_job", 5),
        ("detailed", "check_job", 8),
    ]
    # Each reminder comes right after the tool result that completed its run of calls.
    for index, message in enumerate(messages):
        if message.get("name") == FIELD:
            assert messages[index - 1]["type"] == "tool"
    assert messages[-1]["content"] == "Job job-42 checked 9 times."


@pytest.mark.parametrize("graph", GRAPHS)
async def test_count_continues_across_interrupts_and_runs(client: Any, graph: str) -> None:
    thread_id = await stop_after_two_calls(client, graph)

    assert await finish_loop(client, graph, thread_id) == [3, 5]
    assert len(await client.runs.list(thread_id)) == 3


@pytest.mark.parametrize("graph", GRAPHS)
async def test_new_user_message_resets_the_count(client: Any, graph: str) -> None:
    thread_id, first = await loop_on_new_thread(client, graph, 3)
    assert first == [3]

    await client.runs.wait(thread_id, graph, input=ask(5), config=CONFIG)
    messages = await final_messages(client, thread_id)

    users = [i for i, m in enumerate(messages) if m["type"] == "human" and m.get("name") != FIELD]
    assert len(users) == 2
    assert tool_results(messages[users[1] :]) == 5
    assert counts(messages[users[1] :]) == [3, 5]
    assert counts(messages) == [3, 3, 5]


async def _checkpoint_window(client: Any, thread_id: str) -> tuple[datetime, datetime]:
    history = await client.threads.get_history(thread_id, limit=200, select=["created_at"])
    stamps = [datetime.fromisoformat(state["created_at"]) for state in history]
    return min(stamps), max(stamps)


def _most_at_once(windows: Sequence[tuple[datetime, datetime]]) -> int:
    edges = sorted([(start, 1) for start, _ in windows] + [(end, -1) for _, end in windows])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


@pytest.mark.parametrize("graph", GRAPHS)
async def test_two_threads_in_parallel_keep_their_own_counts(client: Any, graph: str) -> None:
    (_, long), (_, short) = await asyncio.gather(
        loop_on_new_thread(client, graph, 9), loop_on_new_thread(client, graph, 4)
    )
    assert long == [3, 5, 8]
    assert short == [3]


@pytest.mark.parametrize("graph", GRAPHS)
async def test_twenty_concurrent_threads_keep_their_own_counts(client: Any, graph: str) -> None:
    loops = [3 + i % 7 for i in range(20)]
    results = await asyncio.gather(*(loop_on_new_thread(client, graph, n) for n in loops))

    assert len(results) == 20
    assert [found for _, found in results] == [expected(n) for n in loops]
    windows = await asyncio.gather(*(_checkpoint_window(client, t) for t, _ in results))
    # The runs really overlapped on the server, so a shared count would have shown.
    assert _most_at_once(windows) >= 2


@pytest.mark.parametrize("graph", GRAPHS)
async def test_private_field_stays_out_of_schemas_and_outputs(client: Any, graph: str) -> None:
    assistants = await client.assistants.search(graph_id=graph)
    assert len(assistants) == 1
    schemas = await client.assistants.get_schemas(assistants[0]["assistant_id"])
    assert "messages" in schemas["input_schema"]["properties"]
    assert "messages" in schemas["output_schema"]["properties"]
    assert FIELD not in schemas["input_schema"]["properties"]
    assert FIELD not in schemas["output_schema"]["properties"]

    async def waited() -> tuple[str, dict[str, Any]]:
        thread_id = (await client.threads.create())["thread_id"]
        return thread_id, await client.runs.wait(thread_id, graph, input=ask(4), config=CONFIG)

    (thread_id, output), (_, parts) = await asyncio.gather(
        waited(), stream_on_new_thread(client, graph, 4, "values")
    )
    assert counts(output["messages"]) == [3]
    assert FIELD not in output
    values = [part.data for part in parts if part.event == "values"]
    assert len(values) > 4
    assert all(FIELD not in chunk for chunk in values)

    state = await client.threads.get_state(thread_id)
    if graph in KEPT_IN_STATE:
        kept = state["values"][FIELD]
        # The middleware keeps each instance's counts under its name.
        kept = kept.get("RepeatToolReminderMiddleware", kept)
        assert kept["count"] == 4
        assert FIELD in schemas["state_schema"]["properties"]
    else:
        assert FIELD not in state["values"]


@pytest.mark.parametrize("value", ["garbage", 12345, [1, 2]])
@pytest.mark.parametrize("graph", KEPT_IN_STATE)
async def test_a_client_writing_anything_into_the_field_has_the_count_taken_from_the_thread(
    client: Any, graph: str, value: object
) -> None:
    thread_id = await stop_after_two_calls(client, graph)

    # The middleware's reducer raised on it: HTTP 500, the thread broken.
    await client.threads.update_state(thread_id, {FIELD: value})
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["tools"]

    # With no record, the guard counts the thread since the user spoke, as if it had kept one:
    # the reminders come where they would have, after the third and the fifth results.
    assert await finish_loop(client, graph, thread_id) == [3, 5]
    messages = await final_messages(client, thread_id)
    at = [i for i, m in enumerate(messages) if m.get("name") == FIELD]
    assert [tool_results(messages[:i]) for i in at] == [3, 5]


def _event_counts(parts: Sequence[Any], mode: str) -> list[int]:
    found = []
    for part in parts:
        assert part.event != "error", part.data
        if mode == "events" and part.event == "events":
            if part.data["event"] == "on_custom_event" and part.data["name"] == FIELD:
                found.append(part.data["data"]["count"])
        elif mode == "custom" and part.event == "custom" and FIELD in part.data:
            found.append(part.data[FIELD]["count"])
    return found


@pytest.mark.parametrize("mode", ["events", "custom"])
@pytest.mark.parametrize("graph", GRAPHS)
async def test_reminder_events_are_streamed(client: Any, graph: str, mode: str) -> None:
    thread_id, parts = await stream_on_new_thread(client, graph, 9, mode)
    assert tool_results(await final_messages(client, thread_id)) == 9

    assert _event_counts(parts, mode) == [3, 5, 8]


async def test_events_stream_needs_an_explicit_recursion_limit(client: Any) -> None:
    # The server guide's advice (docs/guides/server.md): the events stream runs under
    # langchain-core's default limit of 25 steps, while the server's own default lets other
    # stream modes run far longer. A node graph takes three steps a tool turn, so nine turns
    # pass the limit; the middleware takes two, and its default stop comes within it.
    (_, reminded), (_, parts), (thread_id, stopped) = await asyncio.gather(
        loop_on_new_thread(client, "state_node_agent", 9, config=None),
        stream_on_new_thread(client, "state_node_agent", 9, "events", config=None),
        stream_on_new_thread(client, "middleware_agent", 12, "events", config=None),
    )
    assert reminded == [3, 5, 8]

    errors = [part.data for part in parts if part.event == "error"]
    assert [error["error"] for error in errors] == ["GraphRecursionError"]
    assert "25" in errors[0]["message"]
    assert not [part for part in stopped if part.event == "error"]
    messages = await final_messages(client, thread_id)
    assert tool_results(messages) == 11  # ten calls ran; the one made after the finish was refused
    assert messages[-1]["type"] == "ai" and messages[-1]["name"] == FIELD  # the guard's last word


@pytest.mark.parametrize("graph", GRAPHS)
async def test_the_log_lines_of_a_run_carry_the_servers_run_id(
    client: Any, graph: str, workdir: Path
) -> None:
    thread_id, found = await loop_on_new_thread(client, graph, 5)
    (run,) = await client.runs.list(thread_id)

    assert found == [3, 5]
    log = (workdir.parent / "server.log").read_text(errors="replace").splitlines()
    lines = [line for line in log if "repeat tool reminder" in line and thread_id in line]
    assert len(lines) == 2
    assert all(f"thread {thread_id}, run {run['run_id']} " in line for line in lines)


async def test_counts_in_the_checkpoint_survive_a_server_restart(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    workdir = _copy_example(tmp_path_factory)
    with serving(workdir) as url:
        async with langgraph_sdk.get_client(url=url) as client:
            threads = await asyncio.gather(*(stop_after_two_calls(client, g) for g in GRAPHS))
    # The same working directory: the in-memory runtime reloads its threads and checkpoints.
    with serving(workdir) as url:
        async with langgraph_sdk.get_client(url=url) as client:
            found = await asyncio.gather(
                *(finish_loop(client, *pair) for pair in zip(GRAPHS, threads, strict=True))
            )

    assert dict(zip(GRAPHS, found, strict=True)) == {
        "middleware_agent": [3, 5],
        "state_node_agent": [3, 5],
        # The handler's counts were in the old process: the new one counts the thread's history
        # when it first sees it, as if it had watched it.
        "handler_node_agent": [3, 5],
    }
