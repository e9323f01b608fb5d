"""The middleware in `create_agent`, and what each provider receives."""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

# Optional peers (the dev extra): `make test-lowest` runs without them and skips this module.
pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_google_genai")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, ModelRequest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

import repeat_reminder_langchain._guard as guard_module
import repeat_reminder_langchain._middleware as middleware_module
from repeat_reminder_langchain import (
    Reminder,
    ReminderConfig,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
)
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._messages import reminder_message

from .helpers import (
    LoopModel,
    ScriptedModel,
    amodel_call,
    ask,
    assert_adjacent,
    call,
    model_call,
    probe,
    reminders,
    repeat,
    scripted,
    turn,
    wiring_warnings,
)

SAME = {"q": "same"}


def thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


def agent_with(model: Any, *middleware: Any, tools: Any = (probe,), **kwargs: Any) -> Any:
    return create_agent(model, tools=list(tools), middleware=list(middleware), **kwargs)


# -- counting in create_agent -----------------------------------------------------------------


def test_thresholds_draw_reminders_after_the_results_and_the_model_reads_them() -> None:
    model = scripted(repeat("probe", SAME, 5))
    messages = agent_with(model, RepeatToolReminderMiddleware()).invoke(ask())["messages"]

    assert_adjacent(messages)
    for prompt in model.seen:
        assert_adjacent(prompt)
    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert is_reminder(messages[messages.index(results[2]) + 1])
    # The scripted model declares no profile, so it is sent the reminder as a user turn.
    third_prompt = model.seen[3]
    assert isinstance(third_prompt[-1], HumanMessage)
    assert third_prompt[-1].content.startswith("<system-reminder>\nYou have called `probe` 3")
    assert isinstance(third_prompt[-2], ToolMessage)


async def test_async_agents_count_the_same() -> None:
    agent = agent_with(scripted(repeat("probe", SAME, 5)), RepeatToolReminderMiddleware())
    messages = (await agent.ainvoke(ask()))["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]


def test_human_message_reminders_are_stored_as_tagged_user_messages() -> None:
    middleware = RepeatToolReminderMiddleware(thresholds=[2], message_type="human")
    messages = agent_with(scripted(repeat("probe", SAME, 2)), middleware).invoke(ask())["messages"]

    (reminder,) = [m for m in messages if is_reminder(m)]
    assert isinstance(reminder, HumanMessage)
    assert reminder.content.startswith("<system-reminder>")


def test_unknown_tools_and_failing_arguments_count() -> None:
    script = [*repeat("nowhere", SAME, 3), *repeat("probe", {"q": ["not", "text"]}, 3)]
    messages = agent_with(scripted(script), RepeatToolReminderMiddleware()).invoke(ask())[
        "messages"
    ]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "nowhere", 3), ("gentle", "probe", 3)]


def test_calls_rejected_by_a_human_count() -> None:
    ran: list[str] = []

    @tool("probe")
    def guarded(q: str = "") -> str:
        """Look something up, if a human allows it."""
        ran.append(q)
        return "probed"

    agent = agent_with(
        scripted(repeat("probe", SAME, 3)),
        HumanInTheLoopMiddleware(interrupt_on={"probe": True}),
        RepeatToolReminderMiddleware(),
        tools=[guarded],
        checkpointer=InMemorySaver(),
    )
    config = thread("hitl")
    result = agent.invoke(ask(), config)
    rejections = 0
    while "__interrupt__" in result:
        rejections += 1
        reject = {"decisions": [{"type": "reject", "message": "not now"}]}
        result = agent.invoke(Command(resume=reject), config)

    assert rejections == 3
    assert ran == []
    assert_adjacent(result["messages"])
    assert reminders(result["messages"]) == [("gentle", "probe", 3)]


def stored_count(agent: Any, config: Any) -> int:
    stored = agent.get_state(config).values["repeat_tool_reminder"]
    return int(stored["RepeatToolReminderMiddleware"]["count"])


