"""The callback handler: agents told apart, subagents, threads, bounded memory, concurrency,
what it does without a node to deliver its reminders, and how it sees a model recover."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from repeat_reminder_langchain import (
    ConfigError,
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderWarning,
)

from .conftest import build
from .helpers import (
    LoopModel,
    agent_graph,
    ask,
    assert_adjacent,
    call,
    final_messages,
    model_node,
    probe,
    reminders,
    repeat,
    scripted,
    turn,
    wiring_warnings,
)

SAME = {"q": "same"}
WAIT = 30  # seconds; only a bound on a wait that a working run ends at once
Handler = RepeatToolReminderCallbackHandler


def invoke(graph: Any, guard: Handler, **config: Any) -> list[Any]:
    messages: list[Any] = graph.invoke(ask(), {"callbacks": [guard], **config})["messages"]
    assert_adjacent(messages)
    return messages


def threads_kept(guard: Handler) -> set[str]:
    """The threads whose agents the handler remembers."""
    return {scope[1] for scope, _, _ in guard.records._agents if scope[0] == "thread"}


# -- agents told apart: threads ---------------------------------------------------------------


def test_two_threads_stepping_in_turn_on_one_handler_keep_their_own_counts() -> None:
    guard = Handler(thresholds=[2, 3])
    saver = InMemorySaver()
    graphs = {
        thread: agent_graph(scripted(repeat("probe", SAME, 3)), [probe], guard, checkpointer=saver)
        for thread in ("a", "b")
    }
    for graph in graphs.values():
        graph.interrupt_before_nodes = ["tools"]
    configs = {t: {"callbacks": [guard], "configurable": {"thread_id": t}} for t in graphs}

    for thread, graph in graphs.items():
        graph.invoke(ask(), configs[thread])
    for _ in range(3):  # a, b, a, b, ...: each resume is a run of its own
        for thread, graph in graphs.items():
            graph.invoke(None, configs[thread])

    for thread, graph in graphs.items():
        messages = graph.get_state(configs[thread]).values["messages"]
        assert_adjacent(messages)
        assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    assert guard.agent_count == 2


# -- agents told apart: subagents and models that are not the agent ---------------------------


def _subagent_tool(guard: Handler, child_calls: int) -> Any:
    @tool
    def delegate(task: str) -> str:
        """Hand a task to a subagent."""
        child = agent_graph(scripted(repeat("probe", SAME, child_calls)), [probe], guard)
        # No callbacks passed: the child inherits the parent's through the run context.
        child_messages = child.invoke({"messages": [HumanMessage(task)]})["messages"]
        assert_adjacent(child_messages)
        found = reminders(child_messages)
        return f"subagent reminders: {found}"

    return delegate


def test_a_subagent_inside_a_tool_has_its_own_streaks_and_leaves_the_parents_alone() -> None:
    guard = Handler(exclude=["delegate"])
    delegate = _subagent_tool(guard, child_calls=3)
    script = [*repeat("probe", SAME, 2), turn(call("delegate", {"task": "look"}))]
    script += repeat("probe", SAME, 1)

    messages = invoke(agent_graph(scripted(script), [probe, delegate], guard), guard)

    subagent_result = next(
        m for m in messages if isinstance(m, ToolMessage) and m.name == "delegate"
    )
    assert subagent_result.content == "subagent reminders: [('gentle', 'probe', 3)]"
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert guard.agent_count == 0


def test_two_subagents_started_in_one_turn_count_apart() -> None:
    guard = Handler(exclude=["delegate"])
    delegate = _subagent_tool(guard, child_calls=3)
    script = [turn(call("delegate", {"task": "one"}), call("delegate", {"task": "two"}))]

    messages = invoke(agent_graph(scripted(script), [delegate], guard), guard)

    results = [m.content for m in messages if isinstance(m, ToolMessage)]
    assert results == ["subagent reminders: [('gentle', 'probe', 3)]"] * 2
    assert reminders(messages) == []


def test_a_model_called_inside_a_tool_is_not_the_agent() -> None:
    inner = scripted([AIMessage("a summary")])

    @tool
    def summarise(text: str) -> str:
        """Summarise with a model of its own."""
        return str(inner.invoke([HumanMessage(f"summarise {text}")]).content)

    guard = Handler(profile="seed")
    script = repeat("summarise", {"text": "x"}, 3)
    messages = invoke(agent_graph(scripted(script), [summarise], guard), guard)

    # The inner model's prompt is a user message; were it taken for the agent's, it would
    # reset the agent's streaks after every call.
    assert reminders(messages) == [("gentle", "summarise", 3)]


def test_model_calls_outside_any_graph_are_no_agent() -> None:
    guard = Handler()
    model = scripted([turn(call("probe", SAME))] * 2)
    model.invoke([HumanMessage("hi")], {"callbacks": [guard]})
    RunnableLambda(model.invoke).invoke("hi", {"callbacks": [guard]})

    assert guard.agent_count == 0


def _with_an_aside(model: Any, aside: Any, guard: Handler) -> Any:
    """The agent, with a node after the reminder node that asks `aside` a note to itself."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
    builder.add_node("aside", lambda state: aside.invoke([SystemMessage("note to self")]) and {})
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "aside")
    builder.add_edge("aside", "agent")
    return builder.compile()


