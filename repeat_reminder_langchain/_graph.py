"""The graph node that adds the reminders, right after a turn's tool results."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Protocol

from langchain_core.callbacks import dispatch_custom_event
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.graph import MessagesState
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from typing_extensions import Unpack

from ._callbacks import RepeatToolReminderCallbackHandler
from ._config import ReminderConfig, ReminderFields, resolve_config
from ._conversation import (
    SOURCE,
    NotUser,
    asked_to_answer,
    from_guard,
    read_messages,
    read_state,
)
from ._events import report
from ._guard import Guard, RecordStore, StateStore, instance_name, thread_of
from ._log import LOGGER_NAME, RepeatToolReminderWarning, warn
from ._messages import blocked_result, no_tool_choice
from ._record import Record
from ._reminder import Escalation
from ._wiring import refuse_block

if TYPE_CHECKING:
    from ._metrics import MeterProviderOption

__all__ = ["RepeatToolReminderNode", "RepeatToolReminderState"]

logger = logging.getLogger(LOGGER_NAME)


class RepeatToolReminderState(MessagesState):
    """`MessagesState` with a field for the guard's streaks, for `RepeatToolReminderNode()`.

    Build the graph with `StateGraph(RepeatToolReminderState, input_schema=MessagesState,
    output_schema=MessagesState)` to keep the field out of the graph's input and output: it is
    then checkpointed, but a caller can neither see nor set it. Beside it, the id of the
    invocation, for the log lines: kept for one run, never checkpointed.
    """

    repeat_tool_reminder: NotRequired[dict[str, Any]]
    repeat_tool_reminder_run: NotRequired[Annotated[str, UntrackedValue]]


class RepeatToolReminderNode:
    """A LangGraph node, placed between the tools node and the model node, that adds reminders.

    It reads the conversation, counts the tool turn that just finished, and returns one tagged
    message with the reminders due (none most of the time). It runs after the whole block of tool
    results, so an assistant turn is always followed by all its results first. It never
    changes a tool result and never fails the run: a problem is logged.

    Where the counts live depends on how it is built:

    * `RepeatToolReminderNode(handler)`: in the `RepeatToolReminderCallbackHandler` passed in
      the run's callbacks, which keeps every agent's streaks and needs no state field.
    * `RepeatToolReminderNode(**fields)` or `RepeatToolReminderNode(config=...)`: in the graph
      state, under `state_key`, so the counts are checkpointed with the conversation and
      survive interrupts, restarts and several worker processes. The state needs that field:
      use `RepeatToolReminderState`, or add `repeat_tool_reminder: NotRequired[dict]` to yours.

    A model that answers after a reminder it read has recovered (`stats`). Without a
    handler, the node sees that answer only if the graph's end passes through it, routed on
    by its `route`; otherwise it counts it when the thread goes on:

    ```python
    builder.add_conditional_edges(
        "agent", tools_condition, {"tools": "tools", END: "repeat_reminder"}
    )
    builder.add_conditional_edges(
        "repeat_reminder", node.route, {"continue": "agent", "end": END}
    )
    ```

    At `escalate_after` (10 by default), the node stops a loop in the way `exit_behavior`
    sets: `"finish"` (the default) asks the model for its answer, which ends the run through
    the node's `route`; `"error"` raises `RepeatToolLoopError`, `"interrupt"` pauses for a
    human; `"end"` adds a final message and needs the node's `route` to leave the graph (a
    node cannot end a run on its own: the graph's edges decide where it goes next). A node
    whose graph does not route on by it warns (`RepeatToolReminderWarning`) the second time
    it runs, before any loop reaches the limit; a loop it would end then goes on, and is
    logged as not stopped. With `"finish"`, a model that still has its tools may call again:
    give your model node `bind_tools` and the `ToolNode` `wrap_tool_call=node.wrap_tool_call`,
    or the node warns once and ends the run. `"block"` needs the middleware, the only one of
    the guard's forms that sees a call before it runs.

    Args:
        handler: The handler passed in the run's callbacks, or None to keep the counts in
            state.
        config: A `ReminderConfig`, when there is no handler (the handler has its own).
        messages_key: The state key holding the messages.
        state_key: The state key holding the counts, when there is no handler.
        tools: The graph's tools, or its `ToolNode`: their metadata may declare their own
            policy (with a handler, the handler reads it as the tools run too), and their
            calls' arguments are read as each tool reads them (its schema: coercion,
            defaults, aliases), so that calls the tool cannot tell apart are one call.
        meter_provider: Where its OpenTelemetry metrics go, when there is no handler (the
            handler has its own): a `MeterProvider`, None (the default) for the global one
            when opentelemetry-api is installed, False for none.
        **fields: `ReminderConfig` fields, when there is no handler.

    Example:
        ```python
        guard = RepeatToolReminderCallbackHandler()
        node = RepeatToolReminderNode(guard, tools=tools)
        builder.add_node("tools", ToolNode(tools, wrap_tool_call=node.wrap_tool_call))
        builder.add_node("repeat_reminder", node)
        builder.add_edge("tools", "repeat_reminder")
        builder.add_conditional_edges(
            "repeat_reminder", node.route, {"continue": "agent", "end": END}
        )
        graph.invoke(inputs, config={"callbacks": [guard]})
        ```

        and in the model node, `node.bind_tools(model, tools, state)` in place of
        `model.bind_tools(tools)` (`withholds_tools`).
    """

    def __init__(
        self,
        handler: RepeatToolReminderCallbackHandler | None = None,
        *,
        config: ReminderConfig | None = None,
        messages_key: str = "messages",
        state_key: str = SOURCE,
        tools: Sequence[Any] | ToolNode = (),
        meter_provider: MeterProviderOption = None,
        **fields: Unpack[ReminderFields],
    ) -> None:
        if handler is not None and not isinstance(handler, RepeatToolReminderCallbackHandler):
            raise TypeError(
                "RepeatToolReminderNode takes a RepeatToolReminderCallbackHandler or none, got "
                f"{type(handler).__name__}"
            )
        if handler is not None and (config is not None or fields or meter_provider is not None):
            raise TypeError("the handler has its own configuration; pass it there")
        self.handler = handler
        self.messages_key = messages_key
        self.state_key = state_key
        self._records: _NodeStore
        if handler is not None:
            self._guard, self._records = handler.guard, handler.records
        else:
            settings = resolve_config(config, fields)
            refuse_block(settings)
            self._records = _NodeStateStore(state_key, messages_key)
            self._guard = Guard(
                settings,
                name=instance_name(type(self).__name__, settings),
                records=self._records,
                meter_provider=meter_provider,
            )
        self.config, self.stats = self._guard.config, self._guard.stats
        self.tool_policies = self._guard.tools.policies
        for tool in _tools(tools):
            self._guard.tools.learn(tool)
        self._warned_outside = False
        self._warned_placement = False
        self._warned_unwired = False
        # Whether a loop it stops is ended through its route ("end", and "finish" for a model
        # that calls a tool after it was asked for its answer), and whether the graph routes
        # on from it by `route`: LangGraph calls it after each run of a node wired so.
        stops = self._guard.stops
        self._ends = stops is not None and stops.ends
        self._finishes = stops is not None and stops.asks_answer
        self._routed = False
        self._runs = 0

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """Return the state update for the turn that just finished (empty most of the time)."""
        guard = self._guard
        self._runs += 1
        if self._ends and not self._routed and self._runs == 2:
            self._warn_unrouted()
        try:
            where = self._records.find(state, config)
            if where is None:
                self._warn_outside()
                return {}
            messages = read_messages(state, self.messages_key)
            # Before its first route, a node cannot know how it is wired: it takes it is routed.
            can_end = self._routed or self._runs == 1
            step = guard.step(where, messages, run_config=config, can_end=can_end)
            if step is None:
                return {}
            if step.turn.waiting:
                self._warn_placement()
            # Looked at once, on the turn that ends a run: not on every turn.
            if (
                step.end
                and self._finishes
                and not self._warned_unwired
                and _ran_anyway(messages, self._guard.not_user)
            ):
                self._warn_unwired()
        except RepeatToolReminderWarning:
            raise  # a wiring warning the user's warning filter made an error
        except Exception:
            logger.exception("repeat reminder node failed; the run goes on without reminders")
            return {}
        report(step.report, dispatch_custom_event)
        if step.stop is not None:
            raise step.stop  # nothing kept: the turn is counted again when the run resumes
        update = step.update
        if step.messages:
            update[self.messages_key] = step.messages
        return update

    def route(self, state: Any) -> Literal["continue", "end"]:
        """Where the graph goes after the node: `"end"` when the conversation ends here.

        That is after the model answered without a call (the node then counts the answer,
        so a recovery is counted in the run it ends), or once the node ended a looping run
        (`exit_behavior="end"`). Route the model's end through the node, and from the node
        on: `builder.add_conditional_edges("agent", tools_condition, {"tools": "tools",
        END: "repeat_reminder"})` and `builder.add_conditional_edges("repeat_reminder",
        node.route, {"continue": "agent", "end": END})`.
        """
        self._routed = True
        messages = read_messages(state, self.messages_key)
        last = messages[-1] if messages else None
        ended = isinstance(last, AIMessage) and not last.tool_calls
        return "end" if ended else "continue"

    def withholds_tools(self, state: Any) -> bool:
        """Whether the model's next call has no tool to call: the guard asked for its answer.

        With `exit_behavior="finish"`, the guard's last words ask a looping model for its
        answer. A node does not own the model call, so your model node holds the tools back;
        `bind_tools` does it as the middleware does:

        ```python
        def agent(state: MessagesState) -> dict:
            chosen = node.bind_tools(model, tools, state)
            return {"messages": [chosen.invoke(prepare_messages(state["messages"], model))]}
        ```

        and `ToolNode(tools, wrap_tool_call=node.wrap_tool_call)` refuses a call made all the
        same. (The middleware does both by itself.)
        """
        if not self._finishes:
            return False
        messages = read_messages(state, self.messages_key)
        return asked_to_answer(messages, not_user=self._guard.not_user) is not None

    def bind_tools(self, model: Any, tools: Sequence[Any], state: Any, **kwargs: Any) -> Any:
        """`model` with `tools` for its next call; held back when it is asked for its answer.

        Most calls: `model.bind_tools(tools, **kwargs)`. The call that asks for the answer: the
        same tools with the `tool_choice` that tells the model to call none, where it takes one
        (ChatOpenAI, AzureChatOpenAI, ChatAnthropic, ChatGoogleGenerativeAI: the head of the
        prompt, where the tools sit, stays the one a provider cached); elsewhere `model` alone,
        with no tools. Asked for the answer is what `withholds_tools` says.
        """
        if not self.withholds_tools(state):
            return model.bind_tools(tools, **kwargs)
        choice = no_tool_choice(model)
        return model if choice is None else model.bind_tools(tools, tool_choice=choice, **kwargs)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Refuse a call made after the guard asked for the model's answer; run every other.

        For `ToolNode(tools, wrap_tool_call=node.wrap_tool_call)`, with
        `exit_behavior="finish"`. The refused call gets an error result saying why, not a
        second run, as the middleware answers it; the node then ends the run (its `route`).
        """
        withheld = self._withheld(request) if self._finishes else None
        if withheld is None:
            return handler(request)
        return blocked_result(withheld, request.tool_call.get("id") or "")

    def _withheld(self, request: ToolCallRequest) -> Escalation | None:
        """The loop whose model was asked for its answer before it made this call, if any."""
        try:
            state = request.state
            messages = state if isinstance(state, list) else read_messages(state, self.messages_key)
            asked = asked_to_answer(messages, _latest_turn(messages), self._guard.not_user)
            return None if asked is None else Escalation.from_tag(asked)
        except Exception:
            logger.exception("repeat reminder check failed; the call runs")
            return None

    def _warn_outside(self) -> None:
        if self._warned_outside:
            return
        self._warned_outside = True
        warn(
            "RepeatToolReminderNode ran outside its handler's sight: pass the handler "
            "in the run's callbacks, e.g. graph.invoke(inputs, "
            "config={'callbacks': [handler]}). No reminders are added meanwhile."
        )

    def _warn_unrouted(self) -> None:
        behavior = self._guard.config.exit_behavior
        warn(
            f'RepeatToolReminderNode(exit_behavior="{behavior}") ends a looping run through '
            "its route, which this graph does not take: the run would go on past "
            "escalate_after. Route the graph on from the node: builder.add_conditional_edges("
            '"repeat_reminder", node.route, {"continue": "agent", "end": END}); or choose '
            'exit_behavior="error" or "interrupt", which stop any graph.'
        )

    def _warn_unwired(self) -> None:
        self._warned_unwired = True
        warn(
            'RepeatToolReminderNode(exit_behavior="finish") asked a looping model for its '
            "answer, and the model's next call ran: it still had its tools, and the ToolNode "
            'let the call through. The node ends the run instead (as "end" does). Hold the '
            "tools back and refuse such a call: in your model node, node.bind_tools(model, "
            "tools, state).invoke(...), and ToolNode(tools, wrap_tool_call=node.wrap_tool_call)."
        )

    def _warn_placement(self) -> None:
        if self._warned_placement:
            return
        self._warned_placement = True
        warn(
            "RepeatToolReminderNode ran before the results of the tool calls it follows, so it "
            "counts nothing: place it after the tools node (tools -> repeat_reminder -> model)."
        )


