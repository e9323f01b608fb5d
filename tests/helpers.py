"""Shared test helpers: a scripted chat model, the custom agent graph, and message checks."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import os
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field

from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderNode,
    RepeatToolReminderWarning,
    prepare_messages,
)
from repeat_reminder_langchain._conversation import is_reminder, read_messages
from repeat_reminder_langchain._counter import Call, CallTrace, Count, LoopCounter, Turn
from repeat_reminder_langchain._record import Record, read_record
from repeat_reminder_langchain.tooling import _cli as cli
from repeat_reminder_langchain.tooling._cli import main

_ids = itertools.count(1)


def call(name: str, args: Any = None, call_id: str | None = None) -> dict[str, Any]:
    """A tool call as a model writes it, with a fresh id unless one is given."""
    return {
        "name": name,
        "args": {} if args is None else args,
        "id": call_id or f"call_{next(_ids)}",
        "type": "tool_call",
    }


def turn(*calls: dict[str, Any], content: str = "") -> AIMessage:
    """One model turn making `calls`, in this order."""
    return AIMessage(content=content, tool_calls=list(calls))


def repeat(name: str, args: Any, times: int) -> list[AIMessage]:
    """`times` turns, each one identical call."""
    return [turn(call(name, args)) for _ in range(times)]


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers with the next scripted message, tools bound or not.

    Unlike `GenericFakeChatModel`, it keeps tool calls when streamed, so graphs streamed with
    `stream_mode="messages"` see the same turns as invoked ones.
    """

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Iterator[Any]:
        message = self._generate(messages).generations[0].message
        chunks = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(message.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(content=message.content, id=message.id, tool_call_chunks=chunks)
        )


class LoopingModel(BaseChatModel):
    """A chat model that repeats one tool call `turns` times after each user message, then
    answers. It reads the conversation instead of a script, so one instance can serve any
    number of concurrent runs and worker processes.
    """

    tool: str = "probe"
    args: dict[str, Any] = Field(default_factory=lambda: {"q": "same"})
    turns: int = 3

    @property
    def _llm_type(self) -> str:
        return "looping-test-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> LoopingModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        made = 0
        for message in reversed(messages):
            if isinstance(message, HumanMessage) and not is_reminder(message):
                break
            made += isinstance(message, AIMessage) and bool(message.tool_calls)
        if made >= self.turns:
            reply = AIMessage(f"done after {made} calls")
        else:
            reply = turn(call(self.tool, dict(self.args), f"call_{uuid.uuid4().hex[:12]}"))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def scripted(messages: Sequence[AIMessage | str]) -> ScriptedModel:
    """A model that plays `messages` in order, then says it is done."""
    return ScriptedModel(messages=iter([*messages, AIMessage("done")]))


@tool
def probe(q: str = "", body: str = "") -> str:
    """Look something up."""
    return f"probed {q}{body[:10]}"


@tool
def other(q: str = "") -> str:
    """Look something else up."""
    return f"other {q}"


def model_node(model: Any, *, prepared: bool = False) -> RunnableLambda[Any, Any]:
    """A graph node asking `model`, sync and async; `prepared` sends `prepare_messages`."""

    def messages(state: Any) -> Any:
        sent = read_messages(state, "messages")  # a dict state, or a state object
        return prepare_messages(sent, model) if prepared else sent

    def agent(state: Any) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(messages(state))]}

    async def aagent(state: Any) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(messages(state))]}

    return RunnableLambda(agent, afunc=aagent)


def agent_graph(
    model: Any,
    tools: Sequence[BaseTool | Callable[..., Any]],
    handler: RepeatToolReminderCallbackHandler | None,
    *,
    tool_node: ToolNode | None = None,
    checkpointer: Any = None,
    after_tools: RepeatToolReminderNode | None = None,
    state: Any = MessagesState,
) -> Any:
    """The custom agent of the README: model → tools → reminder node → model.

    The node is the handler's, or `after_tools` (a state-kept node, with its `state`).
    """
    builder = StateGraph(state)
    builder.add_node("agent", model_node(model))
    builder.add_node("tools", tool_node or ToolNode(tools, handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    node = after_tools or (None if handler is None else RepeatToolReminderNode(handler))
    if node is None:
        builder.add_edge("tools", "agent")
    else:
        builder.add_node("repeat_reminder", node)
        builder.add_edge("tools", "repeat_reminder")
        builder.add_edge("repeat_reminder", "agent")
    return builder.compile(checkpointer=checkpointer)


def routed_graph(node: RepeatToolReminderNode, agent: Any, tools: Sequence[Any], state: Any) -> Any:
    """The own graph of the detectors guide, for a node that may end the run: model → tools
    (a call made after the request for the answer refused) → node, whose route goes on or ends."""
    builder = StateGraph(state)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools, wrap_tool_call=node.wrap_tool_call))
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges(
        "agent", tools_condition, {"tools": "tools", END: "repeat_reminder"}
    )
    builder.add_edge("tools", "repeat_reminder")
    builder.add_conditional_edges("repeat_reminder", node.route, {"continue": "agent", "end": END})
    return builder.compile()


