"""Opt-in escalation: a model that ignores every reminder, stopped as `exit_behavior` says."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import Field

from repeat_reminder_langchain import (
    ConfigError,
    Escalation,
    ReminderConfig,
    RepeatToolLoopError,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
    RepeatToolReminderWarning,
    from_guard,
    prepare_messages,
    stop_reason,
)
from repeat_reminder_langchain._canonical import digest
from repeat_reminder_langchain._conversation import is_reminder, tag_of
from repeat_reminder_langchain._escalation import interrupt_request
from repeat_reminder_langchain._events import ESCALATION_EVENT
from repeat_reminder_langchain._messages import finish_message

from .conftest import Guarded, build
from .helpers import (
    LoopModel,
    agent_graph,
    ask,
    assert_adjacent,
    call,
    kept_record,
    probe,
    reminders,
    routed_graph,
    scripted,
    turn,
    wiring_warnings,
)

Make = Callable[..., Guarded]
LIMIT: dict[str, Any] = {"thresholds": [3, 5], "escalate_after": 6}


def ended(messages: list[Any]) -> dict[str, Any] | None:
    """The tag of the guard's final message, if the run ended with one."""
    last = messages[-1]
    if isinstance(last, AIMessage) and not last.tool_calls:
        tag = last.additional_kwargs.get("repeat_tool_reminder")
        return tag if isinstance(tag, dict) else None
    return None


def ended_in_the_loops_name(messages: list[Any], count: int) -> None:
    """The run ended in the name of the loop the model was asked at 4 to end, counted `count`."""
    assert_adjacent(messages)
    asked = tag_of(messages[-4]) or {}
    assert (asked["level"], asked["count"]) == ("escalated", 4)
    tag = ended(messages)
    assert tag is not None
    assert (tag["tool"], tag["count"], tag["digest"]) == ("probe", count, asked["digest"])


def tool_calls(messages: list[Any]) -> int:
    return sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))


# -- end --------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_checkpointer", [False, True])
def test_end_stops_the_run_with_a_final_message(
    guarded: Make, with_checkpointer: bool, thread: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver = InMemorySaver() if with_checkpointer else None
    agent = guarded(LoopModel(), checkpointer=saver, exit_behavior="end", **LIMIT)
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        messages = agent.invoke(ask("loop 50"), thread if saver else None)

    assert tool_calls(messages) == 6
    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]
    assert ended(messages) == {
        "kind": "plugin",
        "plugin": "repeat-tool-reminder",
        "form": "notice",
        "summary": "probe × 6",
        "tool": "probe",
        "count": 6,
        "level": "escalated",
        "detector": "repeat",
        # The whole escalation, for `stop_reason` to read back.
        "arguments": '{"q":"same"}',
        "behavior": "end",
        "digest": digest('{"q":"same"}'),
        "position": 0,
        "limit": 6,
    }
    assert "looping on `probe`" in str(messages[-1].content)
    # The last message is the guard's, not the model's answer; a reader can tell.
    assert from_guard(messages[-1]) and not is_reminder(messages[-1])
    assert not any(from_guard(m) for m in messages if m.type == "ai" and m is not messages[-1])
    assert isinstance(messages[-2], ToolMessage)  # every call has its result first
    assert agent.stats.snapshot()["escalations"] == {"probe": {"repeat": 1}}
    assert ["repeat tool loop stopped (end)" in r.getMessage() for r in caplog.records] == [True]
    if saver is not None:
        assert kept_record(agent, thread)["count"] == 6  # the run it stopped, as it stood


def test_a_run_ended_hands_over_what_its_tools_returned(guarded: Make) -> None:
    # An unattended run's last message is what its user reads: after the loop it stopped, the
    # latest result of each call, so that the output is of use and not only an apology.
    script = [
        turn(call("other", {"q": "a"})),
        *[turn(call("probe", {"q": "same"})) for _ in range(4)],
    ]
    agent = guarded(scripted(script), thresholds=[3], escalate_after=4, exit_behavior="end")
    messages = agent.invoke(ask())

    said = str(messages[-1].content)
    assert said.startswith(Escalation("probe", 4, "repeat", "", "end", limit=4).text)
    assert said.endswith(
        "What the tools returned, the latest of each call:\n"
        '- `other` ({"q":"a"}): other a\n'
        '- `probe` ({"q":"same"}): probed same'
    )


async def test_end_stops_async_runs_too(guarded: Make) -> None:
    agent = guarded(LoopModel(), exit_behavior="end", **LIMIT)
    messages = await agent.ainvoke(ask("loop 50"))

    assert tool_calls(messages) == 6
    assert ended(messages) is not None


def test_the_thread_goes_on_after_an_end_with_counts_started_over(
    guarded: Make, thread: str
) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="end", **LIMIT)
    first = agent.invoke(ask("loop 50"), thread)
    second = agent.invoke(ask("try once more: loop 3"), thread)[len(first) :]

    assert reminders(second) == [("gentle", "probe", 3)]
    assert ended(second) is None


def test_the_escalation_event_says_what_was_stopped(guarded: Make) -> None:
    agent = guarded(LoopModel(), exit_behavior="end", **LIMIT)
    chunks = list(agent.graph.stream(ask("loop 50"), agent.run_config(), stream_mode="custom"))

    events = [c["repeat_tool_escalation"] for c in chunks if "repeat_tool_escalation" in c]
    assert len(events) == 1
    assert {k: events[0][k] for k in ("tool", "count", "detector", "behavior", "acted")} == {
        "tool": "probe",
        "count": 6,
        "detector": "repeat",
        "behavior": "end",
        "acted": True,
    }


def test_parallel_calls_in_the_escalating_turn_all_keep_their_results(guarded: Make) -> None:
    script = [turn(call("probe", {"q": "same"}), call("other", {"q": n})) for n in range(4)]
    script += [turn(call("probe", {"q": "same"}), call("probe", {"q": "same"}))]
    # probe and other alternate, so repeat never counts past 1 until the last turn's pair.
    agent = guarded(scripted(script), exclude=["other"], exit_behavior="end", **LIMIT)
    messages = agent.invoke(ask())

    assert_adjacent(messages)
    assert ended(messages) is not None and ended(messages)["count"] == 6  # type: ignore[index]


# -- a batch that overshoots the limit ----------------------------------------------------------

OVERSHOOT: dict[str, Any] = {"thresholds": [3], "escalate_after": 4}