def test_three_identical_parallel_calls_reach_three_after_the_whole_block() -> None:
    script = [turn(call("probe", SAME), call("probe", SAME), call("probe", SAME))]
    messages = agent_with(scripted(script), RepeatToolReminderMiddleware()).invoke(ask())[
        "messages"
    ]

    assert_adjacent(messages)
    assert [type(m).__name__ for m in messages[1:5]] == [
        "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage",
    ]  # fmt: skip
    assert is_reminder(messages[5])
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_a_call_interrupted_and_resumed_counts_once() -> None:
    @tool("probe")
    def asks_first(q: str = "") -> str:
        """Look something up after asking a human."""
        return f"probed {interrupt('may I?')}"

    agent = agent_with(
        scripted(repeat("probe", SAME, 3)),
        RepeatToolReminderMiddleware(thresholds=[3, 4]),
        tools=[asks_first],
        checkpointer=InMemorySaver(),
    )
    config = thread("resume")
    result = agent.invoke(ask(), config)
    while "__interrupt__" in result:
        result = agent.invoke(Command(resume="yes"), config)

    assert_adjacent(result["messages"])
    assert reminders(result["messages"]) == [("gentle", "probe", 3)]


def test_the_chain_is_private_state_kept_in_the_checkpoint() -> None:
    agent = agent_with(
        scripted(repeat("probe", SAME, 2)),
        RepeatToolReminderMiddleware(),
        checkpointer=InMemorySaver(),
    )
    config = thread("private")
    output = agent.invoke(ask(), config)

    assert "repeat_tool_reminder" not in output
    stored = agent.get_state(config).values["repeat_tool_reminder"]
    assert list(stored) == ["RepeatToolReminderMiddleware"]  # by instance name
    assert stored["RepeatToolReminderMiddleware"]["tool"] == "probe"
    assert stored["RepeatToolReminderMiddleware"]["count"] == 2
    assert len(json.dumps(stored)) < 300
    schema = agent.get_input_jsonschema()
    assert "repeat_tool_reminder" not in json.dumps(schema)


def test_the_stored_chain_stays_small_whatever_the_argument_size() -> None:
    huge = {"q": "x" * 1_000_000}
    agent = agent_with(
        scripted(repeat("probe", huge, 2)),
        RepeatToolReminderMiddleware(),
        checkpointer=InMemorySaver(),
    )
    config = thread("huge")
    agent.invoke(ask(), config)

    stored = agent.get_state(config).values["repeat_tool_reminder"]
    assert stored["RepeatToolReminderMiddleware"]["count"] == 2
    assert len(json.dumps(stored)) < 300


def test_a_threads_record_is_the_same_size_after_its_twelfth_invocation_as_after_its_second() -> (
    None
):
    # Each invocation loops and is reminded (a system message stored in the conversation); a
    # model that takes none is sent every stored reminder as a user turn, the first
    # invocation's as well as the latest, while the record keeps no more than it did.
    script: list[Any] = []
    for _ in range(12):
        script += [*repeat("probe", SAME, 3), AIMessage("answer")]
    model = scripted(script)
    agent = agent_with(model, RepeatToolReminderMiddleware(), checkpointer=InMemorySaver())
    config = thread("twelve")
    sizes = []
    for number in range(12):
        messages = agent.invoke(ask(f"question {number}"), config)["messages"]
        assert_adjacent(messages)
        sizes.append(len(json.dumps(agent.get_state(config).values["repeat_tool_reminder"])))

    assert sizes[1] == sizes[11] < 300
    stored = [m.id for m in messages if is_reminder(m)]
    assert len(stored) == 12 and all(m.type == "system" for m in messages if is_reminder(m))
    last = model.seen[-1]
    assert [(m.type, m.id) for m in last if is_reminder(m)] == [("human", i) for i in stored]


