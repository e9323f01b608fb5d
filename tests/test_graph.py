"""The node on custom LangGraph agents, in both its forms: on a handler, and keeping its counts
in state. Every way of running the graph, what counts, resets, placement, state objects and
other keys, construction, warnings, the complete turn, and `route`."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, NotRequired

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel

from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderNode,
    RepeatToolReminderState,
)
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._messages import escalation_message, reminder_message
from repeat_reminder_langchain._reminder import Escalation, Reminder

from .conftest import Guarded, build
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
    wiring_warnings,
)

SAME = {"q": "same"}
EXPECTED = [("gentle", "probe", 3), ("detailed", "probe", 5)]
WAIT = 30  # seconds; only a bound on a wait that a working run ends at once
Make = Callable[..., Guarded]
NODE_FACES = ("handler", "state")
nodes = pytest.mark.parametrize("face", NODE_FACES)  # both forms of the node


def node_of(face: str, **fields: Any) -> tuple[RepeatToolReminderNode, dict[str, Any], Any]:
    """The node in `face`'s form, the run config it needs, and the graph state it needs."""
    if face == "handler":
        guard = RepeatToolReminderCallbackHandler(**fields)
        return RepeatToolReminderNode(guard), {"callbacks": [guard]}, MessagesState
    return RepeatToolReminderNode(**fields), {}, RepeatToolReminderState


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


@nodes
@pytest.mark.parametrize("mode", ["invoke", "stream-values", "stream-messages"])
@pytest.mark.parametrize("thread", [None, "t-1"])
def test_sync_runs_remind_the_same_with_and_without_a_thread(
    guarded: Make, mode: str, thread: str | None
) -> None:
    saver = InMemorySaver() if thread else None
    agent = guarded(scripted(repeat("probe", SAME, 5)), checkpointer=saver)

    messages = _final_messages_sync(agent.graph, agent.run_config(thread), mode)

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED


@nodes
@pytest.mark.parametrize("mode", ["ainvoke", "astream-values", "astream-messages"])
@pytest.mark.parametrize("thread", [None, "t-1"])
async def test_async_runs_remind_the_same_with_and_without_a_thread(
    guarded: Make, mode: str, thread: str | None
) -> None:
    saver = InMemorySaver() if thread else None
    agent = guarded(scripted(repeat("probe", SAME, 5)), checkpointer=saver)

    messages = await _final_messages_async(agent.graph, agent.run_config(thread), mode)

    assert_adjacent(messages)
    assert reminders(messages) == EXPECTED


@nodes
async def test_async_tools_count_like_sync_ones(guarded: Make) -> None:
    @tool("probe")
    async def async_probe(q: str = "") -> str:
        """Look something up, asynchronously."""
        return f"probed {q}"

    agent = guarded(scripted(repeat("probe", SAME, 5)), tools=[async_probe])

    assert reminders(await agent.ainvoke(ask())) == EXPECTED


@nodes
def test_the_model_sees_each_reminder_once_right_after_the_results(guarded: Make) -> None:
    model = scripted(repeat("probe", SAME, 3))
    guarded(model).invoke(ask())

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


@nodes
def test_calls_whose_tool_raises_count(guarded: Make) -> None:
    @tool("probe")
    def failing(q: str = "") -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    messages = guarded(scripted(repeat("probe", SAME, 3)), tools=[failing]).invoke(ask())

    assert all("disk on fire" in m.content for m in messages if isinstance(m, ToolMessage))
    assert reminders(messages) == [("gentle", "probe", 3)]


@nodes
def test_three_identical_calls_in_one_turn_reach_three(guarded: Make) -> None:
    script = [turn(call("probe", SAME), call("probe", SAME), call("probe", SAME))]
    messages = guarded(scripted(script)).invoke(ask())

    assert reminders(messages) == [("gentle", "probe", 3)]
    assert [type(m).__name__ for m in messages[1:6]] == [
        "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage", "SystemMessage",
    ]  # fmt: skip


def _ordered_script() -> list[AIMessage]:
    # probe(a) once, then one turn [probe(a), other(b)]: probe(a) reaches 2 only when the turn
    # is counted in the order the model wrote it, whichever call finishes first.
    return [turn(call("probe", {"q": "a"})), turn(call("probe", {"q": "a"}), call("other", {}))]


@nodes
def test_a_parallel_turn_counts_in_call_order_even_when_the_first_call_finishes_last(
    guarded: Make,
) -> None:
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

    agent = guarded(scripted(_ordered_script()), tools=[slow_probe, quick_other], thresholds=[2])
    messages = agent.invoke(ask())

    assert finished == ["probe", "other", "probe"]
    assert reminders(messages) == [("gentle", "probe", 2)]


