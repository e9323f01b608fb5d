"""Settings from the user's own logs: what the conversations say the guard should be told.

Three settings decide what the guard sees, and each can be read off the conversations rather
than guessed. A proposal adds to what the guard does as installed (or as given): what the
settings already cover is not proposed, and a value proposed keeps what it replaces (the
default bookkeeping tools in `exclude`, the default `error_pattern`, the detectors in `detect`):

* **bookkeeping tools** (`exclude`): a tool called between two otherwise identical calls, with
  new arguments each time and results all empty or all the same, hides the repeat from the
  guard (τ-bench's `think`);
* **`error_pattern`**: tools that *return* their errors mark them in the text, by a word such
  as `Error: ` at the start or by an envelope with a non-zero return code
  (`<returncode>1</returncode>`); where the log also marks results `status="error"`, the
  pattern is checked against them. A way of failing the pattern in use already recognises in
  every result (the default's `Error: `) is not proposed;
* **`not_user`**: a user-role text that comes back word for word (numbers aside) in many
  conversations, after the task, and that the model answers, is a harness speaking
  (mini-swe-agent's format notice), not a person: a person's recurring reply ("Yes, please
  proceed with the cancellation…") comes in many wordings, and a sign-off ends the talk.

`Suggester` reads conversations one at a time, keeping counts only; `finish` proposes the
settings, each with its evidence. Then `Sweeper` counts, with the settings proposed, how many
flags each detector raises at each threshold, and its `finish` proposes the detectors (`detect`)
whose flags the logs show, beside those already in use: a suggestion turns on what its own
evidence found. The command line's `audit --suggest` prints both.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from .._canonical import canonicalize, digest, result_text
from .._config import ReminderConfig
from .._conversation import is_user_message
from .._detectors import DETECTORS
from .._reminder import preview
from ..replay import replay
from ._logs import Conversation

__all__ = ["AT", "SWEEP", "Proposal", "Suggester", "Suggestion", "Sweeper"]

SWEEP = (2, 3, 4)
"""The thresholds the sweep counts flags at."""

AT = 3
"""The threshold a detector is proposed at: every detector's first by default."""

_ERROR_WORDS = re.compile(r"error|exception|fail|traceback|denied|invalid", re.IGNORECASE)
_PREFIX = re.compile(r"\A([A-Za-z][\w .()-]{0,40}?):[ \n]")
_ENVELOPE = re.compile(r"\A<(\w+)>(-?\d+)</\1>")
_HEAD = 40  # characters of a user-role text that say it is the same notice
_LONG = 40  # a notice shorter than this is a person's "yes, please"
_FIXED = 0.9  # of the texts with one head, the share in one wording that makes it a template
_WORDINGS = 8  # wordings counted per head; the rest are counted together
_NUMBERS = re.compile(r"\d+")
_KEPT = 10_000  # distinct user-role heads counted at most; the rarest go first
_SHOWN = 80  # characters of an example


@dataclass(frozen=True, slots=True)
class Proposal:
    """One setting the logs call for, with why.

    Attributes:
        setting: The `ReminderConfig` field.
        value: What to set it to: the whole value, with what it replaces kept (the tools
            `exclude` held, the `error_pattern` in use, the detectors `detect` held).
        reasons: What the logs show, one mapping for each tool, way of failing or notice
            the value covers (`_tables.proposal_lines` words them).
        conversations: How many conversations show it.
        example: Where to see it: a conversation, its calls, a text.
    """

    setting: str
    value: Any
    reasons: tuple[dict[str, Any], ...]
    conversations: int
    example: str

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for `--json`."""
        return {
            "setting": self.setting,
            "value": self.value,
            "reasons": list(self.reasons),
            "conversations": self.conversations,
            "example": self.example,
        }


@dataclass
class Suggestion:
    """What the logs call for.

    Attributes:
        conversations: Conversations read.
        proposals: Each setting proposed, with its evidence (none when the logs call for none).
        config: The settings given, with the proposals applied.
        sweep: Per detector, per threshold of `SWEEP`, the flags the suggested settings raise
            and the conversations they fall in (filled by `Sweeper`).
        failures: The tracked calls whose results the detectors took for failures
            (`status="error"` or `error_pattern`), counted by `Sweeper`: with none, the
            detectors of failures cannot count on these logs.
    """

    conversations: int
    proposals: list[Proposal]
    config: ReminderConfig
    sweep: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    failures: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for `--json`."""
        config = self.config
        return {
            "conversations": self.conversations,
            "proposals": [proposal.as_dict() for proposal in self.proposals],
            "settings": config.model_dump(mode="json", include=set(config.model_fields_set)),
            "sweep": {
                detector: {str(at): {"flags": f, "conversations": c} for at, (f, c) in row.items()}
                for detector, row in self.sweep.items()
            },
            "failures": self.failures,
        }


