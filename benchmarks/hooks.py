"""Per turn, hook by hook: what each guard adds to an agent, beside LangChain's own limits.

Each guard's `create_agent` hooks are called directly, in the order `create_agent` calls
them — `before_model`, `wrap_model_call`, `after_model`, `wrap_tool_call` — on a conversation
of `SHORT` and of `LONG` messages whose last turn is new (a new call every turn, as in a long
run that does not loop). The states each hook sees are recorded once, by playing the turns
with the guard (so each hook meets the state its previous hooks left); then each hook is
timed alone over its recorded inputs, `TURNS` calls a batch, against the same calls of a bare
agent (nothing for `before_model`/`after_model`, the handler itself for the wrappers).

The handler with its node and the state-kept node are timed the same way: per turn, every
callback a graph run fires and the node's call, against a no-op handler and a no-op node.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
)
from langchain.agents.middleware.types import ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from repeat_reminder_langchain import (
    Reminder,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)
from repeat_reminder_langchain.messages import reminder_message

from .fixtures import NoopHandler, ScriptedModel, history, lookup, tool_turn
from .measure import Row, interleaved

__all__ = ["run"]

SHORT, LONG = 20, 2_000
TURNS = 1_000
HOOKS = ("before_model", "wrap_model_call", "after_model", "wrap_tool_call")
EVERY_DETECTOR: dict[str, Any] = {
    "detect": ["repeat", "stale", "same_error"],
    "error_pattern": "^Error",
}
TARGETS = {"guard": 4.0, "guard, progress=result": 4.0, "guard, every detector": 6.0}
FLAT = 1.05
NODE_TARGET = 4.0

GUARDS: dict[str, Callable[[], AgentMiddleware[Any, Any, Any]]] = {
    "ToolCallLimitMiddleware": lambda: ToolCallLimitMiddleware(thread_limit=10**9),
    "ModelCallLimitMiddleware": lambda: ModelCallLimitMiddleware(thread_limit=10**9),
    "guard": RepeatToolReminderMiddleware,
    "guard, progress=result": lambda: RepeatToolReminderMiddleware(progress="result"),
    "guard, every detector": lambda: RepeatToolReminderMiddleware(**EVERY_DETECTOR),
}


def _hooks(middleware: AgentMiddleware[Any, Any, Any]) -> list[str]:
    return [
        hook
        for hook in HOOKS
        if getattr(type(middleware), hook) is not getattr(AgentMiddleware, hook)
    ]


@dataclass
class Recorded:
    """The inputs each hook of one guard received, turn by turn."""

    middleware: AgentMiddleware[Any, Any, Any]
    calls: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)


def _turns(size: int, stored: bool) -> list[list[BaseMessage]]:
    """`TURNS` conversations of `size` messages, each ending with a new answered turn.

    With `stored`, the history holds reminders the guard stored earlier, as it stores them.
    """
    base = history(size)[:-2]
    if stored:
        for index in (4, 8, 12):
            base[index] = reminder_message(Reminder("lookup", 3, "gentle", "{}"), "human")
    turns = []
    for index in range(TURNS):
        turn = tool_turn(1_000_000 + index)
        result = ToolMessage("found", tool_call_id=turn.tool_calls[0]["id"], id=f"r{index}")
        turns.append([*base, turn, result])
    return turns


def _record(middleware: AgentMiddleware[Any, Any, Any], size: int, stored: bool) -> Recorded:
    """Play `TURNS` turns through the guard's hooks, keeping what each hook was given."""
    model = ScriptedModel(messages=iter(()))
    hooks = _hooks(middleware)
    recorded = Recorded(middleware, {hook: [] for hook in hooks})
    fields: dict[str, Any] = {}

    def keep(update: dict[str, Any] | None) -> None:
        for key, value in (update or {}).items():
            if key not in ("messages", "jump_to"):
                fields[key] = value

    for index, messages in enumerate(_turns(size, stored)):
        state = {"messages": messages, **fields}
        if "before_model" in hooks:
            recorded.calls["before_model"].append((state, None))
            keep(middleware.before_model(state, None))  # type: ignore[arg-type]
            state = {"messages": messages, **fields}
        answer = tool_turn(2_000_000 + index)
        response = ModelResponse(result=[answer])
        if "wrap_model_call" in hooks:
            request = ModelRequest(
                model=model,
                messages=messages,
                system_message=None,
                tools=[lookup],
                tool_choice=None,
                response_format=None,
                state=state,  # type: ignore[arg-type]
                runtime=None,  # type: ignore[arg-type]
            )
            recorded.calls["wrap_model_call"].append((request, _answer(response)))
            result = middleware.wrap_model_call(request, _answer(response))
            keep(getattr(getattr(result, "command", None), "update", None))
        after = {"messages": [*messages[-3:], answer], **fields}  # the tail is all they read
        if "after_model" in hooks:
            recorded.calls["after_model"].append((after, None))
            keep(middleware.after_model(after, None))  # type: ignore[arg-type]
        if "wrap_tool_call" in hooks:
            call = answer.tool_calls[0]
            request = ToolCallRequest(tool_call=call, tool=lookup, state=after, runtime=None)  # type: ignore[arg-type]
            result = ToolMessage("found", tool_call_id=call["id"])
            recorded.calls["wrap_tool_call"].append((request, _answer(result)))
            middleware.wrap_tool_call(request, _answer(result))
    return recorded


