"""Real provider clients over HTTP against the local validating server.

Each agent makes nine identical tool calls, then answers. Every request must be accepted, the
final state must hold the reminders at 3, 5 and 8, and each request body must carry each
reminder where its API takes it: right after the results of the turn that drew it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# Optional peers (the providers extra): `make test-lowest` runs without them and skips this module.
pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_anthropic import ChatAnthropic
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel

from repeat_reminder_langchain import (
    Escalation,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
    from_guard,
    prepare_messages,
    stop_reason,
)
from repeat_reminder_langchain._conversation import is_reminder

from .helpers import ask, assert_adjacent, probe, reminders, routed_graph
from .provider_server import ProviderServer, Script

SAME = {"q": "same"}
THRESHOLDS = (3, 5, 8)
EXPECTED = [("gentle", "probe", 3), ("detailed", "probe", 5), ("detailed", "probe", 8)]
PROMPT = "You are a careful agent."
MODES = ["invoke", "ainvoke", "stream", "astream"]


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer(Script.repeat("probe", SAME, 9)) as running:
        yield running


# -- clients ----------------------------------------------------------------------------------


def chat_model(server: ProviderServer, model: str = "gpt-4o") -> ChatOpenAI:
    # No retries: a 400 must surface at once, not be retried into a pass or a slow failure.
    return ChatOpenAI(
        model=model,
        base_url=server.openai_base_url,
        api_key="x",  # type: ignore[arg-type]
        max_retries=0,
        stream_usage=True,
    )


def responses_model(server: ProviderServer, model: str = "gpt-4o") -> ChatOpenAI:
    return ChatOpenAI(
        model=model,
        base_url=server.openai_base_url,
        api_key="x",  # type: ignore[arg-type]
        max_retries=0,
        use_responses_api=True,
    )


def anthropic_model(server: ProviderServer, model: str = "claude-sonnet-4-5") -> ChatAnthropic:
    return ChatAnthropic(  # type: ignore[call-arg]
        model=model,
        base_url=server.anthropic_base_url,
        api_key="x",
        max_retries=0,
    )


CLIENTS: dict[str, Callable[[ProviderServer], BaseChatModel]] = {
    "chat": chat_model,
    "responses": responses_model,
    "messages": anthropic_model,
}


# -- where the reminders sit in a request body --------------------------------------------------

_COUNT = re.compile(r"`\w+` (\d+) times in a row|consecutive_calls: (\d+)")


def _note(text: str) -> str:
    """`<system-reminder> N` for a wrapped reminder's text, `reminder N` for a bare one."""
    found = _COUNT.search(text)
    if not found:
        return "text"
    count = found.group(1) or found.group(2)
    return (
        f"<system-reminder> {count}"
        if text.startswith("<system-reminder>")
        else f"reminder {count}"
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def layout(api: str, body: dict[str, Any]) -> list[str]:
    """One line per message (chat, messages) or input item (responses) of a request body."""
    lines = []
    if api == "messages" and body.get("system"):
        lines.append(f"top-level system: {_note(_text(body['system']))}")
    for entry in body["input" if api == "responses" else "messages"]:
        role, content = entry.get("role"), entry.get("content")
        if api == "chat" and entry.get("tool_calls"):
            lines.append(f"assistant: calls {len(entry['tool_calls'])}")
        elif api == "chat" and role == "tool":
            lines.append("tool: result")
        elif api == "responses" and entry.get("type") in ("function_call", "function_call_output"):
            lines.append(entry["type"])
        elif api == "messages" and isinstance(content, list):
            kinds = [
                _note(block["text"]) if block["type"] == "text" else block["type"]
                for block in content
            ]
            lines.append(f"{role}: {' + '.join(kinds)}")
        else:
            lines.append(f"{role}: {_note(_text(content))}")
    return lines


def expected_layout(
    api: str,
    *,
    turns: int = 9,
    parallel: int = 1,
    reminder_role: str = "user",
    system_prompt: bool = False,
) -> list[str]:
    """The layout of the last request: every turn, its results, then its reminders."""
    # User text carries the reminder wrapped; a system message carries it bare.
    form = "<system-reminder>" if reminder_role == "user" else "reminder"
    lines = []
    if system_prompt:
        lines.append("top-level system: text" if api == "messages" else "system: text")
    lines.append("user: text")
    counted = 0
    for _ in range(turns):
        # Said once a turn, at the count the turn reached (all its calls are identical).
        reached = any(counted < t <= counted + parallel for t in THRESHOLDS)
        counted += parallel
        due = [f"{form} {counted}"] if reached else []
        if api == "chat":
            lines += [f"assistant: calls {parallel}"] + ["tool: result"] * parallel
            lines += [f"{reminder_role}: {note}" for note in due]
        elif api == "responses":
            lines += ["function_call"] * parallel + ["function_call_output"] * parallel
            lines += [f"{reminder_role}: {note}" for note in due]
        else:
            lines.append(" + ".join(["assistant: tool_use"] + ["tool_use"] * (parallel - 1)))
            results = ["tool_result"] * parallel
            if reminder_role == "user":  # in the same user turn, after every result
                lines.append("user: " + " + ".join(results + due))
            else:
                lines.append("user: " + " + ".join(results))
                lines += [f"system: {note}" for note in due]
    return lines


# -- running ----------------------------------------------------------------------------------


async def run(graph: Any, mode: str, inputs: Any, config: Any = None) -> dict[str, Any]:
    """The final state, by `mode`. Streams ask for messages too, so the model streams (SSE)."""
    if mode == "invoke":
        return dict(graph.invoke(inputs, config))
    if mode == "ainvoke":
        return dict(await graph.ainvoke(inputs, config))
    final: dict[str, Any] = {}
    if mode == "stream":
        for kind, chunk in graph.stream(inputs, config, stream_mode=["messages", "values"]):
            final = chunk if kind == "values" else final
    else:
        async for kind, chunk in graph.astream(inputs, config, stream_mode=["messages", "values"]):
            final = chunk if kind == "values" else final
    return final


def check_run(
    server: ProviderServer,
    api: str,
    state: dict[str, Any],
    *,
    mode: str = "invoke",
    turns: int = 9,
    parallel: int = 1,
    reminder_role: str = "user",
    system_prompt: bool = False,
) -> list[BaseMessage]:
    """What every run must show: accepted requests, reminders, and where each one went."""
    assert server.rejected() == []
    exchanges = [e for e in server.exchanges if e.api == api]
    assert [(e.status, e.error) for e in exchanges] == [(200, None)] * (turns + 1)
    assert {e.stream for e in exchanges} == {mode in ("stream", "astream")}

    messages: list[BaseMessage] = state["messages"]
    assert reminders(messages) == (
        EXPECTED
        if parallel == 1
        else [(level, tool, -(-count // parallel) * parallel) for level, tool, count in EXPECTED]
    )  # a threshold reached within a turn is said at the count the turn reached
    for message in filter(is_reminder, messages):
        tag = message.additional_kwargs["repeat_tool_reminder"]
        assert {"tool", "count", "level"} <= set(tag)
    assert_adjacent(messages)
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].text == "done"
    assert not messages[-1].tool_calls

    expected = expected_layout(
        api,
        turns=turns,
        parallel=parallel,
        reminder_role=reminder_role,
        system_prompt=system_prompt,
    )
    assert layout(api, exchanges[-1].body) == expected
    # Request N carries the conversation up to the N-th model turn: the reminders a turn drew
    # are already in the very next request, after that turn's results.
    starts = [
        index
        for index, line in enumerate(expected)
        if line.startswith("assistant:")
        or (line == "function_call" and expected[index - 1] != "function_call")
    ]
    assert len(starts) == turns
    sent = [layout(api, exchange.body) for exchange in exchanges]
    assert sent == [expected[:end] for end in [*starts, len(expected)]]
    return messages


# -- create_agent with the middleware -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", list(CLIENTS))
async def test_create_agent_reminds_after_the_results_in_every_api(
    server: ProviderServer, api: str, mode: str
) -> None:
    agent = create_agent(
        CLIENTS[api](server), tools=[probe], middleware=[RepeatToolReminderMiddleware()]
    )

    state = await run(agent, mode, ask())

    messages = check_run(server, api, state, mode=mode)
    # None of these models declares mid-conversation system messages: the reminders are sent
    # as user text (check_run reads each request), and kept in the one form they are stored in.
    assert {m.type for m in filter(is_reminder, messages)} == {"system"}


async def test_concurrent_agents_on_every_api_share_one_server(server: ProviderServer) -> None:
    # The server picks each answer from the request alone, so interleaved conversations
    # still get their own nine calls each.
    guard = RepeatToolReminderMiddleware()
    agents = {
        api: create_agent(client(server), tools=[probe], middleware=[guard])
        for api, client in CLIENTS.items()
    }

    states = await asyncio.gather(*(run(agent, "ainvoke", ask()) for agent in agents.values()))

    assert len(server.exchanges) == 3 * 10
    for api, state in zip(agents, states, strict=True):
        check_run(server, api, state, mode="ainvoke")


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_parallel_identical_calls_count_one_by_one(server: ProviderServer, api: str) -> None:
    server.play(Script.repeat("probe", SAME, 3, parallel=3))
    agent = create_agent(
        CLIENTS[api](server), tools=[probe], middleware=[RepeatToolReminderMiddleware()]
    )

    state = await run(agent, "ainvoke", ask())

    check_run(server, api, state, turns=3, parallel=3)


@pytest.mark.parametrize("api", list(CLIENTS))
def test_human_reminders_reach_every_api_as_user_text(server: ProviderServer, api: str) -> None:
    middleware = RepeatToolReminderMiddleware(message_type="human")
    agent = create_agent(CLIENTS[api](server), tools=[probe], middleware=[middleware])

    state = agent.invoke(ask())

    messages = check_run(server, api, state)
    assert {m.type for m in filter(is_reminder, messages)} == {"human"}


@pytest.mark.parametrize(
    ("api", "model", "reminder_role"),
    [
        ("chat", "gpt-4o", "user"),
        ("chat", "gpt-4.1", "system"),
        ("responses", "gpt-4o", "user"),
        ("responses", "gpt-4.1", "system"),
        ("messages", "claude-sonnet-4-5", "user"),
        ("messages", "claude-opus-4-8", "system"),
    ],
)
async def test_create_agent_with_a_system_prompt(
    server: ProviderServer, api: str, model: str, reminder_role: str
) -> None:
    # A model whose profile declares mid-conversation system messages gets the reminder as a
    # system message in place; any other gets it as user text. For Anthropic, a system
    # message after the tool results would be refused outright next to a system prompt.
    factory = {"chat": chat_model, "responses": responses_model, "messages": anthropic_model}
    agent = create_agent(
        factory[api](server, model),
        tools=[probe],
        middleware=[RepeatToolReminderMiddleware()],
        system_prompt=PROMPT,
    )

    state = await run(agent, "astream", ask())

    check_run(server, api, state, mode="astream", reminder_role=reminder_role, system_prompt=True)
    if api == "messages":
        assert server.exchanges[-1].body["system"] == PROMPT


# -- a custom LangGraph graph --------------------------------------------------------------------


def custom_graph(model: BaseChatModel, node: RepeatToolReminderNode, state: type) -> Any:
    """model → tools → reminder node → model, the model node sending `prepare_messages`."""
    bound = model.bind_tools([probe])

    def agent(state: dict[str, Any]) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(prepare_messages(state["messages"], bound))]}

    async def aagent(state: dict[str, Any]) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(prepare_messages(state["messages"], bound))]}

    builder = StateGraph(state)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", ToolNode([probe]))
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "repeat_reminder")
    builder.add_edge("repeat_reminder", "agent")
    return builder.compile()