def ask(text: str = "go") -> dict[str, list[BaseMessage]]:
    return {"messages": [HumanMessage(text)]}


def reminders(messages: Sequence[BaseMessage]) -> list[tuple[str, str, int]]:
    """`(level, tool, count)` of every reminder in the conversation, in order."""
    found = []
    for message in messages:
        if is_reminder(message):
            tag = message.additional_kwargs["repeat_tool_reminder"]
            found.append((tag["level"], tag["tool"], tag["count"]))
    return found


def kept_record(agent: Any, thread: str) -> Record:
    """The record a `Guarded` agent's guard keeps for `thread`, whichever face it is.

    The handler keeps it in memory, by agent; the state-kept node in its state field; the
    middleware in its field, under its instance name.
    """
    if agent.handler is not None:
        records = agent.handler.records._agents
        kept = [r for key, r in records.items() if key[0] == ("thread", thread)]
        assert len(kept) <= 1, f"{len(kept)} agents on thread {thread}"
        return kept[0] if kept else {}
    field = agent.state(thread).get("repeat_tool_reminder")
    if agent.face == "middleware" and field is not None:
        field = field.get(agent.guard.name)
    return read_record(field or {})


def final_messages(events: Sequence[Any]) -> list[BaseMessage]:
    """The conversation a run ended with, from its `astream_events`: the root run's output."""
    (root,) = [e for e in events if e["event"] == "on_chain_end" and not e["parent_ids"]]
    return list(root["data"]["output"]["messages"])


def assert_adjacent(messages: Sequence[BaseMessage]) -> None:
    """Every assistant turn with tool calls is followed by exactly its results, then the rest.

    Calls that share an id (some models emit that) need as many results with that id. Calls
    whose arguments could not be parsed (`invalid_tool_calls`) may be answered too, as
    `create_agent` does: their results then belong to the block.
    """
    for index, message in enumerate(messages):
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        after = itertools.takewhile(lambda m: isinstance(m, ToolMessage), messages[index + 1 :])
        answered = {m.tool_call_id for m in after}
        invalid = [c["id"] or "" for c in message.invalid_tool_calls if c.get("id") in answered]
        wanted = sorted([*(c["id"] or "" for c in message.tool_calls), *invalid])
        block = messages[index + 1 : index + 1 + len(wanted)]
        got = sorted(m.tool_call_id for m in block if isinstance(m, ToolMessage))
        assert len(got) == len(block) == len(wanted), f"turn {index} not followed by its results"
        assert got == wanted, f"turn {index} answered by {got}, wanted {wanted}"


class LoopModel(BaseChatModel):
    """A chat model that makes the same tool call N times after each user message ("loop N"),
    then answers. It reads the conversation, so one instance serves any number of runs."""

    tool: str = "probe"
    args: dict[str, Any] = Field(default_factory=lambda: {"q": "same"})

    @property
    def _llm_type(self) -> str:
        return "loop-test-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> LoopModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        made, wanted = 0, 0
        for message in reversed(messages):
            if isinstance(message, HumanMessage) and not is_reminder(message):
                words = str(message.content).split()
                wanted = int(words[-1]) if words and words[-1].isdigit() else 0
                break
            made += isinstance(message, AIMessage) and bool(message.tool_calls)
        if made >= wanted:
            reply = AIMessage(f"done after {made} calls")
        else:
            reply = turn(call(self.tool, dict(self.args), f"call_{uuid.uuid4().hex[:12]}"))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def wiring_warnings(recorded: Sequence[warnings.WarningMessage], text: str = "") -> list[str]:
    """The guard's wiring warnings among `recorded` (pytest's `recwarn`), those saying `text`.

    Each must point at this test module's line that ran the graph: the user's code.
    """
    found = [w for w in recorded if issubclass(w.category, RepeatToolReminderWarning)]
    for warning in found:
        assert warning.filename.startswith(os.path.dirname(__file__)), warning.filename
    return [str(w.message) for w in found if text in str(w.message)]


