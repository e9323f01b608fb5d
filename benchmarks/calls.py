"""Where a turn goes, counted: the Python functions each guard runs a turn.

A turn of these guards is Python calls, each with the work of its frame: `LoopGuardMiddleware`'s
one hook runs 10 a turn and costs some 4.4 µs, the single pass 2 and some 4 µs (its work is
in C: orjson, BLAKE2b, a regex). Timed, a few µs a turn move by half a µs from run to run on a
busy machine, and a whole run's 1,800 µs by some 50; counted, they do not move at all. So this
section counts, once, what the timed sections measure: every figure is exact, the same on every
machine with the same versions, and says in which layer a change took calls away.

- The hooks, played alone as `hooks.py` plays them (`TURNS` turns, 20 and 2,000 messages):
  every Python function a guard's hooks run a turn, the model's handler left out.
- Whole runs, as `overhead.py` runs them: every Python function the process runs, in every
  thread (but `threading`'s, whose waits the threads' timing decides), over a bare agent's
  run, a turn. Between a bare agent and the guard, three no-ops, each one step nearer: of the
  guard's shape (what `create_agent` does to run its hooks), with its state field (what
  LangGraph does for the field every step), and writing a record every turn through the model
  call as the guard writes its own (what applying the write costs). What the guard adds to the
  last is its own work.

Both are counted with the garbage collector paused (`_uncollected`).
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langgraph.types import Command

from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._conversation import SOURCE

from . import hooks
from .fixtures import RECURSION_LIMIT, ask, middleware_agent, script
from .hooks import GUARDS, LONG, PEERS, SHORT, _hooks, _key
from .measure import Row
from .overhead import TURNS, NoopMiddleware, NoopStateMiddleware

__all__ = ["STEPS", "RecordWriter", "run"]

_HANDLER = hooks.__file__  # the bare agent's side of a wrapper: the play's own handler


class RecordWriter(NoopStateMiddleware):
    """The no-op with the guard's state field, writing a record each turn as the guard does.

    The record of the turn the model makes, in the guard's entry, on the model's response.
    """

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> ExtendedModelResponse[Any]:
        """Call the model; write a record naming its turn."""
        response: ModelResponse[Any] = handler(request)
        record = {"turn": response.result[-1].id, "tool": "lookup", "key": "", "count": 1}
        update = {SOURCE: {RepeatToolReminderMiddleware.__name__: record}}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))


# The steps from a bare agent to the guard, in order, each counted over a bare agent.
STEPS: dict[str, Callable[[], list[AgentMiddleware[Any, Any, Any]]]] = {
    "a no-op of the guard's shape": lambda: [NoopMiddleware()],
    "and its state field": lambda: [NoopStateMiddleware()],
    "and a record written each turn": lambda: [RecordWriter()],
    "guard": lambda: [RepeatToolReminderMiddleware()],
}


# How often a thread waits (`Condition.wait`, in `Future.result` and the pool's shutdown) is
# the threads' timing: a whole run counted twice differed by a wait or two one time in six.
_WAITS = threading.__file__


@contextmanager
def _uncollected() -> Iterator[None]:
    """No garbage collection while counting: when the collector runs is the allocations' timing.

    A collection calls the finalizers and weakref callbacks of what it frees (Python functions);
    when one runs depends on every allocation since the last, so on what the process did before
    (a whole run counted after one set of tests and after another differed by 2 calls). What is
    freed by its reference count is freed, and counted, the same every time.
    """
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _counting(calls: list[int], skip: str = "") -> Callable[..., None]:
    """A profile function that adds each Python function called to `calls[0]`.

    A function of the file `skip` is left out, and so is `threading`'s (`_WAITS`).
    """

    def profile(frame: Any, event: str, argument: Any) -> None:
        if event == "call" and frame.f_code.co_filename not in (skip, _WAITS):
            calls[0] += 1

    return profile


def _hook_calls(make: Callable[[], AgentMiddleware[Any, Any, Any]], size: int) -> int:
    """The Python calls a guard's hooks make over `hooks.TURNS` turns, played as `hooks` plays.

    Counted on a second play: the first fills what the process caches once (a class's schema,
    a compiled pattern), which no later turn pays again.
    """
    hooks._record(make(), size, stored=False)
    middleware = make()
    calls = [0]
    profile = _counting(calls, skip=_HANDLER)

    def counted(hook: Callable[..., Any]) -> Callable[..., Any]:
        def call(*arguments: Any) -> Any:
            sys.setprofile(profile)
            try:
                return hook(*arguments)
            finally:
                sys.setprofile(None)

        return call

    for hook in _hooks(middleware):  # the play calls each hook through the instance
        setattr(middleware, hook, counted(getattr(middleware, hook)))
    with _uncollected():
        hooks._record(middleware, size, stored=False)
    return calls[0]


def _run_calls(make: Callable[[], list[Any]]) -> int:
    """The Python calls of one whole run of `TURNS` turns, in every thread of the process.

    Counted on a second run, as `_hook_calls` counts a second play.
    """
    middleware_agent(script(TURNS), make()).invoke(ask(), {"recursion_limit": RECURSION_LIMIT})
    agent = middleware_agent(script(TURNS), make())
    calls = [0]
    profile = _counting(calls)
    with _uncollected():
        threading.setprofile(profile)  # ToolNode runs the tools in a pool of threads
        sys.setprofile(profile)
        try:
            result = agent.invoke(ask(), config={"recursion_limit": RECURSION_LIMIT})
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    if len(result["messages"]) != 2 * TURNS + 2:
        raise AssertionError("the run did not play the whole script")
    return calls[0]


def _hook_rows() -> list[Row]:
    rows = []
    per_turn: dict[tuple[str, int], float] = {}
    for size in (SHORT, LONG):
        for name, make in GUARDS.items():
            per_turn[(name, size)] = _hook_calls(make, size) / hooks.TURNS
            rows.append(
                Row(
                    f"calls.hooks.{_key(name)}.{size}",
                    f"{name}: Python calls a turn, all hooks, {size:,} msgs",
                    per_turn[(name, size)],
                    "calls",
                )
            )
    for size in (SHORT, LONG):
        cheapest = min(PEERS, key=lambda peer: per_turn[(peer, size)])
        rows.append(
            Row(
                f"calls.hooks.guard.over_cheapest_peer.{size}",
                f"guard / the cheapest peer by calls ({cheapest}): Python calls a turn, "
                f"all hooks, {size:,} msgs",
                per_turn[("guard", size)] / per_turn[(cheapest, size)],
                "ratio",
            )
        )
    return rows


def _whole_rows() -> list[Row]:
    bare = _run_calls(list)
    label = f"create_agent, middleware, {TURNS} tool turns"
    rows = []
    peers = {peer: lambda p=peer: [GUARDS[p]()] for peer in PEERS}
    for name, make in {**STEPS, **peers}.items():
        added = (_run_calls(make) - bare) / TURNS
        rows.append(
            Row(
                f"calls.create_agent.{_key(name)}",
                f"{label}: {name}, Python calls a turn over bare",
                added,
                "calls",
            )
        )
    return rows


def run() -> list[Row]:
    """Python calls a turn: each guard's hooks played alone, and whole runs over a bare agent."""
    return [*_hook_rows(), *_whole_rows()]