def test_a_new_user_message_resets_the_count_of_the_thread() -> None:
    script = [*repeat("probe", SAME, 2), AIMessage("answer"), *repeat("probe", SAME, 2)]
    agent = agent_with(
        scripted(script), RepeatToolReminderMiddleware(), checkpointer=InMemorySaver()
    )
    config = thread("reset")
    agent.invoke(ask("first"), config)
    messages = agent.invoke(ask("second"), config)["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == []
    assert stored_count(agent, config) == 2


def test_an_unreadable_stored_chain_starts_over() -> None:
    script = [*repeat("probe", SAME, 2), AIMessage("first"), *repeat("probe", SAME, 2)]
    agent = agent_with(
        scripted(script), RepeatToolReminderMiddleware(), checkpointer=InMemorySaver()
    )
    config = thread("garbage")
    agent.invoke(ask(), config)
    forged = {"RepeatToolReminderMiddleware": {"count": "many"}}
    agent.update_state(config, {"repeat_tool_reminder": forged})
    messages = agent.invoke(ask("again"), config)["messages"]

    assert reminders(messages) == []
    assert stored_count(agent, config) == 2


def _stopped_after_two_calls(agent: Any, config: Any) -> None:
    """A thread asked for a loop of 5, stopped before the tools of its second call."""
    agent.invoke(ask("loop 5"), config, interrupt_before=["tools"])
    agent.invoke(None, config, interrupt_before=["tools"])
    assert agent.get_state(config).next == ("tools",)


@pytest.mark.parametrize("value", ["garbage", 12345, [1, 2]])
def test_a_client_writing_anything_into_the_field_has_the_count_rebuilt_from_the_thread(
    value: object, caplog: pytest.LogCaptureFixture
) -> None:
    agent = agent_with(LoopModel(), RepeatToolReminderMiddleware(), checkpointer=InMemorySaver())
    config = thread(f"written-{value!r}")
    _stopped_after_two_calls(agent, config)

    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        agent.update_state(config, {"repeat_tool_reminder": value})  # raised TypeError
    (line,) = caplog.messages
    assert "replaced" in line
    assert type(value).__name__ in line
    assert agent.get_state(config).values["repeat_tool_reminder"] == {}

    messages = agent.invoke(None, config)["messages"]  # the thread goes on
    assert_adjacent(messages)
    # With no record, the guard counts the calls since the user spoke, as if it had kept one:
    # the thread goes on as a thread nobody wrote into.
    untouched = thread(f"untouched-{value!r}")
    _stopped_after_two_calls(agent, untouched)
    assert reminders(messages) == reminders(agent.invoke(None, untouched)["messages"])
    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]
    assert stored_count(agent, config) == 5


def test_an_entry_that_is_not_a_record_is_dropped_and_the_others_are_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ours = RepeatToolReminderMiddleware(name="ours")
    theirs = RepeatToolReminderMiddleware(name="theirs")
    agent = agent_with(LoopModel(), ours, theirs, checkpointer=InMemorySaver())
    config = thread("one-entry")
    _stopped_after_two_calls(agent, config)

    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        agent.update_state(config, {"repeat_tool_reminder": {"ours": "garbage"}})
    (line,) = caplog.messages
    assert "'ours'" in line
    kept = agent.get_state(config).values["repeat_tool_reminder"]
    assert sorted(kept) == ["theirs"]

    messages = agent.invoke(None, config)["messages"]
    assert_adjacent(messages)
    kept = agent.get_state(config).values["repeat_tool_reminder"]
    assert (kept["ours"]["count"], kept["theirs"]["count"]) == (5, 5)  # ours rebuilt its count
    assert ours.stats.snapshot() == theirs.stats.snapshot()


@pytest.mark.parametrize(
    ("kept", "written", "merged"),
    [
        (None, None, {}),
        ({"a": {"count": 2}}, None, {"a": {"count": 2}}),
        ({"a": {"count": 2}}, {"b": {"count": 1}}, {"a": {"count": 2}, "b": {"count": 1}}),
        # A checkpoint holding another shape: what is written replaces what cannot be kept.
        ("garbage", {"b": {"count": 1}}, {"b": {"count": 1}}),
        ({"turn": "t1", "count": 3}, {"b": {"count": 1}}, {"b": {"count": 1}}),
        ({"a": [1], "b": {"count": 2}}, None, {"b": {"count": 2}}),
        ({"a": {"count": 2}}, 7, {}),
    ],
)
def test_the_fields_reducer_takes_any_value_on_either_side(
    kept: Any, written: Any, merged: dict[str, Any]
) -> None:
    assert middleware_module.merge_records(kept, written) == merged


def test_each_bad_write_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    # One write applied twice (LangGraph routes on it) is one line; two writes are two, even
    # when the second is made where the first was freed (the same id).
    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        for _ in range(2):
            written = {"ours": "garbage"}
            middleware_module.merge_records({}, written)
            middleware_module.merge_records({}, written)
            del written
    assert (
        caplog.messages
        == ["repeat reminder state replaced: written entries 'ours' are not records"] * 2
    )


