"""What a linear guard costs, for comparison, and what rendering for providers costs.

A guard that rescans the whole history at each model call, timed on a conversation of `LONG`
messages and of `SHORT` messages (the guard's own hooks are timed in `hooks`); and
`prepare_messages` over a long conversation beside a provider's own request building.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from repeat_reminder_langchain import ReminderConfig, prepare_messages
from repeat_reminder_langchain._guard import Guard, StateStore

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
    rows.extend(_history(rounds))
    return rows


def _history(rounds: int) -> list[Row]:
    """The first step of a guard on a conversation handed in whole, beside a later step.

    A guard that keeps no record of a conversation counts the calls since the user last spoke
    once (`LONG` messages here, one user message at their head); every later step reads the
    last turn only.
    """
    guard = Guard(ReminderConfig(), name="bench", records=StateStore("kept"), meter_provider=False)
    messages = history(LONG)
    calls = 20
    cases = {
        "first": lambda: time_batch(lambda: guard.step({}, messages, run_config={}), calls),
        "later": lambda: time_batch(
            lambda: guard.step({"kept": {"turn": "watched"}}, messages, run_config={}), calls
        ),
    }
    samples = interleaved(cases, rounds)
    return [
        Row(
            "step.history.first.us",
            f"first step on a history handed in, {LONG:,} msgs since the user spoke, µs",
            samples.median("first") / calls * 1e6,
            "us",
        ),
        Row(
            "step.history.later.us",
            f"a later step on the same {LONG:,} msgs, µs",
            samples.median("later") / calls * 1e6,
            "us",
        ),
    ]


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
