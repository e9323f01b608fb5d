"""The handler and the node on custom LangGraph agents: every way a run can go."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel

from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderNode,
    is_reminder,
)

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
EXPECTED = [("gentle", "probe", 3), ("detailed", "probe", 5)]
WAIT = 30  # seconds; only a bound on a wait that a working run ends at once


def invoke(graph: Any, guard: RepeatToolReminderCallbackHandler, **config: Any) -> list[Any]:
    messages: list[Any] = graph.invoke(ask(), {"callbacks": [guard], **config})["messages"]
    assert_adjacent(messages)
    return messages


# -- every way of running a graph -------------------------------------------------------------


def _final_messages_sync(graph: Any, config: Any, mode: str) -> list[Any]:
    if mode == "invoke":
        return graph.invoke(ask(), config)["messages"]  # type: ignore[no-any-return]
    if mode == "stream-values":
        *_, last = graph.stream(ask(), config, stream_mode="values")
        return last["messages"]  # type: ignore[no-any-return]
    chunks = list(graph.stream(ask(), config, stream_mode=["messages", "values"]))
    return [data for kind, data in chunks if kind == "values"][-1]["messages"]  # type: ignore[no-any-return]


async def _final_messages_async(graph: Any, config: Any, mode: str) -> list[Any]:
    if mode == "ainvoke":
        return (await graph.ainvoke(ask(), config))["messages"]  # type: ignore[no-any-return]
    if mode == "astream-values":
        states = [s async for s in graph.astream(ask(), config, stream_mode="values")]
        return states[-1]["messages"]  # type: ignore[no-any-return]
    chunks = [c async for c in graph.astream(ask(), config, stream_mode=["messages", "values"])]
    return [data for kind, data in chunks if kind == "values"][-1]["messages"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["invoke", "stream-values", "stream-messages"])
@pytest.mark.parametrize("thread", [None, "t-1"])
def test_sync_runs_remind_the_same_with_and_without_a_thread(mode: str, thread: str | None) -> None:
    guard = RepeatToolReminderCallbackHandler()
    saver = InMemorySaver() if thread else None
    graph = agent_graph(scripted(repeat("probe", SAME, 5)), [probe], guard, checkpointer=saver)
    config: dict[str, Any] = {"callbacks": [guard]}
    if thread:
        config["configurable"] = {"thread_id": thread}

    messages = _final_messages_sync(graph, config, mode)

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED


@pytest.mark.parametrize("mode", ["ainvoke", "astream-values", "astream-messages"])
@pytest.mark.parametrize("thread", [None, "t-1"])
async def test_async_runs_remind_the_same_with_and_without_a_thread(
    mode: str, thread: str | None
) -> None:
    guard = RepeatToolReminderCallbackHandler()
    saver = InMemorySaver() if thread else None
    graph = agent_graph(scripted(repeat("probe", SAME, 5)), [probe], guard, checkpointer=saver)
    config: dict[str, Any] = {"callbacks": [guard]}
    if thread:
        config["configurable"] = {"thread_id": thread}

    messages = await _final_messages_async(graph, config, mode)

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED


async def test_async_tools_count_like_sync_ones() -> None:
    @tool("probe")
    async def async_probe(q: str = "") -> str:
        """Look something up, asynchronously."""
        return f"probed {q}"

    guard = RepeatToolReminderCallbackHandler()
    graph = agent_graph(scripted(repeat("probe", SAME, 5)), [async_probe], guard)
    messages = (await graph.ainvoke(ask(), {"callbacks": [guard]}))["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED


def test_the_model_sees_each_reminder_once_right_after_the_results() -> None:
    guard = RepeatToolReminderCallbackHandler()
    model = scripted(repeat("probe", SAME, 3))
    invoke(agent_graph(model, [probe], guard), guard)

    prompt = model.seen[3]
    assert isinstance(prompt[-2], ToolMessage)
    assert is_reminder(prompt[-1])
    assert sum(is_reminder(m) for p in model.seen for m in p[-1:]) == 1


# -- what counts ------------------------------------------------------------------------------


@pytest.mark.parametrize("handle_tool_errors", [True, "default"])
def test_calls_to_an_unknown_tool_count(handle_tool_errors: Any) -> None:
    guard = RepeatToolReminderCallbackHandler()
    node = ToolNode([probe]) if handle_tool_errors == "default" else None
    model = scripted(repeat("no_such_tool", SAME, 3))
    messages = invoke(agent_graph(model, [probe], guard, tool_node=node), guard)

    assert all(m.status == "error" for m in messages if isinstance(m, ToolMessage))
    assert reminders(messages) == [("gentle", "no_such_tool", 3)]


@pytest.mark.parametrize("handle_tool_errors", [True, "default"])
def test_calls_that_fail_argument_validation_count(handle_tool_errors: Any) -> None:
    guard = RepeatToolReminderCallbackHandler()
    node = ToolNode([probe]) if handle_tool_errors == "default" else None
    bad = {"q": {"not": "a string"}}
    model = scripted(repeat("probe", bad, 3))
    messages = invoke(agent_graph(model, [probe], guard, tool_node=node), guard)

    assert all(m.status == "error" for m in messages if isinstance(m, ToolMessage))
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_calls_whose_tool_raises_count() -> None:
    @tool("probe")
    def failing(q: str = "") -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    guard = RepeatToolReminderCallbackHandler()
    messages = invoke(agent_graph(scripted(repeat("probe", SAME, 3)), [failing], guard), guard)

    assert all("disk on fire" in m.content for m in messages if isinstance(m, ToolMessage))
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_three_identical_calls_in_one_turn_reach_three() -> None:
    guard = RepeatToolReminderCallbackHandler()
    script = [turn(call("probe", SAME), call("probe", SAME), call("probe", SAME))]
    messages = invoke(agent_graph(scripted(script), [probe], guard), guard)

    assert reminders(messages) == [("gentle", "probe", 3)]
    assert [type(m).__name__ for m in messages[1:6]] == [
        "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage", "SystemMessage",
    ]  # fmt: skip


def _ordered_script() -> list[AIMessage]:
    # probe(a) once, then one turn [probe(a), other(b)]: probe(a) reaches 2 only when the turn
    # is counted in the order the model wrote it, whichever call finishes first.
    return [turn(call("probe", {"q": "a"})), turn(call("probe", {"q": "a"}), call("other", {}))]


def test_a_parallel_turn_counts_in_call_order_even_when_the_first_call_finishes_last() -> None:
    other_done = threading.Event()
    finished: list[str] = []

    @tool("probe")
    def slow_probe(q: str = "") -> str:
        """Waits for the other call of its turn, if there is one."""
        if finished:
            assert other_done.wait(WAIT)
        finished.append("probe")
        return "probed"

    @tool("other")
    def quick_other(q: str = "") -> str:
        """Finishes at once."""
        finished.append("other")
        other_done.set()
        return "other"

    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    graph = agent_graph(scripted(_ordered_script()), [slow_probe, quick_other], guard)
    messages = invoke(graph, guard)

    assert finished == ["probe", "other", "probe"]
    assert reminders(messages) == [("gentle", "probe", 2)]


async def test_an_async_parallel_turn_counts_in_call_order_too() -> None:
    other_done = asyncio.Event()
    finished: list[str] = []

    @tool("probe")
    async def slow_probe(q: str = "") -> str:
        """Waits for the other call of its turn, if there is one."""
        if finished:
            await asyncio.wait_for(other_done.wait(), WAIT)
        finished.append("probe")
        return "probed"

    @tool("other")
    async def quick_other(q: str = "") -> str:
        """Finishes at once."""
        finished.append("other")
        other_done.set()
        return "other"

    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    graph = agent_graph(scripted(_ordered_script()), [slow_probe, quick_other], guard)
    messages = (await graph.ainvoke(ask(), {"callbacks": [guard]}))["messages"]

    assert_adjacent(messages)
    assert finished == ["probe", "other", "probe"]
    assert reminders(messages) == [("gentle", "probe", 2)]


# -- resets -----------------------------------------------------------------------------------


@pytest.mark.parametrize("message_type", ["system", "human"])
def test_the_guards_own_messages_never_reset_the_chain(message_type: str) -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2, 3, 4], message_type=message_type)
    messages = invoke(agent_graph(scripted(repeat("probe", SAME, 4)), [probe], guard), guard)

    assert reminders(messages) == [
        ("gentle", "probe", 2), ("detailed", "probe", 3), ("detailed", "probe", 4),
    ]  # fmt: skip
    kinds = {type(m).__name__ for m in messages if is_reminder(m)}
    assert kinds == {"HumanMessage" if message_type == "human" else "SystemMessage"}


def test_a_user_message_in_the_middle_of_a_loop_resets_it() -> None:
    # A steering message typed while the tools ran: the model reads it before its next turn.
    def steer(state: dict[str, Any]) -> dict[str, Any]:
        tool_results = sum(isinstance(m, ToolMessage) for m in state["messages"])
        return {"messages": [HumanMessage("try harder")] if tool_results == 2 else []}

    guard = RepeatToolReminderCallbackHandler()
    model = scripted(repeat("probe", SAME, 4))
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("steer", steer)
    builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", _route)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "steer")
    builder.add_edge("steer", "agent")
    messages = invoke(builder.compile(), guard)

    assert sum(isinstance(m, HumanMessage) and not is_reminder(m) for m in messages) == 2
    assert reminders(messages) == []


# -- one chain per agent ----------------------------------------------------------------------


def test_two_threads_stepping_in_turn_on_one_handler_keep_their_own_counts() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2, 3])
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


def test_concurrent_invocations_without_a_thread_never_share_a_chain() -> None:
    runs = 8
    everyone_started = threading.Barrier(runs)

    @tool("probe")
    def meeting_probe(q: str = "") -> str:
        """Waits until every run has made its first call."""
        if q.endswith("#0"):
            everyone_started.wait(WAIT)
        return "probed"

    guard = RepeatToolReminderCallbackHandler(thresholds=[2, 3])

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


async def test_concurrent_async_invocations_never_share_a_chain() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2, 3])

    async def one_run(index: int) -> list[Any]:
        script = repeat("probe", {"q": index % 2}, 3)
        graph = agent_graph(scripted(script), [_any_probe], guard)
        return (await graph.ainvoke(ask(), {"callbacks": [guard]}))["messages"]  # type: ignore[no-any-return]

    results = await asyncio.gather(*(one_run(i) for i in range(20)))

    for messages in results:
        assert_adjacent(messages)
        assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]


def _subagent_tool(guard: RepeatToolReminderCallbackHandler, child_calls: int) -> Any:
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


def test_a_subagent_inside_a_tool_has_its_own_chain_and_leaves_the_parents_alone() -> None:
    guard = RepeatToolReminderCallbackHandler(exclude=["delegate"])
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
    guard = RepeatToolReminderCallbackHandler(exclude=["delegate"])
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

    guard = RepeatToolReminderCallbackHandler()
    script = repeat("summarise", {"text": "x"}, 3)
    messages = invoke(agent_graph(scripted(script), [summarise], guard), guard)

    # The inner model's prompt is a user message; were it taken for the agent's, it would
    # reset the agent's chain after every call.
    assert reminders(messages) == [("gentle", "summarise", 3)]


def test_model_calls_outside_any_graph_are_no_agent() -> None:
    guard = RepeatToolReminderCallbackHandler()
    model = scripted([turn(call("probe", SAME))] * 2)
    model.invoke([HumanMessage("hi")], {"callbacks": [guard]})
    RunnableLambda(model.invoke).invoke("hi", {"callbacks": [guard]})

    assert guard.agent_count == 0


def test_a_model_call_with_no_new_turn_and_no_user_message_leaves_the_chain_alone() -> None:
    # A node that asks the model something aside (no user message, no tool turn) between
    # the agent's turns does not reset the agent's streak.
    aside = scripted([AIMessage("noted")] * 3)
    guard = RepeatToolReminderCallbackHandler()
    model = scripted(repeat("probe", SAME, 3))
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
    builder.add_node("aside", lambda state: aside.invoke([SystemMessage("note to self")]) and {})
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", _route)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "aside")
    builder.add_edge("aside", "agent")
    messages = invoke(builder.compile(), guard)

    assert reminders(messages) == [("gentle", "probe", 3)]


# -- bounded memory ---------------------------------------------------------------------------


def test_runs_without_a_thread_leave_nothing_behind() -> None:
    guard = RepeatToolReminderCallbackHandler()
    for _ in range(5):
        invoke(agent_graph(scripted(repeat("probe", SAME, 4)), [probe], guard), guard)

    assert guard.agent_count == 0
    assert guard._runs == {}


def test_threads_beyond_the_cap_forget_the_least_recent() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    guard.max_agents = 2
    saver = InMemorySaver()

    def step(thread: str) -> list[Any]:
        graph = agent_graph(scripted(repeat("probe", SAME, 1)), [probe], guard, checkpointer=saver)
        graph.interrupt_before_nodes = ["tools"]
        config = {"callbacks": [guard], "configurable": {"thread_id": thread}}
        if graph.get_state(config).next:
            graph.invoke(None, config)
        else:
            graph.invoke(ask(), config)
        graph.invoke(None, config)
        return graph.get_state(config).values["messages"]  # type: ignore[no-any-return]

    for thread in ("a", "b", "c"):
        step(thread)
    assert guard.agent_count == 2


def test_a_cap_of_one_chain_degrades_without_failing() -> None:
    guard = RepeatToolReminderCallbackHandler(exclude=["delegate"])
    guard.max_agents = 1
    delegate = _subagent_tool(guard, child_calls=3)
    script = [*repeat("probe", SAME, 2), turn(call("delegate", {"task": "look"}))]
    script += repeat("probe", SAME, 1)

    messages = invoke(agent_graph(scripted(script), [probe, delegate], guard), guard)

    # The subagent's chain pushed the parent's out: the parent starts over, and says nothing.
    assert reminders(messages) == []
    assert guard.agent_count == 0


def test_a_tiny_run_cap_degrades_without_failing() -> None:
    guard = RepeatToolReminderCallbackHandler()
    guard.max_runs = 1
    messages = invoke(agent_graph(scripted(repeat("probe", SAME, 3)), [probe], guard), guard)

    assert len(guard._runs) <= 1
    assert len([m for m in messages if isinstance(m, ToolMessage)]) == 3


# -- the node on its own ----------------------------------------------------------------------


def test_the_node_without_the_handler_in_the_callbacks_warns_once_and_adds_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = RepeatToolReminderCallbackHandler()
    graph = agent_graph(scripted(repeat("probe", SAME, 4)), [probe], guard)

    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        messages = graph.invoke(ask())["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == []
    warnings = [r for r in caplog.records if "pass the handler" in r.getMessage()]
    assert len(warnings) == 1


def test_the_node_waits_for_a_turn_to_be_answered_in_full() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    pending = turn(call("probe", SAME), call("probe", SAME))
    first, second = (ToolMessage("r", tool_call_id=c["id"]) for c in pending.tool_calls)
    builder = StateGraph(MessagesState)
    builder.add_node("node", RepeatToolReminderNode(guard))
    builder.add_edge(START, "node")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"callbacks": [guard], "configurable": {"thread_id": "t"}}

    half = graph.invoke({"messages": [HumanMessage("go"), pending, first]}, config)
    assert reminders(half["messages"]) == []
    full = graph.invoke({"messages": [second]}, config)
    assert reminders(full["messages"]) == [("gentle", "probe", 2)]


def test_the_node_reads_state_objects_and_other_keys() -> None:
    class ObjectState(BaseModel):
        history: list[BaseMessage]

    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    node = RepeatToolReminderNode(guard, messages_key="history")
    done = turn(call("probe", SAME), call("probe", SAME))
    results = [ToolMessage("r", tool_call_id=c["id"]) for c in done.tool_calls]
    builder = StateGraph(ObjectState)
    builder.add_node("node", node)
    builder.add_edge(START, "node")

    out = builder.compile().invoke(
        {"history": [HumanMessage("go"), done, *results]}, {"callbacks": [guard]}
    )

    assert reminders(out["history"]) == [("gentle", "probe", 2)]
    assert node(ObjectState(history=[]), {}) == {}
    assert node({"history": "not a list"}, {}) == {}


def test_the_node_takes_a_handler_or_a_configuration_not_both() -> None:
    with pytest.raises(TypeError, match="takes a RepeatToolReminderCallbackHandler or none"):
        RepeatToolReminderNode(ReminderConfig())  # type: ignore[arg-type]
    guard = RepeatToolReminderCallbackHandler()
    with pytest.raises(TypeError, match="the handler has its own configuration"):
        RepeatToolReminderNode(guard, thresholds=[2])
    with pytest.raises(TypeError, match="the handler has its own configuration"):
        RepeatToolReminderNode(guard, config=ReminderConfig())
    assert RepeatToolReminderNode(guard).config is guard.config
    assert RepeatToolReminderNode(thresholds=[4, 2]).config.thresholds == (2, 4)


def test_the_handler_takes_a_config_or_fields_not_both() -> None:
    config = ReminderConfig(thresholds=[2])
    assert RepeatToolReminderCallbackHandler(config).config is config
    with pytest.raises(TypeError, match="not both"):
        RepeatToolReminderCallbackHandler(config, thresholds=[3])
    with pytest.raises(TypeError, match="must be a ReminderConfig"):
        RepeatToolReminderCallbackHandler({"thresholds": [3]})  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match="unknown ReminderConfig field 'treshold'; did you mean 'thresholds'"
    ):
        RepeatToolReminderCallbackHandler(treshold=[3])
    with pytest.raises(
        TypeError, match="unknown ReminderConfig field 'zzz'; fields are thresholds, "
    ):
        RepeatToolReminderCallbackHandler(zzz=1)


# -- helpers ----------------------------------------------------------------------------------


def _route(state: Any) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "__end__"


@tool("probe")
def _any_probe(q: Any = None) -> str:
    """Look anything up."""
    return "probed"
