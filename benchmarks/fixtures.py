"""What the benchmarks run: a scripted model, a quick tool, the graphs, and no-op stand-ins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

__all__ = [
    "RECURSION_LIMIT",
    "ModelSlot",
    "NoopHandler",
    "ScriptedModel",
    "agent_graph",
    "answered",
    "ask",
    "history",
    "hooks_of",
    "lookup",
    "middleware_agent",
    "noop_middleware",
    "noop_node",
    "script",
    "tool_turn",
]

RECURSION_LIMIT = 100_000


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers with the next scripted message, tools bound or not."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        """The model itself: the script already names the tools."""
        return self


@tool
def lookup(query: str, body: str = "") -> str:
    """Look something up (answers at once, so the guard's share of a step shows)."""
    return "found"


def tool_turn(index: int, args: dict[str, Any] | None = None, name: str = "lookup") -> AIMessage:
    """A model turn making one call (`lookup`'s by default), with ids unique to `index`."""
    call = {
        "name": name,
        "args": {"query": f"q{index}"} if args is None else args,
        "id": f"call-{index}",
        "type": "tool_call",
    }
    return AIMessage(content="", id=f"turn-{index}", tool_calls=[call])


def script(turns: int, args: dict[str, Any] | None = None) -> ScriptedModel:
    """A model that makes `turns` tool-call turns (distinct arguments unless given), then stops.

    Distinct arguments draw no reminders, so runs with and without the guard hold the same
    conversation and differ only by the guard's own work.
    """
    messages = [tool_turn(index, args) for index in range(turns)]
    return ScriptedModel(messages=iter([*messages, AIMessage("done", id="turn-done")]))


def ask() -> dict[str, list[BaseMessage]]:
    """The input of every run: one user message."""
    return {"messages": [HumanMessage("go")]}


def history(size: int) -> list[BaseMessage]:
    """A conversation of exactly `size` messages (`size` even, at least 4).

    A system prompt and a user message, then tool turns answered one by one: an `AIMessage`
    with one call, then its `ToolMessage`. The last two messages are the turn a step counts.
    """
    messages: list[BaseMessage] = [SystemMessage("You look things up."), HumanMessage("go")]
    for index in range((size - 2) // 2):
        messages.extend(answered(tool_turn(index)))
    return messages


def answered(turn: AIMessage) -> list[BaseMessage]:
    """`turn` followed by the result of each of its calls."""
    return [turn, *(ToolMessage("found", tool_call_id=call["id"]) for call in turn.tool_calls)]


class NoopHandler(BaseCallbackHandler):
    """A callback handler that does nothing, with the chat-model hook the guard's handler has.

    Without `on_chat_model_start`, langchain-core would fall back to `on_llm_start` and render
    every prompt as text, a cost the guard's handler does not have.
    """

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        """Do nothing."""


def noop_node(state: MessagesState) -> dict[str, Any]:
    """A graph node that changes nothing."""
    return {}


def _skip(self: AgentMiddleware, state: Any, runtime: Any) -> None:
    """Change nothing."""


async def _askip(self: AgentMiddleware, state: Any, runtime: Any) -> None:
    """Change nothing."""


def _pass(self: AgentMiddleware, request: Any, handler: Callable[[Any], Any]) -> Any:
    """Hand the request on as it is."""
    return handler(request)


async def _apass(self: AgentMiddleware, request: Any, handler: Callable[[Any], Any]) -> Any:
    """Hand the request on as it is."""
    return await handler(request)


_NOOP_HOOKS: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(("before_agent", "before_model", "after_model", "after_agent"), _skip),
    **dict.fromkeys(("abefore_agent", "abefore_model", "aafter_model", "aafter_agent"), _askip),
    "wrap_model_call": _pass,
    "wrap_tool_call": _pass,
    "awrap_model_call": _apass,
    "awrap_tool_call": _apass,
}


def hooks_of(middleware: type[AgentMiddleware]) -> list[str]:
    """The hooks a middleware class overrides, sync and async."""
    return [
        name
        for name in _NOOP_HOOKS
        if getattr(middleware, name) is not getattr(AgentMiddleware, name)
    ]


def noop_middleware(like: type[AgentMiddleware]) -> type[AgentMiddleware]:
    """A middleware class that does nothing, in exactly the hooks that `like` overrides.

    `create_agent` adds a graph node or a wrapper for each hook a middleware has, so the
    stand-in must have the same ones for the comparison to isolate the work done in them.
    """
    hooks = {name: _NOOP_HOOKS[name] for name in hooks_of(like)}
    return type(f"Noop{like.__name__}", (AgentMiddleware,), hooks)


class ModelSlot:
    """Where a compiled graph finds the model of its next run (each run has its own script)."""

    def __init__(self) -> None:
        self.model: ScriptedModel | None = None

    def invoke(self, messages: Sequence[BaseMessage]) -> BaseMessage:
        """Ask the current model."""
        if self.model is None:
            raise RuntimeError("set the model before running the graph")
        return self.model.invoke(messages)


def agent_graph(
    extra: Callable[..., Any] | None, *, checkpointer: Any = None
) -> tuple[Any, ModelSlot]:
    """A custom agent graph: model node → `ToolNode` → `extra` (when given) → model node.

    Returns the compiled graph and the slot to put each run's scripted model in.
    """
    slot = ModelSlot()

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [slot.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    if extra is None:
        builder.add_edge("tools", "agent")
    else:
        builder.add_node("repeat_reminder", extra)
        builder.add_edge("tools", "repeat_reminder")
        builder.add_edge("repeat_reminder", "agent")
    return builder.compile(checkpointer=checkpointer), slot


def middleware_agent(
    model: ScriptedModel, middleware: Sequence[AgentMiddleware], **kwargs: Any
) -> Any:
    """A `create_agent` agent with the `lookup` tool and `middleware`."""
    return create_agent(model, tools=[lookup], middleware=list(middleware), **kwargs)
