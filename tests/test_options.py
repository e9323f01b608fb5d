"""Options beyond the original rules: repeat_every, ignore_arguments, progress, tool policies,
observe mode, and what the guard reports (events, logs, stats). Every option is neutral by
default, so the defaults keep the original behaviour (the parity tests hold them to it)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
    is_reminder,
)
from repeat_reminder_langchain.chain import Chain
from repeat_reminder_langchain.policy import ToolPolicy, ToolSpecs, parse_tool_spec

from .helpers import (
    agent_graph,
    ask,
    assert_adjacent,
    call,
    probe,
    reminders,
    repeat,
    scripted,
    turn,
)

SAME = {"q": "same"}


def run_handler(script: list[AIMessage], tools: list[Any], **fields: Any) -> list[Any]:
    guard = RepeatToolReminderCallbackHandler(**fields)
    messages = agent_graph(scripted(script), tools, guard).invoke(ask(), {"callbacks": [guard]})[
        "messages"
    ]
    assert_adjacent(messages)
    return messages  # type: ignore[no-any-return]


def run_middleware(script: list[AIMessage], tools: list[Any], **fields: Any) -> list[Any]:
    middleware = RepeatToolReminderMiddleware(**fields)
    messages = create_agent(scripted(script), tools=tools, middleware=[middleware]).invoke(ask())[
        "messages"
    ]
    assert_adjacent(messages)
    return messages  # type: ignore[no-any-return]


RUNNERS = {"handler": run_handler, "middleware": run_middleware}


@pytest.fixture(params=sorted(RUNNERS))
def run(request: pytest.FixtureRequest) -> Any:
    return RUNNERS[request.param]


# -- 1. repeat_every ---------------------------------------------------------------------------


def test_after_the_last_threshold_the_guard_is_silent_by_default(run: Any) -> None:
    messages = run(repeat("probe", SAME, 7), [probe], thresholds=[2, 3])
    assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]


def test_repeat_every_keeps_reminding_after_the_last_threshold(run: Any) -> None:
    messages = run(repeat("probe", SAME, 7), [probe], thresholds=[2, 3], repeat_every=2)
    assert reminders(messages) == [
        ("gentle", "probe", 2), ("detailed", "probe", 3),
        ("detailed", "probe", 5), ("detailed", "probe", 7),
    ]  # fmt: skip


def test_repeat_every_levels() -> None:
    policy = ToolPolicy((3, 5), repeat_every=3)
    assert [n for n in range(1, 15) if policy.level(n)] == [3, 5, 8, 11, 14]
    assert ToolPolicy((3,), repeat_every=1).level(4) == "detailed"


# -- 2. ignore_arguments -----------------------------------------------------------------------


@tool
def run_shell(command: str, description: str = "", timeout_s: int = 0, options: Any = None) -> str:
    """Run a shell command."""
    return "ran"


def shell(n: int, **extra: Any) -> AIMessage:
    return turn(call("run_shell", {"command": "make test", "description": f"try {n}", **extra}))


def test_a_reworded_description_hides_a_loop_by_default(run: Any) -> None:
    messages = run([shell(n) for n in range(3)], [run_shell])
    assert reminders(messages) == []


def test_ignored_arguments_do_not_hide_a_loop_and_the_preview_shows_the_key(run: Any) -> None:
    script = [shell(n, timeout_s=n) for n in range(5)]
    messages = run(script, [run_shell], ignore_arguments={"run_*": ["description", "timeout*"]})

    assert reminders(messages) == [("gentle", "run_shell", 3), ("detailed", "run_shell", 5)]
    detailed = [m for m in messages if is_reminder(m)][-1].content
    assert '- arguments: {"command":"make test"}\n' in detailed


def test_dotted_paths_reach_into_objects_and_through_lists() -> None:
    policy = ReminderConfig(
        ignore_arguments={"edit": ["options.retr*", "edits.note", "*.trace"]}
    ).policy("edit")
    assert policy is not None
    args = {
        "path": "a.py",
        "options": {"retry_after": 3, "retries": 2, "force": True},
        "edits": [{"line": 1, "note": "first"}, {"line": 2, "note": "second"}, "raw"],
        "meta": {"trace": "t-1", "user": "u"},
        3: "not a string key",
    }
    assert policy.keyed(args) == {
        "path": "a.py",
        "options": {"force": True},
        "edits": [{"line": 1}, {"line": 2}, "raw"],
        "meta": {"user": "u"},
        3: "not a string key",
    }
    assert policy.keyed('{"raw": "text"}') == '{"raw": "text"}'
    assert ReminderConfig(ignore_arguments={"other": ["x"]}).policy("edit") == ToolPolicy((3, 5, 8))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["description"], "must map tool-name patterns to lists of argument patterns"),
        ({"": ["x"]}, "every tool-name pattern must be a non-empty string, got ''"),
        ({"run": "description"}, "must be a list of argument patterns, got 'description'"),
        ({"run": [""]}, "every pattern must be a non-empty string, got ''"),
    ],
)
def test_bad_ignore_arguments_fail_at_construction(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReminderConfig(ignore_arguments=value)


# -- 3. result-aware progress ------------------------------------------------------------------


def job_tool(results: list[str]) -> Any:
    @tool
    def job_status(job_id: str) -> str:
        """Report a job's status."""
        return results.pop(0)

    return job_status