@nodes
async def test_an_async_parallel_turn_counts_in_call_order_too(guarded: Make) -> None:
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

    agent = guarded(scripted(_ordered_script()), tools=[slow_probe, quick_other], thresholds=[2])
    messages = await agent.ainvoke(ask())

    assert finished == ["probe", "other", "probe"]
    assert reminders(messages) == [("gentle", "probe", 2)]


# -- resets -----------------------------------------------------------------------------------


@nodes
@pytest.mark.parametrize("message_type", ["system", "human"])
def test_the_guards_own_messages_never_reset_the_streak(guarded: Make, message_type: str) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 4)), thresholds=[2, 3, 4], message_type=message_type
    )
    messages = agent.invoke(ask())

    assert reminders(messages) == [
        ("gentle", "probe", 2), ("detailed", "probe", 3), ("detailed", "probe", 4),
    ]  # fmt: skip
    kinds = {type(m).__name__ for m in messages if is_reminder(m)}
    assert kinds == {"HumanMessage" if message_type == "human" else "SystemMessage"}


@nodes
def test_a_user_message_in_the_middle_of_a_loop_resets_it(face: str) -> None:
    # A steering message typed while the tools ran: the model reads it before its next turn.
    def steer(state: dict[str, Any]) -> dict[str, Any]:
        tool_results = sum(isinstance(m, ToolMessage) for m in state["messages"])
        return {"messages": [HumanMessage("try harder")] if tool_results == 2 else []}

    node, config, schema = node_of(face)
    model = scripted(repeat("probe", SAME, 4))
    builder = StateGraph(schema)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("steer", steer)
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "steer")
    builder.add_edge("steer", "agent")
    messages = builder.compile().invoke(ask(), config)["messages"]

    assert_adjacent(messages)
    assert sum(isinstance(m, HumanMessage) and not is_reminder(m) for m in messages) == 2
    assert reminders(messages) == []  # 2 calls, the user spoke, then 2 more


# -- placement and state ----------------------------------------------------------------------


@nodes
def test_the_node_waits_for_a_turn_to_be_answered_in_full(face: str) -> None:
    node, config, schema = node_of(face, thresholds=[2])
    pending = turn(call("probe", SAME), call("probe", SAME))
    first, second = (ToolMessage("r", tool_call_id=c["id"]) for c in pending.tool_calls)
    builder = StateGraph(schema)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {**config, "configurable": {"thread_id": "t"}}

    half = graph.invoke({"messages": [HumanMessage("go"), pending, first]}, config)
    assert reminders(half["messages"]) == []
    full = graph.invoke({"messages": [second]}, config)
    assert reminders(full["messages"]) == [("gentle", "probe", 2)]
    assert_adjacent(full["messages"])


class ObjectState(BaseModel):
    history: list[BaseMessage]
    guard_counts: dict[str, Any] | None = None


def _answered_pair() -> list[BaseMessage]:
    done = turn(call("probe", SAME), call("probe", SAME))
    return [
        HumanMessage("go"),
        done,
        *(ToolMessage("r", tool_call_id=c["id"]) for c in done.tool_calls),
    ]


@nodes
def test_the_node_reads_state_objects_and_other_keys(face: str) -> None:
    if face == "handler":
        guard = RepeatToolReminderCallbackHandler(thresholds=[2])
        node = RepeatToolReminderNode(guard, messages_key="history")
        config: dict[str, Any] = {"callbacks": [guard]}
    else:
        node = RepeatToolReminderNode(
            messages_key="history", state_key="guard_counts", thresholds=[2]
        )
        config = {}
    builder = StateGraph(ObjectState)
    builder.add_node("node", node)
    builder.add_edge(START, "node")

    out = builder.compile().invoke({"history": _answered_pair()}, config)

    assert_adjacent(out["history"])
    assert reminders(out["history"]) == [("gentle", "probe", 2)]
    if face == "state":
        assert out["guard_counts"]["count"] == 2
    assert node(ObjectState(history=[]), {}) == {}
    assert node({"history": "not a list"}, {}) == {}


def test_the_state_kept_node_keeps_its_counts_under_the_key_it_is_given() -> None:
    class Custom(MessagesState):
        loop_guard: NotRequired[dict[str, Any]]

    node = RepeatToolReminderNode(state_key="loop_guard", thresholds=[2])
    builder = StateGraph(Custom)
    builder.add_node("node", node)
    builder.add_edge(START, "node")

    out = builder.compile().invoke({"messages": _answered_pair()})

    assert_adjacent(out["messages"])
    assert reminders(out["messages"]) == [("gentle", "probe", 2)]
    assert out["loop_guard"]["count"] == 2
    assert "repeat_tool_reminder" not in out


