"""Overhead per step: whole agent runs of many tool turns, with the guard and with no-op stand-ins.

Each comparison runs the same scripted conversation through graphs that differ only in what
sits where the guard sits: the guard itself, a no-op of the same shape, or nothing at all; and,
for `create_agent`, the loop guards a user would otherwise install (`hooks.PEERS`), so that what
each adds to a whole turn is compared as a user pays it.

Runs are timed in CPU seconds of the process (all its threads: `ToolNode` runs tools in a
pool), so time the machine gives to other work does not count against either side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)
from repeat_reminder_langchain._middleware import RepeatToolReminderMiddlewareState

from .fixtures import (
    _NOOP_HOOKS,
    RECURSION_LIMIT,
    NoopHandler,
    agent_graph,
    ask,
    hooks_of,
    middleware_agent,
    noop_middleware,
    noop_node,
    script,
)
from .hooks import GUARDS, PEERS, _key
from .measure import Row, Samples, interleaved

__all__ = ["NoopMiddleware", "NoopStateMiddleware", "run"]

TURNS = 200
TARGET = 1.05
# The guard middleware's hooks, each named once (the sync one of each pair).
_HOOKS = hooks_of(RepeatToolReminderMiddleware)
SHAPES = tuple(hook for hook in _HOOKS if f"a{hook}" in _HOOKS)
_SHAPE = "a no-op "


NoopMiddleware = noop_middleware(RepeatToolReminderMiddleware)


class NoopStateMiddleware(NoopMiddleware):  # type: ignore[misc,valid-type]
    """The no-op middleware with the guard's state schema: what the private state field costs."""

    state_schema = RepeatToolReminderMiddlewareState


def _graph_case(extra: Callable[..., Any] | None, callbacks: list[Any]) -> Callable[[], float]:
    graph, slot = agent_graph(extra)
    config: dict[str, Any] = {"callbacks": callbacks, "recursion_limit": RECURSION_LIMIT}

    def case() -> float:
        slot.model = script(TURNS)
        start = time.process_time()
        result = graph.invoke(ask(), config=config)
        seconds = time.process_time() - start
        slot.model = None
        _check(result)
        return seconds

    return case


def _middleware_case(make: Callable[[], list[Any]]) -> Callable[[], float]:
    config = {"recursion_limit": RECURSION_LIMIT}

    def case() -> float:
        agent = middleware_agent(script(TURNS), make())
        start = time.process_time()
        result = agent.invoke(ask(), config=config)
        seconds = time.process_time() - start
        _check(result)
        return seconds

    return case


def _check(result: dict[str, Any]) -> None:
    if len(result["messages"]) != 2 * TURNS + 2:
        raise AssertionError("the run did not play the whole script")


def _ratio(key: str, label: str, samples: Samples, name: str, baseline: str) -> Row:
    target = TARGET if (name, baseline) == ("guard", "noop") else None
    value, spread = samples.ratio(name, baseline), samples.spread(name, baseline)
    return Row(key, label, value, "ratio", target, spread)


def _rows(prefix: str, label: str, samples: Samples) -> list[Row]:
    # A turn's µs, for the reason of a missed ratio (`missed.py`): what a turn of this run is.
    guard, noop = (samples.median(name) / TURNS * 1e6 for name in ("guard", "noop"))
    return [
        _ratio(f"{prefix}.guard_vs_noop", f"{label}: guard / no-op", samples, "guard", "noop"),
        _ratio(f"{prefix}.guard_vs_bare", f"{label}: guard / bare", samples, "guard", "bare"),
        _ratio(f"{prefix}.noop_vs_bare", f"{label}: no-op / bare", samples, "noop", "bare"),
        Row(f"{prefix}.noop_turn", f"{label}: the no-op's run, per turn", noop, "us"),
        Row(
            f"{prefix}.guard_per_turn",
            f"{label}: the guard over the no-op, per turn",
            guard - noop,
            "us",
        ),
    ]


def run(rounds: int) -> list[Row]:
    """Time whole runs of `TURNS` tool turns, interleaved, and return the ratios of medians."""
    handler = RepeatToolReminderCallbackHandler()
    graph = interleaved(
        {
            "guard": _graph_case(RepeatToolReminderNode(handler), [handler]),
            "noop": _graph_case(noop_node, [NoopHandler()]),
            "bare": _graph_case(None, []),
        },
        rounds,
    )
    agent = interleaved(
        {
            "guard": _middleware_case(lambda: [RepeatToolReminderMiddleware()]),
            "noop": _middleware_case(lambda: [NoopMiddleware()]),
            "bare": _middleware_case(list),
            "noop_state": _middleware_case(lambda: [NoopStateMiddleware()]),
            # The peers as a user runs them: each turn all a middleware costs, its hooks'
            # nodes, edges, state and the caches its work leaves cold, beside the guard's.
            **{peer: _middleware_case(lambda p=peer: [GUARDS[p]()]) for peer in PEERS},
            # Each of the guard's hooks alone, doing nothing: what its place in the graph costs.
            **{_SHAPE + hook: _middleware_case(lambda h=hook: [_shape(h)()]) for hook in SHAPES},
        },
        rounds,
    )
    label = f"{TURNS} tool turns"
    agent_label = f"create_agent, middleware, {label}"
    return [
        *_rows("overhead.graph", f"graph, handler + node, {label}", graph),
        *_rows("overhead.create_agent", agent_label, agent),
        _ratio(
            "overhead.create_agent.noop_state_vs_noop",
            f"{agent_label}: no-op with the guard's state field / no-op",
            agent,
            "noop_state",
            "noop",
        ),
        *_added_rows("overhead.create_agent", agent_label, agent),
    ]


def _shape(hook: str) -> type[AgentMiddleware]:
    """A middleware with one hook of the guard's (and its async twin), doing nothing."""
    names = (hook, f"a{hook}")
    return type(f"Noop_{hook}", (AgentMiddleware,), {name: _NOOP_HOOKS[name] for name in names})


def _added_rows(prefix: str, label: str, samples: Samples) -> list[Row]:
    """What each middleware adds to a bare agent's turn in whole runs; the guard over the peers.

    The no-op of the guard's shape and each of its hooks alone, doing nothing, say how much of
    the guard's figure is create_agent running its hooks (a graph node for each `before_*` or
    `after_*` hook, a wrapper around each model or tool call for each `wrap_*` one), and how
    much is the guard's work in them.
    """
    bare = samples.median("bare")
    names = ("guard", "noop", *PEERS, *(_SHAPE + hook for hook in SHAPES))
    added = {name: (samples.median(name) - bare) / TURNS * 1e6 for name in names}
    cheapest = min(PEERS, key=added.__getitem__)
    rows = [
        Row(f"{prefix}.added.{_key(name)}", f"{label}: {name} over bare, per turn", value, "us")
        for name, value in added.items()
    ]
    ratio = added["guard"] / added[cheapest] if added[cheapest] > 0 else float("inf")
    rows.append(
        Row(
            f"{prefix}.guard_over_cheapest_peer",
            f"{label}: guard / the cheapest peer ({cheapest}), each over bare, per turn",
            ratio,
            "ratio",
        )
    )
    return rows