def test_a_model_call_with_no_new_turn_and_no_user_message_leaves_the_streaks_alone() -> None:
    # A node that asks the model something aside (no user message, no tool turn) between
    # the agent's turns does not reset the agent's streak.
    guard = Handler()
    graph = _with_an_aside(
        scripted(repeat("probe", SAME, 3)), scripted([AIMessage("x")] * 3), guard
    )

    assert reminders(invoke(graph, guard)) == [("gentle", "probe", 3)]


def test_a_model_asked_aside_after_a_reminder_is_not_the_agent_recovering() -> None:
    guard = Handler()
    # The agent repeats the call after the reminder at 3; the aside model answers "noted".
    graph = _with_an_aside(
        scripted(repeat("probe", SAME, 4)), scripted([AIMessage("noted")] * 4), guard
    )
    assert reminders(invoke(graph, guard)) == [("gentle", "probe", 3)]

    stats = guard.stats.snapshot()
    assert (stats["followed"], stats["recovered"]) == (1, 0)  # observed: (1, 1)


# -- bounded memory ---------------------------------------------------------------------------


def test_runs_without_a_thread_leave_nothing_behind() -> None:
    guard = Handler()
    for _ in range(5):
        invoke(agent_graph(scripted(repeat("probe", SAME, 4)), [probe], guard), guard)

    assert guard.agent_count == 0
    assert guard._runs == {}


def test_threads_beyond_the_cap_forget_the_least_recent() -> None:
    guard = Handler(thresholds=[2])
    guard.max_agents = 2
    assert guard.max_agents == 2 == guard.records.limit
    saver = InMemorySaver()

    def step(thread: str) -> None:
        graph = agent_graph(scripted(repeat("probe", SAME, 1)), [probe], guard, checkpointer=saver)
        graph.interrupt_before_nodes = ["tools"]
        config = {"callbacks": [guard], "configurable": {"thread_id": thread}}
        graph.invoke(ask(), config)
        graph.invoke(None, config)
        assert_adjacent(graph.get_state(config).values["messages"])

    for thread in ("a", "b", "c"):
        step(thread)
    assert guard.agent_count == 2
    assert threads_kept(guard) == {"b", "c"}


def test_reading_an_agents_streaks_makes_it_the_most_recently_used() -> None:
    agent = build("handler", LoopModel(), checkpointer=InMemorySaver())
    guard = agent.handler
    assert guard is not None
    guard.max_agents = 2

    def first_call(thread: str) -> None:
        # One call, counted by the node; the run pauses before the model answers.
        agent.graph.invoke(
            ask("loop 1"), agent.run_config(thread), interrupt_after=["repeat_reminder"]
        )

    first_call("A")
    first_call("B")
    agent.graph.invoke(None, agent.run_config("A"))  # a model step on A reads its streaks
    first_call("C")

    assert threads_kept(guard) == {"A", "C"}  # B was the least recently used
    for thread in "ABC":
        assert_adjacent(agent.state(thread)["messages"])


