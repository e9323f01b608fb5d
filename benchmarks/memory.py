"""Memory, traced with `tracemalloc`: what the guard keeps per chain, per run, per checkpoint."""

from __future__ import annotations

import gc
import statistics
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)
from repeat_reminder_langchain._conversation import SOURCE

from .fixtures import agent_graph, ask, middleware_agent, script
from .measure import Row

__all__ = ["run"]

ONE_MB = 1_000_000
CHAIN_TARGET = 2_048  # bytes
GROWTH_TARGET = 1_048_576  # bytes
PACKAGE_FILES = tracemalloc.Filter(True, "*/repeat_reminder_langchain/*")


@contextmanager
def _tracing() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _traced() -> int:
    """Bytes traced now, after collecting what is already garbage."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def _package_bytes() -> int:
    """Bytes traced now that were allocated by the package's own code."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces([PACKAGE_FILES])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def _big_arguments() -> dict[str, Any]:
    return {"query": "everything", "body": "x" * ONE_MB}


def _handler_run(handler: RepeatToolReminderCallbackHandler) -> Callable[..., None]:
    """A runner of one-turn graph runs watched by `handler`; the model is dropped after each."""
    graph, slot = agent_graph(RepeatToolReminderNode(handler))

    def invoke(args: dict[str, Any] | None = None, thread: str | None = None) -> None:
        config: dict[str, Any] = {"callbacks": [handler]}
        if thread is not None:
            config["configurable"] = {"thread_id": thread}
        slot.model = script(1, args)
        graph.invoke(ask(), config=config)
        slot.model = None

    return invoke


def chain_kept(repeats: int = 5) -> int:
    """Bytes a handler keeps for one conversation's chain after a run with 1 MB arguments.

    The run has a `thread_id`, so its chain outlives it; the arguments and the conversation are
    gone once the run returns, so what stays traced is what the handler holds for that chain
    (plus whatever else the libraries cached meanwhile: this is an upper bound).
    """
    handler = RepeatToolReminderCallbackHandler()
    invoke = _handler_run(handler)
    kept: list[int] = []
    with _tracing():
        for index in range(2 + repeats):
            before = _traced()
            invoke(_big_arguments(), thread=f"thread-{index}")
            if index >= 2:  # the first runs fill the libraries' caches
                kept.append(_traced() - before)
    if handler.agent_count != 2 + repeats:
        raise AssertionError("the handler did not keep one chain per thread")
    return int(statistics.median(kept))


def growth(first: int, last: int) -> tuple[int, int]:
    """Bytes added between `first` and `last` finished runs without a thread.

    Returns the growth of what the package's own code allocated (the handler's runs, chains
    and bookkeeping) and of everything traced in the process.
    """
    handler = RepeatToolReminderCallbackHandler()
    invoke = _handler_run(handler)
    with _tracing():
        for _ in range(first):
            invoke()
        package, total = _package_bytes(), _traced()
        for _ in range(last - first):
            invoke()
        package, total = _package_bytes() - package, _traced() - total
    if handler.agent_count:
        raise AssertionError("chains of finished runs without a thread were kept")
    return package, total


def checkpointed_state() -> int:
    """Bytes of the middleware's private state, serialised as the checkpointer stores it."""
    saver = InMemorySaver()
    agent = middleware_agent(
        script(3, _big_arguments()), [RepeatToolReminderMiddleware()], checkpointer=saver
    )
    config: Any = {"configurable": {"thread_id": "memory"}}
    agent.invoke(ask(), config=config)
    stored = saver.get_tuple(config)
    field = stored.checkpoint["channel_values"].get(SOURCE, {}) if stored else {}
    state = field.get("RepeatToolReminderMiddleware", {})
    if state.get("count") != 3:
        raise AssertionError(f"the middleware did not count the calls: {state}")
    _, data = saver.serde.dumps_typed(state)
    return len(data)


def run(first: int = 1_000, last: int = 10_000) -> list[Row]:
    """Every memory figure, in bytes."""
    package, total = growth(first, last)
    runs = f"after {last:,} runs without a thread vs after {first:,}"
    return [
        Row(
            "memory.chain_1mb_args",
            "handler: kept for one chain after a run with 1 MB arguments",
            chain_kept(),
            "bytes",
            CHAIN_TARGET,
        ),
        Row(
            "memory.handler_growth",
            f"handler: package allocations still held {runs}",
            package,
            "bytes",
            GROWTH_TARGET,
        ),
        Row("memory.process_growth", f"process: all allocations still held {runs}", total, "bytes"),
        Row(
            "memory.checkpoint_1mb_args",
            "middleware: private state in the checkpoint, 1 MB arguments",
            checkpointed_state(),
            "bytes",
            CHAIN_TARGET,
        ),
    ]
