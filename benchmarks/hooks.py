"""Per turn, hook by hook: what each guard adds to an agent, beside LangChain's own limits.

Each guard's `create_agent` hooks are called directly, in the order `create_agent` calls
them — `before_model`, `wrap_model_call`, `after_model`, `wrap_tool_call` — on a conversation
of `SHORT` and of `LONG` messages whose last turn is new (a new call every turn, as in a long
run that does not loop), `TURNS` turns a batch. Each hook is timed call by call while the
turns are played through a fresh guard, so that each hook meets the state its previous hooks
left and each turn reads what the turn before wrote, as in a real run; the bare agent's side
(nothing for `before_model`/`after_model`, the handler itself for the wrappers) is timed the
same way over the same inputs. Both sizes of a guard are measured in the same rounds, so that
their ratio is taken round by round. The targets are multiples of what the single pass
(`single_pass.py`) adds in the same run: the default guard's rules for a quiet turn in one
function. Beside it runs the floor (`floor.py`): the least a guard that compares arguments and
keeps its count in the checkpoint does per turn, with no rule.

The handler with its node and the state-kept node are timed per turn, every callback a graph
run fires and the node's call, against a no-op handler and a no-op node.

Where a turn of the middleware goes (`_part_rows`): the turns are played again with the
functions that do each part of a turn timed call by call (`PARTS`), each part's own time.
"""

from __future__ import annotations

import gc
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from able_harness_kit import LoopGuardMiddleware, ProgressAwareLoopGuardMiddleware
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
)
from langchain.agents.middleware.types import ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_tool_recover import ToolRecoverMiddleware

from repeat_reminder_langchain import (
    Reminder,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    _counter,
    _guard,
    _middleware,
)
from repeat_reminder_langchain._arguments import ToolSchemas
from repeat_reminder_langchain._conversation import SOURCE
from repeat_reminder_langchain._counter import LoopCounter
from repeat_reminder_langchain._guard import Guard, StateStore
from repeat_reminder_langchain._messages import reminder_message
from repeat_reminder_langchain._stats import Stats

from .fixtures import NoopHandler, ScriptedModel, history, lookup, tool_turn
from .floor import FloorMiddleware
from .measure import Row, Samples, interleaved
from .single_pass import SinglePassMiddleware

__all__ = ["run"]

SHORT, LONG = 20, 2_000
WATCHED = "turn-watched"  # the turn a running agent's record counted last
TOOLS = [lookup]  # one list for every model call, as create_agent passes its tools
TURNS = 1_000
HOOKS = ("before_model", "wrap_model_call", "after_model", "wrap_tool_call")
EVERY_DETECTOR: dict[str, Any] = {
    "detect": ["repeat", "stale", "same_error"],
    "error_pattern": "^Error",
}
# The guard's hook that counts a turn (and delivers what it draws), in the model call.
COUNTING = "wrap_model_call"
# The default guard's rules for a turn that draws nothing, in one function (single_pass.py,
# a `before_model`): the guard's counting hook over it is what the guard's layers cost.
LAYERED = "single pass"
# What each guard may add per turn, as a multiple of what the single pass adds in the same run,
# so that the targets mean the same on any machine and bound what the guard's layers and hooks
# add to the contract's own work. Until 0.5.0 they were multiples of the floor (floor.py): the
# least a guard that keys a call and keeps its count in the checkpoint does, without a rule;
# the contract's rules alone cost 2.6 to 3 times it, more than any target set on it allowed.
REFERENCE = LAYERED
TARGETS = {"guard": 1.5, "guard, every detector": 3.0}
FLAT = 1.05
# A request to a model that takes no system message, in a thread with reminders stored as
# system messages, is searched for them (the record notes no positions: it would grow with the
# thread): each message more may cost the search this much, a scan in C (one in Python costs
# some 0.1 µs a message; the model's client spends some 2.7 µs a message on the same request).
SEARCHED = "wrap_model_call (stored reminders)"
SEARCH = 0.05
NODE_TARGET = 2.0
# The loop guards a user would otherwise install, measured beside ours (the `bench` extra),
# set so that they never block: the default guard is to cost no more than the cheapest.
PEERS = ("LoopGuardMiddleware", "ProgressAwareLoopGuardMiddleware", "ToolRecoverMiddleware")