def test_an_internal_failure_is_logged_and_the_agent_completes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    monkeypatch.setattr(guard_module, "read_turn", broken)
    monkeypatch.setattr(RepeatToolReminderMiddleware, "_learn", broken)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        messages = agent_with(
            scripted(repeat("probe", SAME, 3)), RepeatToolReminderMiddleware()
        ).invoke(ask())["messages"]

    assert messages[-1].content == "done"
    logged = {r.getMessage() for r in caplog.records}
    assert "repeat reminder middleware failed; the run goes on without it" in logged
    assert "repeat reminder failed to read the tools; they declare nothing" in logged


def test_a_failure_counting_the_answer_at_the_end_is_logged_and_the_run_ends(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = guard_module.read_turn

    def broken_on_answers(messages: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls:
            raise RuntimeError("guard bug")
        return real(messages, *args, **kwargs)

    monkeypatch.setattr(guard_module, "read_turn", broken_on_answers)
    guard = RepeatToolReminderMiddleware()
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        messages = agent_with(scripted(repeat("probe", SAME, 3)), guard).invoke(ask())["messages"]

    assert messages[-1].content == "done"
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert [r.getMessage() for r in caplog.records] == [
        "repeat reminder middleware failed; the run goes on without it"
    ]
    assert guard.stats.snapshot()["followed"] == 0  # not counted: nothing claimed


def test_a_run_that_a_tool_ends_after_a_reminder_is_followed_up_when_the_thread_goes_on() -> None:
    @tool(return_direct=True)
    def publish(q: str = "") -> str:
        """Publish, and end the run with this result."""
        return "published"

    script = [*repeat("probe", SAME, 3), turn(call("publish", SAME)), AIMessage("ok")]
    guard = RepeatToolReminderMiddleware()
    agent = agent_with(
        scripted(script), guard, tools=[probe, publish], checkpointer=InMemorySaver()
    )
    config = thread("return-direct")
    messages = agent.invoke(ask(), config)["messages"]

    assert messages[-1].content == "published"  # the tool's result ended the run
    # That turn is counted by the next model call: a reminder it drew can still reach it.
    assert guard.stats.snapshot()["followed"] == 0
    agent.invoke(ask("and now?"), config)
    stats = guard.stats.snapshot()
    assert (stats["followed"], stats["recovered"]) == (1, 1)


def test_the_middleware_takes_a_config_or_fields() -> None:
    config = ReminderConfig(thresholds=[2])
    assert RepeatToolReminderMiddleware(config).config is config
    assert RepeatToolReminderMiddleware(exclude=["todo_*"]).config.exclude == ("todo_*",)
    with pytest.raises(TypeError, match="not both"):
        RepeatToolReminderMiddleware(config, thresholds=[3])
    with pytest.raises(ValueError, match="thresholds: must not be empty"):
        RepeatToolReminderMiddleware(thresholds=[])


# -- the node without a handler keeps its chain in state, too ---------------------------------


def _stateful_graph(model: Any, node: RepeatToolReminderNode, state: Any) -> Any:
    from langgraph.graph import START, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    builder = StateGraph(state)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([probe], handle_tool_errors=True))
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "agent")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_node_without_a_handler_counts_from_state_across_runs() -> None:
    script = repeat("probe", SAME, 4)
    graph = _stateful_graph(scripted(script), RepeatToolReminderNode(), RepeatToolReminderState)
    graph.interrupt_before_nodes = ["tools"]
    config = thread("stateful")
    graph.invoke(ask(), config)
    while graph.get_state(config).next:
        graph.invoke(None, config)  # each step is a run of its own; no handler anywhere

    values = graph.get_state(config).values
    assert_adjacent(values["messages"])
    assert reminders(values["messages"]) == [("gentle", "probe", 3)]
    assert values["repeat_tool_reminder"]["count"] == 4


def test_a_node_without_a_handler_warns_when_the_state_has_no_field(
    recwarn: pytest.WarningsRecorder,
) -> None:
    from langgraph.graph import MessagesState

    graph = _stateful_graph(
        scripted(repeat("probe", SAME, 4)), RepeatToolReminderNode(), MessagesState
    )
    messages = graph.invoke(ask(), thread("no-field"))["messages"]

    # Nothing is kept between turns: each turn counts the conversation since the user spoke
    # again, which finds the loop, at the cost of reading it all every turn.
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert len(wiring_warnings(recwarn, "state field 'repeat_tool_reminder'")) == 1