def _overshoot() -> Any:
    """One model turn of five identical calls: all run, past a limit of four."""
    return scripted([turn(*(call("probe", {"q": "same"}) for _ in range(5)))])


def test_end_says_the_count_a_batch_reached(guarded: Make, thread: str) -> None:
    agent = guarded(_overshoot(), checkpointer=InMemorySaver(), exit_behavior="end", **OVERSHOOT)
    messages = agent.invoke(ask(), thread)

    assert_adjacent(messages)
    assert sum(isinstance(m, ToolMessage) for m in messages) == 5  # the batch ran whole
    tag = ended(messages)
    assert tag is not None
    assert (tag["count"], tag["summary"]) == (5, "probe × 5")  # said 4
    assert "5 times" in str(messages[-1].content)
    assert kept_record(agent, thread)["count"] == 5


def test_error_says_the_count_a_batch_reached_and_its_limit(guarded: Make, thread: str) -> None:
    agent = guarded(_overshoot(), checkpointer=InMemorySaver(), exit_behavior="error", **OVERSHOOT)
    with pytest.raises(RepeatToolLoopError) as raised:
        agent.invoke(ask(), thread)

    assert (raised.value.count, raised.value.escalate_after) == (5, 4)
    assert "probe × 5 (repeat, escalate_after=4)" in str(raised.value)
    assert_adjacent(agent.state(thread)["messages"])


