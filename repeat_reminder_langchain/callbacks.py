"""The callback handler: one chain per agent, found from where each run sits in the run tree.

An agent is a model and its tools talking in one conversation. The handler tells agents apart
by three things every run carries: the conversation (`thread_id`, or without one the root
run), the graph namespace (`langgraph_checkpoint_ns` without its last segment), and the tool
calls the run is nested in (a subagent started by a tool is a different agent from the one that
called the tool, and two subagents started by two calls are different from each other).

The calls themselves are counted from the conversation, not from tool runs: the model's
`AIMessage` lists every call it made in order, including calls to tools that do not exist and
calls refused before they ran, which fire no tool callbacks at all.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from .chain import Chain
from .config import ReminderConfig, resolve_config
from .events import report
from .messages import observe
from .policy import ToolSpecs
from .reminder import Reminder
from .stats import Stats

__all__ = ["RepeatToolReminderCallbackHandler"]

logger = logging.getLogger("repeat_reminder_langchain")

_Scope = tuple[str, Any]  # ("thread", thread_id) or ("run", root run id)
_AgentKey = tuple[_Scope, str, tuple[str, ...]]
_NO_CHAIN = Chain()


class _Run(NamedTuple):
    root: int  # the root run's id, as an integer (a UUID hashes in Python, an int in C)
    path: tuple[str, ...]  # the tool calls this run is nested in, outermost first
    call: str | None = None  # on a tool run: the call its own child runs are nested in

    def child_lineage(self) -> tuple[int, tuple[str, ...]]:
        return self.root, self.path if self.call is None else (*self.path, self.call)


class RepeatToolReminderCallbackHandler(BaseCallbackHandler):
    """Keeps one repeat chain per agent for the runs it watches.

    Pass it in the run's callbacks and place a `RepeatToolReminderNode` built on it after the
    tools node; the node counts each finished tool turn and adds the reminders that are due.
    Subagents run inside tools inherit the callbacks and get chains of their own.

    Chains of a conversation with a `thread_id` outlive the run (a resumed or continued thread
    keeps counting); chains of a run without one are forgotten when it ends. At most
    `max_agents` chains are kept, least recently used first out.

    `stats` holds running totals (`handler.stats.snapshot()`); `tool_specs` the policies the
    tools declared in their metadata, learnt as they run.

    Args:
        config: A `ReminderConfig`. Give either this or its fields, not both.
        **fields: `ReminderConfig` fields (`thresholds`, `include`, `exclude`,
            `arguments_preview_chars`, `message_type`, `repeat_every`, `ignore_arguments`,
            `progress`, `mode`).

    Example:
        >>> guard = RepeatToolReminderCallbackHandler(thresholds=[3, 5, 8], exclude=["todo_*"])
        >>> guard.config.thresholds
        (3, 5, 8)

    """

    run_inline = True
    max_agents: int = 10_000
    max_runs: int = 100_000

    def __init__(self, config: ReminderConfig | None = None, **fields: Any) -> None:
        self.config = resolve_config(config, fields)
        self._lock = threading.Lock()
        self._runs: dict[int, _Run] = {}  # by run id, as an integer
        self._chains: OrderedDict[_AgentKey, Chain] = OrderedDict()
        self._by_root: dict[Any, set[_AgentKey]] = {}
        self._warned = False
        self.stats = Stats()
        self.tool_specs = ToolSpecs()

    @property
    def agent_count(self) -> int:
        """How many agents' chains are held now."""
        with self._lock:
            return len(self._chains)

    # -- the run tree ---------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Place the run in the tree."""
        self._enter(run_id, parent_run_id, None)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the run out of the tree; a finished root forgets its chains."""
        self._leave(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the run out of the tree; a finished root forgets its chains."""
        self._leave(run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Place the tool run in the tree; read the policy the tool declares, if any.

        Whatever runs inside the tool belongs to another agent.
        """
        self._enter(run_id, parent_run_id, kwargs.get("tool_call_id") or f"run:{run_id}")
        self.tool_specs.learn((serialized or {}).get("name"), kwargs.get("metadata"))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the tool run out of the tree."""
        self._leave(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the tool run out of the tree."""
        self._leave(run_id)

    # -- the conversation -----------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Count what no node counted (no node, or a route around it); reset on a user message.

        Defining this method also keeps langchain-core from falling back to `on_llm_start`,
        which renders every message as a string and fails on arguments whose `str()` fails.
        """
        parent = self._runs.get(parent_run_id.int) if parent_run_id is not None else None
        if parent is None or not messages:
            return
        key = self._agent_key(*parent.child_lineage(), metadata)
        if key is not None:
            self._observe(key, messages[0], None)

    def take_reminders(
        self, messages: Sequence[BaseMessage], config: RunnableConfig
    ) -> list[Reminder]:
        """Count the agent's finished tool turn and return the reminders it draws.

        `RepeatToolReminderNode` calls this with its state's messages and its own `config`,
        which tells which agent it serves. Nothing is counted while a call of the turn still
        lacks its result.
        """
        run_id = getattr(config.get("callbacks"), "parent_run_id", None)
        run = self._runs.get(run_id.int) if isinstance(run_id, UUID) else None
        if run is None:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "RepeatToolReminderNode ran outside the handler's sight: pass the handler "
                    "in the run's callbacks, e.g. graph.invoke(inputs, "
                    "config={'callbacks': [handler]}). No reminders are added meanwhile."
                )
            return []
        key = self._agent_key(run.root, run.path, config.get("metadata"))
        return [] if key is None else self._observe(key, messages, config)

    # -- bookkeeping ----------------------------------------------------------------------

    def _agent_key(
        self, root: int, path: tuple[str, ...], metadata: Mapping[str, Any] | None
    ) -> _AgentKey | None:
        namespace = metadata.get("langgraph_checkpoint_ns") if metadata else None
        if not isinstance(namespace, str):
            return None  # not inside a graph, so not inside an agent
        thread = metadata.get("thread_id") if metadata else None
        scope: _Scope = ("run", root) if thread is None else ("thread", thread)
        return scope, namespace.rpartition("|")[0], path

    def _observe(
        self, key: _AgentKey, messages: Sequence[BaseMessage], where: RunnableConfig | None
    ) -> list[Reminder]:
        # Reading needs no lock (a single dict operation); counting canonicalises arguments,
        # which may be large, so it runs outside it too. One agent's steps run one after
        # another, so nothing else writes this chain meanwhile.
        chain = self._chains.get(key, _NO_CHAIN)
        tally = observe(chain, messages, self.config, self.tool_specs)
        if tally.chain is not chain:
            with self._lock:
                self._store(key, tally.chain)
        if tally.calls:
            report(tally, self.stats, self.config, where)
        return list(tally.reminders)

    def _store(self, key: _AgentKey, chain: Chain) -> None:
        if chain == _NO_CHAIN:
            self._chains.pop(key, None)  # nothing worth remembering
            return
        known = key in self._chains
        self._chains[key] = chain
        if known:
            self._chains.move_to_end(key)
            return
        scope = key[0]
        if scope[0] == "run":
            self._by_root.setdefault(scope[1], set()).add(key)
        while len(self._chains) > self.max_agents:
            old, _ = self._chains.popitem(last=False)
            if old[0][0] == "run":
                self._by_root.get(old[0][1], set()).discard(old)

    # Every run of the graph passes through these two: single dict operations, atomic on
    # their own, so no lock but for the rare trimming and the end of a root run.
    def _enter(self, run_id: UUID, parent_run_id: UUID | None, call: str | None) -> None:
        key = run_id.int
        parent = self._runs.get(parent_run_id.int) if parent_run_id is not None else None
        if parent is None:
            self._runs[key] = _Run(key, (), call)
        elif parent.call is None:
            self._runs[key] = _Run(parent.root, parent.path, call)
        else:
            self._runs[key] = _Run(parent.root, (*parent.path, parent.call), call)
        if len(self._runs) > self.max_runs:
            # Runs whose end never came (a handler added mid-run): drop the oldest.
            with self._lock, contextlib.suppress(RuntimeError, StopIteration, KeyError):
                del self._runs[next(iter(self._runs))]

    def _leave(self, run_id: UUID) -> None:
        key = run_id.int
        run = self._runs.pop(key, None)
        if run is not None and run.root == key:
            with self._lock:
                for agent in self._by_root.pop(key, ()):
                    self._chains.pop(agent, None)