# -- what each provider receives --------------------------------------------------------------


# -- the form reminders are kept in -----------------------------------------------------------


def _keeping_system_messages() -> Any:
    model = scripted(repeat("probe", SAME, 3))
    model.profile = {"mid_conversation_system_messages": True}
    return model


def test_a_model_that_takes_system_messages_gets_them_in_place() -> None:
    model = _keeping_system_messages()
    messages = agent_with(model, RepeatToolReminderMiddleware()).invoke(ask())["messages"]

    (reminder,) = [m for m in messages if is_reminder(m)]
    assert reminder.type == "system"
    assert any(m is reminder for m in model.seen[-1])  # sent as it is stored


def _third_call_pending(name: str) -> tuple[InMemorySaver, Any]:
    """A thread whose third identical call waits for its tool, checkpointed."""
    saver, config = InMemorySaver(), thread(name)
    first = agent_with(
        scripted(repeat("probe", SAME, 3)), RepeatToolReminderMiddleware(), checkpointer=saver
    )
    first.invoke(ask(), config, interrupt_before=["tools"])
    for _ in range(2):
        first.invoke(None, config, interrupt_before=["tools"])
    return saver, config


def test_a_reminder_is_stored_as_configured_and_sent_as_each_request_s_model_takes_it() -> None:
    # A new process resumes a thread, and a model that takes no system message reads the
    # stored SystemMessage reminder as a user turn, in place, in every request; the state
    # keeps the one form it was stored in, and the record that one was.
    saver, config = _third_call_pending("restarted")
    model = scripted(["done", "done again"])
    resumed = agent_with(model, RepeatToolReminderMiddleware(), checkpointer=saver)
    messages = resumed.invoke(None, config)["messages"]

    assert_adjacent(messages)
    (reminder,) = [m for m in messages if is_reminder(m)]
    assert reminder.type == "system"
    position = messages.index(reminder)
    sent = model.seen[0][position]
    assert sent.type == "human" and str(sent.content).startswith("<system-reminder>")
    assert (sent.id, sent.additional_kwargs) == (reminder.id, reminder.additional_kwargs)
    stored = resumed.get_state(config).values["repeat_tool_reminder"]
    assert stored["RepeatToolReminderMiddleware"]["system"] is True

    messages = resumed.invoke(ask("go on"), config)["messages"]
    assert_adjacent(messages)
    assert [m.type for m in messages if is_reminder(m)] == ["system"]  # stored, as it was
    assert model.seen[1][position] == sent  # and sent, as the model takes it
    stored = resumed.get_state(config).values["repeat_tool_reminder"]
    assert stored["RepeatToolReminderMiddleware"]["system"] is True


def test_reminders_no_longer_where_they_were_stored_are_found_wherever_they_are() -> None:
    # The conversation was rewritten since (a message removed before the reminder): the
    # model is sent every stored reminder as a user turn all the same.
    saver, config = _third_call_pending("rewritten")
    first = agent_with(scripted([]), RepeatToolReminderMiddleware(), checkpointer=saver)
    first.invoke(None, config)
    question = first.get_state(config).values["messages"][0]
    first.update_state(config, {"messages": [RemoveMessage(id=question.id)]})
    model = scripted(["ok"])
    agent_with(model, RepeatToolReminderMiddleware(), checkpointer=saver).invoke(
        ask("go on"), config
    )

    (sent,) = [m for m in model.seen[0] if is_reminder(m)]
    assert sent.type == "human" and str(sent.content).startswith("<system-reminder>")