def _answer(value: Any) -> Callable[[Any], Any]:
    def handler(request: Any) -> Any:
        return value

    return handler


def _nothing(*args: Any) -> None:
    return None


def _noop_node(state: Any, config: Any) -> dict[str, Any]:
    return {}


def _calls(function: Callable[..., Any], inputs: Sequence[tuple[Any, ...]]) -> float:
    start = time.process_time()
    for arguments in inputs:
        function(*arguments)
    return time.process_time() - start


def _timed(
    make: Callable[[], AgentMiddleware[Any, Any, Any]], size: int, stored: bool, hook: str
) -> Callable[[], float]:
    """Seconds for one hook of a fresh guard over the turns it was just played through.

    Recorded afresh each time: a guard remembers what it parsed by the identity of what it
    wrote, as in a real run, where each turn reads what the turn before wrote.
    """

    def case() -> float:
        record = _record(make(), size, stored)
        return _calls(getattr(record.middleware, hook), record.calls[hook])

    return case


def _timed_bare(
    hook: str | Callable[..., Any], inputs: Sequence[tuple[Any, ...]]
) -> Callable[[], float]:
    """Seconds for a function (or the bare agent's side of `hook`) over recorded inputs."""
    function = _bare(hook) if isinstance(hook, str) else hook
    return lambda: _calls(function, inputs)


def _bare(hook: str) -> Callable[..., Any]:
    if hook in ("wrap_model_call", "wrap_tool_call"):
        return lambda request, handler: handler(request)
    return _nothing


def _guard_rows(rounds: int) -> list[Row]:
    rows: list[Row] = []
    costs: dict[tuple[str, int, str], float] = {}
    for stored in (False, True):
        for size in (SHORT, LONG):
            makers = {name: make for name, make in GUARDS.items() if not stored or name == "guard"}
            recorded = {name: _record(make(), size, stored) for name, make in makers.items()}
            cases: dict[str, Callable[[], float]] = {}
            for name, record in recorded.items():
                for hook, inputs in record.calls.items():
                    cases[f"{name}|{hook}"] = _timed(makers[name], size, stored, hook)
                    cases[f"bare|{name}|{hook}"] = _timed_bare(hook, inputs)
            samples = interleaved(cases, rounds)
            for name, record in recorded.items():
                for hook in record.calls:
                    added = [
                        (guard - bare) / TURNS * 1e6
                        for guard, bare in zip(
                            samples.seconds[f"{name}|{hook}"],
                            samples.seconds[f"bare|{name}|{hook}"],
                            strict=True,
                        )
                    ]
                    costs[(name, size, hook + (" (stored reminders)" if stored else ""))] = _median(
                        added
                    )
                    rows.append(_us_row(name, hook, size, added, stored))
    for name in GUARDS:
        for size in (SHORT, LONG):
            total = sum(
                cost
                for (guard, length, hook), cost in costs.items()
                if guard == name and length == size and "(" not in hook
            )
            rows.append(
                Row(
                    f"hooks.{_key(name)}.total.{size}",
                    f"{name}: all hooks per turn over a bare agent, {size:,} msgs",
                    total,
                    "us",
                    TARGETS.get(name),
                )
            )
    for (name, size, hook), value in sorted(costs.items()):
        if name != "guard" or size != LONG:
            continue
        short = costs[(name, SHORT, hook)]
        rows.append(
            Row(
                f"hooks.{_key(name)}.{_key(hook)}.flat",
                f"{name}: {hook}, {LONG:,} / {SHORT} msgs",
                value / short if short > 0 else 1.0,
                "ratio",
                FLAT,
            )
        )
    return rows


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _us_row(name: str, hook: str, size: int, added: list[float], stored: bool) -> Row:
    suffix = ", reminders stored" if stored else ""
    label = f"{name}: {hook}, {size:,} msgs{suffix} (min {min(added):.2f}, max {max(added):.2f})"
    key = f"hooks.{_key(name)}.{hook}.{size}" + (".stored" if stored else "")
    return Row(key, label, _median(added), "us")


