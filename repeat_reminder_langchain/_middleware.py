"""The guard as `create_agent` middleware, its record kept in the agent's checkpointed state."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ResponseT,
    ToolCallRequest,
)
from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from langgraph.typing import ContextT
from typing_extensions import Unpack, override

from ._config import ReminderConfig, ReminderFields, resolve_config
from ._conversation import SOURCE
from ._events import Dispatch, report
from ._guard import NO_TOOLS, Guard, StateStore, Tools, TurnResult, instance_name
from ._log import LOGGER_NAME, RepeatToolReminderWarning
from ._messages import blocked_result, no_tool_choice, prepare_messages, shown_once
from ._policy import ToolPolicy
from ._record import Record, answer_requested
from ._wiring import Misplaced

if TYPE_CHECKING:
    from ._metrics import MeterProviderOption
    from ._reminder import Escalation

__all__ = ["RepeatToolReminderMiddleware", "RepeatToolReminderMiddlewareState"]

logger = logging.getLogger(LOGGER_NAME)


class _Merge:
    """The field's reducer, `merge_records`: each instance writes its own entry, several a step.

    It takes whatever a client writes (`update_state`) or a checkpoint holds, since it runs
    outside the guard's own error handling and a raise here would fail the thread. A value
    that is not a mapping is replaced: written, it empties the field (every instance counts
    from 1 again); kept, the written entries replace it. An entry that is not a mapping is
    dropped, so that instance counts the conversation again (since the user last spoke, as a
    conversation it sees for the first time); the others are kept. One log line says so.
    """

    __slots__ = ("_reported",)

    def __init__(self) -> None:
        # LangGraph may apply one write twice (again, to route a conditional edge on it): the
        # value whose problems were logged last is held, so that they are logged once. Held,
        # not its id: an id is reused once its value is freed, and a later write would go
        # unreported.
        self._reported: object = object()

    def __call__(self, kept: object, written: object) -> dict[str, Record]:
        if type(kept) is dict and type(written) is dict:
            # Every turn's write (twice, where LangGraph routes on it): records onto records,
            # with nothing to check or to say.
            merged = {**kept, **written}
            for entry in merged.values():
                if type(entry) is not dict:
                    break  # something else: checked, said and dropped below
            else:
                return merged
        problems: list[str] = []
        merged = _records(kept, "kept", problems)
        if isinstance(written, Mapping):
            records = _records(written, "written", problems)
            for name in written.keys() - records.keys():
                merged.pop(name, None)  # written as something else: that instance counts again
            merged.update(records)
        elif written is not None:
            problems.append(
                f"a {type(written).__name__} was written; every count is taken again from the "
                "conversation"
            )
            merged = {}
        if problems and written is not self._reported:
            self._reported = written
            logger.warning("repeat reminder state replaced: %s", "; ".join(problems))
        return merged


merge_records = _Merge()

_AGENTS = 256  # sets of tools remembered (one per agent, most of the time)
_TURNS = 1024  # model turns remembered with the tools of the agent that made them


def _records(field: object, side: str, problems: list[str]) -> dict[str, Record]:
    """The entries of a value of the field that can be records; the others are named."""
    if field is None:
        return {}
    if not isinstance(field, Mapping):
        problems.append(f"the {side} value is a {type(field).__name__}, not a mapping of records")
        return {}
    records = {name: entry for name, entry in field.items() if isinstance(entry, Mapping)}
    if len(records) < len(field):
        dropped = ", ".join(repr(name) for name in field if name not in records)
        problems.append(f"{side} entries {dropped} are not records")
    return cast("dict[str, Record]", records)


class _Counted(NamedTuple):
    """What counting a model call's turn led to, and what it was counted from."""

    step: TurnResult | None  # None: nothing new since the record's turn, or counting failed
    record: Record  # the record the model call goes on with
    sending: list[Awaitable[None]]  # its events, still to be awaited
    as_sent: bool = True  # whether the request goes to the model as it came (`_prepare`)
    asked: bool = False  # whether the model was asked for its answer (`exit_behavior="finish"`)
    state: Any = None
    field: object = None
    messages: object = None


_NOTHING = _Counted(None, {}, [])