def prompted() -> dict[str, list[BaseMessage]]:
    # A system prompt first: the case where Anthropic refuses a stored system reminder.
    return {"messages": [SystemMessage(PROMPT), HumanMessage("go")]}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", list(CLIENTS))
async def test_custom_graph_with_the_handler_and_node(
    server: ProviderServer, api: str, mode: str
) -> None:
    handler = RepeatToolReminderCallbackHandler()
    graph = custom_graph(CLIENTS[api](server), RepeatToolReminderNode(handler), MessagesState)

    state = await run(graph, mode, prompted(), {"callbacks": [handler]})

    check_run(server, api, state, mode=mode, system_prompt=True)


@pytest.mark.parametrize("mode", ["invoke", "astream"])
@pytest.mark.parametrize("api", list(CLIENTS))
async def test_custom_graph_with_the_count_kept_in_state(
    server: ProviderServer, api: str, mode: str
) -> None:
    graph = custom_graph(CLIENTS[api](server), RepeatToolReminderNode(), RepeatToolReminderState)

    state = await run(graph, mode, prompted())

    check_run(server, api, state, mode=mode, system_prompt=True)
    assert "repeat_tool_reminder" in state


# -- after the guard ended a run -------------------------------------------------------------------


@pytest.mark.parametrize("api", list(CLIENTS))
def test_a_thread_the_guard_ended_goes_on_with_valid_requests(
    server: ProviderServer, api: str
) -> None:
    # The guard stops the loop at 6 with its final message; the user then asks again on the
    # thread. Every provider must accept the conversation as the guard left it.
    guard = RepeatToolReminderMiddleware(thresholds=[3, 5], escalate_after=6, exit_behavior="end")
    agent = create_agent(
        CLIENTS[api](server),
        tools=[probe],
        middleware=[guard],
        system_prompt=PROMPT,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"ended-{api}"}}
    first = agent.invoke(ask(), config)["messages"]
    server.play(Script(turns=0, answer="Understood."), when="What happened?")
    second = agent.invoke({"messages": [HumanMessage("What happened?")]}, config)["messages"]

    assert server.rejected() == []
    assert_adjacent(second)
    ended = first[-1]
    assert ended.additional_kwargs["repeat_tool_reminder"]["level"] == "escalated"
    assert sum(len(getattr(m, "tool_calls", ())) for m in first) == 6
    assert second[-1].text == "Understood."