def _key(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()


# -- the handler with its node, and the state-kept node ---------------------------------------


def _graph_turns(size: int) -> list[list[BaseMessage]]:
    return _turns(size, stored=False)


def _handler_turn(handler: BaseCallbackHandler, node: Callable[..., Any]) -> Callable[..., Any]:
    """One turn of a custom graph as the handler meets it: every callback, then the node."""
    root = uuid.uuid4()
    handler.on_chain_start(None, {}, run_id=root, parent_run_id=None, metadata={})
    answer = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "x"}])
    response = LLMResult(generations=[[ChatGeneration(message=answer)]])

    def turn(messages: list[BaseMessage]) -> None:
        agent, model, tools, tool, after = (uuid.uuid4() for _ in range(5))
        meta = {"langgraph_checkpoint_ns": f"agent:{agent}"}
        handler.on_chain_start(None, {}, run_id=agent, parent_run_id=root, metadata=meta)
        handler.on_chat_model_start(
            {}, [messages], run_id=model, parent_run_id=agent, metadata=meta
        )
        handler.on_llm_end(response, run_id=model)
        handler.on_chain_end({}, run_id=agent)
        meta = {"langgraph_checkpoint_ns": f"tools:{tools}"}
        handler.on_chain_start(None, {}, run_id=tools, parent_run_id=root, metadata=meta)
        handler.on_tool_start(
            {"name": "lookup"}, "", run_id=tool, parent_run_id=tools, metadata=meta,
            tool_call_id="x",
        )  # fmt: skip
        handler.on_tool_end("found", run_id=tool)
        handler.on_chain_end({}, run_id=tools)
        meta = {"langgraph_checkpoint_ns": f"repeat_reminder:{after}"}
        handler.on_chain_start(None, {}, run_id=after, parent_run_id=root, metadata=meta)
        config = {"callbacks": CallbackManager([handler], parent_run_id=after), "metadata": meta}
        node({"messages": messages}, config)
        handler.on_chain_end({}, run_id=after)

    return turn


def _state_turn(node: Callable[..., Any]) -> Callable[..., Any]:
    """One turn of the state-kept node, its field carried over as graph state carries it."""
    kept: dict[str, Any] = {}

    def turn(messages: list[BaseMessage]) -> None:
        update = node({"messages": messages, **kept}, {})
        if update and "repeat_tool_reminder" in update:
            kept["repeat_tool_reminder"] = update["repeat_tool_reminder"]

    return turn


def _node_rows(rounds: int) -> list[Row]:
    rows: list[Row] = []
    per_turn: dict[tuple[str, int], float] = {}
    for size in (SHORT, LONG):
        turns = _graph_turns(size)
        handler = RepeatToolReminderCallbackHandler()
        makers = {
            "handler + node": lambda h=handler: _handler_turn(h, RepeatToolReminderNode(h)),
            "no-op handler + no-op node": lambda: _handler_turn(NoopHandler(), _noop_node),
            "state-kept node": lambda: _state_turn(RepeatToolReminderNode()),
            "no-op node": lambda: _state_turn(_noop_node),
        }
        inputs = [(messages,) for messages in turns]
        cases = {name: _timed_bare(make(), inputs) for name, make in makers.items()}
        samples = interleaved(cases, rounds)
        for name, baseline in (
            ("handler + node", "no-op handler + no-op node"),
            ("state-kept node", "no-op node"),
        ):
            pairs = zip(samples.seconds[name], samples.seconds[baseline], strict=True)
            added = [(guard - bare) / TURNS * 1e6 for guard, bare in pairs]
            label = f"{name}: per turn over {baseline}, {size:,} msgs"
            label += f" (min {min(added):.2f}, max {max(added):.2f})"
            per_turn[(name, size)] = _median(added)
            rows.append(Row(f"hooks.{_key(name)}.{size}", label, _median(added), "us", NODE_TARGET))
    for name in ("handler + node", "state-kept node"):
        short, long = per_turn[(name, SHORT)], per_turn[(name, LONG)]
        label = f"{name}: per turn, {LONG:,} / {SHORT} msgs"
        rows.append(Row(f"hooks.{_key(name)}.flat", label, long / short, "ratio", FLAT))
    return rows


def run(rounds: int) -> list[Row]:
    """The per-hook table, the totals and the flatness ratios; the nodes' per-turn costs."""
    return [*_guard_rows(rounds), *_node_rows(rounds)]