class DefaultName(str):
    """An unnamed instance's name: its text, and an error when it meets its twin.

    Why an `__eq__` that raises: two unnamed instances of one scope in one agent would keep
    their counts under one key. The only place they meet is `create_agent`, which puts its
    middleware's names in a set before it builds the agent (two in two agents are fine, so
    the constructor cannot tell); its own refusal there is an `AssertionError` saying only
    "Please remove duplicate middleware instances.". The set compares the equal names, so
    that comparison is the one place that can say which instance to name. An instance shared
    by several agents equals itself; compared with a plain string it is that string.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other is not self and type(other) is DefaultName and str.__eq__(self, other):
            raise ValueError(
                f"two RepeatToolReminderMiddleware instances have the default name {str(self)!r}; "
                "give the second one a name of its own, e.g. "
                'RepeatToolReminderMiddleware(name="subagent_guard"), since each keeps its '
                "counts under its name (create_agent refuses two middleware of one name)"
            )
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


class RepeatToolReminderMiddlewareState(AgentState[ResponseT]):
    """Agent state with the guard's records: checkpointed, but not part of input or output.

    The field maps each middleware instance's `name` to its record (`Record`).
    """

    repeat_tool_reminder: NotRequired[Annotated[dict[str, Record], PrivateStateAttr, merge_records]]


_MISPLACED = Misplaced(
    "RepeatToolReminderMiddleware is middleware, not a callback handler: pass it to "
    "create_agent(middleware=[...]); in the run's callbacks goes "
    "RepeatToolReminderCallbackHandler, with a RepeatToolReminderNode after the tools "
    "node of your own graph"
)


class RepeatToolReminderMiddleware(
    AgentMiddleware[RepeatToolReminderMiddlewareState[ResponseT], ContextT, ResponseT]
):
    """Reminds the model when it repeats a tool call with the same arguments.

    Before each model call it counts the tool turn that just finished, from the conversation
    itself: every call of the last `AIMessage`, in the order the model wrote them, including
    calls to unknown tools, calls refused by `HumanInTheLoopMiddleware`, and calls whose
    arguments or tool failed. At each threshold it appends a tagged reminder after the turn's
    tool results. Nothing is blocked or rewritten, unless `escalate_after` asks for it.

    It counts in the model call (`wrap_model_call`): a turn costs the agent no graph step of
    its own. What it remembers lives in a private state field, written once per turn with the
    model's answer (and by `after_agent` when a run ends with an answer to a reminder), so it
    survives checkpoints, interrupts, process restarts and workers sharing one checkpointer. A
    new user message resets it. `stats` holds running totals for this instance; a model that
    answers after a reminder has recovered, counted before its run ends. Tools that declare a
    policy in their metadata are read from the model's requests, and a turn counts with the
    tools of the request that made it: agents sharing an instance keep their own policies.

    Several instances can guard one agent, each with its own counts (one policy for search
    tools and another for the rest, say), and any number of them may remind on the same turn:
    instances whose `include` or `exclude` differ get different names by themselves;
    otherwise give each a `name` (`create_agent` given two unnamed ones raises a `ValueError`
    that says so).

    A reminder is stored in the form `message_type` sets: a `SystemMessage` (the default), or a
    `<system-reminder>` user turn. A stored `SystemMessage` reminder goes to a model whose
    profile does not declare `mid_conversation_system_messages` as a `<system-reminder>` user
    turn, in that request only: an instance shared by agents on different models sends each
    model what it takes.

    Args:
        config: A `ReminderConfig`. Give either this or its fields, not both.
        name: The instance's name (default: the class name, with `include`/`exclude`). Its
            events carry it (`guard`), and its log lines a name given here.
        meter_provider: Where its OpenTelemetry metrics go: a `MeterProvider`, None (the
            default) for the global one when opentelemetry-api is installed, False for none.
        **fields: `ReminderConfig` fields.

    Example:
        ```python
        from langchain.agents import create_agent
        from repeat_reminder_langchain import RepeatToolReminderMiddleware

        agent = create_agent(
            "openai:gpt-4.1",
            tools=[read_file, grep],
            middleware=[RepeatToolReminderMiddleware(thresholds=[3, 5, 8], exclude=["todo_*"])],
        )
        ```

        With deepagents, put an instance in the main agent's `middleware` and one in each
        subagent spec's `"middleware"`, a spec named `"general-purpose"` among them (it replaces
        the one deepagents adds): deepagents hands a main agent's middleware to no subagent.
        Name each for its agent (`name="researcher"`), so that its events and log lines say
        which agent looped.
    """

    state_schema = RepeatToolReminderMiddlewareState  # type: ignore[assignment]  # as LangChain's own do

    # Passed in a run's callbacks by mistake, it fails where LangChain's callback manager
    # reads a handler's flags, saying what goes there. Every flag: the manager logs the error
    # of the first it reads (an ignore_* flag, for most events) before raising, and that
    # error is then this one too, not "object has no attribute 'ignore_chain'".
    raise_error = run_inline = ignore_llm = ignore_chat_model = ignore_chain = _MISPLACED
    ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = _MISPLACED

    def __init__(
        self,
        config: ReminderConfig | None = None,
        *,
        name: str | None = None,
        meter_provider: MeterProviderOption = None,
        **fields: Unpack[ReminderFields],
    ) -> None:
        super().__init__()
        self.config = resolve_config(config, fields)
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        self._name = name or instance_name(type(self).__name__, self.config)
        self._shown = name or DefaultName(self._name)
        self._store = StateStore(SOURCE, self._name, run_field=False)
        self._guard = Guard(
            self.config,
            name=self._name,
            records=self._store,
            meter_provider=meter_provider,
            named=name is not None,
        )
        self.stats = self._guard.stats
        stops = self._guard.stops
        self._finishes = stops is not None and stops.asks_answer
        if stops is not None and stops.refuses and not isinstance(self, _RefusesCalls):
            # Only a guard that refuses calls has the tool-call hook (`_RefusesCalls`).
            self.__class__ = _refusing(type(self))
        # What each agent's tools declare, by the tools of its requests (one agent's tools are
        # the same objects every request); and which of them made each model turn, by its id:
        # a turn counts with its own agent's tools, whatever other agents share the instance.
        self._agents: dict[tuple[int, ...], tuple[Sequence[object], Tools]] = {}
        self._latest: tuple[Sequence[object], Tools] | None = None  # the last one put in
        self._turns = self._guard.turns
        self._counted: _Counted | None = None  # the model call's turn counted last

    @property
    def tool_policies(self) -> Mapping[str, ToolPolicy]:
        """The policies the tools of the latest request declare in their metadata."""
        return {} if self._latest is None else self._latest[1].policies

    @property
    def name(self) -> str:
        """The instance's name, which keeps its counts apart from another instance's."""
        return self._shown

    @override
    def after_agent(
        self, state: RepeatToolReminderMiddlewareState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Count the model answering after a reminder it saw, before the run ends."""
        return self._count_answer(state)

    @override
    async def aafter_agent(
        self, state: RepeatToolReminderMiddlewareState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Count the model answering after a reminder it saw, before the run ends."""
        return self._count_answer(state)

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """Count the finished turn; add the reminders it draws, or stop the loop; call the model.

        The reminders go to the model after the turn's tool results, in the form its model
        takes, and into the conversation before its answer. After `exit_behavior="finish"`
        asked the model for its answer, it is told to call no tool (`tool_choice` none), or
        gets none where it does not take that choice; a call it makes all the same is refused,
        and the run ends.
        """
        tools = self._tools(request)
        counted = self._turn(request.state, dispatch_custom_event)
        step = counted.step
        if step is not None and (step.end or step.stop is not None):
            return self._stopped(step)
        response = handler(request if counted.as_sent else self._prepare(request, counted))
        self._note_turn_tools(response, tools)
        if not counted.asked:
            return self._kept(step, response)  # most calls: the model was not asked to answer
        after = self._insisted(request.state, counted, response, dispatch_custom_event)
        return self._kept(step, response, after)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """`wrap_model_call`, with the events of its steps awaited."""
        tools = self._tools(request)
        counted = self._turn(request.state, adispatch_custom_event)
        for event in counted.sending:
            await event
        step = counted.step
        if step is not None and (step.end or step.stop is not None):
            return self._stopped(step)
        response = await handler(request if counted.as_sent else self._prepare(request, counted))
        self._note_turn_tools(response, tools)
        if not counted.asked:
            return self._kept(step, response)  # most calls: the model was not asked to answer
        after = self._insisted(request.state, counted, response, adispatch_custom_event)
        for event in after.sending:
            await event
        return self._kept(step, response, after)

    # -- counting -------------------------------------------------------------------------

    def _turn(self, state: Any, dispatch: Dispatch) -> _Counted:
        """The turn's step, the record it leaves, and its events still to be awaited.

        A wrapper that calls the model again (`ModelRetryMiddleware`, `ModelFallbackMiddleware`
        around this one) hands the same state again: that turn was counted and reported, and
        what it led to is given back.
        """
        messages: Sequence[BaseMessage] = state.get("messages", ())
        field = state.get(SOURCE)
        kept = self._counted
        if (
            kept is not None
            and kept.state is state
            and kept.field is field
            and kept.messages is messages
        ):
            return kept._replace(sending=[])
        try:
            step = self._guard.step(state, messages)
            record = self._store.read(state) if step is None else step.record
        except RepeatToolReminderWarning:
            raise  # a warning the user's warning filter made an error
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return _NOTHING
        sending = [] if step is None or step.report is None else report(step.report, dispatch)
        asked = self._finishes and bool(record.get("finishing"))
        # Most requests go to the model as they came (`_prepare`): nothing to add before the
        # model's turn, no reminder stored as a system message, no answer asked for.
        as_sent = not ((step is not None and step.messages) or record.get("system") or asked)
        # The state is held until the next turn, so that its id is never another's.
        counted = _Counted(step, record, sending, as_sent, asked, state, field, messages)
        self._counted = counted
        return counted

    def _count_answer(self, state: Any) -> dict[str, Any] | None:
        """The recovery of a model that answered after a reminder, counted in the run it ends.

        Only an answer is counted here: a tool turn still to count is left to the next model
        call, whose reminders can still reach the model.
        """
        try:
            step = self._guard.answered(state, state["messages"])
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return None
        if step is None:
            return None  # most runs: no reminder waits for its answer
        report(step.report, dispatch_custom_event)
        return step.update

    # -- model calls ----------------------------------------------------------------------

    def _stopped(
        self, step: TurnResult
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """What the model call gives instead of the model's answer, where the step stops the run.

        It raises what stops the run (`error`, `interrupt`); for a run the guard ends, it is
        the guard's final word.
        """
        if step.stop is not None:
            raise step.stop
        return self._kept(step, None)

    def _insisted(
        self, state: Any, counted: _Counted, response: ModelResponse[ResponseT], dispatch: Dispatch
    ) -> _Counted:
        """The end of a run whose model called a tool after it was asked for its answer.

        For a model call made after the request (`_Counted.asked`). Each call gets its
        refusal, and the turn is counted at once, as the next model call would count it: the
        run ends with the guard's final word, in the model's own step.
        """
        made = next((m for m in reversed(response.result) if isinstance(m, AIMessage)), None)
        if made is None or not made.tool_calls:
            return _NOTHING  # it answered
        try:
            asked = cast("Escalation", answer_requested(counted.record))
            refusals = [blocked_result(asked, call["id"] or "") for call in made.tool_calls]
            step = counted.step
            before = [] if step is None else step.messages
            where = {**state, **({} if step is None else step.update)}
            history = [*state.get("messages", ()), *before, *response.result, *refusals]
            ended = cast("TurnResult", self._guard.step(where, history))  # the turn just made
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return _NOTHING
        ended = ended._replace(messages=[*refusals, *ended.messages])
        return _Counted(ended, ended.record, report(ended.report, dispatch))

    @staticmethod
    def _kept(
        step: TurnResult | None,
        response: ModelResponse[ResponseT] | None,
        after: _Counted | None = None,
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """The model's response (None: the guard ends the run), with what the steps add.

        The step's messages go before the model's, after the turn's tool results, where the
        model saw them; what came `after` the answer, after it; the records go to the state
        beside them.
        """
        last = None if after is None else after.step
        before = [] if step is None else step.messages
        update = {} if step is None else step.update
        if last is not None:
            update = {**update, **last.update}
        if before or last is not None or response is None:
            result = [
                *before,
                *(response.result if response else ()),
                *(last.messages if last else ()),
            ]
            structured = None if response is None else response.structured_response
            response = ModelResponse(result, structured)
        if not update:
            return response  # the record did not change (or counting failed): as it came
        # Most turns: the model's answer as it came, and the record that names its turn.
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def _prepare(
        self, request: ModelRequest[ContextT], counted: _Counted
    ) -> ModelRequest[ContextT]:
        """The request with the step's messages, in the form its model takes them.

        Decided for this request alone, from its own model: nothing of one request's model is
        kept for the next, which may be another agent's.
        """
        step, record = counted.step, counted.record
        try:
            if step is not None and step.messages:
                messages = [*request.messages, *step.messages]
                request = request.override(messages=cast("list[AnyMessage]", messages))
            if counted.asked:
                request = self._for_answer(request)
            if not record.get("system"):
                return request  # most calls: no reminder stored as a system message
            messages = prepare_messages(request.messages, request.model)
            if messages is request.messages:
                return request  # a model that takes them as they are stored
            return request.override(messages=cast("list[AnyMessage]", messages))
        except Exception:
            logger.exception("repeat reminder rendering failed; messages sent as stored")
            return request

    @staticmethod
    def _for_answer(request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        """The model's last call, asked for its answer: with no tool to call.

        Its loop is shown once (`shown_once`). The tools are sent as before, with the
        `tool_choice` that tells the model to call none, where it takes one (`no_tool_choice`):
        the head of the prompt, where the tools sit, stays the prefix a provider has cached.
        Elsewhere, and beside a `response_format` (LangChain then forces its structured output
        tool, or sends no choice), they are withheld. A call made all the same is refused,
        and the run ends (`_insisted`).
        """
        choice = None
        if request.tools and request.response_format is None:
            choice = no_tool_choice(request.model)
        shown = cast("list[AnyMessage]", shown_once(cast("list[BaseMessage]", request.messages)))
        if choice is None:
            return request.override(messages=shown, tools=[], tool_choice=None)
        return request.override(messages=shown, tool_choice=choice)

    def _tools(self, request: ModelRequest[ContextT]) -> Tools:
        """What the request's agent's tools declare, read once per set of tools.

        Read before its turn counts: a turn this instance did not see made (a history handed
        in, a thread resumed in another process) counts with the tools of the one agent it has
        seen, if it has seen only one; else with none it could mistake for another agent's.
        """
        tools = request.tools or ()
        latest = self._latest
        if latest is not None and latest[0] is tools:
            return latest[1]  # most requests: the same agent's list as the request before
        try:
            return self._learn(tools)
        except Exception:
            logger.exception("repeat reminder failed to read the tools; they declare nothing")
            return NO_TOOLS

    def _learn(self, tools: Sequence[object]) -> Tools:
        key = tuple(map(id, tools))
        known = self._agents.pop(key, None)  # taken out and put back: the latest is last
        if known is None:
            if len(self._agents) >= _AGENTS:
                del self._agents[next(iter(self._agents))]
            known = (tools, Tools.of(tools))  # the tools kept, so that their ids stay theirs
        self._agents[key] = self._latest = known
        self._turns.default = known[1] if len(self._agents) == 1 else NO_TOOLS
        return known[1]

    def _note_turn_tools(self, response: object, tools: Tools) -> None:
        """Note the turn of the model's response as made with `tools`."""
        inner = getattr(response, "model_response", response)
        for message in getattr(inner, "result", None) or (inner,):
            if isinstance(message, AIMessage) and message.id:
                if len(self._turns) >= _TURNS:
                    del self._turns[next(iter(self._turns))]
                self._turns[message.id] = tools

    # -- tool calls -----------------------------------------------------------------------

    def _blocked(self, request: ToolCallRequest) -> ToolMessage | None:
        """The error result of a call that reaches the limit; None: it runs."""
        try:
            state = request.state
            record = self._store.read(state)
            call_id = request.tool_call.get("id") or ""
            turn, tools = self._guard.read(state.get("messages", ()), record)
            position = next((i for i, c in enumerate(turn.calls) if c.id == call_id), None)
            if position is None:
                return None
            policies, schemas = tools.policies, tools.schemas
            escalation = self._guard.counter.predict(record, turn, position, policies, schemas)
        except Exception:
            logger.exception("repeat reminder check failed; the call runs")
            return None
        return None if escalation is None else blocked_result(escalation, call_id)


class _RefusesCalls(RepeatToolReminderMiddleware[Any, Any]):
    """The tool-call hook, had only by a guard that refuses calls (`exit_behavior="block"`).

    `create_agent` runs every tool call of an agent through each tool-call hook its middleware
    has, whatever the hook does: some 60 µs a turn (`make bench`'s whole runs).
    """

    @override
    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the call, unless it reaches the limit: it gets an error result instead."""
        blocked = self._blocked(request)
        return blocked if blocked is not None else handler(request)

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Run the call, unless it reaches the limit: it gets an error result instead."""
        blocked = self._blocked(request)
        return blocked if blocked is not None else await handler(request)


def _refusing(face: type[Any]) -> type[Any]:
    """`face` with the tool-call hook (`_RefusesCalls`), under its own name."""
    if face is RepeatToolReminderMiddleware:
        return _RefusesCalls
    names = {"__module__": face.__module__, "__qualname__": face.__qualname__}
    return type(face.__name__, (_RefusesCalls, face), {**names, "__doc__": face.__doc__})