def polls(n: int) -> list[AIMessage]:
    return repeat("job_status", {"job_id": "7"}, n)


def test_a_moving_result_is_progress_when_results_count(run: Any) -> None:
    moving = [f"running, {p}% done" for p in range(10, 60, 10)]
    assert reminders(run(polls(5), [job_tool(list(moving))])) == [
        ("gentle", "job_status", 3), ("detailed", "job_status", 5),
    ]  # fmt: skip
    assert reminders(run(polls(5), [job_tool(list(moving))], progress="result")) == []


def test_the_same_result_still_counts_when_results_count(run: Any) -> None:
    results = ["running", "running", "done", "done", "done"]
    messages = run(polls(5), [job_tool(results)], progress="result", thresholds=[2, 3])
    # Runs: 1, 2 (gentle), then a new result starts over: 1, 2 (gentle), 3 (detailed).
    assert reminders(messages) == [
        ("gentle", "job_status", 2), ("gentle", "job_status", 2), ("detailed", "job_status", 3),
    ]  # fmt: skip


def test_errors_compare_by_their_text(run: Any) -> None:
    messages = run(repeat("missing_tool", SAME, 3), [probe], progress="result")
    assert reminders(messages) == [("gentle", "missing_tool", 3)]


# -- 4. the tool's own policy ------------------------------------------------------------------


def poller(metadata: dict[str, Any]) -> Any:
    @tool
    def check_status(job_id: str) -> str:
        """Check a job."""
        return "running"

    check_status.metadata = metadata
    return check_status


def checks(n: int) -> list[AIMessage]:
    return repeat("check_status", {"job_id": "7"}, n)


def interleaved(n: int) -> list[AIMessage]:
    script = []
    for _ in range(n):
        script += [turn(call("probe", SAME)), turn(call("check_status", {"job_id": "7"}))]
    return script


def test_a_tool_can_exclude_itself(run: Any) -> None:
    quiet = poller({"repeat_reminder": {"exclude": True}})
    assert reminders(run(checks(4), [quiet])) == []
    # Excluded means transparent: probe, check, probe, check, probe is three probes in a row.
    assert reminders(run(interleaved(3), [probe, quiet])) == [("gentle", "probe", 3)]


def test_a_tool_can_bring_its_own_thresholds_and_repeat_every(run: Any) -> None:
    own = poller({"repeat_reminder": {"thresholds": [2], "repeat_every": 2}})
    assert reminders(run(checks(4), [own])) == [
        ("gentle", "check_status", 2), ("detailed", "check_status", 4),
    ]  # fmt: skip