def test_a_reminder_that_cannot_be_converted_is_sent_as_stored(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    saver, config = _third_call_pending("unconvertible")
    monkeypatch.setattr(middleware_module, "prepare_messages", broken)
    model = scripted([])
    resumed = agent_with(model, RepeatToolReminderMiddleware(), checkpointer=saver)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        messages = resumed.invoke(None, config)["messages"]

    assert_adjacent(messages)
    assert model.seen[0][-1].type == "system"  # as it is stored
    assert "repeat reminder rendering failed; messages sent as stored" in {
        r.getMessage() for r in caplog.records
    }


# -- instances, names and failures ------------------------------------------------------------


class _Down(ScriptedModel):
    """A provider that is down: every call fails."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("provider down")


def test_a_model_call_a_wrapper_makes_again_counts_and_reports_its_turn_once() -> None:
    from langchain.agents.middleware import ModelFallbackMiddleware

    # Listed first, the fallback wraps the guard: each model call runs the guard's hook once
    # for the model that is down, once again for the fallback, on the same state.
    guard = RepeatToolReminderMiddleware()
    fallback = scripted(repeat("probe", SAME, 3))
    agent = create_agent(
        _Down(messages=iter(())), [probe], middleware=[ModelFallbackMiddleware(fallback), guard]
    )
    events, messages = [], []
    for mode, part in agent.stream(ask(), stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(part["repeat_tool_reminder"])
        else:
            messages = part["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert sum(map(is_reminder, fallback.seen[-1])) == 1  # the fallback model saw it once
    assert guard.stats.snapshot()["calls"] == 3
    assert guard.stats.snapshot()["reminders"] == {"probe": {"gentle": 1}}
    assert [e["count"] for e in events] == [3]


def test_two_instances_guard_one_agent_each_with_its_own_counts() -> None:
    @tool
    def search_web(q: str = "") -> str:
        """Search."""
        return "results"

    script = [turn(call("search_web", SAME), call("probe", SAME)) for _ in range(3)]
    searches = RepeatToolReminderMiddleware(include=["search_*"], thresholds=[2])
    rest = RepeatToolReminderMiddleware(exclude=["search_*"])
    agent = agent_with(
        scripted(script), searches, rest, tools=[probe, search_web], checkpointer=InMemorySaver()
    )
    messages = agent.invoke(ask(), thread("two"))["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [
        ("gentle", "search_web", 2),
        ("gentle", "probe", 3),
    ]
    stored = agent.get_state(thread("two")).values["repeat_tool_reminder"]
    assert sorted(stored) == [
        "RepeatToolReminderMiddleware[exclude=search_*]",
        "RepeatToolReminderMiddleware[include=search_*]",
    ]
    assert searches.stats.snapshot()["reminders"] == {"search_web": {"gentle": 1}}
    assert rest.stats.snapshot()["reminders"] == {"probe": {"gentle": 1}}


def test_instances_with_the_same_scope_need_names_of_their_own() -> None:
    # create_agent tells its middleware apart by name: two unnamed instances say which to name.
    wanted = (
        r"two RepeatToolReminderMiddleware instances have the default name "
        r"'RepeatToolReminderMiddleware'; give the second one a name of its own, e\.g\. "
        r"RepeatToolReminderMiddleware\(name=\"subagent_guard\"\)"
    )
    with pytest.raises(ValueError, match=wanted):
        agent_with(scripted([]), RepeatToolReminderMiddleware(), RepeatToolReminderMiddleware())
    with pytest.raises(ValueError, match=r"default name 'RepeatToolReminderMiddleware\[include=p"):
        agent_with(
            scripted([]),
            RepeatToolReminderMiddleware(include=["p*"]),
            RepeatToolReminderMiddleware(include=["p*"], thresholds=[2]),
        )
    # One unnamed instance next to a named one, or shared by two agents, is as before; its
    # name is the text it always was.
    shared = RepeatToolReminderMiddleware()
    assert shared.name == "RepeatToolReminderMiddleware" == str(shared.name)
    assert shared.name == shared.name
    assert not shared.name != shared.name  # noqa: SIM202 (its own __ne__)
    assert shared.name != RepeatToolReminderMiddleware(name="other").name
    assert {shared.name: 1}["RepeatToolReminderMiddleware"] == 1
    named = RepeatToolReminderMiddleware(name="subagent_guard")
    for guards in ([shared], [shared], [shared, named]):
        messages = agent_with(scripted(repeat("probe", SAME, 3)), *guards).invoke(ask())["messages"]
        assert_adjacent(messages)
        assert reminders(messages)[0] == ("gentle", "probe", 3)
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        RepeatToolReminderMiddleware(name="")


async def test_an_internal_failure_in_async_hooks_is_logged_and_the_agent_completes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    monkeypatch.setattr(guard_module, "read_turn", broken)  # the hooks and the check read it
    guard = RepeatToolReminderMiddleware(exit_behavior="block", escalate_after=9)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        result = await agent_with(scripted(repeat("probe", SAME, 3)), guard).ainvoke(ask())

    assert result["messages"][-1].content == "done"
    logged = {r.getMessage() for r in caplog.records}
    assert "repeat reminder middleware failed; the run goes on without it" in logged
    assert "repeat reminder check failed; the call runs" in logged


@pytest.mark.parametrize("checkpointed", [False, True], ids=["no checkpointer", "checkpointer"])
@pytest.mark.parametrize("scoped", [False, True], ids=["named", "include/exclude"])
async def test_instances_that_remind_on_the_same_turn_write_in_one_step(
    checkpointed: bool, scoped: bool
) -> None:
    # Both instances count the third call and remind on the same turn; the model then
    # answers. Each writes only its own entry of the field, so the step takes both.
    if scoped:
        guards = [
            RepeatToolReminderMiddleware(include=["probe"]),
            RepeatToolReminderMiddleware(exclude=["other"]),
        ]
    else:
        guards = [RepeatToolReminderMiddleware(name="a"), RepeatToolReminderMiddleware(name="b")]
    saver = InMemorySaver() if checkpointed else None
    config = thread("both") if checkpointed else None
    for run in ("sync", "async"):
        agent = agent_with(scripted(repeat("probe", SAME, 3)), *guards, checkpointer=saver)
        if run == "sync":
            result = agent.invoke(ask(), config)
        else:
            result = await agent.ainvoke(ask(), config)
        messages = result["messages"]
        if checkpointed and run == "async":
            messages = messages[len(messages) // 2 :]  # the second run on the thread
        assert_adjacent(messages)
        assert reminders(messages) == [("gentle", "probe", 3), ("gentle", "probe", 3)]
        assert messages[-1].content == "done"
    if checkpointed:
        field = agent.get_state(config).values["repeat_tool_reminder"]
        assert sorted(field) == sorted(guard.name for guard in guards)
        assert {record["count"] for record in field.values()} == {3}


async def test_a_state_with_nothing_new_since_the_last_count_is_left_alone() -> None:
    guard = RepeatToolReminderMiddleware()
    made = turn(call("probe", SAME, "a"))
    state: dict[str, Any] = {
        "messages": [ask()["messages"][0], made, ToolMessage("r", tool_call_id="a")]
    }
    _, update = model_call(guard, state)
    assert update is not None
    state.update(update)
    assert model_call(guard, state) == ([], None)
    assert await amodel_call(guard, state) == ([], None)
    assert guard.stats.snapshot()["calls"] == 1


def test_a_call_that_is_not_the_latest_turns_is_never_blocked() -> None:
    from langchain.agents.middleware.types import ToolCallRequest

    guard = RepeatToolReminderMiddleware(thresholds=[2], escalate_after=3, exit_behavior="block")
    state = {"messages": [turn(call("probe", SAME, "a"))]}
    request = ToolCallRequest(
        tool_call=call("probe", SAME, "elsewhere"),
        tool=probe,
        state=state,
        runtime=None,  # type: ignore[arg-type]
    )
    result = guard.wrap_tool_call(request, lambda _: ToolMessage("ran", tool_call_id="elsewhere"))
    assert result.content == "ran"  # type: ignore[union-attr]


def _sent(guard: RepeatToolReminderMiddleware, record: dict[str, Any], model: Any) -> list[Any]:
    """What `guard` sends `model` of a conversation with one stored system reminder."""
    stored = reminder_message(Reminder("probe", 3, "gentle", "{}")).model_copy(
        update={"id": f"repeat_tool_reminder-{'0' * 24}5e2f1a7c"}
    )
    messages: list[Any] = [HumanMessage("go", id="h"), stored]
    state = {"messages": messages, "repeat_tool_reminder": {guard.name: record}}
    request = ModelRequest(model=model, messages=messages, state=state)  # type: ignore[arg-type]
    return guard.wrap_model_call(request, lambda sent: sent.messages)  # type: ignore[arg-type, return-value]


STORED = {
    "system": True
}  # reminders were stored as system messages (builds before 0.4.0 wrote it too)


def test_a_request_is_left_as_it_is_when_its_model_takes_what_is_stored() -> None:
    guard = RepeatToolReminderMiddleware()
    assert [m.type for m in _sent(guard, STORED, _keeping_system_messages())] == ["human", "system"]
    sent = _sent(guard, STORED, scripted([]))
    assert [m.type for m in sent] == ["human", "human"]
    assert str(sent[1].content).startswith("<system-reminder>")
    # A record that notes none: nothing is searched (the user's own system messages stay).
    assert [m.type for m in _sent(guard, {}, scripted([]))] == ["human", "system"]


class _Lockstep(ScriptedModel):
    """A scripted model whose every call waits for another agent's model at the same call."""

    barrier: Any = None

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.barrier.wait(timeout=60)  # both agents at the same turn: their hooks interleave
        return super()._generate(messages, *args, **kwargs)


def test_one_instance_shared_by_two_agents_sends_each_model_what_it_takes() -> None:
    guard = RepeatToolReminderMiddleware()
    barrier = threading.Barrier(2)
    script = [*repeat("probe", SAME, 4), AIMessage("done")]
    takes = _Lockstep(messages=iter(script), barrier=barrier)
    takes.profile = {"mid_conversation_system_messages": True}
    not_takes = _Lockstep(messages=iter(script), barrier=barrier)
    agents = [agent_with(model, guard) for model in (takes, not_takes)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda agent: agent.invoke(ask())["messages"], agents))

    for messages in results:
        assert_adjacent(messages)
        assert [m.type for m in messages if is_reminder(m)] == ["system"]  # stored as set
    # The model that takes a system message mid-conversation reads it as one, the other as a
    # user turn, whichever agent's request came last.
    for model, kind in ((takes, "system"), (not_takes, "human")):
        (sent,) = [m for m in model.seen[-1] if is_reminder(m)]
        assert sent.type == kind
    assert guard.stats.snapshot()["reminders"] == {"probe": {"gentle": 2}}


