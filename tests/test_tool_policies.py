"""A tool's own policy, declared in its metadata, and how it meets the configuration."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import repeat_reminder_langchain._middleware as middleware_module
from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
)
from repeat_reminder_langchain._guard import NO_TOOLS
from repeat_reminder_langchain._policy import ToolPolicies, parse_tool_policy

from .conftest import Guarded
from .helpers import (
    LoopModel,
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
Make = Callable[..., Guarded]


@pytest.fixture
def policed(guarded: Make) -> Make:
    """`guarded(model, tools, **fields)`: the handler reads a tool's metadata as the tool runs,
    the middleware from each model request's tools, the state-kept node from the `ToolNode`
    it is given."""
    return guarded


def poller(metadata: dict[str, Any], results: list[str] | None = None) -> Any:
    """A `check_status` tool with `metadata`, returning `results` in turn (else "running")."""

    @tool
    def check_status(job_id: str) -> str:
        """Check a job."""
        return results.pop(0) if results else "running"

    check_status.metadata = metadata
    return check_status


def checks(n: int) -> list[AIMessage]:
    return repeat("check_status", {"job_id": "7"}, n)


def interleaved(n: int) -> list[AIMessage]:
    script = []
    for _ in range(n):
        script += [turn(call("probe", SAME)), turn(call("check_status", {"job_id": "7"}))]
    return script


# -- a tool's policy in a run -----------------------------------------------------------------


def test_a_tool_can_exclude_itself(policed: Make) -> None:
    quiet = {"repeat_reminder": {"exclude": True}}
    alone = policed(scripted(checks(4)), [poller(quiet)])
    between = policed(scripted(interleaved(3)), [probe, poller(quiet)])

    assert reminders(alone.invoke(ask())) == []
    # Excluded means transparent: probe, check, probe, check, probe is three probes in a row.
    assert reminders(between.invoke(ask())) == [("gentle", "probe", 3)]


def test_a_tool_can_bring_its_own_thresholds_and_repeat_every(policed: Make) -> None:
    own = poller({"repeat_reminder": {"thresholds": [2], "repeat_every": 2}})
    agent = policed(scripted(checks(4)), [own])

    assert reminders(agent.invoke(ask())) == [
        ("gentle", "check_status", 2), ("detailed", "check_status", 4),
    ]  # fmt: skip


def test_explicit_configuration_wins_over_the_tools_own(policed: Make) -> None:
    own = {"repeat_reminder": {"exclude": True, "thresholds": [2]}}
    included = policed(scripted(checks(3)), [poller(own)], include=["check_*"], thresholds=[3])
    excluded = policed(scripted(checks(3)), [poller(own)], exclude=["check_status"])

    assert reminders(included.invoke(ask())) == [("gentle", "check_status", 3)]
    assert reminders(excluded.invoke(ask())) == []


def test_read_only_tools_count_results_under_auto(policed: Make) -> None:
    def moving() -> list[str]:
        return [f"{p}%" for p in range(10, 60, 10)]

    read_only = {"annotations": {"readOnlyHint": True}}
    # A pure read whose repeats never show anything new: the same call is a repeat.
    idempotent = {"readOnlyHint": True, "idempotentHint": True}
    same_result = policed(scripted(checks(3)), [poller(read_only)], progress="auto")
    pure_read = policed(scripted(checks(3)), [poller(idempotent, moving())], progress="auto")
    new_results = policed(scripted(checks(3)), [poller(read_only, moving())], progress="auto")

    assert reminders(same_result.invoke(ask())) == [("gentle", "check_status", 3)]
    assert reminders(pure_read.invoke(ask())) == [("gentle", "check_status", 3)]
    assert reminders(new_results.invoke(ask())) == []


def test_a_tool_sets_aside_what_varies_in_its_results(policed: Make) -> None:
    def timed() -> list[str]:
        return [f"running (took {ms} ms)" for ms in (12, 9, 15)]

    own = {"repeat_reminder": {"normalise_results": [r"took \d+ ms"]}}
    declared = policed(scripted(checks(3)), [poller(own, timed())], progress="result")
    silent = policed(scripted(checks(3)), [poller({}, timed())], progress="result")

    assert reminders(declared.invoke(ask())) == [("gentle", "check_status", 3)]
    assert reminders(silent.invoke(ask())) == []  # each timing passes for progress


def test_a_bad_tool_policy_is_logged_once_and_ignored(
    policed: Make, caplog: pytest.LogCaptureFixture
) -> None:
    broken = poller({"repeat_reminder": {"thresholds": "three"}})
    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        messages = policed(scripted(checks(3)), [broken]).invoke(ask())

    assert reminders(messages) == [("gentle", "check_status", 3)]  # the defaults apply
    warned = [r.getMessage() for r in caplog.records if "'check_status'" in r.getMessage()]
    assert len(warned) == 1
    assert "its policy is ignored" in warned[0]


@pytest.mark.parametrize("face", ["handler", "middleware"])
def test_the_handler_and_the_middleware_learn_a_policy_as_the_tool_runs(guarded: Make) -> None:
    tools = [poller({"repeat_reminder": {"thresholds": [2]}})]
    agent = guarded(scripted(checks(1)), tools, shown=False)
    assert "check_status" not in agent.guard.tool_policies
    agent.invoke(ask())

    assert agent.guard.tool_policies["check_status"].thresholds == (2,)


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

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "check_status", 2)]


# -- reading and resolving policies -----------------------------------------------------------


def test_a_tools_progress_wins_over_auto_and_the_default() -> None:
    policy = parse_tool_policy({"repeat_reminder": {"progress": "result"}})

    def aware(config: ReminderConfig) -> bool:
        rules = config.rules("t", policy)
        assert rules is not None
        return rules.result_aware

    assert aware(ReminderConfig())
    assert aware(ReminderConfig(progress="auto"))
    assert not aware(ReminderConfig(progress="none"))  # set explicitly, so it wins


class Annotations:
    readOnlyHint = True
    idempotentHint = None


def test_tool_policies_are_read_from_metadata() -> None:
    assert parse_tool_policy(None) is None
    assert parse_tool_policy({"other": 1}) is None
    hinted = parse_tool_policy({"annotations": Annotations()})
    assert hinted is not None and hinted.read_only is True
    policy = parse_tool_policy({"repeat_reminder": {"ignore_arguments": ["id"], "unknown": 1}})
    assert policy is not None
    assert policy.ignore_arguments == ("id",)  # an unknown key is ignored
    with pytest.raises(ValueError, match="repeat_reminder must be a mapping"):
        parse_tool_policy({"repeat_reminder": ["exclude"]})
    with pytest.raises(ValueError, match=r"invalid repeat_reminder policy: .*integer >= 2"):
        parse_tool_policy({"repeat_reminder": {"thresholds": [1]}})


def test_learnt_policies_follow_changes_and_stay_bounded() -> None:
    policies = ToolPolicies()
    own = {"exclude": True}
    policies.learn("t", {"repeat_reminder": own})
    policies.learn("t", {"repeat_reminder": own})
    assert policies["t"].exclude
    assert list(policies) == ["t"]
    policies.learn("t", {"repeat_reminder": {"exclude": False}})
    assert not policies["t"].exclude
    policies.learn("t", {})  # it declares nothing any more
    assert len(policies) == 0
    policies.learn(None, {"repeat_reminder": own})
    policies.learn("u", "not metadata")
    assert policies.get("u") is None
    policies.limit = 2
    for name in "abc":
        policies.learn(name, {"repeat_reminder": own})
    assert list(policies) == ["c"]  # a and b filled it: at the cap, what was learnt is cleared


# -- one middleware instance shared by agents ------------------------------------------------


def test_a_providers_built_in_tool_beside_them_leaves_the_other_tools_policies_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A provider's own tool, given to create_agent as a dict, has no name or metadata attribute.
    web_search = {"type": "web_search_preview"}
    quiet = poller({"repeat_reminder": {"exclude": True}})
    agent = create_agent(
        scripted(checks(4)),
        tools=[web_search, quiet],
        middleware=[RepeatToolReminderMiddleware(meter_provider=False)],
    )

    messages = agent.invoke(ask())["messages"]

    assert reminders(messages) == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert_adjacent(messages)


def test_agents_sharing_an_instance_count_each_with_its_own_tools_policies() -> None:
    # Agent A's check_status declares itself excluded; agent B's, of the same name, does not.
    # Their steps interleave on one instance: each model call of one agent between the other's
    # model call and the count of its turn.
    guard = RepeatToolReminderMiddleware(thresholds=[2])
    saver = InMemorySaver()
    agents = {
        "a": create_agent(
            LoopModel(tool="check_status", args={"job_id": "7"}),
            tools=[poller({"repeat_reminder": {"exclude": True}})],
            middleware=[guard],
            checkpointer=saver,
        ),
        "b": create_agent(
            LoopModel(tool="check_status", args={"job_id": "7"}),
            tools=[poller({})],
            middleware=[guard],
            checkpointer=saver,
        ),
    }
    configs: dict[str, Any] = {name: {"configurable": {"thread_id": name}} for name in agents}
    inputs: dict[str, Any] = {name: ask("loop 4") for name in agents}
    while any(agent.get_state(configs[n]).next or inputs[n] for n, agent in agents.items()):
        for name, agent in agents.items():
            if inputs[name] or agent.get_state(configs[name]).next:
                agent.invoke(inputs[name], configs[name], interrupt_before=["tools"])
                inputs[name] = None
    told = {n: reminders(a.get_state(configs[n]).values["messages"]) for n, a in agents.items()}

    assert told == {"a": [], "b": [("gentle", "check_status", 2)]}
    for name, agent in agents.items():
        assert_adjacent(agent.get_state(configs[name]).values["messages"])


def test_a_turn_the_instance_did_not_see_made_counts_with_no_other_agents_tools() -> None:
    guard = RepeatToolReminderMiddleware(thresholds=[2])
    excluded, plain = [poller({"repeat_reminder": {"exclude": True}})], [poller({})]
    assert guard._turns["unseen"].policies == {}
    guard._learn(excluded)
    assert guard._turns["unseen"].policies["check_status"].exclude  # its one agent's
    assert guard.tool_policies["check_status"].exclude
    guard._learn(plain)
    assert guard._turns["unseen"].policies == {}  # two agents: neither is guessed
    assert guard.tool_policies == {}  # the latest request's


def test_the_agents_and_turns_an_instance_remembers_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(middleware_module, "_AGENTS", 2)
    monkeypatch.setattr(middleware_module, "_TURNS", 2)
    guard = RepeatToolReminderMiddleware()
    sets = [[poller({})] for _ in range(3)]
    for turn_id, tools in zip("abc", sets, strict=True):
        guard._note_turn_tools(AIMessage("", id=turn_id), guard._learn(tools))
    assert len(guard._agents) == len(guard._turns) == 2
    assert guard._learn(sets[2]) is guard._turns["c"]  # the latest kept, the first gone
    assert guard._turns["a"] is NO_TOOLS  # two agents known: none is guessed


def test_a_turn_is_noted_whatever_form_the_model_call_answers_in() -> None:
    # What an inner handler answers: a ModelResponse, an AIMessage, or a response with a
    # Command beside it (ExtendedModelResponse).
    guard = RepeatToolReminderMiddleware()
    tools = guard._learn([poller({})])
    guard._learn([poller({})])  # a second agent: a turn not noted would get no tools
    answers = [
        ModelResponse(result=[AIMessage("", id="plain")]),
        AIMessage("", id="bare"),
        ExtendedModelResponse(ModelResponse(result=[AIMessage("", id="extended")]), None),
    ]
    for answer in answers:
        guard._note_turn_tools(answer, tools)
    assert [guard._turns[turn] for turn in ("plain", "bare", "extended")] == [tools] * 3