def test_explicit_configuration_wins_over_the_tools_own(run: Any) -> None:
    own = poller({"repeat_reminder": {"exclude": True, "thresholds": [2]}})
    assert reminders(run(checks(3), [own], include=["check_*"], thresholds=[3])) == [
        ("gentle", "check_status", 3)
    ]
    assert reminders(run(checks(3), [own], exclude=["check_status"])) == []


def test_read_only_tools_count_results_under_auto(run: Any) -> None:
    reads = poller({"annotations": {"readOnlyHint": True}})
    moving = [f"{p}%" for p in range(10, 60, 10)]

    @tool
    def check_status(job_id: str) -> str:
        """Check a job: a pure read, whose repeats never show anything new."""
        return moving.pop(0)

    check_status.metadata = {"readOnlyHint": True, "idempotentHint": True}

    assert reminders(run(checks(3), [reads], progress="auto")) == [("gentle", "check_status", 3)]
    assert reminders(run(checks(3), [check_status], progress="auto")) == [
        ("gentle", "check_status", 3)
    ]
    moving[:] = [f"{p}%" for p in range(10, 60, 10)]
    results = list(moving)
    changing = poller({"annotations": {"readOnlyHint": True}})
    changing.func = lambda job_id: results.pop(0)  # type: ignore[attr-defined]
    assert reminders(run(checks(3), [changing], progress="auto")) == []


def test_a_tools_progress_wins_over_auto_and_the_default() -> None:
    spec = parse_tool_spec({"repeat_reminder": {"progress": "result"}})
    assert ReminderConfig().policy("t", spec).result_aware  # type: ignore[union-attr]
    assert ReminderConfig(progress="auto").policy("t", spec).result_aware  # type: ignore[union-attr]
    assert not ReminderConfig(progress="none").policy("t", spec).result_aware  # type: ignore[union-attr]


class Annotations:
    readOnlyHint = True
    idempotentHint = None


def test_tool_policies_are_read_from_metadata() -> None:
    assert parse_tool_spec(None) is None
    assert parse_tool_spec({"other": 1}) is None
    assert parse_tool_spec({"annotations": Annotations()}).read_only is True  # type: ignore[union-attr]
    spec = parse_tool_spec({"repeat_reminder": {"ignore_arguments": ["id"], "unknown": 1}})
    assert spec is not None
    assert spec.ignore_arguments == ("id",)
    with pytest.raises(ValueError, match="repeat_reminder must be a mapping"):
        parse_tool_spec({"repeat_reminder": ["exclude"]})
    with pytest.raises(ValueError, match=r"invalid repeat_reminder policy: .*integer >= 2"):
        parse_tool_spec({"repeat_reminder": {"thresholds": [1]}})


def test_a_bad_tool_policy_is_logged_once_and_ignored(
    run: Any, caplog: pytest.LogCaptureFixture
) -> None:
    broken = poller({"repeat_reminder": {"thresholds": "three"}})
    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        messages = run(checks(3), [broken])

    assert reminders(messages) == [("gentle", "check_status", 3)]
    warned = [r for r in caplog.records if "'check_status'" in r.getMessage()]
    assert len(warned) == 1
    assert "its policy is ignored" in warned[0].getMessage()


def test_learnt_policies_follow_changes_and_stay_bounded() -> None:
    specs = ToolSpecs()
    own = {"exclude": True}
    specs.learn("t", {"repeat_reminder": own})
    specs.learn("t", {"repeat_reminder": own})
    assert specs["t"].exclude
    assert list(specs) == ["t"]
    specs.learn("t", {"repeat_reminder": {"exclude": False}})
    assert not specs["t"].exclude
    specs.learn("t", {})
    assert len(specs) == 0
    specs.learn(None, {"repeat_reminder": own})
    specs.learn("u", "not metadata")
    assert specs.get("u") is None
    specs.limit = 2
    for name in "abc":
        specs.learn(name, {"repeat_reminder": own})
    assert list(specs) == ["b", "c"]  # the cap cleared t and a