# -- finish: the last call keeps the prompt's head ----------------------------------------------

FINISH = {"thresholds": [3], "escalate_after": 4, "exit_behavior": "finish"}
NO_TOOL: dict[str, Any] = {"chat": "none", "responses": "none", "messages": {"type": "none"}}


def head(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """What a request sends beside its conversation and its tool choice: tools, system, model."""
    return {k: v for k, v in body.items() if k not in ("messages", "input", "tool_choice")}


@pytest.mark.parametrize("mode", ["invoke", "astream"])
@pytest.mark.parametrize("api", list(CLIENTS))
async def test_finish_keeps_the_tools_and_tells_the_model_to_call_none(
    server: ProviderServer, api: str, mode: str
) -> None:
    # Withheld, the tools would leave the head of the prompt, and a provider's cache with them.
    agent = create_agent(
        CLIENTS[api](server),
        tools=[probe],
        middleware=[RepeatToolReminderMiddleware(**FINISH)],
        system_prompt=PROMPT,
    )

    state = await run(agent, mode, ask())

    assert server.rejected() == []
    bodies = server.bodies(api)
    assert [body.get("tool_choice") for body in bodies] == [None] * 4 + [NO_TOOL[api]]
    assert [head(api, body) for body in bodies] == [head(api, bodies[0])] * 5
    assert [t.get("name") or t["function"]["name"] for t in bodies[-1]["tools"]] == ["probe"]
    # The loop shown once: the request follows the first call and its result (the same as
    # the latest), so the conversation up to there is the prefix the second request had.
    first, last = _parts(api, bodies[1]), _parts(api, bodies[-1])
    assert last[: len(first)] == first and len(last) == len(first) + 1
    messages = state["messages"]
    assert_adjacent(messages)
    assert messages[-1].text == "done" and not messages[-1].tool_calls  # told so, it answered
    assert (stop_reason(messages) or Escalation("", 0, "", "", "")).behavior == "finish"


def _parts(api: str, body: dict[str, Any]) -> list[Any]:
    """A request's conversation, part by part (Messages merges a user turn into the results')."""
    if api == "responses":
        return list(body["input"])
    if api == "chat":
        return list(body["messages"])
    return [
        (m["role"], part)
        for m in body["messages"]
        for part in (m["content"] if isinstance(m["content"], list) else [m["content"]])
    ]


@pytest.mark.parametrize("face", ["handler", "state"])
@pytest.mark.parametrize("api", list(CLIENTS))
def test_the_nodes_bind_tools_keeps_them_told_to_call_none(
    server: ProviderServer, api: str, face: str
) -> None:
    # A custom graph: the model node binds the tools as the node says, the ToolNode refuses a
    # call made all the same, the node's route ends the run.
    handler = RepeatToolReminderCallbackHandler(**FINISH) if face == "handler" else None
    node = RepeatToolReminderNode(handler) if handler else RepeatToolReminderNode(**FINISH)
    model = CLIENTS[api](server)

    def agent(state: dict[str, Any]) -> dict[str, list[BaseMessage]]:
        chosen = node.bind_tools(model, [probe], state)
        return {"messages": [chosen.invoke(prepare_messages(state["messages"], model))]}

    state = RepeatToolReminderState if handler is None else MessagesState
    config = {"callbacks": [handler] if handler else []}

    messages = routed_graph(node, agent, [probe], state).invoke(prompted(), config)["messages"]

    assert server.rejected() == []
    bodies = server.bodies(api)
    assert [body.get("tool_choice") for body in bodies] == [None] * 4 + [NO_TOOL[api]]
    assert [head(api, body) for body in bodies] == [head(api, bodies[0])] * 5
    assert_adjacent(messages)
    assert messages[-1].text == "done" and not messages[-1].tool_calls


def test_finish_withholds_the_tools_from_a_model_that_takes_no_tool_choice(
    server: ProviderServer,
) -> None:
    # Its profile says it takes no tool_choice: the tools are left out, as for a scripted model,
    # and a call it makes all the same is refused, not run.
    agent = create_agent(
        anthropic_model(server, "claude-sonnet-5-5"),
        tools=[probe],
        # This server takes a system turn from Opus 4.8 alone; this model's profile declares it.
        middleware=[RepeatToolReminderMiddleware(message_type="human", **FINISH)],
    )

    messages = agent.invoke(ask())["messages"]

    assert server.rejected() == []
    bodies = server.bodies("messages")
    assert ["tools" in body for body in bodies] == [True] * 4 + [False]
    assert "tool_choice" not in bodies[-1]
    assert_adjacent(messages)
    assert isinstance(messages[-2], ToolMessage) and messages[-2].status == "error"
    assert from_guard(messages[-1])


def test_finish_beside_a_response_format_withholds_the_tools(server: ProviderServer) -> None:
    # LangChain forces its structured output tool then: told "none", the choice would be lost.
    class Answer(BaseModel):
        text: str

    agent = create_agent(
        chat_model(server),
        tools=[probe],
        middleware=[RepeatToolReminderMiddleware(**FINISH)],
        response_format=ToolStrategy(Answer),
    )

    messages = agent.invoke(ask())["messages"]

    assert server.rejected() == []
    last = server.bodies("chat")[-1]
    assert [tool["function"]["name"] for tool in last["tools"]] == ["Answer"]
    assert last["tool_choice"] == "required"
    assert_adjacent(messages)