class _NodeStore(RecordStore, Protocol):
    """Where a node keeps its records: the handler's memory, or the graph state."""

    def find(self, state: Any, config: RunnableConfig) -> Any:
        """Where the node's record is; None when it cannot be kept."""


class _NodeStateStore:
    """The state-kept node's records: in the graph state, under `state_key`."""

    limit = 1024  # threads remembered for the check of the state's field

    def __init__(self, state_key: str, messages_key: str) -> None:
        self._store = StateStore(state_key)
        self._messages_key = messages_key
        # The threads this node stored counts for (None for runs without one): a thread
        # that comes back without them has a state without the field.
        self._stored_for: dict[str | None, None] = {}
        self._warned = False

    def find(self, state: Any, config: RunnableConfig) -> tuple[Any, str | None]:
        """Where the record is: this state, of this thread."""
        return state, thread_of(config)

    def invocation(
        self, where: tuple[Any, str | None], run_config: RunnableConfig | None
    ) -> object:
        """The id the state keeps for this invocation, once the node reported in it."""
        return self._store.invocation(where[0], run_config)

    def keep_invocation(self, where: tuple[Any, str | None], run: str) -> dict[str, Any]:
        """The state update that keeps the invocation's id."""
        return self._store.keep_invocation(where[0], run)

    def read(self, where: tuple[Any, str | None]) -> Record:
        """The record kept in the state."""
        state, thread = where
        record = self._store.read(state)
        if not record and not self._warned:
            self._check_field(state, thread)
        return record

    def write(self, where: tuple[Any, str | None], record: Record) -> dict[str, Any]:
        """The state update that keeps the record."""
        if not self._warned:
            thread = where[1]
            if thread not in self._stored_for:
                if len(self._stored_for) >= self.limit:
                    self._stored_for.clear()
                self._stored_for[thread] = None
        return self._store.write(where[0], record)

    def _check_field(self, state: Any, thread: str | None) -> None:
        # Counts stored for this thread came back missing: the field is not in the state.
        # (Without a thread, runs share one key: the second tool turn confirms the run is
        # one the node stored counts in.)
        if (
            thread in self._stored_for
            and read_state(state, self._store.key) is None
            and _tool_turns(read_messages(state, self._messages_key)) >= 2
        ):
            self._warned = True
            warn(
                f"RepeatToolReminderNode keeps its counts in the state field "
                f"{self._store.key!r}, which this graph's state does not have, so nothing is "
                "remembered between turns and each turn reads the conversation again: build "
                "the graph with RepeatToolReminderState or add the field to your state."
            )


def _tool_turns(messages: Sequence[BaseMessage]) -> int:
    """How many model turns with tool calls there are, counting no further than two."""
    found = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            found += 1
            if found == 2:
                break
    return found


def _tools(tools: Sequence[Any] | ToolNode) -> Sequence[Any]:
    """The tools of a sequence, or of the `ToolNode` that runs them."""
    return list(tools.tools_by_name.values()) if isinstance(tools, ToolNode) else tools


def _ran_anyway(messages: Sequence[BaseMessage], not_user: NotUser | None = None) -> bool:
    """Whether the model's latest turn, asked for its answer, made calls that then ran.

    A call refused by `wrap_tool_call` has the guard's result; one that ran has the tool's.
    """
    end = _latest_turn(messages)
    turn = messages[end] if end >= 0 else None
    if not isinstance(turn, AIMessage) or not turn.tool_calls:
        return False
    if asked_to_answer(messages, end, not_user) is None:
        return False
    results = [m for m in messages[end + 1 :] if isinstance(m, ToolMessage)]
    return bool(results) and not any(from_guard(m) for m in results)


def _latest_turn(messages: Sequence[BaseMessage]) -> int:
    """Where the model's latest turn is; -1 when it has made none."""
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), -1
    )