def test_a_stateful_node_reads_the_policies_of_the_tools_it_is_given() -> None:
    own = poller({"repeat_reminder": {"thresholds": [2]}})
    model = scripted(checks(2))
    builder = StateGraph(RepeatToolReminderState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([own]))
    builder.add_node("repeat_reminder", RepeatToolReminderNode(tools=[own]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "agent")
    messages = builder.compile().invoke(ask())["messages"]

    assert reminders(messages) == [("gentle", "check_status", 2)]


# -- 5. observe mode ---------------------------------------------------------------------------


def test_observe_mode_counts_everything_and_adds_nothing() -> None:
    guard = RepeatToolReminderCallbackHandler(mode="observe")
    graph = agent_graph(scripted(repeat("probe", SAME, 5)), [probe], guard)
    messages = graph.invoke(ask(), {"callbacks": [guard]})["messages"]

    assert reminders(messages) == []
    assert guard.stats.snapshot()["reminders"] == {"probe": {"detailed": 1, "gentle": 1}}


def test_observe_mode_in_the_middleware_and_the_stateful_node() -> None:
    middleware = RepeatToolReminderMiddleware(mode="observe")
    agent = create_agent(scripted(repeat("probe", SAME, 3)), tools=[probe], middleware=[middleware])
    assert reminders(agent.invoke(ask())["messages"]) == []
    assert middleware.stats.snapshot()["reminders"] == {"probe": {"gentle": 1}}

    node = RepeatToolReminderNode(mode="observe")
    model = scripted(repeat("probe", SAME, 3))
    builder = StateGraph(RepeatToolReminderState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "agent")
    state = builder.compile().invoke(ask())
    assert reminders(state["messages"]) == []
    assert state["repeat_tool_reminder"]["count"] == 3
    assert node.stats.snapshot()["reminders"] == {"probe": {"gentle": 1}}


# -- 6. events, logs, stats --------------------------------------------------------------------


async def test_reminders_are_custom_events_in_astream_events() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    graph = agent_graph(scripted(repeat("probe", SAME, 2)), [probe], guard)
    events = [
        e
        async for e in graph.astream_events(ask(), {"callbacks": [guard]}, version="v2")
        if e["event"] == "on_custom_event"
    ]

    assert [e["name"] for e in events] == ["repeat_tool_reminder"]
    data = events[0]["data"]
    assert data == {
        "tool": "probe",
        "count": 2,
        "level": "gentle",
        "summary": "probe × 2",
        "arguments_digest": data["arguments_digest"],
        "mode": "remind",
        "delivered": True,
    }
    assert len(data["arguments_digest"]) == 32


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_middleware_reminders_are_custom_events_too(asynchronous: bool) -> None:
    agent = create_agent(
        scripted(repeat("probe", SAME, 3)),
        tools=[probe],
        middleware=[RepeatToolReminderMiddleware(mode="observe")],
    )
    if asynchronous:
        events = [e async for e in agent.astream_events(ask(), version="v2")]
    else:
        events = []

        def collect(name: str, data: Any) -> None:
            events.append({"event": "on_custom_event", "name": name, "data": data})

        from langchain_core.callbacks import BaseCallbackHandler

        class Collector(BaseCallbackHandler):
            def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
                collect(name, data)

        agent.invoke(ask(), {"callbacks": [Collector()]})
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [(e["name"], e["data"]["delivered"]) for e in custom] == [
        ("repeat_tool_reminder", False)
    ]


def test_reminders_are_logged_at_info_with_a_digest_not_the_arguments(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = {"token": "s3cr3t-value"}
    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    graph = agent_graph(scripted(repeat("probe", secret, 2)), [], guard)
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        graph.invoke(ask(), {"callbacks": [guard], "configurable": {"thread_id": "t-9"}})

    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert line.startswith("repeat tool reminder sent: probe × 2 (gentle, remind), arguments ")
    assert "thread t-9, run " in line
    assert "s3cr3t" not in line


def test_stats_count_calls_reminders_streaks_and_recovery() -> None:
    from repeat_reminder_langchain.demo import run_demo

    guard = RepeatToolReminderCallbackHandler()
    run_demo(guard)

    assert guard.stats.snapshot() == {
        "calls": 6,
        "reminders": {"job_status": {"detailed": 1, "gentle": 1}},
        "longest_streak": ["job_status", 5],
        "followed": 2,
        "recovered": 1,
        "recovery_rate": 0.5,
    }
    json.dumps(guard.stats.snapshot())


def test_a_chain_remembers_a_pending_reminder_across_a_checkpoint() -> None:
    middleware = RepeatToolReminderMiddleware(thresholds=[2])
    script = [*repeat("probe", SAME, 2), turn(call("probe", {"q": "other"}))]
    agent = create_agent(
        scripted(script), tools=[probe], middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke(ask(), config)

    assert middleware.stats.snapshot()["recovery_rate"] == 1.0
    stored = agent.get_state(config).values["repeat_tool_reminder"]
    assert stored["reminded"] is False
    assert stored["result"] == ""


@pytest.mark.parametrize("progress", ["result", "none"])
def test_results_are_only_fingerprinted_when_they_count(progress: str) -> None:
    guard = RepeatToolReminderCallbackHandler(progress=progress, thresholds=[2])
    graph = agent_graph(scripted(repeat("probe", SAME, 2)), [probe], guard)
    graph.invoke(ask(), {"callbacks": [guard], "configurable": {"thread_id": "x"}})
    (chain,) = guard._chains.values()
    assert len(chain.result) == (32 if progress == "result" else 0)
    assert Chain.from_dict(chain.to_dict()) == chain


def test_policies_are_cached_but_bounded() -> None:
    config = ReminderConfig()
    for number in range(1100):
        config.policy(f"tool_{number}")
    assert config.policy("tool_0") == ToolPolicy((3, 5, 8))
    assert len(config._policies) <= 1024


def test_reporting_outside_a_run_still_logs_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    import asyncio

    from repeat_reminder_langchain.chain import Chain, Tally
    from repeat_reminder_langchain.events import areport, report
    from repeat_reminder_langchain.reminder import Reminder
    from repeat_reminder_langchain.stats import Stats

    stats = Stats()
    tally = Tally(Chain(), [Reminder("grep", 3, "gentle", "{}", "d" * 32)], calls=1)
    with caplog.at_level(logging.DEBUG, logger="repeat_reminder_langchain"):
        report(tally, stats, ReminderConfig(), None)
        asyncio.run(areport(tally, stats, ReminderConfig(mode="observe"), None))

    assert stats.snapshot()["reminders"] == {"grep": {"gentle": 2}}
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("repeat reminder event not dispatched") == 2
    assert any(m.startswith("repeat tool reminder observed: grep × 3") for m in messages)


async def test_the_middleware_hooks_work_outside_a_graph_and_survive_their_own_bugs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import repeat_reminder_langchain.middleware as middleware_module

    middleware = RepeatToolReminderMiddleware(thresholds=[2])
    done = turn(call("probe", SAME), call("probe", SAME))
    results = [ToolMessage("r", tool_call_id=c["id"]) for c in done.tool_calls]
    state = {"messages": [done, *results]}
    update = middleware.before_model(state, None)  # type: ignore[arg-type]
    assert update is not None
    assert reminders(update["messages"]) == [("gentle", "probe", 2)]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    monkeypatch.setattr(middleware_module, "state_update", broken)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        assert await middleware.abefore_model(state, None) is None  # type: ignore[arg-type]
    assert "repeat reminder middleware failed" in caplog.text