def test_an_agent_pushed_out_by_the_cap_is_counted_again_from_its_conversation() -> None:
    guard = Handler(exclude=["delegate"])
    guard.max_agents = 1
    delegate = _subagent_tool(guard, child_calls=3)
    script = [*repeat("probe", SAME, 2), turn(call("delegate", {"task": "look"}))]
    script += repeat("probe", SAME, 1)

    messages = invoke(agent_graph(scripted(script), [probe, delegate], guard), guard)

    # The subagent's streaks pushed the parent's out: the parent's count is rebuilt from its
    # conversation, as for a conversation the guard sees for the first time.
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert guard.agent_count == 0


def test_a_tiny_run_cap_degrades_without_failing() -> None:
    guard = Handler()
    guard.max_runs = 1
    messages = invoke(agent_graph(scripted(repeat("probe", SAME, 3)), [probe], guard), guard)

    assert len(guard._runs) <= 1
    assert len([m for m in messages if isinstance(m, ToolMessage)]) == 3


# -- concurrent invocations -------------------------------------------------------------------


def test_concurrent_invocations_without_a_thread_never_share_streaks() -> None:
    runs = 8
    everyone_started = threading.Barrier(runs)

    @tool("probe")
    def meeting_probe(q: str = "") -> str:
        """Waits until every run has made its first call."""
        if q.endswith("#0"):
            everyone_started.wait(WAIT)
        return "probed"

    guard = Handler(thresholds=[2, 3])

    def one_run(index: int) -> list[Any]:
        # The first call differs per run, the rest are the same in every run.
        script = [turn(call("probe", {"q": f"run {index} #0"})), *repeat("probe", SAME, 3)]
        graph = agent_graph(scripted(script), [meeting_probe], guard)
        return invoke(graph, guard)

    with ThreadPoolExecutor(runs) as pool:
        results = list(pool.map(one_run, range(runs)))

    for messages in results:
        assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    assert guard.agent_count == 0


async def test_concurrent_async_invocations_never_share_streaks() -> None:
    guard = Handler(thresholds=[2, 3])

    async def one_run(index: int) -> list[Any]:
        script = repeat("probe", {"q": index % 2}, 3)
        graph = agent_graph(scripted(script), [_any_probe], guard)
        return (await graph.ainvoke(ask(), {"callbacks": [guard]}))["messages"]  # type: ignore[no-any-return]

    results = await asyncio.gather(*(one_run(i) for i in range(20)))

    for messages in results:
        assert_adjacent(messages)
        assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]


# -- no node to deliver the reminders ---------------------------------------------------------

WIRINGS = ["create_agent", "node_before_tools", "route_skips_node"]


def wired(model: Any, guard: Handler, wiring: str) -> Any:
    """An agent the handler watches, with no node after the tools to deliver its reminders."""
    if wiring == "create_agent":
        return create_agent(model, tools=[probe])

    builder = StateGraph(MessagesState)
    builder.add_node("agent", model_node(model))
    builder.add_node("tools", ToolNode([probe], handle_tool_errors=True))
    builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
    builder.add_edge(START, "agent")
    if wiring == "node_before_tools":
        builder.add_conditional_edges(
            "agent", tools_condition, {"tools": "repeat_reminder", END: END}
        )
        builder.add_edge("repeat_reminder", "tools")
        builder.add_edge("tools", "agent")
    else:  # a route sends only failed tool turns through the node; these calls succeed

        def failures_only(state: MessagesState) -> str:
            last = state["messages"][-1]
            failed = isinstance(last, ToolMessage) and last.status == "error"
            return "repeat_reminder" if failed else "agent"

        builder.add_conditional_edges("agent", tools_condition)
        builder.add_conditional_edges("tools", failures_only, ["repeat_reminder", "agent"])
        builder.add_edge("repeat_reminder", "agent")
    return builder.compile()