def test_interrupt_asks_with_the_count_a_batch_reached(guarded: Make, thread: str) -> None:
    agent = guarded(
        _overshoot(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **OVERSHOOT
    )
    result = agent.graph.invoke(ask(), agent.run_config(thread))
    (pending,) = result["__interrupt__"]

    assert pending.value["count"] == 5
    assert "(repeat, 5 times)" in pending.value["question"]


def test_the_count_said_is_that_of_the_loop_not_of_calls_after_it() -> None:
    # After the loop that reached the limit, another call of the same tool: it is not the loop.
    calls = [call("probe", {"q": "same"}) for _ in range(4)] + [call("probe", {"q": "new"})]
    agent = build("middleware", scripted([turn(*calls)]), exit_behavior="end", **OVERSHOOT)
    tag = ended(agent.invoke(ask()))

    assert tag is not None
    assert tag["count"] == 4


# -- finish -----------------------------------------------------------------------------------


class Finisher(LoopModel):
    """Loops on `probe` while it has tools; answers once the guard asks it to (or has none).

    `deaf`: it calls `probe` all the same, as a provider that ignores a request without
    tools would. Records the tools each call was given (None: none).
    """

    deaf: bool = False
    then: dict[str, Any] | None = None  # deaf, with these arguments: another call than the loop's
    then_tool: str = "probe"  # the tool that call is to
    given: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self.bind(tools=[getattr(t, "name", t) for t in tools])

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
        self.given.append(kwargs.get("tools"))
        asked = from_guard(messages[-1]) and (tag_of(messages[-1]) or {})["level"] == "escalated"
        if asked and self.then is not None:
            reply = turn(call(self.then_tool, self.then, f"call_{len(messages)}"))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        if asked and not self.deaf:
            reply = AIMessage("probe keeps saying the same: here is what I have.")
            return ChatResult(generations=[ChatGeneration(message=reply)])
        return super()._generate(messages, *args, **kwargs)


FINISH: dict[str, Any] = {"thresholds": [3], "escalate_after": 4, "exit_behavior": "finish"}


def test_finish_asks_for_the_answer_and_the_answer_ends_the_run(guarded: Make) -> None:
    agent = guarded(Finisher(), **FINISH)
    messages = agent.invoke(ask("loop 50"))

    assert tool_calls(messages) == 4
    assert messages[-1].content == "probe keeps saying the same: here is what I have."
    assert not from_guard(messages[-1])  # the model's own answer ends the run
    asked = messages[-2]
    assert is_reminder(asked) and (tag_of(asked) or {})["level"] == "escalated"
    # On every face: the loop's latest result, for the answer to give.
    assert str(asked.content).startswith("Reply to the user with the latest result of `probe`")
    assert str(asked.content).endswith('unknown: "probed same"')
    assert agent.stats.snapshot()["escalations"] == {"probe": {"repeat": 1}}


def test_finish_asks_in_a_user_turn_where_reminders_are_user_turns(guarded: Make) -> None:
    # message_type="human": for a model that takes no system message mid-conversation, the
    # request for the answer comes in the one form every reminder of the guard takes.
    agent = guarded(Finisher(), message_type="human", **FINISH)
    messages = agent.invoke(ask("loop 50"))

    assert_adjacent(messages)
    asked = messages[-2]
    assert isinstance(asked, HumanMessage) and is_reminder(asked)
    assert (tag_of(asked) or {})["level"] == "escalated"
    assert str(asked.content).startswith("<system-reminder>\nReply to the user with")
    assert not any(m.type == "system" for m in messages)
    assert messages[-1].content == "probe keeps saying the same: here is what I have."


def test_finish_withholds_the_tools_from_the_models_last_call() -> None:
    model = Finisher()
    agent = build("middleware", model, **FINISH)
    messages = agent.invoke(ask("loop 50"))

    assert model.given == [["probe", "other"]] * 4 + [None]  # the last call: no tools at all
    assert messages[-1].content == "probe keeps saying the same: here is what I have."


def test_finish_ends_a_model_that_calls_a_tool_all_the_same(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        agent = guarded(Finisher(deaf=True), **FINISH)
        messages = agent.invoke(ask("loop 50"))

    assert tool_calls(messages) == 5  # the call after the request ran: every call answered
    assert isinstance(messages[-2], ToolMessage)
    tag = ended(messages)
    assert tag is not None and (tag["count"], tag["level"]) == (5, "escalated")
    assert [r.getMessage().split(": ")[0] for r in caplog.records] == [
        "repeat tool loop",  # the run goes on, to the model's answer or its end
        "repeat tool loop stopped (end)",
    ]
    assert "the model is asked for its answer (finish)" in caplog.records[0].getMessage()


def test_a_different_call_after_the_request_ends_the_run_in_the_name_of_the_loop(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    # Asked for its answer, the model makes another call than the loop's: the run ends, and its
    # final words, tag and log line name the loop it was asked to end, not that call.
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        agent = guarded(Finisher(then={"q": "new"}), **FINISH)
        messages = agent.invoke(ask("loop 50"))

    ended_in_the_loops_name(messages, 4)
    assert "the same call with the same arguments 4 times" in str(messages[-1].content)
    assert "probe × 4" in caplog.records[-1].getMessage()


def test_the_loops_call_after_the_request_counts_on_as_its_tools_policy_keys_it(
    guarded: Make,
) -> None:
    # The tool declares a nonce an argument of no account: the call made after the request,
    # a new nonce and nothing else new, is the loop's call again, and the run ends at the count
    # it took the loop to, as the stop of any other repeat would say.
    @tool
    def probe(q: str = "", nonce: str = "") -> str:
        """Look something up."""
        return f"probed {q}"

    probe.metadata = {"repeat_reminder": {"ignore_arguments": ["nonce"]}}
    agent = guarded(Finisher(then={"q": "same", "nonce": "late"}), tools=[probe], **FINISH)
    messages = agent.invoke(ask("loop 50"))

    ended_in_the_loops_name(messages, 5)
    assert "the same call with the same arguments 5 times" in str(messages[-1].content)


def test_the_loops_call_after_the_request_counts_on_as_its_tool_reads_it(guarded: Make) -> None:
    # The call made after the request spells out a default as text ("1" for depth=1): the tool
    # reads it as the loop's call, so the run ends at the count it took the loop to.
    @tool
    def probe(q: str = "", depth: int = 1) -> str:
        """Look something up."""
        return f"probed {q}"

    agent = guarded(Finisher(then={"q": "same", "depth": "1"}), tools=[probe], **FINISH)
    messages = agent.invoke(ask("loop 50"))

    ended_in_the_loops_name(messages, 5)
    assert "the same call with the same arguments 5 times" in str(messages[-1].content)


def test_a_call_to_an_untracked_tool_after_the_request_ends_the_run_in_the_name_of_the_loop(
    guarded: Make,
) -> None:
    # A tool the guard does not count (`exclude`) is no way out of the request either.
    model = Finisher(then={"q": "look"}, then_tool="other")
    messages = guarded(model, exclude=["other"], **FINISH).invoke(ask("loop 50"))

    ended_in_the_loops_name(messages, 4)


@pytest.mark.parametrize("run", ["sync", "async"])
async def test_finish_refuses_the_calls_of_a_model_that_calls_all_the_same(run: str) -> None:
    # A provider that ignores the withheld tools: the call is answered with a refusal, not
    # run (a second payment, say), and the run ends.
    probe, ran = _counted_probe()
    agent = build("middleware", Finisher(deaf=True), tools=[probe], **FINISH)
    messages = (
        agent.invoke(ask("loop 50")) if run == "sync" else await agent.ainvoke(ask("loop 50"))
    )

    assert_adjacent(messages)
    assert ran == ["same"] * 4  # the fifth call was not run
    refused = messages[-2]
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert from_guard(refused) and "you were asked for your answer" in str(refused.content)
    assert (ended(messages) or {})["count"] == 5


def test_a_failure_refusing_a_call_made_all_the_same_is_logged_and_the_run_still_ends(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The guard never fails the run: the call runs, as it did before any request, and the
    # next model call ends the run, which the call took on after it was asked for its answer.
    import repeat_reminder_langchain._middleware as middleware_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    monkeypatch.setattr(middleware_module, "blocked_result", broken)
    probe, ran = _counted_probe()
    agent = build("middleware", Finisher(deaf=True), tools=[probe], **FINISH)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        messages = agent.invoke(ask("loop 50"))

    assert_adjacent(messages)
    assert ran == ["same"] * 5  # the fifth ran
    assert "repeat reminder middleware failed; the run goes on without it" in caplog.messages
    assert (ended(messages) or {})["count"] == 5


def test_finish_ends_a_model_that_calls_all_the_same_before_a_human_is_asked_about_it() -> None:
    # The refusal and the end come with the model's answer, in its own step: the human asked
    # before each call is not asked about one that will not run.
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    probe, ran = _counted_probe()
    human = HumanInTheLoopMiddleware(interrupt_on={"probe": True})
    guard = RepeatToolReminderMiddleware(**FINISH)
    agent = create_agent(
        Finisher(deaf=True), [probe], middleware=[human, guard], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "asked"}}
    result = agent.invoke(ask("loop 50"), config)
    approvals = 0
    while "__interrupt__" in result:
        approvals += 1
        result = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

    messages = result["messages"]
    assert_adjacent(messages)
    assert (approvals, ran) == (4, ["same"] * 4)
    assert isinstance(messages[-2], ToolMessage) and from_guard(messages[-2])  # refused
    assert (ended(messages) or {})["count"] == 5


def test_only_a_guard_that_refuses_calls_has_the_tool_call_hook() -> None:
    # create_agent runs every tool call through each tool-call hook of its middleware.
    from langchain.agents.middleware import AgentMiddleware

    class Named(RepeatToolReminderMiddleware):  # type: ignore[type-arg]
        pass

    def hook(guard: Any) -> bool:
        return type(guard).wrap_tool_call is not AgentMiddleware.wrap_tool_call

    assert not hook(RepeatToolReminderMiddleware())
    assert not hook(RepeatToolReminderMiddleware(**FINISH))
    assert not hook(RepeatToolReminderMiddleware(profile="seed"))
    blocks = RepeatToolReminderMiddleware(**{**LIMIT, "exit_behavior": "block"})
    assert hook(blocks) and isinstance(blocks, RepeatToolReminderMiddleware)
    assert blocks.name == "RepeatToolReminderMiddleware"
    observes = RepeatToolReminderMiddleware(**{**LIMIT, "exit_behavior": "block"}, mode="observe")
    assert not hook(observes)
    own = Named(**{**LIMIT, "exit_behavior": "block"})
    assert hook(own) and isinstance(own, Named) and type(own).__name__ == "Named"
    assert own.name == "Named"


def _node_agent(face: str, model: Any, tools: list[Any], *, bind: bool = False) -> tuple[Any, Any]:
    """The README's own graph, its model node withholding the tools when the guard says so
    (itself, or with `node.bind_tools`), its ToolNode refusing a call made all the same; and
    the run config."""
    handler = RepeatToolReminderCallbackHandler(**FINISH) if face == "handler" else None
    node = RepeatToolReminderNode(handler) if handler else RepeatToolReminderNode(**FINISH)

    def agent(state: Any) -> dict[str, Any]:
        if bind:
            chosen = node.bind_tools(model, tools, state)
        else:
            chosen = model if node.withholds_tools(state) else model.bind_tools(tools)
        return {"messages": [chosen.invoke(prepare_messages(state["messages"], model))]}

    state = RepeatToolReminderState if face == "state" else MessagesState
    return routed_graph(node, agent, tools, state), {"callbacks": [handler] if handler else []}


@pytest.mark.parametrize("face", ["handler", "state"])
def test_on_the_node_faces_the_model_node_withholds_the_tools_and_the_answer_ends_the_run(
    face: str,
) -> None:
    model, (probe, ran) = Finisher(), _counted_probe()
    graph, config = _node_agent(face, model, [probe])
    messages = graph.invoke(ask("loop 50"), config)["messages"]

    assert_adjacent(messages)
    assert model.given == [["probe"]] * 4 + [None]  # the last call: no tools at all
    assert ran == ["same"] * 4
    assert messages[-1].content == "probe keeps saying the same: here is what I have."
    assert not from_guard(messages[-1])


@pytest.mark.parametrize("face", ["handler", "state"])
def test_the_nodes_bind_tools_withholds_them_from_a_model_that_takes_no_tool_choice(
    face: str,
) -> None:
    # A scripted model: no tool_choice it is known to take, so no tools at all.
    model, (probe, ran) = Finisher(), _counted_probe()
    graph, config = _node_agent(face, model, [probe], bind=True)
    messages = graph.invoke(ask("loop 50"), config)["messages"]

    assert_adjacent(messages)
    assert model.given == [["probe"]] * 4 + [None]
    assert ran == ["same"] * 4
    assert messages[-1].content == "probe keeps saying the same: here is what I have."


@pytest.mark.parametrize("face", ["handler", "state"])
def test_on_the_node_faces_a_call_made_all_the_same_is_refused_not_run(face: str) -> None:
    # A provider that ignores the withheld tools, or a model node that did not withhold them.
    model, (probe, ran) = Finisher(deaf=True), _counted_probe()
    graph, config = _node_agent(face, model, [probe])
    messages = graph.invoke(ask("loop 50"), config)["messages"]

    assert_adjacent(messages)
    assert ran == ["same"] * 4  # the fifth call was not run
    refused = messages[-2]
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert from_guard(refused) and "you were asked for your answer" in str(refused.content)
    assert (tag_of(refused) or {})["count"] == 4  # the count the request named
    assert (ended(messages) or {})["count"] == 5


@pytest.mark.parametrize("face", ["middleware", "handler", "state"])
def test_a_different_call_after_the_request_is_refused_in_the_name_of_the_loop(
    face: str,
) -> None:
    model, (probe, ran) = Finisher(then={"q": "new"}), _counted_probe()
    if face == "middleware":
        messages = build(face, model, tools=[probe], **FINISH).invoke(ask("loop 50"))
    else:
        graph, config = _node_agent(face, model, [probe])
        messages = graph.invoke(ask("loop 50"), config)["messages"]

    assert_adjacent(messages)
    assert ran == ["same"] * 4  # the other call was not run either
    refused, asked = messages[-2], tag_of(messages[-4]) or {}
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert "since `probe` was looping" in str(refused.content)
    refusal = tag_of(refused) or {}
    assert (refusal["count"], refusal["digest"]) == (4, asked["digest"])
    assert ((ended(messages) or {})["count"], (ended(messages) or {})["digest"]) == (
        4,
        asked["digest"],
    )


def _run_through(node: Any, state: Any) -> str:
    """What `node.wrap_tool_call` answers for the latest call in `state`, the tool run as given."""
    latest = next(
        m
        for m in reversed(state if isinstance(state, list) else state["messages"])
        if isinstance(m, AIMessage)
    )
    request = ToolCallRequest(tool_call=latest.tool_calls[0], tool=None, state=state, runtime=None)  # type: ignore[arg-type]
    answer = node.wrap_tool_call(request, lambda r: ToolMessage("ran", tool_call_id="c1"))
    return str(answer.content)


def test_a_node_that_does_not_finish_runs_every_call_and_withholds_nothing() -> None:
    node = RepeatToolReminderNode(thresholds=[3], escalate_after=4, exit_behavior="end")
    asked = finish_message(Escalation("probe", 4, "repeat", "{}", "finish"))
    state = {"messages": [HumanMessage("go"), asked, turn(call("probe", {"q": "x"}, "c1"))]}
    assert not node.withholds_tools({"messages": state["messages"][:2]})
    assert _run_through(node, state) == "ran"
    finishing = RepeatToolReminderNode(**FINISH)
    assert finishing.withholds_tools({"messages": state["messages"][:2]})
    assert _run_through(finishing, state["messages"]).startswith("Not run")  # a list state too


def test_the_request_holds_past_a_harness_message_and_no_message_asks_nothing() -> None:
    # A message a harness adds after the request (a summary, a background update) is not the
    # model's answer: the model is still asked for it. A model node called before there is any
    # message (its prompt built from other fields of the state) has been asked for nothing.
    node = RepeatToolReminderNode(**FINISH)
    asked = finish_message(Escalation("probe", 4, "repeat", "{}", "finish"))
    update = HumanMessage("The nightly build finished.", additional_kwargs={"lc_source": "jobs"})
    messages = [HumanMessage("go"), asked, update]
    assert node.withholds_tools({"messages": messages})
    made = [*messages, turn(call("probe", {"q": "x"}, "c1"))]
    assert _run_through(node, made).startswith("Not run")
    assert not node.withholds_tools({"messages": []})


def test_a_new_question_after_the_request_for_the_answer_gets_the_tools_back() -> None:
    # The run stopped before the model answered (a failure, a process gone), and the user asks
    # something new: the request held until the user spoke again, as on the middleware. A
    # message `not_user` rules out is not the user speaking: the request still holds.
    node = RepeatToolReminderNode(**FINISH, not_user=r"^\[harness\]")
    asked = finish_message(Escalation("probe", 4, "repeat", "{}", "finish"))
    messages = [HumanMessage("go"), asked, HumanMessage("Never mind: what is the weather?")]
    assert not node.withholds_tools({"messages": messages})
    assert _run_through(node, [*messages, turn(call("probe", {"q": "x"}, "c1"))]) == "ran"
    noted = [HumanMessage("go"), asked, HumanMessage("[harness] step done")]
    assert node.withholds_tools({"messages": noted})
    assert _run_through(node, [*noted, turn(call("probe", {"q": "x"}, "c1"))]).startswith("Not run")


@pytest.mark.parametrize(
    ("behavior", "escalations"),
    [
        ("end", [("end", 6, False)]),
        # `finish` asks for the answer (it needs no end); each call made after it would end.
        ("finish", [("finish", 6, True), *(("end", n, False) for n in range(7, 13))]),
    ],
)
def test_a_node_its_graph_does_not_route_on_from_never_says_it_ended_the_run(
    behavior: str,
    escalations: list[tuple[str, int, bool]],
    recwarn: pytest.WarningsRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The README's wiring before its route: the node cannot end the run. Each end it would
    # carry out is reported as not acted on (the event a dashboard counts), and the only
    # warning asks for the route: none says the node ended a run that went on.
    node = RepeatToolReminderNode(**{**LIMIT, "exit_behavior": behavior})
    graph = agent_graph(
        Finisher(deaf=True), [probe], None, after_tools=node, state=RepeatToolReminderState
    )
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        messages = graph.invoke(ask("loop 12"), {"recursion_limit": 200})["messages"]

    assert_adjacent(messages)
    assert messages[-1].content == "done after 12 calls"  # the loop ran on to the model's end
    told = [getattr(record, ESCALATION_EVENT) for record in caplog.records]
    assert [(e["behavior"], e["count"], e["acted"]) for e in told] == escalations
    (warned,) = wiring_warnings(recwarn)
    assert f'exit_behavior="{behavior}") ends a looping run through its route' in warned


class Hostile:
    """A message whose metadata cannot be read."""

    @property
    def additional_kwargs(self) -> Any:
        raise RuntimeError("unreadable")


def test_a_refusal_check_that_fails_lets_the_call_run(caplog: pytest.LogCaptureFixture) -> None:
    node = RepeatToolReminderNode(**FINISH)
    with caplog.at_level(logging.ERROR, "repeat_reminder_langchain"):
        answer = _run_through(node, [Hostile(), turn(call("probe", {"q": "x"}, "c1"))])
    assert answer == "ran"
    assert caplog.messages == ["repeat reminder check failed; the call runs"]


def test_finish_holds_across_a_resume_in_a_new_process(thread: str) -> None:
    # Each step of the run in a new process: the request for the answer, and the tools
    # withheld, come from the checkpoint.
    saver, given = InMemorySaver(), []
    config: Any = {"configurable": {"thread_id": thread}}
    inputs: Any = ask("loop 50")
    while True:
        model = Finisher()
        agent = build("middleware", model, checkpointer=saver, **FINISH)
        agent.graph.invoke(inputs, config, interrupt_before=["tools", "model"])
        given += model.given
        inputs = None
        if not agent.graph.get_state(config).next:
            break
    messages = agent.graph.get_state(config).values["messages"]

    assert_adjacent(messages)
    assert given == [["probe", "other"]] * 4 + [None]
    assert messages[-1].content == "probe keeps saying the same: here is what I have."


def test_after_a_finish_the_users_next_message_gives_the_tools_back(thread: str) -> None:
    model = Finisher()
    agent = build("middleware", model, checkpointer=InMemorySaver(), **FINISH)
    agent.invoke(ask("loop 50"), thread)
    messages = agent.invoke(ask("try once more; loop 2"), thread)

    assert model.given[5:] == [["probe", "other"]] * 3
    assert messages[-1].content == "done after 2 calls"


def test_finish_words_are_the_users_final_words(guarded: Make) -> None:
    agent = guarded(Finisher(), words={"*": {"final": "Answer now ({count} {tool})."}}, **FINISH)
    messages = agent.invoke(ask("loop 50"))
    assert "Answer now (4 probe)." in str(messages[-2].content)


# -- error ------------------------------------------------------------------------------------
# -- error ------------------------------------------------------------------------------------


def test_error_raises_with_what_was_stopped_and_a_complete_checkpoint(
    guarded: Make, thread: str
) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="error", **LIMIT)
    with pytest.raises(RepeatToolLoopError) as raised:
        agent.invoke(ask("loop 50"), thread)

    error = raised.value
    assert (error.tool, error.count, error.detector, error.thread_id) == (
        "probe",
        6,
        "repeat",
        thread,
    )
    assert error.arguments == '{"q":"same"}'
    messages = agent.state(thread)["messages"]
    assert_adjacent(messages)
    assert isinstance(messages[-1], ToolMessage) and tool_calls(messages) == 6


def test_after_an_error_the_same_step_raises_again_and_a_user_message_goes_on(
    guarded: Make, thread: str
) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="error", **LIMIT)
    with pytest.raises(RepeatToolLoopError):
        agent.invoke(ask("loop 50"), thread)
    with pytest.raises(RepeatToolLoopError):
        agent.invoke(None, thread)  # resuming the failed step meets the same loop

    messages = agent.invoke(ask("stop repeating; loop 2"), thread)
    assert messages[-1].content == "done after 2 calls"


SECRET = {"data": "SECRET-4242"}


@pytest.mark.parametrize("behavior", ["end", "error"])
def test_logs_and_the_error_name_the_arguments_by_digest_only(
    guarded: Make, behavior: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Logs and error records travel far (stderr, a server's run record): arguments may hold
    # secrets, so only code that asks reads them.
    agent = guarded(LoopModel(args=SECRET), exit_behavior=behavior, **LIMIT)
    stops = pytest.raises(RepeatToolLoopError) if behavior == "error" else nullcontext()
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"), stops as raised:
        agent.invoke(ask("loop 50"))

    if raised is not None:
        assert "SECRET" not in str(raised.value) and "SECRET" in raised.value.arguments

    key = digest('{"data":"SECRET-4242"}')
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(":")[0] for line in lines] == [
        "repeat tool reminder sent",
        "repeat tool reminder sent",
        f"repeat tool loop stopped ({behavior})",
    ]
    assert all(f"arguments {key}, run " in line for line in lines)
    assert not any("SECRET" in repr(vars(record)) for record in caplog.records)  # nor `extra`


def test_log_arguments_puts_the_preview_in_the_log_lines(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(LoopModel(args=SECRET), exit_behavior="end", log_arguments=True, **LIMIT)
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"):
        agent.invoke(ask("loop 50"))

    key = digest('{"data":"SECRET-4242"}')
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert all(f'arguments {key} {{"data":"SECRET-4242"}}, run ' in line for line in lines)
    escalated = caplog.records[-1].repeat_tool_escalation
    assert escalated["arguments"] == '{"data":"SECRET-4242"}'


async def test_error_raises_in_async_runs(guarded: Make) -> None:
    agent = guarded(LoopModel(), exit_behavior="error", **LIMIT)
    with pytest.raises(RepeatToolLoopError):
        await agent.ainvoke(ask("loop 50"))


# -- interrupt --------------------------------------------------------------------------------


def _interrupted(agent: Guarded, thread: str) -> Any:
    result = agent.graph.invoke(ask("loop 9"), agent.run_config(thread))
    (pending,) = result["__interrupt__"]
    return pending.value


def test_interrupt_asks_a_human_with_what_was_seen(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    request = _interrupted(agent, thread)

    assert request["kind"] == "repeat_tool_escalation"
    assert (request["tool"], request["count"], request["detector"]) == ("probe", 6, "repeat")
    assert request["arguments"] == '{"q":"same"}'
    assert request["choices"][:2] == ["continue", "end"]
    assert_adjacent(agent.state(thread)["messages"])


def test_continue_starts_the_counts_over_and_goes_on(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    _interrupted(agent, thread)
    result = agent.graph.invoke(Command(resume="continue"), agent.run_config(thread))
    messages = result["messages"]

    assert_adjacent(messages)
    assert messages[-1].content == "done after 9 calls"
    # Reminders at 3 and 5, then the count starts over at the seventh call: 1, 2, 3.
    assert reminders(messages) == [
        ("gentle", "probe", 3),
        ("detailed", "probe", 5),
        ("gentle", "probe", 3),
    ]
    stats = agent.stats.snapshot()
    assert stats["escalations"] == {"probe": {"repeat": 1}}  # reported once, not on resume
    assert stats["calls"] == 9


def test_end_as_an_answer_ends_the_run(
    guarded: Make, thread: str, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"):
        _interrupted(agent, thread)
        paused = [r.getMessage() for r in caplog.records]
        caplog.clear()
        messages = agent.graph.invoke(Command(resume="end"), agent.run_config(thread))["messages"]

    assert_adjacent(messages)
    assert tool_calls(messages) == 6
    assert ended(messages) is not None
    # Paused, the run is said to wait for a human; ended by the human, it ended as `end` does.
    said = [m for m in paused if "repeat tool loop" in m]
    assert len(said) == 1
    assert "repeat tool loop: a human is asked what to do (interrupt)" in said[0]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "repeat tool loop on probe × 6",
    ]
    assert "resumed with 'end'" in caplog.records[0].getMessage()
    reason = stop_reason(messages)
    assert reason is not None
    assert (reason.behavior, reason.count, reason.detector) == ("end", 6, "repeat")


def test_any_other_answer_reaches_the_agent_as_a_user_message(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    _interrupted(agent, thread)
    note = "The job is stuck; read its log instead."
    messages = agent.graph.invoke(Command(resume=note), agent.run_config(thread))["messages"]

    assert_adjacent(messages)
    said = [m for m in messages if isinstance(m, HumanMessage) and m.content == note]
    assert len(said) == 1
    assert messages[-1].content == "done after 0 calls"  # the model read the note and answered


def test_an_answer_sent_to_the_agent_starts_the_counts_over_as_continue_does(
    guarded: Make, thread: str, recwarn: pytest.WarningsRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    # The human tells the agent to try a few more times: its loop is counted from nothing, as
    # after "continue", and the run goes on with nothing failed or misread.
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    _interrupted(agent, thread)
    caplog.clear()  # the question, logged when it was asked
    note = "Try four more times: loop 4"
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"):
        result = agent.graph.invoke(Command(resume=note), agent.run_config(thread))
    messages = result["messages"]

    assert_adjacent(messages)
    assert messages[-1].content == "done after 4 calls"
    after = messages[[m.content for m in messages].index(note) :]
    assert reminders(after) == [("gentle", "probe", 3)]  # counted from the note on
    assert kept_record(agent, thread)["count"] == 4
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert wiring_warnings(recwarn) == []


@pytest.mark.parametrize(
    "resume",
    [None, "continue", "Try four more times: loop 4"],
    ids=["observed", "continue", "a message"],
)
def test_a_run_the_guard_lets_go_on_has_the_models_answer_in_every_model_step(
    resume: str | None,
) -> None:
    # Observed past escalate_after, or resumed by a human's "continue" or message, the run goes
    # on as it would without the guard: each step of the model node holds the model's answer,
    # none is a step in its place that skips the model.
    from langchain.agents import create_agent

    config: Any = {"configurable": {"thread_id": "goes-on"}}
    if resume is None:
        guard = RepeatToolReminderMiddleware(mode="observe", exit_behavior="end", **LIMIT)
    else:
        guard = RepeatToolReminderMiddleware(exit_behavior="interrupt", **LIMIT)
    agent = create_agent(LoopModel(), [probe], middleware=[guard], checkpointer=InMemorySaver())
    if resume is None:
        updates = agent.stream(ask("loop 8"), config, stream_mode="updates")
    else:
        assert "__interrupt__" in agent.invoke(ask("loop 9"), config)
        updates = agent.stream(Command(resume=resume), config, stream_mode="updates")
    steps = [update["model"]["messages"] for update in updates if "model" in update]

    assert steps
    assert all(isinstance(messages[-1], AIMessage) for messages in steps)
    assert steps[-1][-1].content.startswith("done after")
    assert_adjacent(agent.get_state(config).values["messages"])


def test_interrupt_without_a_checkpointer_stops_with_the_question_and_says_so_once(
    guarded: Make, recwarn: pytest.WarningsRecorder
) -> None:
    # The question can never be answered: no checkpoint to resume from. Said at the first
    # run, before any loop, at the line that ran the graph.
    agent = guarded(LoopModel(), exit_behavior="interrupt", **LIMIT)
    result = agent.graph.invoke(ask("loop 9"), agent.run_config())
    agent.graph.invoke(ask("loop 9"), agent.run_config())

    assert result["__interrupt__"][0].value["count"] == 6
    assert_adjacent(result["messages"])
    assert wiring_warnings(recwarn.list) == [
        'exit_behavior="interrupt" pauses a looping run for a human, but this graph has no '
        "checkpointer, so the run can never be resumed: compile the graph with one "
        "(checkpointer=InMemorySaver()) and run it with a thread_id, or choose "
        'exit_behavior="finish" (the model answers with what it has), "end" or "error"'
    ]


def test_the_warning_made_an_error_fails_the_run_on_every_face(guarded: Make) -> None:
    agent = guarded(LoopModel(), exit_behavior="interrupt", **LIMIT)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatToolReminderWarning)
        with pytest.raises(RepeatToolReminderWarning, match="no checkpointer"):
            agent.invoke(ask("loop 9"))


def test_interrupt_with_a_checkpointer_or_another_behavior_warns_of_nothing(
    guarded: Make, thread: str, recwarn: pytest.WarningsRecorder
) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    _interrupted(agent, thread)
    agent = guarded(LoopModel(), exit_behavior="end", **LIMIT)
    agent.invoke(ask("loop 9"))

    assert wiring_warnings(recwarn.list) == []


async def test_interrupt_and_resume_in_async_runs(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="interrupt", **LIMIT)
    config = agent.run_config(thread)
    first = await agent.graph.ainvoke(ask("loop 9"), config)
    assert first["__interrupt__"]
    result = await agent.graph.ainvoke(Command(resume="end"), config)

    assert ended(result["messages"]) is not None


# -- block ------------------------------------------------------------------------------------


def _counted_probe() -> tuple[Any, list[str]]:
    ran: list[str] = []

    @tool
    def probe(q: str = "") -> str:
        """Look something up."""
        ran.append(q)
        return f"probed {q}"

    return probe, ran


def test_block_refuses_the_repeated_call_and_lets_the_others_run() -> None:
    probe, ran = _counted_probe()
    script = [turn(call("probe", {"q": "same"})) for _ in range(5)]
    script += [turn(call("probe", {"q": "same"}), call("probe", {"q": "other"}))]
    script += [turn(call("probe", {"q": "same"}))]
    agent = build("middleware", scripted(script), tools=[probe], exit_behavior="block", **LIMIT)
    messages = agent.invoke(ask())

    assert ran == ["same"] * 5 + ["other", "same"]  # the sixth identical call did not run
    blocked = [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(blocked) == 1
    assert "Not run: `probe` is looping (the same call with the same arguments 6 times)" in str(
        blocked[0].content
    )
    refused = [from_guard(m) for m in messages if isinstance(m, ToolMessage)]
    assert refused == [False] * 5 + [True, False, False]  # the sixth, the other, the seventh
    assert messages[-1].content == "done"  # the model decided; the run was not ended


async def test_block_in_async_runs() -> None:
    probe, ran = _counted_probe()
    script = [turn(call("probe", {"q": "same"})) for _ in range(7)]
    agent = build("middleware", scripted(script), tools=[probe], exit_behavior="block", **LIMIT)
    messages = await agent.ainvoke(ask())

    assert ran == ["same"] * 5
    assert sum(isinstance(m, ToolMessage) and m.status == "error" for m in messages) == 2


def test_block_ends_a_model_that_sends_a_refused_call_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A model that never changes course: LangGraph's recursion limit ended it before.
    probe, ran = _counted_probe()
    script = [turn(call("probe", {"q": "same"})) for _ in range(40)]
    agent = build(
        "middleware",
        scripted(script),
        tools=[probe],
        checkpointer=InMemorySaver(),
        exit_behavior="block",
        escalate_after=10,
    )
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        messages = agent.invoke(ask(), "stubborn", recursion_limit=40)

    assert ran == ["same"] * 9  # the tenth was refused, the eleventh too, then the run ended
    refused = [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(refused) == 2
    # Each refusal says why (the second was empty): the call refused again ends the run.
    assert refused[0].content.startswith(
        "Not run: `probe` is looping (the same call with the same arguments 10 times)"
    )
    assert refused[1].content == (
        "Not run: `probe` was refused, and called again with the same arguments (11 times in "
        "a row): the run ends here, with what was found."
    )
    tag = ended(messages)
    assert tag is not None
    assert (tag["level"], tag["count"]) == ("escalated", 11)
    assert isinstance(messages[-2], ToolMessage)  # the refused call has its result first
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("repeat tool call refused: probe × 10 (block, repeat count")
    key = digest('{"q":"same"}')
    assert f"arguments {key}, thread" in lines[0] and "same" not in lines[0]  # the digest only
    assert lines[1].startswith("repeat tool loop stopped (end): probe × 11 (end, repeat")
    assert agent.stats.snapshot()["escalations"] == {"probe": {"repeat": 2}}


def test_block_lets_the_model_read_refusals_of_one_turn_before_it_ends_anything() -> None:
    # The refusals of one turn are read together: sending the call again within the turn
    # is not a model that saw them and went on.
    probe, ran = _counted_probe()
    script = [turn(call("probe", {"q": "same"})) for _ in range(5)]
    script += [turn(*(call("probe", {"q": "same"}) for _ in range(3)))]
    agent = build("middleware", scripted(script), tools=[probe], exit_behavior="block", **LIMIT)
    messages = agent.invoke(ask())

    assert_adjacent(messages)
    assert ran == ["same"] * 5
    assert sum(isinstance(m, ToolMessage) and m.status == "error" for m in messages) == 3
    assert messages[-1].content == "done"  # the model decided; the run was not ended


def test_block_needs_the_middleware() -> None:
    with pytest.raises(TypeError, match="needs RepeatToolReminderMiddleware"):
        RepeatToolReminderNode(exit_behavior="block", **LIMIT)
    with pytest.raises(TypeError, match="needs RepeatToolReminderMiddleware"):
        RepeatToolReminderCallbackHandler(exit_behavior="block", **LIMIT)
    assert RepeatToolReminderMiddleware(exit_behavior="block", **LIMIT).config.exit_behavior


# -- observe and configuration ----------------------------------------------------------------


def test_observe_mode_escalates_nothing_and_says_what_it_would_have_done(guarded: Make) -> None:
    agent = guarded(LoopModel(), mode="observe", exit_behavior="end", **LIMIT)
    chunks = list(
        agent.graph.stream(ask("loop 8"), agent.run_config(), stream_mode=["custom", "values"])
    )
    messages = [data for kind, data in chunks if kind == "values"][-1]["messages"]
    events = [
        d["repeat_tool_escalation"]
        for k, d in chunks
        if k == "custom" and "repeat_tool_escalation" in d
    ]

    assert messages[-1].content == "done after 8 calls"
    assert [(e["count"], e["acted"]) for e in events] == [(6, False)]


def test_escalation_settings_fail_loud() -> None:
    with pytest.raises(ConfigError, match="escalate_after: must be greater than every threshold"):
        ReminderConfig(escalate_after=8)  # the default thresholds end at 8
    with pytest.raises(ConfigError, match="of the stale detector"):
        ReminderConfig(detect=["stale"], stale_thresholds=[3, 12], escalate_after=10)
    with pytest.raises(ConfigError, match="exit_behavior: applies only with escalate_after"):
        ReminderConfig(exit_behavior="error", escalate_after=None)
    with pytest.raises(ConfigError, match="escalate_after: must be an integer >= 2, or None"):
        ReminderConfig(escalate_after=True)
    assert ReminderConfig(escalate_after=9).exit_behavior == "finish"
    assert ReminderConfig(escalate_after=9, profile="seed").exit_behavior == "end"


# -- the escalation module's own pieces --


def test_the_loop_error_says_what_was_stopped_where_and_its_limit() -> None:
    stopped = Escalation("probe", 7, "repeat", '{"q":"same"}', "error", "1f2e", limit=6)
    error = RepeatToolLoopError(stopped, "thread-7")
    assert str(error) == (
        "repeat tool loop stopped: probe × 7 (repeat, escalate_after=6), "
        "arguments 1f2e, thread thread-7"
    )
    assert (error.count, error.escalate_after) == (7, 6)
    assert (error.arguments, error.digest) == ('{"q":"same"}', "1f2e")
    # A run without a thread: the message does not say "thread None".
    assert str(RepeatToolLoopError(stopped)).endswith("arguments 1f2e")


def test_the_question_put_to_a_human_names_the_loop_and_every_answer() -> None:
    request = interrupt_request(Escalation("probe", 6, "stale", '{"q":"same"}', "interrupt"))
    assert request == {
        "kind": "repeat_tool_escalation",
        "question": (
            'The agent has been looping on `probe` (stale, 6 times). Resume with "continue" '
            'to let it go on (its counts start over), "end" to end the run, or any other text '
            "to tell it something."
        ),
        "tool": "probe",
        "count": 6,
        "detector": "stale",
        "arguments": '{"q":"same"}',
        "choices": ["continue", "end", "<any other text: sent to the agent as a user message>"],
    }


def test_the_end_of_a_model_that_calls_all_the_same_names_its_loop_by_the_same_digest(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    # With arguments the guard leaves out of the key, the last line names the loop by the
    # digest its request for the answer named, so that a reader can join the two.
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        agent = guarded(Finisher(deaf=True), ignore_arguments={"probe": ["q"]}, **FINISH)
        agent.invoke(ask("loop 50"))

    told = [getattr(record, ESCALATION_EVENT) for record in caplog.records]
    assert [event["behavior"] for event in told] == ["finish", "end"]
    assert told[0]["arguments_digest"] == told[1]["arguments_digest"] == digest("{}")


def test_the_end_of_a_model_that_calls_all_the_same_keys_its_call_as_the_tool_says(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    # The tool itself leaves `body` out of its calls' keys (its metadata): the last line names
    # the loop by the digest the request for the answer named, and quotes the call as it did.
    @tool
    def probe(q: str = "", body: str = "") -> str:
        """Look something up."""
        return f"probed {q}"

    probe.metadata = {"repeat_reminder": {"ignore_arguments": ["body"]}}
    model = Finisher(deaf=True, args={"q": "same", "body": "draft 1"})
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        agent = guarded(model, [probe], log_arguments=True, **FINISH)
        agent.invoke(ask("loop 50"))

    told = [getattr(record, ESCALATION_EVENT) for record in caplog.records]
    assert [(e["behavior"], e["arguments"], e["arguments_digest"]) for e in told] == [
        ("finish", '{"q":"same"}', digest('{"q":"same"}')),
        ("end", '{"q":"same"}', digest('{"q":"same"}')),
    ]


# -- the stop reason --------------------------------------------------------------------------


def _why(stop: Escalation | None) -> tuple[Any, ...] | None:
    return None if stop is None else (stop.behavior, stop.detector, stop.count, stop.limit)


@pytest.mark.parametrize(
    ("fields", "model", "asked", "why"),
    [
        ({**LIMIT, "exit_behavior": "end"}, LoopModel(), "loop 50", ("end", "repeat", 6, 6)),
        # `finish`: the model's answer follows the request; a model that calls all the same
        # is ended at the next call.
        (FINISH, Finisher(), "loop 50", ("finish", "repeat", 4, 4)),
        (FINISH, Finisher(deaf=True), "loop 50", ("end", "repeat", 5, 4)),
        ({**LIMIT, "exit_behavior": "end", "mode": "observe"}, LoopModel(), "loop 50", None),
        ({**LIMIT, "exit_behavior": "end"}, LoopModel(), "loop 5", None),  # reminded only
    ],
    ids=["end", "finish", "finish-ended", "observe", "reminded"],
)
def test_a_program_reads_from_the_result_why_the_guard_stopped_its_run(  # noqa: PLR0917
    guarded: Make, thread: str, fields: dict[str, Any], model: Any, asked: str, why: Any
) -> None:
    agent = guarded(model, checkpointer=InMemorySaver(), **fields)
    result = agent.graph.invoke(ask(asked), agent.run_config(thread))  # what a program gets
    assert_adjacent(result["messages"])

    stop = stop_reason(result)
    assert _why(stop) == why
    if stop is not None:  # the very escalation the guard reported
        assert (stop.tool, stop.arguments, stop.digest) == (
            "probe",
            '{"q":"same"}',
            digest('{"q":"same"}'),
        )
        assert stop_reason(result["messages"]) == stop  # the messages alone say as much
    # The thread goes on: once the user speaks again, an earlier stop is not this run's.
    again = agent.invoke(ask("answer now: loop 0"), thread)
    assert stop_reason(again) is None
    assert stop_reason(agent.state(thread)) is None  # the checkpoint holds both runs


def test_a_refused_call_is_the_stop_reason_of_a_run_the_model_went_on_with() -> None:
    script = [*[turn(call("probe", {"q": "same"})) for _ in range(6)], AIMessage("I stop here.")]
    agent = build("middleware", scripted(script), exit_behavior="block", **LIMIT)
    result = agent.graph.invoke(ask("loop"), agent.run_config())

    assert_adjacent(result["messages"])
    assert _why(stop_reason(result)) == ("block", "repeat", 6, 6)
    assert result["messages"][-1].content == "I stop here."  # the model decided


def test_an_error_or_a_question_is_no_stop_reason_in_the_messages(guarded: Make) -> None:
    # `error` raises and `interrupt` pauses: those say it themselves, the messages do not.
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), exit_behavior="error", **LIMIT)
    with pytest.raises(RepeatToolLoopError) as raised:
        agent.invoke(ask("loop 50"), "raised")
    assert (raised.value.detector, raised.value.count, raised.value.escalate_after) == (
        "repeat",
        6,
        6,
    )
    assert stop_reason(agent.state("raised")) is None