# -- route ------------------------------------------------------------------------------------


def test_route_ends_after_an_answer_or_the_guards_final_message() -> None:
    node = RepeatToolReminderNode()
    stopped = escalation_message(Escalation("probe", 6, "repeat", "{}", "end"))
    reminded = reminder_message(Reminder("probe", 3, "gentle", "{}"))
    result = ToolMessage("probed", tool_call_id="c1")

    assert node.route({"messages": [HumanMessage("go"), stopped]}) == "end"
    assert node.route({"messages": [HumanMessage("go"), AIMessage("done")]}) == "end"
    assert node.route({"messages": [HumanMessage("go"), turn(call("probe", SAME))]}) == "continue"
    assert node.route({"messages": [turn(call("probe", SAME, "c1")), result]}) == "continue"
    assert node.route({"messages": [result, reminded]}) == "continue"  # a reminder, not the end
    assert node.route({"messages": []}) == "continue"
    assert node.route({}) == "continue"


def test_route_reads_the_messages_key_of_state_objects() -> None:
    guard = RepeatToolReminderCallbackHandler()
    node = RepeatToolReminderNode(guard, messages_key="history")
    stopped = escalation_message(Escalation("probe", 6, "repeat", "{}", "end"))

    assert node.route(ObjectState(history=[HumanMessage("go"), stopped])) == "end"
    assert node.route(ObjectState(history=[HumanMessage("go")])) == "continue"
    assert node.route({"messages": [stopped]}) == "continue"  # not its key


@nodes
def test_a_graph_routed_by_the_node_ends_where_the_guard_stopped_the_loop(face: str) -> None:
    node, config, schema = node_of(face, thresholds=[3], escalate_after=4, exit_behavior="end")
    model = scripted(repeat("probe", SAME, 9))
    builder = StateGraph(schema)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_conditional_edges("repeat_reminder", node.route, {"continue": "agent", "end": END})
    messages = builder.compile().invoke(ask(), config)["messages"]

    assert_adjacent(messages)
    assert sum(isinstance(m, ToolMessage) for m in messages) == 4
    assert messages[-1].additional_kwargs["repeat_tool_reminder"]["level"] == "escalated"
    assert len(model.seen) == 4  # the model was not called again


# -- warnings ---------------------------------------------------------------------------------


def test_the_node_without_the_handler_in_the_callbacks_warns_once_and_adds_nothing(
    recwarn: pytest.WarningsRecorder,
) -> None:
    guard = RepeatToolReminderCallbackHandler()
    graph = agent_graph(scripted(repeat("probe", SAME, 4)), [probe], guard)
    messages = graph.invoke(ask())["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == []
    assert len(wiring_warnings(recwarn, "pass the handler")) == 1


def _state_kept_node_before_the_tools() -> tuple[Any, RepeatToolReminderNode]:
    model = scripted(repeat("probe", SAME, 5))
    node = RepeatToolReminderNode()
    builder = StateGraph(RepeatToolReminderState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "repeat_reminder", END: END})
    builder.add_edge("repeat_reminder", "tools")
    builder.add_edge("tools", "agent")
    return builder.compile(), node


