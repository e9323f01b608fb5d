"""O(1) per step: the guard's counting at a long history against a short one.

A step is what the guard does for one finished tool turn: the handler counts it in the node
(`take_reminders`) and looks again when the model is called (`on_chat_model_start`); the
middleware counts it in `before_model`. Each is timed on a conversation of `LONG` messages and
of `SHORT` messages, where only the last turn is new, as in a real run. Beside them, a guard
that rescans the whole history at each model call shows what a linear step costs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManager
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    prepare_messages,
)

from .fixtures import answered, history, script, tool_turn
from .measure import Row, interleaved, time_batch

__all__ = ["RescanGuard", "run"]

SHORT, LONG = 20, 2_000
TARGET = 1.2
STEPS = 400  # steps per timed batch (the rescanning guard takes a tenth of that)
POOL = 64  # distinct last turns the steps cycle through


class RescanGuard:
    """The simple approach: at every model call, walk the whole history and count the streak.

    Consecutive calls with the same tool name and the same `json.dumps(args, sort_keys=True)`
    make a streak; a user message ends it.
    """

    def streak(self, messages: Sequence[BaseMessage]) -> int:
        """The length of the streak the conversation ends with."""
        count, last = 0, None
        for message in messages:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    key = (call["name"], json.dumps(call["args"], sort_keys=True))
                    count = count + 1 if key == last else 1
                    last = key
            elif isinstance(message, HumanMessage):
                count, last = 0, None
        return count


Step = Callable[[list[BaseMessage]], object]


def _handler_step() -> Step:
    """One step of the handler, placed in a run tree as a graph run places it."""
    handler = RepeatToolReminderCallbackHandler()
    root, agent_run, node_run = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    handler.on_chain_start(None, {}, run_id=root, parent_run_id=None, metadata={})
    for run_id, node in ((agent_run, "agent"), (node_run, "repeat_reminder")):
        metadata = {"langgraph_checkpoint_ns": f"{node}:{uuid.uuid4()}"}
        handler.on_chain_start(None, {}, run_id=run_id, parent_run_id=root, metadata=metadata)
    node_config: Any = {
        "callbacks": CallbackManager(handlers=[handler], parent_run_id=node_run),
        "metadata": {"langgraph_checkpoint_ns": f"repeat_reminder:{uuid.uuid4()}"},
    }
    model_metadata = {"langgraph_checkpoint_ns": f"agent:{uuid.uuid4()}"}
    model_run = uuid.uuid4()

    def step(messages: list[BaseMessage]) -> object:
        handler.take_reminders(messages, node_config)
        handler.on_chat_model_start(
            {}, [messages], run_id=model_run, parent_run_id=agent_run, metadata=model_metadata
        )
        return None

    return step


def _middleware_step() -> Step:
    """One `before_model` of the middleware, its chain carried over as graph state carries it."""
    middleware = RepeatToolReminderMiddleware()
    kept: dict[str, Any] = {}

    def step(messages: list[BaseMessage]) -> object:
        update = middleware.before_model({"messages": messages, **kept}, None)  # type: ignore[arg-type]
        if update and "repeat_tool_reminder" in update:
            kept["repeat_tool_reminder"] = update["repeat_tool_reminder"]
        return None

    return step


def _rescan_step() -> Step:
    guard = RescanGuard()
    return guard.streak


def _case(step: Step, size: int, steps: int) -> Callable[[], float]:
    """Time `steps` steps on a conversation of `size` messages whose last turn is new each step."""
    messages = history(size)
    turns = [answered(tool_turn(10_000_000 + index)) for index in range(POOL)]
    counter = iter(range(1 << 62))

    def one() -> None:
        messages[-2:] = turns[next(counter) % POOL]
        step(messages)

    return lambda: time_batch(one, steps)


def run(rounds: int) -> list[Row]:
    """Each guard's step at `LONG` messages over its step at `SHORT`; the rendering pass."""
    rows: list[Row] = []
    guards = {
        "handler": ("handler: node + model-start count", _handler_step, STEPS, TARGET),
        "middleware": ("middleware: before_model count", _middleware_step, STEPS, TARGET),
        "rescan": ("rescan at every model call (simple guard)", _rescan_step, STEPS // 10, None),
    }
    for name, (label, make, steps, target) in guards.items():
        cases = {"short": _case(make(), SHORT, steps), "long": _case(make(), LONG, steps)}
        samples = interleaved(cases, rounds)
        ratio, spread = samples.ratio("long", "short"), samples.spread("long", "short")
        rows.append(
            Row(f"step.{name}", f"{label}, {LONG:,} / {SHORT} msgs", ratio, "ratio", target, spread)
        )
        per_step = samples.median("long") / steps * 1e6
        rows.append(
            Row(f"step.{name}.us", f"{label}, µs per step at {LONG:,} msgs", per_step, "us")
        )
    rows.extend(_rendering(rounds))
    return rows


def _rendering(rounds: int) -> list[Row]:
    """`prepare_messages` over a long conversation, and a provider's own request rendering.

    The conversation is what `create_agent` hands the middleware: the messages without the
    system prompt, which travels apart.
    """
    messages = history(LONG)[1:]
    model = script(0)
    calls = 20
    cases = {"prepare": lambda: time_batch(lambda: prepare_messages(messages, model), calls)}
    openai = _openai_payload()
    if openai is not None:
        cases["openai"] = lambda: time_batch(lambda: openai(messages), calls)
    samples = interleaved(cases, rounds)
    per_thousand = {name: samples.median(name) / calls / len(messages) * 1e9 for name in cases}
    rows = [
        Row(
            "render.prepare_messages.us_per_1k",
            "prepare_messages, µs per 1,000 msgs",
            per_thousand["prepare"],
            "us",
        )
    ]
    if "openai" in per_thousand:
        rows.append(
            Row(
                "render.openai_payload.us_per_1k",
                "ChatOpenAI request payload, µs per 1,000 msgs",
                per_thousand["openai"],
                "us",
            )
        )
    return rows


def _openai_payload() -> Callable[[list[BaseMessage]], object] | None:
    """How langchain-openai renders a request, when it is installed (a dev dependency)."""
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        return None
    model = ChatOpenAI(model="gpt-4.1", api_key="unused")  # type: ignore[arg-type]
    return model._get_request_payload