# -- the invocation's id on the log lines -----------------------------------------------------


def _lines_by_thread(caplog: pytest.LogCaptureFixture) -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    for record in caplog.records:
        if record.name == "repeat_reminder_langchain":
            lines.setdefault(record.__dict__["thread_id"], []).append(record.__dict__["run_id"])
    return lines


def test_runs_interleaved_on_one_instance_each_log_their_own_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Two agents share the instance, their model calls in lockstep: each run's two reminders
    # are drawn between the other's, and each run's lines carry its own id all the same.
    guard = RepeatToolReminderMiddleware(thresholds=[2, 3])
    barrier = threading.Barrier(2)
    agents = [
        agent_with(
            _Lockstep(
                messages=iter([*repeat("probe", SAME, 3), AIMessage("done")]), barrier=barrier
            ),
            guard,
            checkpointer=InMemorySaver(),
        )
        for _ in range(2)
    ]
    with (
        caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"),
        ThreadPoolExecutor(2) as pool,
    ):
        runs = [
            pool.submit(agent.invoke, ask(), thread(name))
            for agent, name in zip(agents, ("a", "b"), strict=True)
        ]
        results = [run.result()["messages"] for run in runs]

    for messages in results:
        assert_adjacent(messages)
        assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    lines = _lines_by_thread(caplog)
    assert sorted(lines) == ["a", "b"]
    (a,), (b,) = set(lines["a"]), set(lines["b"])  # each run's two lines: one id
    assert a != b and len(lines["a"]) == len(lines["b"]) == 2


def test_the_ids_of_the_latest_invocations_are_kept_and_no_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An instance remembers the id of each invocation it reported in, by LangGraph's run
    # control, for as many invocations as its limit: a long-lived agent's memory stays bounded.
    guard = RepeatToolReminderMiddleware(thresholds=[2, 3])
    records = guard._store  # type: ignore[attr-defined]
    records.limit = 2
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        for name in "abc":
            agent = agent_with(scripted(repeat("probe", SAME, 3)), guard)
            assert_adjacent(agent.invoke(ask(), thread(name))["messages"])
            assert len(records._ids) == min(2, "abc".index(name) + 1)
    ids = [record.__dict__["run_id"] for record in caplog.records]
    assert ids[0] == ids[1] != ids[2] == ids[3] != ids[4] == ids[5] != ids[0]
    assert list(records._ids.values()) == [ids[2], ids[4]]  # the oldest forgotten