@pytest.mark.parametrize("wiring", WIRINGS)
def test_without_a_node_reminders_are_counted_but_not_delivered(
    wiring: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = Handler()
    graph = wired(scripted(repeat("probe", SAME, 5)), guard, wiring)
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        chunks = list(graph.stream(ask(), {"callbacks": [guard]}, stream_mode=["custom", "values"]))
    messages = [data for kind, data in chunks if kind == "values"][-1]["messages"]
    events = [data["repeat_tool_reminder"] for kind, data in chunks if kind == "custom"]

    assert_adjacent(messages)
    assert reminders(messages) == []
    assert [(e["count"], e["level"], e["delivered"]) for e in events] == [
        (3, "gentle", False),
        (5, "detailed", False),
    ]
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    undelivered = [line for line in lines if "repeat tool reminder due but not delivered (" in line]
    assert len(undelivered) == 2
    stats = guard.stats.snapshot()
    assert stats["calls"] == 5
    assert stats["reminders"] == {}
    assert stats["undelivered"] == {"probe": {"detailed": 1, "gentle": 1}}
    assert (stats["followed"], stats["recovery_rate"]) == (0, None)


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_without_a_node_the_custom_events_say_not_delivered(wiring: str) -> None:
    guard = Handler()
    graph = wired(scripted(repeat("probe", SAME, 3)), guard, wiring)
    run = [e async for e in graph.astream_events(ask(), {"callbacks": [guard]}, version="v2")]
    events = [e for e in run if e["event"] == "on_custom_event"]

    assert_adjacent(final_messages(run))

    assert [(e["name"], e["data"]["count"], e["data"]["delivered"]) for e in events] == [
        ("repeat_tool_reminder", 3, False)
    ]


def test_without_a_node_the_reminders_due_name_the_thread_of_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The handler counts in a callback that hands the guard no run config: the config of the
    # run it is in names the thread, so a monitor can still tell which conversation loops.
    guard = Handler()
    graph = wired(scripted(repeat("probe", SAME, 3)), guard, "create_agent")
    config: Any = {"callbacks": [guard], "configurable": {"thread_id": "t-7"}}
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        chunks = list(graph.stream(ask(), config, stream_mode="custom"))

    assert [chunk["repeat_tool_reminder"]["thread_id"] for chunk in chunks] == ["t-7"]
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert ", thread t-7, run " in line


@pytest.mark.parametrize("wiring", WIRINGS)
def test_without_a_node_each_handler_warns_once_naming_the_node_and_the_middleware(
    wiring: str, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = Handler(), Handler()
    # Every warning is recorded, even one from the same line: Python's default shows each
    # line's once, which would hide whether the handler warned again.
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
            for _ in range(2):
                graph = wired(scripted(repeat("probe", SAME, 5)), first, wiring)
                assert_adjacent(graph.invoke(ask(), {"callbacks": [first]})["messages"])
            (warning,) = wiring_warnings(recorded, "reach no model")
            graph = wired(scripted(repeat("probe", SAME, 3)), second, wiring)
            assert_adjacent(graph.invoke(ask(), {"callbacks": [second]})["messages"])

    assert "RepeatToolReminderNode" in warning
    assert "RepeatToolReminderMiddleware" in warning
    assert wiring_warnings(recorded, "reach no model") == [warning, warning]  # one per handler
    assert caplog.records == []  # said once: as a warning, not in the log as well


def test_a_node_placed_before_the_tools_also_says_where_it_belongs(
    recwarn: pytest.WarningsRecorder,
) -> None:
    guard = Handler()
    graph = wired(scripted(repeat("probe", SAME, 3)), guard, "node_before_tools")
    assert_adjacent(graph.invoke(ask(), {"callbacks": [guard]})["messages"])

    placement = wiring_warnings(recwarn, "ran before the results")
    assert placement == [
        "RepeatToolReminderNode ran before the results of the tool calls it follows, so it "
        "counts nothing: place it after the tools node (tools -> repeat_reminder -> model)."
    ]


def test_without_a_node_in_observe_mode_the_handler_reports_and_does_not_warn(
    caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    guard = Handler(mode="observe")
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent = create_agent(scripted(repeat("probe", SAME, 3)), tools=[probe])
        assert_adjacent(agent.invoke(ask(), {"callbacks": [guard]})["messages"])

    assert wiring_warnings(recwarn) == []
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("repeat tool reminder observed, not sent") for line in lines)
    assert guard.stats.snapshot()["undelivered"] == {"probe": {"gentle": 1}}


def test_turns_a_route_sends_around_the_node_are_counted_at_the_next_model_call() -> None:
    guard = Handler()
    model = scripted(repeat("probe", SAME, 5))

    def skip_the_third(state: MessagesState) -> str:
        results = sum(isinstance(m, ToolMessage) for m in state["messages"])
        return "agent" if results == 3 else "repeat_reminder"

    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_conditional_edges("tools", skip_the_third, ["repeat_reminder", "agent"])
    builder.add_edge("repeat_reminder", "agent")
    messages = invoke(builder.compile(), guard)

    # The third call skipped the node: its reminder was due but not delivered. The count went
    # on, and the node delivered the reminder at five; the model then answered, which ends
    # the run and is its recovery.
    assert reminders(messages) == [("detailed", "probe", 5)]
    stats = guard.stats.snapshot()
    assert stats["reminders"] == {"probe": {"detailed": 1}}
    assert stats["undelivered"] == {"probe": {"gentle": 1}}
    assert (stats["followed"], stats["recovered"]) == (1, 1)


# -- recovery -------------------------------------------------------------------------------


def test_a_model_run_that_fails_after_a_reminder_is_no_recovery() -> None:
    class FailsWhenReminded(LoopModel):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            if reminders(messages):
                raise RuntimeError("model down")
            return super()._generate(messages, *args, **kwargs)

    agent = build("handler", FailsWhenReminded())
    guard = agent.handler
    assert guard is not None
    with pytest.raises(RuntimeError, match="model down"):
        agent.invoke(ask("loop 5"))

    stats = guard.stats.snapshot()
    assert stats["reminders"] == {"probe": {"gentle": 1}}
    assert (stats["followed"], stats["recovery_rate"]) == (0, None)
    assert guard._runs == {}
    assert guard._answering == {}


@pytest.mark.parametrize("streamed", [False, True])
def test_an_answer_after_a_reminder_is_counted_as_the_model_gives_it(streamed: bool) -> None:
    # The README's graph: the model's end goes straight to END, past the node. The handler
    # sees the answer as the model gives it, so the run it ends counts it.
    guard = Handler()
    graph = agent_graph(scripted(repeat("probe", SAME, 3)), [probe], guard)
    if streamed:
        list(graph.stream(ask(), {"callbacks": [guard]}, stream_mode="messages"))
    else:
        assert reminders(invoke(graph, guard)) == [("gentle", "probe", 3)]

    stats = guard.stats.snapshot()
    assert (stats["followed"], stats["recovered"], stats["recovery_rate"]) == (1, 1, 1.0)
    assert guard._answering == {}


def test_model_runs_whose_end_never_came_are_forgotten_past_the_run_cap() -> None:
    guard = Handler()
    guard.max_runs = 100
    stranded = (("run", 0), "", ())
    guard._answering.update(dict.fromkeys(range(100), stranded))
    invoke(agent_graph(scripted(repeat("probe", SAME, 3)), [probe], guard), guard)

    assert sorted(guard._answering) == list(range(1, 100))  # the oldest made room
    assert guard.stats.snapshot()["followed"] == 1


# -- construction -----------------------------------------------------------------------------


def test_the_handler_takes_a_config_or_fields_not_both() -> None:
    config = ReminderConfig(thresholds=[2])
    assert Handler(config).config is config
    with pytest.raises(TypeError, match="not both"):
        Handler(config, thresholds=[3])
    with pytest.raises(TypeError, match="must be a ReminderConfig"):
        Handler({"thresholds": [3]})  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match="unknown ReminderConfig field 'treshold'; did you mean 'thresholds'"
    ):
        Handler(treshold=[3])  # type: ignore[call-arg]
    with pytest.raises(
        TypeError, match="unknown ReminderConfig field 'zzz'; fields are thresholds, "
    ):
        Handler(zzz=1)  # type: ignore[call-arg]


def test_a_bad_value_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^thresholds: invalid threshold 1"):
        Handler(thresholds=[1])
    with pytest.raises(ConfigError) as raised:
        Handler(thresholds=[], arguments_preview_chars=0)
    assert str(raised.value).splitlines() == [
        "thresholds: must not be empty",
        "arguments_preview_chars: must be an integer >= 1, got 0",
    ]


@tool("probe")
def _any_probe(q: Any = None) -> str:
    """Look anything up."""
    return "probed"


# -- bookkeeping at the edges -----------------------------------------------------------------


def _run_tree(guard: Handler) -> tuple[Any, Any, dict[str, Any]]:
    """A root run and a node run inside it, as a graph run places them."""
    root, node = uuid.uuid4(), uuid.uuid4()
    metadata = {"langgraph_checkpoint_ns": f"agent:{uuid.uuid4()}"}
    guard.on_chain_start(None, {}, run_id=root, parent_run_id=None, metadata={})
    guard.on_chain_start(None, {}, run_id=node, parent_run_id=root, metadata=metadata)
    return root, node, metadata


def _reminded_turn() -> list[BaseMessage]:
    script = [turn(call("probe", SAME, f"c{n}")) for n in range(3)]
    messages: list[BaseMessage] = [HumanMessage("go")]
    for n, message in enumerate(script):
        message.id = f"t{n}"
        messages += [message, ToolMessage("probed", tool_call_id=f"c{n}")]
    return messages


def test_a_node_whose_run_is_outside_any_graph_counts_nothing() -> None:
    guard = Handler()
    _, node, _ = _run_tree(guard)
    config: Any = {"callbacks": CallbackManager([guard], parent_run_id=node), "metadata": {}}
    assert guard.records.find({"messages": _reminded_turn()}, config) is None


# -- wiring mistakes warn as Python warns -----------------------------------------------------


def test_a_wiring_warning_points_at_the_users_line_from_async_runs_too() -> None:
    guard = Handler()
    graph = wired(scripted(repeat("probe", SAME, 3)), guard, "create_agent")
    with pytest.warns(RepeatToolReminderWarning, match="reach no model") as warned:
        asyncio.run(graph.ainvoke(ask(), {"callbacks": [guard]}))

    (warning,) = warned
    assert warning.filename == __file__  # the line above, where the run was started


def test_the_faces_mixed_up_fail_naming_the_right_place() -> None:
    model = scripted(repeat("probe", SAME, 3))
    with pytest.raises(AttributeError, match=r"callback handler, not middleware: .*Middleware"):
        create_agent(model, tools=[probe], middleware=[Handler()])  # type: ignore[list-item]

    agent = create_agent(model, tools=[probe])
    misplaced = {"callbacks": [RepeatToolReminderMiddleware()]}
    with pytest.raises(AttributeError, match=r"middleware, not a callback handler: .*Handler"):
        agent.invoke(ask(), misplaced)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match=r"middleware, not a callback handler"):
        asyncio.run(agent.ainvoke(ask(), misplaced))  # type: ignore[arg-type]