GUARDS: dict[str, Callable[[], AgentMiddleware[Any, Any, Any]]] = {
    "ToolCallLimitMiddleware": lambda: ToolCallLimitMiddleware(thread_limit=10**9),
    "ModelCallLimitMiddleware": lambda: ModelCallLimitMiddleware(thread_limit=10**9),
    "floor": FloorMiddleware,  # see floor.py: a reference, not a guard
    "single pass": SinglePassMiddleware,  # see single_pass.py: a reference, not a guard
    "LoopGuardMiddleware": lambda: LoopGuardMiddleware(warn_at=10**9, stop_at=10**9 + 1),
    "ProgressAwareLoopGuardMiddleware": lambda: ProgressAwareLoopGuardMiddleware(stop_at=10**9),
    "ToolRecoverMiddleware": lambda: ToolRecoverMiddleware(
        max_duplicate_calls=10**9, max_attempts=10**9, enable_logging=False
    ),
    "guard": RepeatToolReminderMiddleware,
    # 0.4.0's defaults (the repeat rule alone, advice only): what the defaults add to it.
    "guard, seed": lambda: RepeatToolReminderMiddleware(profile="seed"),
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


_STORED_AT = (4, 8, 12)  # where the history holds reminders the guard stored earlier


def _turns(size: int, stored: bool) -> list[list[BaseMessage]]:
    """`TURNS` conversations of `size` messages, each ending with a new answered turn.

    With `stored`, the history holds reminders the guard stored earlier, as it stores them
    (system messages, the default form; the record notes where: `_stored_record`).
    """
    base = history(size)[:-2]
    if stored:
        for index in _STORED_AT:
            base[index] = reminder_message(Reminder("lookup", 3, "gentle", "{}"), "system")
    turns = []
    for index in range(TURNS):
        turn = tool_turn(1_000_000 + index)
        result = ToolMessage("found", tool_call_id=turn.tool_calls[0]["id"], id=f"r{index}")
        turns.append([*base, turn, result])
    return turns


def _record(
    middleware: AgentMiddleware[Any, Any, Any], size: int, stored: bool, timed: str = ""
) -> tuple[Recorded, float]:
    """Play `TURNS` turns through the guard's hooks, keeping what each hook was given.

    Also returns the CPU seconds spent in the hook `timed`, call by call.
    """
    model = ScriptedModel(messages=iter(()))  # it takes no system message mid-conversation
    hooks = _hooks(middleware)
    recorded = Recorded(middleware, {hook: [] for hook in hooks})
    turns = _turns(size, stored)
    fields: dict[str, Any] = {}
    if isinstance(middleware, RepeatToolReminderMiddleware):
        # A running agent's record: the guard watched the turns before (a conversation it
        # meets for the first time is counted once, from its history: `scaling`'s row).
        record: dict[str, Any] = {"turn": WATCHED}
        if stored:  # the guard's record of the earlier turns, which stored the reminders
            record["system"] = True
        fields[SOURCE] = {middleware.name: record}
    clock = time.perf_counter
    spent = 0.0

    def run(hook: str, *arguments: Any) -> Any:
        nonlocal spent
        recorded.calls[hook].append(arguments)
        if hook != timed:
            return getattr(middleware, hook)(*arguments)
        start = clock()
        result = getattr(middleware, hook)(*arguments)
        spent += clock() - start
        return result

    def keep(update: dict[str, Any] | None) -> None:
        for key, value in (update or {}).items():
            if key not in ("messages", "jump_to"):
                fields[key] = value

    gc.freeze()  # what the play holds is not the agent's heap (`_each`)
    try:
        for index, messages in enumerate(turns):
            state = {"messages": messages, **fields}
            if "before_model" in hooks:
                keep(run("before_model", state, None))
                state = {"messages": messages, **fields}
            # The model's answer is the turn the next conversation ends with, as in a run: the
            # turn a hook counts is the one the model's call before it made.
            answer = turns[index + 1][-2] if index + 1 < len(turns) else tool_turn(2_000_000)
            response = ModelResponse(result=[answer])
            if "wrap_model_call" in hooks:
                request = ModelRequest(
                    model=model,
                    messages=messages,
                    system_message=None,
                    tools=TOOLS,
                    tool_choice=None,
                    response_format=None,
                    state=state,  # type: ignore[arg-type]
                    runtime=None,  # type: ignore[arg-type]
                )
                result = run("wrap_model_call", request, _answer(response))
                keep(getattr(getattr(result, "command", None), "update", None))
            after = {"messages": [*messages[-3:], answer], **fields}  # the tail is all they read
            if "after_model" in hooks:
                keep(run("after_model", after, None))
            if "wrap_tool_call" in hooks:
                call = answer.tool_calls[0]
                request = ToolCallRequest(tool_call=call, tool=lookup, state=after, runtime=None)  # type: ignore[arg-type]
                result = ToolMessage("found", tool_call_id=call["id"])
                run("wrap_tool_call", request, _answer(result))
    finally:
        gc.unfreeze()
    return recorded, spent


def _answer(value: Any) -> Callable[[Any], Any]:
    def handler(request: Any) -> Any:
        return value

    return handler


def _nothing(*args: Any) -> None:
    return None


def _noop_node(state: Any, config: Any) -> dict[str, Any]:
    return {}


def _calls(function: Callable[..., Any], inputs: Sequence[tuple[Any, ...]]) -> float:
    """CPU seconds for `function` over `inputs`, with what they hold frozen (`_each`)."""
    gc.freeze()
    try:
        start = time.process_time()
        for arguments in inputs:
            function(*arguments)
        return time.process_time() - start
    finally:
        gc.unfreeze()


def _each(function: Callable[..., Any], inputs: Sequence[tuple[Any, ...]]) -> float:
    """`_calls`, timed call by call as `_record` times a hook (so both pay for the clock).

    Every play is timed with what it was given frozen (`gc.freeze`): the garbage collector's
    full collections then pass over what the play makes, not over the bench's thousand
    conversations of 2,000 messages, which an agent never holds at once. Unfrozen, each
    full collection walks them, and a hook that makes a few objects a turn pays for it in
    proportion to the conversations' length: what measured as a hook not flat (1.32 for
    `before_model`, and 2.0 for LoopGuard's `wrap_tool_call`) was that walk.
    """
    clock = time.perf_counter
    spent = 0.0
    gc.freeze()
    try:
        for arguments in inputs:
            start = clock()
            function(*arguments)
            spent += clock() - start
    finally:
        gc.unfreeze()
    return spent


def _timed(
    make: Callable[[], AgentMiddleware[Any, Any, Any]], size: int, stored: bool, hook: str
) -> Callable[[], float]:
    """Seconds for one hook of a fresh guard, timed while the turns are played through it.

    Timed in play, not replayed: each turn reads what the turn before wrote, as in a real
    run (a guard remembers what it parsed by the identity of what it wrote).
    """
    return lambda: _record(make(), size, stored, timed=hook)[1]


def _timed_bare(
    hook: str | Callable[..., Any], inputs: Sequence[tuple[Any, ...]]
) -> Callable[[], float]:
    """Seconds for a function over recorded inputs; for `hook`, the bare agent's side of it.

    The bare side of a hook is timed call by call, as the guard's hook is.
    """
    if isinstance(hook, str):
        return lambda: _each(_bare(hook), inputs)
    return lambda: _calls(hook, inputs)


def _bare(hook: str) -> Callable[..., Any]:
    if hook in ("wrap_model_call", "wrap_tool_call"):
        return lambda request, handler: handler(request)
    return _nothing


def _added(samples: Samples, case: str, baseline: str) -> list[float]:
    """Microseconds per turn that `case` took over `baseline`, round by round."""
    pairs = zip(samples.seconds[case], samples.seconds[baseline], strict=True)
    return [(guard - bare) / TURNS * 1e6 for guard, bare in pairs]


def _guard_rows(rounds: int) -> list[Row]:
    rows: list[Row] = []
    added: dict[tuple[str, int, str], list[float]] = {}  # (guard, size, hook): per round
    for stored in (False, True):
        # Both sizes in one rotation, so each round's long and short figures are measured
        # side by side, and their ratio is not the machine's drift between two runs.
        makers = {name: make for name, make in GUARDS.items() if not stored or name == "guard"}
        cases: dict[str, Callable[[], float]] = {}
        for size in (SHORT, LONG):
            for name, make in makers.items():
                for hook, inputs in _record(make(), size, stored)[0].calls.items():
                    cases[f"{name}|{hook}|{size}"] = _timed(make, size, stored, hook)
                    cases[f"bare|{name}|{hook}|{size}"] = _timed_bare(hook, inputs)
        samples = interleaved(cases, rounds)
        for case in cases:
            if case.startswith("bare|"):
                continue
            name, hook, size = case.split("|")
            label = hook + (" (stored reminders)" if stored else "")
            added[(name, int(size), label)] = _added(samples, case, f"bare|{case}")
            rows.append(_us_row(name, hook, int(size), added[(name, int(size), label)], stored))
    # All hooks of a turn, round by round; the targets are multiples of the reference measured
    # beside them, so that they hold on any machine.
    totals: dict[tuple[str, int], float] = {}
    for name in GUARDS:
        for size in (SHORT, LONG):
            hooks = [
                v for (g, n, h), v in added.items() if g == name and n == size and "(" not in h
            ]
            totals[(name, size)] = _median([sum(turn) for turn in zip(*hooks, strict=True)])
    for name in GUARDS:
        for size in (SHORT, LONG):
            factor = TARGETS.get(name)
            unit = totals[(REFERENCE, size)]
            rows.append(
                Row(
                    f"hooks.{_key(name)}.total.{size}",
                    f"{name}: all hooks per turn over a bare agent, {size:,} msgs"
                    + (f" (target {factor}× {REFERENCE}'s)" if factor else ""),
                    totals[(name, size)],
                    "us",
                    None if factor is None else factor * unit,
                )
            )
    rows += _peer_rows(totals)
    rows += _layering_rows(added)
    rows += _size_rows(added)
    return rows


def _size_rows(added: dict[tuple[str, int, str], list[float]]) -> list[Row]:
    """Each hook of the default guard from `SHORT` to `LONG` messages: flat, or a µs a message."""
    rows: list[Row] = []
    for (name, size, hook), long in sorted(added.items()):
        if name != "guard" or size != LONG:
            continue
        if hook == SEARCHED:
            # Searched, not flat: what each message more costs the search (run in C).
            more = [
                (b - a) / (LONG - SHORT)
                for a, b in zip(added[(name, SHORT, hook)], long, strict=True)
            ]
            rows.append(
                Row(
                    f"hooks.{_key(name)}.{_key(hook)}.per_message",
                    f"{name}: {hook}, each message more ({SHORT} to {LONG:,})",
                    _median(more),
                    "us/message",
                    SEARCH,
                    _spread(more),
                )
            )
            continue
        ratios = [b / a for a, b in zip(added[(name, SHORT, hook)], long, strict=True) if a > 0]
        rows.append(
            Row(
                f"hooks.{_key(name)}.{_key(hook)}.flat",
                f"{name}: {hook}, {LONG:,} / {SHORT} msgs",
                _median(ratios) if ratios else 1.0,
                "ratio",
                FLAT,
                _spread(ratios),
            )
        )
    return rows


def _peer_rows(totals: dict[tuple[str, int], float]) -> list[Row]:
    """The default guard's cost per turn over the cheapest of the peers, at each size."""
    rows = []
    for size in (SHORT, LONG):
        cheapest = min(PEERS, key=lambda peer: totals[(peer, size)])
        rows.append(
            Row(
                f"hooks.guard.over_cheapest_peer.{size}",
                f"guard / the cheapest peer ({cheapest}): all hooks per turn, {size:,} msgs",
                totals[("guard", size)] / totals[(cheapest, size)],
                "ratio",
                1.0,
            )
        )
    return rows


def _layering_rows(added: dict[tuple[str, int, str], list[float]]) -> list[Row]:
    """The default guard's counting hook over the single pass's, round by round: its layers."""
    rows = []
    for size in (SHORT, LONG):
        guard, single = (
            added[("guard", size, COUNTING)],
            added[(LAYERED, size, "before_model")],
        )
        ratios = [g / s for g, s in zip(guard, single, strict=True) if s > 0]
        rows.append(
            Row(
                f"hooks.guard.{COUNTING}.over_single_pass.{size}",
                f"guard's {COUNTING} / {LAYERED}'s before_model, {size:,} msgs (the guard's "
                "layers)",
                _median(ratios),
                "ratio",
                None,
                _spread(ratios),
            )
        )
    return rows


def _spread(ratios: list[float]) -> float:
    """Half the interquartile range of per-round ratios (as `Samples.spread`)."""
    if len(ratios) < 2:
        return 0.0
    low, _, high = statistics.quantiles(ratios, n=4)
    return (high - low) / 2


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


def _handler_turn(
    handler: BaseCallbackHandler, node: Callable[..., Any], watched: list[BaseMessage]
) -> Callable[..., Any]:
    """One turn of a custom graph as the handler meets it: every callback, then the node.

    The turn of `watched` is played first, untimed: a running agent's handler keeps a record.
    """
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

    turn(watched)
    return turn


def _state_turn(node: Callable[..., Any]) -> Callable[..., Any]:
    """One turn of the state-kept node, its field carried over as graph state carries it.

    The field starts as a running agent's does: the guard watched the turns before.
    """
    kept: dict[str, Any] = {"repeat_tool_reminder": {"turn": WATCHED}}

    def turn(messages: list[BaseMessage]) -> None:
        update = node({"messages": messages, **kept}, {})
        if update and "repeat_tool_reminder" in update:
            kept["repeat_tool_reminder"] = update["repeat_tool_reminder"]

    return turn


def _node_rows(rounds: int, unit: dict[int, float]) -> list[Row]:
    """The nodes' rows; `unit` is the reference's cost per turn (`REFERENCE`), by size."""
    rows: list[Row] = []
    cases: dict[str, Callable[[], float]] = {}
    for size in (SHORT, LONG):
        inputs = [(messages,) for messages in _graph_turns(size)]
        handler = RepeatToolReminderCallbackHandler()
        watched = inputs[0][0][:-2]  # the conversation up to the first timed turn
        makers = {
            "handler + node": lambda h=handler, w=watched: _handler_turn(
                h, RepeatToolReminderNode(h), w
            ),
            "no-op handler + no-op node": lambda w=watched: _handler_turn(
                NoopHandler(), _noop_node, w
            ),
            "state-kept node": lambda: _state_turn(RepeatToolReminderNode()),
            "no-op node": lambda: _state_turn(_noop_node),
        }
        for name, make in makers.items():
            cases[f"{name}|{size}"] = _timed_bare(make(), inputs)
    samples = interleaved(cases, rounds)
    for name, baseline in (
        ("handler + node", "no-op handler + no-op node"),
        ("state-kept node", "no-op node"),
    ):
        per_size = {
            size: _added(samples, f"{name}|{size}", f"{baseline}|{size}") for size in (SHORT, LONG)
        }
        for size, added in per_size.items():
            label = f"{name}: per turn over {baseline}, {size:,} msgs"
            label += f" (min {min(added):.2f}, max {max(added):.2f};"
            label += f" target {NODE_TARGET}× {REFERENCE}'s)"
            target = NODE_TARGET * unit[size]
            rows.append(Row(f"hooks.{_key(name)}.{size}", label, _median(added), "us", target))
        ratios = [b / a for a, b in zip(per_size[SHORT], per_size[LONG], strict=True) if a > 0]
        label = f"{name}: per turn, {LONG:,} / {SHORT} msgs"
        rows.append(
            Row(f"hooks.{_key(name)}.flat", label, _median(ratios), "ratio", FLAT, _spread(ratios))
        )
    return rows


# -- where a turn of the middleware goes ------------------------------------------------------

# Each part of a turn, by the functions that do it. A part's own time leaves out the parts it
# calls (`Guard.step` leaves out reading the turn, counting it, ...), but a part marked whole
# keeps what it calls: the digest of a result is the result's, not the key's.
PARTS: tuple[tuple[str, object, str, bool], ...] = (
    ("the hooks themselves", RepeatToolReminderMiddleware, "wrap_model_call", False),
    ("the step", Guard, "step", False),
    ("reading the record", StateStore, "read", True),
    ("reading the turn", _guard, "read_turn", True),
    ("the schema", ToolSchemas, "read", True),
    ("counting", LoopCounter, "count", False),
    ("the key", _counter, "canonicalize", True),
    ("the key", _counter, "digest", True),
    ("the result", _counter, "_read", True),
    ("the detectors", LoopCounter, "_detect", True),
    ("the detectors", LoopCounter, "_reminder", True),
    ("the detectors", LoopCounter, "_escalation", True),
    ("the detectors' memories", LoopCounter, "_start", True),
    ("the detectors' memories", _counter, "_keep", True),
    ("the state update", StateStore, "write", True),
    ("the state update", RepeatToolReminderMiddleware, "_kept", True),
    ("the stats", Stats, "add", True),
    ("the report", _middleware, "report", True),
)
BROKEN_DOWN = ("guard", "guard, seed")


def _parts(make: Callable[[], AgentMiddleware[Any, Any, Any]], size: int) -> dict[str, float]:
    """Seconds of each part of `TURNS` turns, played with its functions timed call by call."""
    spent = dict.fromkeys((part for part, _, _, _ in PARTS), 0.0)
    open_parts: list[list[Any]] = []  # [part, start, seconds of the parts it called, whole]
    clock = time.perf_counter

    def timed(part: str, function: Callable[..., Any], whole: bool) -> Callable[..., Any]:
        def call(*arguments: Any, **keywords: Any) -> Any:
            if open_parts and open_parts[-1][3]:
                return function(*arguments, **keywords)  # within a part kept whole
            frame: list[Any] = [part, clock(), 0.0, whole]
            open_parts.append(frame)
            try:
                return function(*arguments, **keywords)
            finally:
                took = clock() - frame[1]
                open_parts.pop()
                spent[part] += took - frame[2]
                if open_parts:
                    open_parts[-1][2] += took

        return call

    kept = [(owner, name, vars(owner)[name]) for _, owner, name, _ in PARTS]
    try:
        for (part, owner, name, whole), (_, _, function) in zip(PARTS, kept, strict=True):
            plain = function.__func__ if isinstance(function, staticmethod) else function
            wrapped = timed(part, plain, whole)
            setattr(owner, name, staticmethod(wrapped) if plain is not function else wrapped)
        _record(make(), size, stored=False)
    finally:
        for owner, name, function in kept:
            setattr(owner, name, function)
    return spent


def _part_rows(rounds: int) -> list[Row]:
    """Each part of a turn of the middleware, in µs: its own time, timed call by call.

    Timing a call adds to it (some 0.2 µs each, most of it to the part that makes the call):
    the parts add up to more than the turn measured without it (the totals above).
    """
    rows: list[Row] = []
    names = list(dict.fromkeys(part for part, _, _, _ in PARTS))
    for name in BROKEN_DOWN:
        for size in (SHORT, LONG):
            plays = []
            for _ in range(rounds):
                gc.collect()  # as `interleaved` does: no play pays for the garbage of another
                plays.append(_parts(GUARDS[name], size))
            for part in names:
                # The least of the plays: a part of a few µs is small beside a busy machine's
                # noise, which only ever adds.
                value = min(play[part] for play in plays) / TURNS * 1e6
                rows.append(
                    Row(
                        f"hooks.{_key(name)}.part.{_key(part)}.{size}",
                        f"{name}, a turn of {size:,} msgs (least of {rounds}): {part}",
                        value,
                        "us",
                    )
                )
    return rows


def run(rounds: int) -> list[Row]:
    """The per-hook table, the totals and the flatness ratios; the nodes' per-turn costs."""
    rows = _guard_rows(rounds)
    reference = _key(REFERENCE)
    unit = {
        size: next(r.value for r in rows if r.key == f"hooks.{reference}.total.{size}")
        for size in (SHORT, LONG)
    }
    return [*rows, *_part_rows(rounds), *_node_rows(rounds, unit)]
