"""The route of one middleware turn through the package: which modules it enters, from where.

`python -m benchmarks.route` prints it for a turn with nothing due and for one that draws a
reminder. A profiler (`sys.setprofile`) sees every Python call; a call from one of the package's
modules into another is an entry of the second (calls the same function makes into the same
module count once: `canonicalize` then `digest` from one loop is one entry). A turn that goes
down once and comes back once enters each module once, from one place.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NamedTuple

from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from repeat_reminder_langchain import RepeatToolReminderMiddleware

PACKAGE = "repeat_reminder_langchain"


class Entry(NamedTuple):
    """A call into one of the package's modules from another place of the package."""

    caller: str  # module.function that called
    module: str  # the module entered


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def route(function: Callable[[], Any]) -> list[Entry]:
    """The entries into the package's modules while `function` runs, in the order they happen."""
    entries: list[Entry] = []
    seen: set[tuple[int | None, str]] = set()
    frames: list[FrameType] = []  # kept alive, so that no frame id is reused meanwhile

    def watch(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        module = _module(frame)
        if not module.startswith(PACKAGE):
            return
        caller = frame.f_back
        while caller is not None and not _module(caller).startswith(PACKAGE):
            caller = caller.f_back  # through a library's frames, to the package's caller
        if caller is not None and _module(caller) == module:
            return
        frames.append(frame if caller is None else caller)
        where = id(caller) if caller is not None else None
        if (where, module) in seen:
            return
        seen.add((where, module))
        if caller is None:
            name = "(the agent)"
        else:
            name = f"{_module(caller).removeprefix(PACKAGE + '.')}.{caller.f_code.co_name}"
        entries.append(Entry(name, module.removeprefix(PACKAGE + ".")))

    sys.setprofile(watch)
    try:
        function()
    finally:
        sys.setprofile(None)
    return entries


@tool
def grep(q: str, path: str = ".") -> str:
    """Search the files under `path` for `q`."""
    return "nothing"


def _turn(number: int) -> list[Any]:
    call = {"name": "grep", "args": {"q": "x"}, "id": f"c{number}", "type": "tool_call"}
    return [
        AIMessage("", tool_calls=[call], id=f"a{number}"),
        ToolMessage("nothing", tool_call_id=f"c{number}", id=f"r{number}"),
    ]


def turns() -> dict[str, Callable[[], Any]]:
    """A middleware turn with nothing due, and the next, which draws a reminder (threshold 2).

    The turns before them are played first, so that each is measured as a running agent
    meets it: the record kept, the tool's rules known.
    """
    # The plugin's rule alone: each detector the defaults add enters a module of its own.
    middleware = RepeatToolReminderMiddleware(thresholds=[3], profile="seed", meter_provider=False)
    model = GenericFakeChatModel(messages=iter(()))
    tools = [grep]  # each model request shows the agent's tools
    messages: list[Any] = [HumanMessage("find x", id="h")]
    fields: dict[str, Any] = {}

    def step() -> None:
        messages.extend(_turn(len(messages)))
        state: Any = {"messages": messages, **fields}
        request = ModelRequest(model=model, messages=list(messages), tools=tools, state=state)
        response = middleware.wrap_model_call(request, lambda _: ModelResponse(result=[]))
        if isinstance(response, ExtendedModelResponse):
            fields.update(response.command.update)  # type: ignore[union-attr]
            response = response.model_response
        messages.extend(response.result)

    step()  # the tool's rules are resolved, the record kept
    return {"nothing due": step, "a reminder": step}


def main() -> None:
    """Print the route of each turn."""
    for name, turn in turns().items():
        entries = route(turn)
        modules = {entry.module for entry in entries}
        print(f"{name}: {len(modules)} modules entered, {len(entries)} entries")
        for entry in entries:
            print(f"  {entry.caller} -> {entry.module}")


if __name__ == "__main__":
    main()