def test_the_middleware_in_a_runs_callbacks_says_its_own_error_and_no_other(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = create_agent(scripted(repeat("probe", SAME, 3)), tools=[probe])
    misplaced = {"callbacks": [RepeatToolReminderMiddleware()]}
    guards = "RepeatToolReminderMiddleware is middleware, not a callback handler: pass it to"
    with caplog.at_level(logging.WARNING), pytest.raises(AttributeError, match=guards) as raised:
        agent.invoke(ask(), misplaced)  # type: ignore[arg-type]
    # The callback manager logs a handler's error before it raises it: the guard's too, and
    # not LangChain's own "object has no attribute 'ignore_chain'", said first.
    assert caplog.records
    assert all(guards in record.getMessage() for record in caplog.records)
    assert "has no attribute" not in caplog.text
    assert guards in str(raised.value.__context__)  # the error it was raised in handling

    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(AttributeError, match=guards):
        asyncio.run(agent.ainvoke(ask(), misplaced))  # type: ignore[arg-type]
    assert all(guards in record.getMessage() for record in caplog.records)
    # Every flag a handler has is one the manager may read first, in this version or another.
    flags = [name for name in dir(BaseCallbackHandler) if name.startswith("ignore_")]
    for flag in [*flags, "raise_error", "run_inline"]:
        with pytest.raises(AttributeError, match=guards):
            getattr(RepeatToolReminderMiddleware(), flag)


def test_a_wiring_warning_made_an_error_fails_the_run_and_nothing_else_does() -> None:
    guard = Handler()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatToolReminderWarning)
        graph = wired(scripted(repeat("probe", SAME, 3)), guard, "node_before_tools")
        with pytest.raises(RepeatToolReminderWarning, match="before the results"):
            graph.invoke(ask(), {"callbacks": [guard]})
        graph = wired(scripted(repeat("probe", SAME, 3)), guard, "create_agent")
        with pytest.raises(RepeatToolReminderWarning, match="reach no model"):
            graph.invoke(ask(), {"callbacks": [guard]})
    assert guard.raise_error is False  # asked once, for that error; no other error goes out