def one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one line a failed command prints on stderr (exit code 2, nothing on stdout), without
    its `error: `."""
    (line,) = _failed(capsys, argv)
    return line


def usage_error(capsys: pytest.CaptureFixture[str], argv: list[str], command: str = "") -> str:
    """The error line of a command line that cannot run, which the usage of `command` follows
    (exit code 2, nothing on stdout), without its `error: `."""
    line, usage = _failed(capsys, argv)
    assert usage == cli._usage(command)  # tests/tooling/test_cli.py says what each is
    return line


def _failed(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    first, *rest = captured.err.splitlines()
    assert first.startswith("error: ")
    return [first.removeprefix("error: "), *rest]


# -- the counter, without LangChain ------------------------------------------------------------


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field's documentation: the string below its declaration, as the reference reads it."""
    source = ast.parse(inspect.getsource(model))
    body = source.body[0].body  # type: ignore[attr-defined]
    return {
        field.target.id: ast.literal_eval(after.value)
        for field, after in itertools.pairwise(body)
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
    }


SHIPPED = ("repeat", "same_error", "recurring_error", "stale", "cycle", "same_output")
"""The detectors the package ships, in the order they take precedence: what a user relies on.
A detector added by the guide (CONTRIBUTING.md) goes into the registry at its place, so a test
holds these to their relative order there, never the registry to exactly these."""

CONFIG = ReminderConfig(thresholds=[2, 4], profile="seed")


def count(
    record: Record,
    turn: str,
    calls: list[Call],
    config: ReminderConfig = CONFIG,
    *,
    reminders_reach_model: bool = True,
    trace: list[CallTrace] | None = None,
) -> Count:
    observe = None if trace is None else trace.append
    return LoopCounter(config).count(
        record,
        Turn(turn, tuple(calls)),
        reminders_reach_model=reminders_reach_model,
        observe=observe,
    )


def play(turns: list[list[Call]], config: ReminderConfig = CONFIG) -> tuple[Record, list[Any]]:
    record: Record = {}
    found: list[Any] = []
    counter = LoopCounter(config)
    for number, calls in enumerate(turns):
        counted = counter.count(record, Turn(f"turn-{number}", tuple(calls)))
        assert counted.record is not None
        record = counted.record
        found += [(r.detector, r.level, r.tool, r.count) for r in counted.reminders]
    return record, found


def c(call_id: str = "", tool: str = "probe", args: Any = None, **outcome: Any) -> Call:
    return Call(call_id, tool, {"q": 1} if args is None else args, **outcome)


_ANSWER = AIMessage("done", id="answer")


def _request(state: dict[str, Any], tools: Sequence[Any]) -> ModelRequest[Any]:
    messages = list(state["messages"])
    return ModelRequest(
        model=scripted([_ANSWER]), messages=messages, tools=list(tools), state=state
    )  # type: ignore[arg-type]


def _added(response: Any) -> tuple[list[BaseMessage], dict[str, Any] | None]:
    update = None
    if isinstance(response, ExtendedModelResponse):
        response, update = response.model_response, response.command.update  # type: ignore[union-attr]
    return [m for m in response.result if m is not _ANSWER], update


def model_call(
    middleware: Any, state: dict[str, Any], *, tools: Sequence[Any] = ()
) -> tuple[list[BaseMessage], dict[str, Any] | None]:
    """One model call of `state` through the middleware, outside a graph.

    What it adds to the conversation before the model's answer, and its state update (None
    when it keeps nothing).
    """
    answered = ModelResponse(result=[_ANSWER])
    return _added(middleware.wrap_model_call(_request(state, tools), lambda _: answered))


async def amodel_call(
    middleware: Any, state: dict[str, Any], *, tools: Sequence[Any] = ()
) -> tuple[list[BaseMessage], dict[str, Any] | None]:
    """`model_call` through the middleware's async hook."""

    async def handler(_: Any) -> ModelResponse[Any]:
        return ModelResponse(result=[_ANSWER])

    return _added(await middleware.awrap_model_call(_request(state, tools), handler))