def test_a_state_kept_node_before_the_tools_node_never_sees_a_finished_turn() -> None:
    graph, node = _state_kept_node_before_the_tools()
    messages = graph.invoke(ask())["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == []
    assert node.stats.snapshot()["calls"] == 0  # every turn it sees still waits for results


def test_a_misplaced_state_kept_node_is_not_told_its_state_lacks_the_field(
    recwarn: pytest.WarningsRecorder,
) -> None:
    graph, _ = _state_kept_node_before_the_tools()
    assert_adjacent(graph.invoke(ask())["messages"])

    assert wiring_warnings(recwarn, "ran before the results")  # what it is told instead
    assert wiring_warnings(recwarn, "which this graph's state does not have") == []


def test_a_state_kept_node_joining_a_conversation_with_history_is_not_told_it_lacks_the_field(
    recwarn: pytest.WarningsRecorder,
) -> None:
    # A thread that went on before the guard was added: tool turns, and no field yet.
    history: list[BaseMessage] = [HumanMessage("go")]
    for number in range(3):
        made = turn(call("probe", {"q": f"earlier {number}"}))
        history += [made, ToolMessage("found", tool_call_id=made.tool_calls[0]["id"])]
    model = scripted(repeat("probe", SAME, 3))
    graph = agent_graph(
        model,
        [probe],
        None,
        after_tools=RepeatToolReminderNode(profile="seed"),
        state=RepeatToolReminderState,
    )
    messages = graph.invoke({"messages": history})["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert wiring_warnings(recwarn) == []


def test_a_state_kept_node_remembers_a_bounded_number_of_threads() -> None:
    node = RepeatToolReminderNode()
    records = node._records
    records.limit = 2  # type: ignore[attr-defined]
    made = turn(call("probe", SAME))
    state = {
        "messages": [
            HumanMessage("go"),
            made,
            ToolMessage("found", tool_call_id=made.tool_calls[0]["id"]),
        ]
    }
    for number in range(5):
        assert "repeat_tool_reminder" in node(state, {"configurable": {"thread_id": str(number)}})
        assert len(records._stored_for) <= 2  # type: ignore[attr-defined]
    assert "4" in records._stored_for  # type: ignore[attr-defined]


# -- construction -----------------------------------------------------------------------------


def test_the_node_takes_a_handler_or_a_configuration_not_both() -> None:
    with pytest.raises(TypeError, match="takes a RepeatToolReminderCallbackHandler or none"):
        RepeatToolReminderNode(ReminderConfig())  # type: ignore[arg-type]
    guard = RepeatToolReminderCallbackHandler()
    with pytest.raises(TypeError, match="the handler has its own configuration"):
        RepeatToolReminderNode(guard, thresholds=[2])
    with pytest.raises(TypeError, match="the handler has its own configuration"):
        RepeatToolReminderNode(guard, config=ReminderConfig())
    node = RepeatToolReminderNode(guard)
    assert node.config is guard.config
    assert node.stats is guard.stats
    assert node.tool_policies is guard.tool_policies
    assert RepeatToolReminderNode(thresholds=[4, 2]).config.thresholds == (2, 4)
    config = ReminderConfig(thresholds=[2])
    assert RepeatToolReminderNode(config=config).config is config
    with pytest.raises(TypeError, match="not both"):
        RepeatToolReminderNode(config=config, thresholds=[3])
    with pytest.raises(TypeError, match="did you mean 'thresholds'"):
        RepeatToolReminderNode(treshold=[3])  # type: ignore[call-arg]


@pytest.mark.parametrize("face", ["handler", "state"])
def test_a_failure_while_acting_is_logged_and_the_run_goes_on(
    face: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import repeat_reminder_langchain._guard as guard_module

    from .conftest import build

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    agent = build(face, scripted(repeat("probe", {"q": "same"}, 3)))
    monkeypatch.setattr(guard_module, "reminder_message", broken)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        messages = agent.invoke(ask())

    assert messages[-1].content == "done"
    assert reminders(messages) == []
    assert "repeat reminder node failed; the run goes on without reminders" in {
        r.getMessage() for r in caplog.records
    }


@pytest.mark.parametrize("face", ["handler", "state"])
def test_a_node_that_cannot_end_the_run_says_so_before_the_loop_runs_on_and_never_says_stopped(
    face: str, recwarn: pytest.WarningsRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    # The README's wiring before its route: a plain edge from the node back to the model.
    fields: dict[str, Any] = {"escalate_after": 10, "exit_behavior": "end"}
    handler = RepeatToolReminderCallbackHandler(**fields) if face == "handler" else None
    node = None if handler else RepeatToolReminderNode(**fields)
    model = scripted(repeat("probe", {"q": "same"}, 40))
    graph = agent_graph(model, [probe], handler, after_tools=node, state=RepeatToolReminderState)
    config: Any = {"recursion_limit": 200, "callbacks": [handler] if handler else []}
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        messages = graph.invoke(ask(), config)["messages"]

    assert_adjacent(messages)
    # The loop ran on: the node cannot end a run its graph does not route on from it ...
    assert sum(isinstance(m, ToolMessage) for m in messages) == 40
    assert not any(isinstance(m, AIMessage) and is_reminder(m) for m in messages)
    # ... which the user was told once, at their line, before the loop reached the limit,
    (warned,) = wiring_warnings(recwarn, "node.route")
    assert 'exit_behavior="end") ends a looping run through its route' in warned
    # and no line says it stopped.
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [line.split(":")[0] for line in said] == ["repeat tool loop would be stopped"]
    assert not [line for line in caplog.messages if "loop stopped" in line]


def test_a_routed_node_warns_of_nothing_and_ends_the_run(
    recwarn: pytest.WarningsRecorder,
) -> None:
    agent = build("state", scripted(repeat("probe", {"q": "same"}, 40)), escalate_after=10)
    messages = agent.invoke(ask())

    assert sum(isinstance(m, ToolMessage) for m in messages) == 10
    assert messages[-1].additional_kwargs["repeat_tool_reminder"]["level"] == "escalated"
    assert wiring_warnings(recwarn) == []