@dataclass(slots=True)
class _Tool:
    """One tool across the conversations: whether its results vary, and what it hides."""

    results: int = 0
    result: str | None = None  # the digest of its one non-empty result so far
    varies: bool = False
    key: str | None = None  # its one set of arguments so far
    asked: bool = False  # whether it was called with several
    hides: int = 0  # conversations in which it stands between two identical calls
    example: str = ""


@dataclass(slots=True)
class _Head:
    """A way results start: how often, in how many conversations, for which tools."""

    results: int = 0
    conversations: int = 0
    last: int = -1
    tools: set[str] = field(default_factory=set)
    failed: int = 0  # of them, results marked status="error"
    known: int = 0  # of them, results the error_pattern in use already recognises
    nonzero: int = 0  # for an envelope: results with a non-zero code
    empty: int = 0  # of those, with nothing after the envelope
    example: str = ""
    wordings: dict[str, int] = field(default_factory=dict)  # a user text: by digest, digits aside
    answered: int = 0  # a user text: how often the model spoke next


class Suggester:
    """Reads conversations one at a time and proposes the settings they call for.

    Args:
        config: The settings given: a setting given is not proposed again, and the proposals
            are made on top of it.
    """

    def __init__(self, config: ReminderConfig | None = None) -> None:
        self.config = config or ReminderConfig()
        # The pattern in use, the profile's when none is given: a way of failing it recognises
        # in every result is not proposed again, and a pattern proposed keeps it.
        pattern = self.config.error_pattern
        self._known = re.compile(pattern) if pattern is not None else None
        self.conversations = 0
        self._tools: dict[str, _Tool] = {}
        self._prefixes: dict[str, _Head] = {}
        self._envelopes: dict[str, _Head] = {}
        self._results = 0
        self._failed = 0
        self._users: dict[str, _Head] = {}
        self._tracked: dict[str, bool] = {}

    def _tracks(self, tool: str) -> bool:
        """Whether the guard counts `tool`'s calls, asked once per tool."""
        tracked = self._tracked.get(tool)
        if tracked is None:
            tracked = self._tracked[tool] = self.config.tracks(tool)
        return tracked

    def add(self, conversation: Conversation) -> None:
        """Count what one conversation shows."""
        self.conversations += 1
        index = conversation.index
        calls: list[tuple[str, str]] = []
        results: dict[str, tuple[str, str]] = {}  # call id -> (tool, key)
        seen_model = False
        messages = conversation.messages
        for position, message in enumerate(messages):
            if isinstance(message, AIMessage):
                seen_model = True
                for call in message.tool_calls:
                    key = canonicalize(call["args"])
                    calls.append((call["name"], key))
                    results[call.get("id") or ""] = (call["name"], key)
            elif isinstance(message, ToolMessage):
                tool = results.get(message.tool_call_id, (message.name or "", ""))[0]
                self._result(index, tool, message)
            elif seen_model and is_user_message(message):
                after = messages[position + 1] if position + 1 < len(messages) else None
                self._user(index, message, answered=isinstance(after, AIMessage))
        for tool, key in calls:
            slot = self._tools.setdefault(tool, _Tool())
            if slot.key is None:
                slot.key = key
            elif slot.key != key:
                slot.asked = True
        self._hidden(index, calls)

    def _result(self, index: int, tool: str, message: ToolMessage) -> None:
        text = result_text(message.content)
        failed = message.status == "error"
        self._results += 1
        self._failed += failed
        slot = self._tools.setdefault(tool, _Tool())
        slot.results += 1
        if text.strip():
            fingerprint = digest(text)
            if slot.result is None:
                slot.result = fingerprint
            elif slot.result != fingerprint:
                slot.varies = True
        envelope = _ENVELOPE.match(text)
        if envelope is not None:
            head = _count(self._envelopes, envelope[1], index, tool, failed, "")
            if envelope[2] != "0":
                head.nonzero += 1
                empty = _empty(text[envelope.end() :])
                head.empty += empty
                if not empty and not head.example:  # a failure, to show one
                    head.example = _example(index, text)
            return
        prefix = _PREFIX.match(text)
        if prefix is not None and _ERROR_WORDS.search(prefix[1]):
            head = _count(self._prefixes, prefix[1], index, tool, failed, text)
            head.known += self._known is not None and self._known.search(text) is not None

    def _user(self, index: int, message: BaseMessage, *, answered: bool) -> None:
        text = message.text.strip()
        if len(text) < _LONG:
            return
        slot = _count(self._users, text[:_HEAD], index, "", False, text)
        slot.answered += answered
        wording = digest(_NUMBERS.sub("#", text))
        if wording not in slot.wordings and len(slot.wordings) >= _WORDINGS:
            wording = ""  # one of many: counted with the rest, never a template's
        slot.wordings[wording] = slot.wordings.get(wording, 0) + 1
        if len(self._users) > _KEPT:  # heavy hitters only: what was seen once goes first
            for head in [h for h, slot in self._users.items() if slot.results == 1]:
                del self._users[head]

    def _hidden(self, index: int, calls: list[tuple[str, str]]) -> None:
        """For each tool, whether leaving its calls out makes two identical calls adjacent.

        As the guard sees them: the tools it looks through already (`exclude`) are left out
        too, and are not proposed again.
        """
        tracked = [(n, call) for n, call in enumerate(calls) if self._tracks(call[0])]
        for tool in {call[0] for _, call in tracked}:
            # Where each call stands among the tracked (a gap is the tool's calls), and in all.
            kept = [(i, n, call) for i, (n, call) in enumerate(tracked) if call[0] != tool]
            for (i, a, first), (j, b, second) in itertools.pairwise(kept):
                if first == second and j - i > 1:
                    slot = self._tools.setdefault(tool, _Tool())
                    slot.hides += 1
                    if not slot.example:
                        slot.example = f"conversation {index}, calls {a}-{b}"
                    break

    def finish(self) -> Suggestion:
        """The settings the conversations call for, on top of the settings given."""
        proposals = [*self._excluded(), *self._error_pattern(), *self._not_user()]
        fields = {name: getattr(self.config, name) for name in self.config.model_fields_set}
        fields.update((proposal.setting, proposal.value) for proposal in proposals)
        return Suggestion(self.conversations, proposals, ReminderConfig(**fields))

    def _excluded(self) -> list[Proposal]:
        tools = [
            name
            for name, slot in sorted(self._tools.items())
            # Called with new arguments each time, it answers alike: a note, not an attempt.
            # (A tool asked the same each time, between the same attempts, is half a cycle.)
            # A tool the guard looks through already hides nothing (`_hidden`).
            if slot.hides and slot.asked and not slot.varies
        ]
        if not tools:
            return []
        slots = [self._tools[name] for name in tools]
        reasons = tuple(
            {"tool": name, "hides": slot.hides, "results": slot.results, "empty": not slot.result}
            for name, slot in zip(tools, slots, strict=True)
        )
        # A list set replaces the profile's (the bookkeeping tools): the tools it held are kept.
        value = [*self.config.exclude, *tools]
        return [Proposal("exclude", value, reasons, sum(s.hides for s in slots), slots[0].example)]

    def _error_pattern(self) -> list[Proposal]:
        if "error_pattern" in self.config.model_fields_set:
            return []
        alternatives: list[str] = []
        reasons: list[dict[str, Any]] = []
        conversations, example = 0, ""
        for tag, head in sorted(self._envelopes.items()):
            # An envelope on most results, non-zero on some: the code says a call failed. One
            # with nothing in it is a command that found nothing (grep), not a failure.
            if head.results * 2 < self._results or not head.nonzero:
                continue
            alternatives.append(rf"\A<{tag}>(?!0<)-?\d+</{tag}>(?!\s*<(\w+)>\s*</\1>\s*\Z)")
            reasons.append(
                {
                    "envelope": tag,
                    "results": head.results,
                    "nonzero": head.nonzero,
                    "empty": head.empty,
                }
            )
            conversations += head.conversations
            example = example or head.example
        for prefix, head in sorted(self._prefixes.items(), key=lambda item: -item[1].results):
            if head.conversations < 2 and head.results < 3:  # once or twice is no habit
                continue
            if head.known == head.results:  # the pattern in use sees each already
                continue
            alternatives.append(r"\A" + _escape(prefix) + ":")
            reasons.append(
                {
                    "prefix": prefix,
                    "results": head.results,
                    "tools": len(head.tools),
                    "failed": head.failed,
                    "marked": self._failed,
                }
            )
            conversations += head.conversations
            example = example or head.example
        if not alternatives:
            return []
        if self.config.error_pattern is not None:
            # A pattern set replaces the profile's (`Error: ...`): what that one sees is kept.
            alternatives.insert(0, self.config.error_pattern)
        pattern = (
            alternatives[0]
            if len(alternatives) == 1
            else "|".join(f"(?:{alternative})" for alternative in alternatives)
        )
        return [Proposal("error_pattern", pattern, tuple(reasons), conversations, example)]

    def _not_user(self) -> list[Proposal]:
        if self.config.not_user is not None:
            return []
        # A notice the harness sends when the model errs comes back in many conversations, in
        # one wording (numbers aside), and the model answers it. A person's recurring "yes,
        # please proceed with the cancellation…" comes in many wordings; a "thank you, bye"
        # ends the conversation. Long texts only (`_LONG`), after the task.
        least = max(3, self.conversations // 10)
        found = [
            (head, slot)
            for head, slot in sorted(self._users.items())
            if slot.conversations >= least
            and _fixed(slot) >= _FIXED * slot.results
            and slot.answered * 2 > slot.results
        ]
        if not found:
            return []
        pattern = r"\A(?:" + "|".join(_escape(head) for head, _ in found) + ")"
        if len(found) == 1:
            pattern = r"\A" + _escape(found[0][0])
        reasons = tuple(
            {
                "head": head,
                "messages": slot.results,
                "conversations": slot.conversations,
                "fixed": _fixed(slot),
                "answered": slot.answered,
            }
            for head, slot in found
        )
        conversations = sum(slot.conversations for _, slot in found)
        return [Proposal("not_user", pattern, reasons, conversations, found[0][1].example)]


class Sweeper:
    """Counts, per detector and threshold, the flags the suggested settings raise.

    A call flags at threshold `t` when the detector's count for it is `t`: what the detector
    alone, with `t` its only threshold, would remind of there. Every detector is counted.
    `finish` then proposes the detectors the flags support.
    """

    def __init__(self, suggestion: Suggestion) -> None:
        self.suggestion = suggestion
        config = suggestion.config
        fields = {name: getattr(config, name) for name in config.model_fields_set}
        fields.update(detect=tuple(DETECTORS), escalate_after=None)
        fields.pop("exit_behavior", None)
        self._config = ReminderConfig(**fields)
        self._example: dict[str, str] = {}  # per detector, its first flag at `AT`
        for detector in DETECTORS:
            suggestion.sweep[detector] = dict.fromkeys(SWEEP, (0, 0))

    def add(self, conversation: Conversation) -> None:
        """Count one conversation's flags, and the failures it shows."""
        found: dict[tuple[str, int], int] = {}
        for item in replay(conversation.messages, self._config):
            self.suggestion.failures += item.trace is not None and item.trace.failed
            for name, count in item.trace.counts.items() if item.trace else ():
                if count in SWEEP:
                    found[name, count] = found.get((name, count), 0) + 1
                if count == AT and name not in self._example:
                    self._example[name] = (
                        f"conversation {conversation.index}, message {item.message}: "
                        f"{item.call.tool} ({name})"
                    )
        for (detector, at), flags in found.items():
            total, conversations = self.suggestion.sweep[detector][at]
            self.suggestion.sweep[detector][at] = (total + flags, conversations + 1)

    def finish(self) -> Suggestion:
        """The suggestion, with `detect` proposed.

        The detectors in use (`repeat` alone, or the defaults' `same_error` and
        `recurring_error` too), and every other detector with flags at `AT`; one that does not
        remind unless asked (`remind`, `same_output`'s default) is shown, not proposed. Nothing
        when no detector is to be added, or when the settings given name `detect`.
        """
        suggestion = self.suggestion
        config = suggestion.config
        if "detect" in config.model_fields_set:
            return suggestion
        reasons: list[dict[str, Any]] = []
        chosen, seen = list(config.detect), 0
        in_use = len(chosen)
        for name in DETECTORS:
            flags, conversations = suggestion.sweep[name][AT]
            if name in config.detect or not flags:
                continue
            reasons.append({"detector": name, "flags": flags, "conversations": conversations})
            if config.detector_settings(name).remind:
                chosen.append(name)
                seen = max(seen, conversations)
            else:  # its flags, by its own measure, are mostly not worth a reminder
                reasons[-1]["reports only"] = True
        if len(chosen) == in_use:
            return suggestion
        proposal = Proposal("detect", chosen, tuple(reasons), seen, self._example[chosen[in_use]])
        fields = {name: getattr(config, name) for name in config.model_fields_set}
        suggestion.proposals.append(proposal)
        suggestion.config = ReminderConfig(**fields, detect=chosen)
        return suggestion


def _count(  # noqa: PLR0917 - one result's facts, as each reader has them
    heads: dict[str, _Head], name: str, index: int, tool: str, failed: bool, text: str
) -> _Head:
    head = heads.setdefault(name, _Head())
    head.results += 1
    head.failed += failed
    if tool:
        head.tools.add(tool)
    if head.last != index:
        head.last = index
        head.conversations += 1
    if text and not head.example:
        head.example = _example(index, text)
    return head


def _fixed(head: _Head) -> int:
    """How many of a head's texts are in its commonest wording, numbers aside."""
    return max((n for wording, n in head.wordings.items() if wording), default=0)


def _example(index: int, text: str) -> str:
    return f"conversation {index}: {preview(' '.join(text.split()), _SHOWN)}"


def _escape(text: str) -> str:
    """`text` as a pattern that matches it literally, its spaces left as they are."""
    return re.escape(text).replace("\\ ", " ")


def _empty(rest: str) -> bool:
    """Whether what follows an envelope holds nothing: no text, or only empty elements."""
    return not re.sub(r"<(\w+)>\s*</\1>", "", rest).strip()
