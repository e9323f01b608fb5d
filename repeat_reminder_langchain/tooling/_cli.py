"""Command line: `repeat-reminder demo|audit ...` (`--help` for each).

Also run as `python -m repeat_reminder_langchain`. Every error is one line on standard error
and exit code 2; Ctrl-C is one line too, `interrupted`, and exit code 130. A file the
command writes is never written over unless `--overwrite` says to, and then only once it is
complete (`_files.Beside`). Options go in any order,
lists are comma-separated (and list options may be repeated).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass
from types import UnionType
from typing import IO, Any, Literal, NoReturn, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import SecretStr
from pydantic.fields import FieldInfo

from .. import __version__
from .._checks import did_you_mean
from .._config import ConfigError, ReminderConfig, file_text, short_forms
from .._detectors import DETECTORS
from .._files import Beside, same_file
from .._log import LOGGER_NAME
from .._settings_file import settings_text

__all__ = ["main"]

_AUDIT_HELP = """\
FILE: saved conversations, one or many: a file, a glob (quote it), or - for standard input.
Read without a flag: LangChain message dicts (messages_to_dict), OpenAI chat-completions
messages, Anthropic Messages; bare lists or records holding one (like {"messages": [...]} or
τ-bench's {"task_id", "traj", ...}); JSON, JSON Lines, gzip.
Or, instead of files, --checkpointer URL (postgresql://... or sqlite:///PATH, with the
checkpointers extra): the threads a LangGraph checkpointer keeps, each thread's latest state
(its messages), read-only, in thread id order. Findings then name the thread (the id column
of files) and the checkpoint their messages were read from.

The per-tool table:
  calls      calls made to the tool (untracked calls included)
  longest    the longest run of identical consecutive calls
  streaks    runs of two or more identical consecutive calls
  gentle     gentle reminders the guard would have sent (a detector's first threshold)
  detailed   detailed reminders it would have sent (every later threshold)
  escalated  loops it would have stopped (shown with --escalate-after)
  wasted     wasted calls: calls for which a detector's count was past its first
             threshold, so the guard had already reminded the model; a run of 6 identical
             calls with thresholds 3,5,8 wastes 3 calls
Per detector: reminders, escalations, and conversations with at least one of them.
Top conversations (--top): conversation (its index in the input, from 0 across all
  files), id (the record's id, if it has one; thread and checkpoint for a checkpointer's
  threads), calls, reminders, wasted, and tokens: the
  input and output tokens of the model turns that made wasted calls, where the log records
  usage (usage_metadata, or usage in OpenAI and Anthropic logs); "—" when it does not.
Findings, one per model turn the guard would have reminded (one message): conversation,
  id, message (the index of the model message that made the calls, in the conversation's
  (or state's) list; "position" in --json), tool, detector (the one that fired),
  count (what the detector counted), level (gentle, detailed, escalated) and arguments
  (canonical, cut to 100 characters); for a turn whose calls drew several reminders, each
  one's values side by side ("reasons" in --json); and sent (when the conversations hold
  reminders the guard sent): yes where the conversation holds that turn's reminder.
A note says when excluding a bookkeeping tool (think, write_todos, ...) would reveal more.

--suggest reads the conversations for the settings they call for instead, each with its
evidence: bookkeeping tools to exclude (called between identical calls, their results empty
or constant), an error_pattern (how results that are errors start), not_user (a user-role
notice that starts alike in many conversations); then, with them, the flags each detector
would raise at thresholds 2, 3 and 4. It prints them as Python and as options;
--write-config FILE writes them for --config and ReminderConfig.from_file.
--write-config and --html never write over a file that is there: they say so and stop, before
reading; --overwrite replaces it.

Exit codes: 0 done; 1 --fail-on was met; 2 bad input or options (one line on stderr);
130 interrupted (Ctrl-C)."""

_DEMO_HELP = """\
Runs offline on a scripted model. --scenario poll: it polls a finished job and changes
course at the detailed reminder. --scenario stale: it re-runs the same test between other
steps and gets the same output (try --detect repeat,stale).
With --escalate-after N the guard stops the loop at N, as --exit-behavior says: end ends the
run with a final message; finish asks the model for its answer in one more call without its
tools (the demo's model answers with what it has); error prints the RepeatToolLoopError on
one line and exits 1; interrupt pauses for a human, and the demo answers "end" for you (it
runs unattended); block refuses the looping call before it runs, which only the middleware
(create_agent) can do, so the demo refuses it.

Exit codes: 0 done; 1 the guard raised RepeatToolLoopError; 2 bad options; 130 interrupted
(Ctrl-C)."""


class _Failure(Exception):
    """A command that cannot go on: the one-line message to print."""


class _UsageError(_Failure):
    """A command line that cannot run: the message, and the command whose usage to show."""

    def __init__(self, message: str, command: str = "") -> None:
        super().__init__(message)
        self.command = command


def _usage(command: str) -> str:
    """One line saying how `command` (or, when empty, the program) is run."""
    program = _program()
    more = f"{program} {command} --help" if command else f"{program} --help"
    if command == "demo":
        return f"usage: {program} demo [options]; {more} lists them"
    if command == "audit":
        return f"usage: {program} audit FILE... | --checkpointer URL [options]; {more} lists them"
    if command == "lab":
        return f"usage: {program} lab --model MODEL [--base-url URL] [options]; {more} lists them"
    commands = f"{program} demo [options], {program} audit FILE... [options], or {program} lab"
    return f"usage: {commands}; {more} says more"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, command: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command = command

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message, self.command)


def _numbers(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, like 3,5,8; got {text!r}"
        )
    return [int(part) for part in parts]


def _names(example: str) -> Callable[[str], list[str]]:
    """A list option's parser, whose refusal shows what the option takes (`example`)."""

    def parse(text: str) -> list[str]:
        parts = [part.strip() for part in text.split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(
                f"expected names separated by commas, like {example}; got {text!r}"
            )
        return parts

    return parse


def _detectors(text: str) -> list[str]:
    if text.strip() == "all":
        return list(DETECTORS)
    names = _names("repeat,stale")(text)
    if "all" in names:
        raise argparse.ArgumentTypeError(
            f"all names every detector: give all alone, or the detectors by name; got {text!r}"
        )
    for name in names:
        if name not in DETECTORS:
            hint = did_you_mean(name, [*DETECTORS, "all"], "the detectors")
            raise argparse.ArgumentTypeError(f"unknown detector {name!r}{hint}")
    return names


def _count(least: int, hint: str = "") -> Any:
    def parse(text: str) -> int:
        if not text.strip().isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(
                f"expected a whole number >= {least}{hint}; got {text!r}"
            )
        return int(text)

    return parse


def _ignore(text: str) -> tuple[str, list[str]]:
    tool, _, keys = text.partition("=")
    arguments = [key.strip() for key in keys.split(",")]
    if not tool.strip() or not all(arguments):
        raise argparse.ArgumentTypeError(
            f"expected TOOL=ARGUMENT[,ARGUMENT...], like run_shell=description; got {text!r}"
        )
    return tool.strip(), arguments


def _since(text: str) -> Any:
    from ._checkpointer import parse_since

    try:
        return parse_since(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 date or time, like 2025-06-01 or 2025-06-01T12:00:00+02:00; "
            f"got {text!r}"
        ) from None


def _url(text: str) -> str:
    try:
        parts = urlsplit(text)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is no number, a bracket left open
        usable = False
    if not usable:
        raise argparse.ArgumentTypeError(
            f"expected an http:// or https:// URL with a host, like http://127.0.0.1:8080/v1; "
            f"got {text!r}"
        )
    return text


def _fail_on(text: str) -> str | int:
    if text in ("gentle", "detailed"):
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected gentle, detailed or a number >= 1; got {text!r}")


def _guard_options(command: argparse.ArgumentParser, *, audit: bool) -> None:
    group = command.add_argument_group("guard options (as ReminderConfig's fields)")
    group.add_argument(
        "--config",
        metavar="FILE",
        help="the settings in a TOML or JSON file (ReminderConfig.from_file); the options "
        "below override it",
    )
    for name, option in _field_options(demo=not audit).items():
        group.add_argument(_flag(name), **option)


def _flag(name: str) -> str:
    """A field's option: `--repeat-every` for `repeat_every`."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class _Offer:
    """What the command line says of a field where the field itself does not tell it all.

    Attributes:
        parse: Reads the option's text, instead of the parser the field's type calls for
            (`_kind`); with its own `metavar` and `action`.
        metavar: The placeholder of an option read by `parse`.
        action: What argparse does with the values `parse` reads.
        help: Makes the help line, instead of the field's description.
        hint: Said after the least whole number a count option takes, when it is refused.
        more: Said after the help line (and its default).
        demo_more: Said after that, for the demo only.
        demo_only: The option is the demo's, not the audit's.
    """

    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    action: str | type[argparse.Action] = "store"
    help: Callable[[], str] | None = None
    hint: str = ""
    more: str = ""
    demo_more: str = ""
    demo_only: bool = False


class _ByTool(argparse.Action):
    """`--ignore-arguments TOOL=ARG,...`, repeatable: the arguments gathered by tool."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        tool, arguments = values
        gathered = getattr(namespace, self.dest) or {}
        gathered.setdefault(tool, []).extend(arguments)
        setattr(namespace, self.dest, gathered)


def _detect_help() -> str:
    # Read when the parser is built: a detector registered after import is listed.
    return f"repeat (default), {', '.join(list(DETECTORS)[1:])}, or all"


_OFFERS: dict[str, _Offer] = {
    "repeat_every": _Offer(hint=", or leave the option out to stay silent"),
    "ignore_arguments": _Offer(
        parse=_ignore, metavar="TOOL=ARG,...", action=_ByTool, more="; repeatable, one tool each"
    ),
    # One list, not repeatable: `all` names every detector, so a second list would repeat one.
    "detect": _Offer(parse=_detectors, metavar="DETECTOR,...", help=_detect_help),
    "exit_behavior": _Offer(
        more="; at `escalate_after`",
        demo_more="; block needs the middleware, so the demo refuses it",
    ),
    # An audit replays what the guard would have counted: it sends no reminder of any kind.
    "message_type": _Offer(demo_only=True),
    "mode": _Offer(demo_only=True),
}
"""The guard options the fields' types and descriptions do not make alone, by field."""

_NOT_OFFERED: dict[str, str] = {
    "detectors": "each detector's thresholds are options of their own, by their short forms "
    "(--stale-thresholds, ...); its other settings are --config's",
    "words": "format strings by detector and level: --config's",
    "log_arguments": "the commands print no log lines",
    "normalise_results": "a function of a result's text: --config's file turns the guard's off "
    "(normalise_results = false)",
}
"""The fields the command line has no option for, and why (a test holds every other field to
an option)."""


def _field_options(*, demo: bool) -> dict[str, dict[str, Any]]:
    """The guard options of the demo or the audit: what argparse is told, by field.

    One for each field of `ReminderConfig`, in its order, but those in `_NOT_OFFERED` (and
    the demo's own, for the audit); in place of `detectors`, a short form for each detector's
    thresholds. The field's type says how the option's text is read (`_kind`), its description
    and default make the help line; `_OFFERS` says the rest.
    """
    options: dict[str, dict[str, Any]] = {}
    for name, field in ReminderConfig.model_fields.items():
        if name == "detectors":
            options.update(_short_form_options())
        offer = _OFFERS.get(name, _Offer())
        if name in _NOT_OFFERED or (offer.demo_only and not demo):
            continue
        if offer.parse is None:
            option = _kind(name, field, offer.hint)
        else:  # read its own way
            option = {"type": offer.parse, "metavar": offer.metavar, "action": offer.action}
        said = offer.help() if offer.help is not None else str(field.description)
        shown = _default(field.default)
        if shown and "default" not in said:  # a line that names its default says it once
            said += f" (default {shown})"
        if option.get("action") == "extend":
            said += "; repeatable"
        said += offer.more + (offer.demo_more if demo else "")
        option["help"] = re.sub(r"`(\w+)`", lambda m: _flag(m[1]), said)
        options[name] = option
    return options


def _kind(name: str, field: FieldInfo, hint: str) -> dict[str, Any]:
    """How an option reads a field's value, as the field's type says: parser, metavar, choices.

    Raises:
        TypeError: The type has no form on the command line (a new field's, say: offer it in
            `_OFFERS`, or say why not in `_NOT_OFFERED`).
    """
    annotation = field.annotation
    if get_origin(annotation) is Literal:
        return {"choices": list(get_args(annotation))}
    if annotation == Sequence[int]:
        return {"type": _numbers, "metavar": "N,N,..."}
    if annotation == Sequence[str]:  # the fields' lists of names are tool-name patterns
        return {"type": _names("think,write_todos"), "action": "extend", "metavar": "PATTERN,..."}
    types = (
        set(get_args(annotation)) - {type(None)}
        if isinstance(annotation, UnionType)
        else {annotation}
    )
    if types == {int}:  # a count: at least what the field takes (its `ge`), or left out for None
        least = [m.ge for m in field.metadata if isinstance(getattr(m, "ge", None), int)]
        return {"type": _count(max(least, default=0), hint), "metavar": "N"}
    if str in types:  # the fields' texts are regular expressions (not_user's function is no text)
        return {"metavar": "REGEX"}
    raise TypeError(f"{name}: the command line has no form for {annotation}")


def _default(default: Any) -> str:
    """A default as the help shows it: `3,5,8`, `500`, `end`; empty when there is none."""
    if isinstance(default, (str, int)):
        return str(default)
    return ",".join(map(str, default or ()))


def _short_form_options() -> dict[str, dict[str, Any]]:
    """An option for each detector's thresholds, by their short form (`--stale-thresholds`)."""
    defaults = ReminderConfig()
    options: dict[str, dict[str, Any]] = {}
    for field, name in short_forms().items():
        shown = ",".join(map(str, defaults.detector_thresholds(name)))
        said = f"{DETECTORS[name].counts} that draw a {name} reminder (default {shown})"
        options[field] = {"type": _numbers, "metavar": "N,...", "help": said}
    return options


def _program() -> str:
    """The command as it was run, for the usage line: the console script, or `python -m`."""
    package = __name__.split(".")[0]
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name == f"{package}.__main__":
        return f"python -m {package}"
    return "repeat-reminder"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=_program(),
        description="A loop guard for LangChain and LangGraph agents.",
    )
    parser.add_argument(
        "--version", action="version", version=f"repeat-reminder-langchain {__version__}"
    )
    # Not required here: `_run` says a command is missing, or that an option before it is
    # unknown (argparse would say only the first, of `repeat-reminder --bogus`).
    commands = parser.add_subparsers(dest="command", metavar="{demo,audit,lab}")
    demo = commands.add_parser(
        "demo",
        command="demo",
        help="run an agent that loops, offline, and print its transcript",
        description=_DEMO_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--scenario", choices=["poll", "stale"], default="poll",
                      help="poll: a finished job polled again and again (default); stale: "
                      "the same test re-run between other steps")  # fmt: skip
    _lab_options(commands)
    audit = commands.add_parser(
        "audit",
        command="audit",
        help="find where saved conversations loop and the reminders the guard would send",
        description=_AUDIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    audit.add_argument("files", metavar="FILE", nargs="*")
    audit.add_argument(
        "--json",
        action="store_true",
        help="print JSON: the settings used, the totals and every finding",
    )
    audit.add_argument(
        "--top",
        type=_count(1),
        default=10,
        metavar="N",
        help="list the N conversations with the most wasted calls (default 10)",
    )
    audit.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report with each flagged "
        "conversation's timeline and calls",
    )
    audit.add_argument(
        "--suggest",
        action="store_true",
        help="propose the settings these conversations call for, with the evidence, "
        "instead of the audit",
    )
    audit.add_argument(
        "--write-config",
        metavar="FILE",
        help="also write the settings in use (--config and the options; with --suggest, "
        "the suggested ones) to a TOML or JSON file that --config and "
        "ReminderConfig.from_file read; an existing file is refused",
    )
    audit.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the file --write-config or --html names",
    )
    audit.add_argument(
        "--fail-on",
        type=_fail_on,
        metavar="gentle|detailed|N",
        help="exit 1 when the audit finds a reminder (gentle: any; detailed: a "
        "detailed one or a stopped loop; N: N reminders or more)",
    )
    audit.add_argument(
        "--skip-bad",
        action="store_true",
        help="count and skip unreadable lines and records instead of stopping",
    )
    audit.add_argument(
        "--messages-key",
        metavar="KEY",
        help="the record field holding the messages, when several could; with "
        "--checkpointer, the state key (default messages)",
    )
    audit.add_argument(
        "--id-key", metavar="KEY", help="the record field holding the conversation's id"
    )
    audit.add_argument("--quiet", action="store_true", help="no progress bar")  # fmt: skip
    _checkpointer_options(audit)
    _guard_options(demo, audit=False)
    _guard_options(audit, audit=True)
    return parser


def _checkpointer_options(audit: argparse.ArgumentParser) -> None:
    group = audit.add_argument_group("a LangGraph checkpointer's threads, instead of files")
    add = group.add_argument
    add(
        "--checkpointer",
        metavar="URL",
        help="postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or sqlite:///PATH (relative; "
        "sqlite:////PATH absolute): audit each thread's latest state, read-only",
    )
    add("--thread", action="append", metavar="ID", help="only this thread; repeatable")
    add(
        "--since",
        type=_since,
        metavar="TIME",
        help="only threads whose latest checkpoint is this recent (ISO 8601; UTC unless "
        "it says otherwise)",
    )
    add("--limit", type=_count(1), metavar="N", help="at most N threads")
    add(
        "--namespace",
        metavar="NS",
        help="a subgraph's checkpoint namespace (default: the graph's own); a node path "
        "without task ids, like child or child|grandchild, matches it in every run",
    )


_THREAD_OPTIONS = ("thread", "since", "limit", "namespace")


def _config(args: argparse.Namespace) -> ReminderConfig:
    fields: dict[str, Any] = {
        name: getattr(args, name)
        for name in _field_options(demo=args.command == "demo")
        if getattr(args, name) is not None
    }
    try:
        return _settings(args.config, fields)
    except ConfigError as error:
        problems = "; ".join(_option_problem(line, fields) for line in str(error).splitlines())
        raise _UsageError(problems, args.command) from None


def _settings(path: str | None, fields: Mapping[str, Any]) -> ReminderConfig:
    """The settings of the file at `path`, if any, with `fields` over it.

    A warning they draw (settings for a detector that is off, say) is one line naming where it
    comes from: the file, when the file alone draws it; the options, or both, when they do.
    """
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        config = (
            ReminderConfig(**fields) if path is None else ReminderConfig.from_file(path, **fields)
        )
    for warning in said:
        text = str(warning.message)
        if path is None:  # each field it names is the option's to give
            source, text = "the options", _option_problem(text, ReminderConfig.model_fields)
        elif not fields or text in _warnings_of(path):
            source = path
        else:
            source = f"{path} with the options"
        print(f"warning: {source}: {text}", file=sys.stderr)
    return config


def _warnings_of(path: str) -> list[str]:
    """What the file alone draws, in warnings: those of the file and options are the file's."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ReminderConfig.from_file(path)  # valid with the options over it: valid alone too
    return [str(warning.message) for warning in said]


def _option_problem(line: str, given: Mapping[str, Any]) -> str:
    """A problem in the words of the command line: each field as its option, but in a file's.

    A file's problem names its fields, but those given as options. The way out is written as
    options are (`--thresholds 3,5`, not `thresholds=[3, 5]`); a problem of the file that
    options caused names them as options.
    """
    fields = [*ReminderConfig.model_fields, *short_forms()]
    if line.split(":", maxsplit=1)[0] not in given:
        line = re.sub(r"\(from the keywords? ([a-z_, ]+):", _options_named, line)
        fields = [name for name in fields if name in given]
    if fields:
        names = "|".join(fields)
        line = re.sub(rf"(?<![.\w-])({names})(?![.\w])", lambda m: _flag(m[1]), line)
    return re.sub(r"(--[a-z-]+)=\[([^\]]*)\]", lambda m: f"{m[1]} {m[2].replace(' ', '')}", line)


def _options_named(found: re.Match[str]) -> str:
    """`(from the keywords a, b:` as the command line says it: `(from the options --a, --b:`."""
    names = found[1].split(", ")
    return f"(from the option{'s' if len(names) > 1 else ''} {', '.join(map(_flag, names))}:"


def _fails(result: Any, fail_on: str | int | None) -> str | None:
    """Why `--fail-on` is met, or None."""
    from ._tables import plural

    if fail_on is None:
        return None
    found = result.count()
    if fail_on == "gentle" and found:
        return f"{plural(found, 'reminder')} found (--fail-on gentle)"
    if fail_on == "detailed":
        serious = result.count("detailed") + result.count("escalated")
        what = "reminder or stopped loop" if serious == 1 else "reminders or stopped loops"
        return f"{serious:,} detailed {what} found (--fail-on detailed)" if serious else None
    if isinstance(fail_on, int) and found >= fail_on:
        return f"{plural(found, 'reminder')} found (--fail-on {fail_on})"
    return None


_LAB_HELP = """\
Runs small tasks built to make a model loop (--tasks, default all: poll, ping, search, file,
calculator, payment, forecast, poll-insist, ping-insist) with the real create_agent on a model
of yours, under each condition (--conditions): none (no guard), guard (the defaults),
escalate (stop at 10), finish (at 10, one more call with no tool to call for the answer),
neutral (a note that says nothing of the loop, at the same points), config (your --config
settings, e.g. your own words; --config adds it to the default conditions). Each run is capped
at --max-calls model calls.

--model is an init_chat_model string (openai:gpt-4.1-mini, anthropic:..., with its provider
package and key), or, with --base-url, the model name an OpenAI-compatible server serves (a
local llama.cpp server: --base-url http://127.0.0.1:8080/v1; the providers extra).

Per task and condition it prints: runs, model calls and the longest run of identical calls
(means), what broke that run (the reminder level after its last call when the model then
changed course; escalated when the guard stopped it, ending the run or asking for the answer;
limit when the cap did; - when the model changed course unprompted), how many runs ended
acceptably, tokens and seconds (means); then the totals per condition. A line per run on stderr
says the same of each run as it ends. --output DIR writes lab.jsonl (one line per run: the
figures, the model, the settings, the answer) and one transcript per run, each run's as soon as
it ends, so that a lab stopped midway keeps the runs done. A directory that holds an earlier
lab's lab.jsonl or transcripts is refused before any run; --overwrite replaces them (the
earlier transcripts all go).

Exit codes: 0 done; 2 bad options, a model that cannot be built, or one that fails midway (one
line on stderr, after the table of the runs done); 130 interrupted (Ctrl-C: "interrupted" on
stderr, after the table of the runs done)."""


def _lab_options(commands: Any) -> None:
    lab = commands.add_parser(
        "lab",
        command="lab",
        help="measure whether the reminders break loops on your model",
        description=_LAB_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = lab.add_argument
    add("--model", required=True, help="an init_chat_model string, or the served model's name")
    add(
        "--base-url",
        type=_url,
        metavar="URL",
        help="an OpenAI-compatible endpoint (e.g. llama.cpp), http:// or https://",
    )
    add(
        "--tasks",
        type=_names("poll,ping"),
        metavar="TASK,...",
        help="the tasks to run (default all)",
    )
    add(
        "--conditions",
        type=_names("none,guard"),
        metavar="CONDITION,...",
        help="none, guard, escalate, finish, neutral, config (default none,guard,escalate, "
        "and config with --config)",
    )
    add("--runs", type=_count(1), default=1, metavar="N", help="runs of each (default 1)")
    add("--temperature", type=float, metavar="T", help="the model's temperature")
    add(
        "--max-calls",
        type=_count(2),
        default=24,
        metavar="N",
        help="model calls a run may make (default 24)",
    )
    add(
        "--config",
        metavar="FILE",
        help="the settings of the config condition (TOML or JSON), which it adds to the "
        "default conditions; --conditions without config refuses it",
    )
    add(
        "--output",
        metavar="DIR",
        help="write lab.jsonl and the transcripts there, each run's as it ends; a directory "
        "that holds an earlier lab's is refused",
    )
    add("--overwrite", action="store_true", help="replace an earlier lab's outputs in --output")
    add(
        "--quiet",
        action="store_true",
        help="no line per run on stderr, nor the model call each is at, nor the guard's "
        "warnings (its errors still show)",
    )


def _lab(args: argparse.Namespace) -> int:
    from ._progress import StatusLine, model_calls
    from ._tables import format_lab
    from .lab import run_task

    tasks, conditions, config = _lab_plan(args)
    _lab_check_output(args)
    model = _lab_model(args)
    plan = [(t, c, n) for t in tasks for c in conditions for n in range(1, args.runs + 1)]
    out = None if args.output is None else _LabOutput(args.output)
    done: list[Any] = []
    line = StatusLine(sys.stderr, enabled=not args.quiet)  # the call a run is at, at a terminal
    # Quiet is the table alone: the guard's warnings (each loop it stops) are left out, as the
    # lines per run are, but not its errors. Restored after: main may run again in-process.
    logger = logging.getLogger(LOGGER_NAME)
    level = logger.level
    if args.quiet:
        logger.setLevel(max(level, logging.ERROR))
    try:
        for number, (task, condition, count) in enumerate(plan, 1):
            calls = model_calls(
                line,
                f"[{number}/{len(plan)}] {task.name} · {condition} · run {count}",
                args.max_calls,
            )
            try:
                run = run_task(model, task, condition, run=count, max_calls=args.max_calls,
                               config=config, watch=calls)  # fmt: skip
            except Exception as error:  # a model that cannot be reached, a key refused
                at = "" if args.base_url is None else f" at {args.base_url}"  # which server
                raise _Failure(
                    f"{task.name} · {condition} · run {count}: the model{at} failed: "
                    f"{type(error).__name__}: {' '.join(str(error).split())}"
                ) from None
            done.append(run)
            if out is not None:  # kept, should the lab be stopped at any point after
                out.write(args, run, model)
            if not args.quiet:  # in the table's words, which the lab guide defines
                print(f"[{number}/{len(plan)}] {run.task} · {run.condition} · run {run.run}: "
                      f"{run.model_calls} model calls, longest run {run.longest}, broken by "
                      f"{run.broke or '-'}, {'' if run.acceptable else 'not '}acceptable",
                      file=sys.stderr, flush=True)  # fmt: skip
    # The runs done are measured all the same; Ctrl-C, wherever it lands, is said by main.
    except (_Failure, KeyboardInterrupt):
        if done:
            print(format_lab(done))
        raise
    finally:
        logger.setLevel(level)
        if out is not None:
            out.close()
    print(format_lab(done))
    return 0


def _lab_plan(args: argparse.Namespace) -> tuple[list[Any], list[str], ReminderConfig | None]:
    """The tasks the lab runs, its conditions, and the settings of its `config` condition.

    A settings file is never left unread: it adds `config` to the default conditions, and
    conditions named without `config` refuse it.
    """
    from .lab import CONDITIONS, TASKS

    given = [] if args.config is None else ["config"]
    conditions = args.conditions or ["none", "guard", "escalate", *given]

    unknown = [name for name in args.tasks or () if name not in TASKS]
    if unknown:
        raise _UsageError(f"--tasks: unknown task {unknown[0]!r}; the tasks are "
                          f"{', '.join(TASKS)}", "lab")  # fmt: skip
    bad = [name for name in conditions if name not in CONDITIONS]
    if bad:
        raise _UsageError(f"--conditions: unknown condition {bad[0]!r}; the conditions are "
                          f"{', '.join(CONDITIONS)}", "lab")  # fmt: skip
    config = None
    if args.config is not None:  # read whatever the conditions: a file not there is said first
        try:
            config = _settings(args.config, {})
        except ConfigError as error:
            raise _UsageError(str(error), "lab") from None
        if "config" not in conditions:
            raise _UsageError(
                f"--config {args.config}: the settings of the config condition, which "
                "--conditions leaves out: add config to --conditions, or leave --config out",
                "lab",
            )
    elif "config" in conditions:
        raise _UsageError("--conditions config: name the settings with --config FILE", "lab")
    return [TASKS[name] for name in args.tasks or TASKS], conditions, config


def _lab_check_output(args: argparse.Namespace) -> None:
    """Refuse an --output that cannot take the lab's outputs, before any model is called.

    A file is refused, and so is a directory that holds an earlier lab's outputs, unless
    --overwrite says to replace them.
    """
    if args.output is None:
        if args.overwrite:
            raise _UsageError("--overwrite goes with --output DIR", "lab")
        return
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise _UsageError(f"--output {args.output}: a file, not a directory", "lab")
    if _lab_outputs(args.output) and not args.overwrite:
        raise _UsageError(
            f"--output {args.output}: it holds an earlier lab's lab.jsonl and transcripts; "
            "name another directory, or add --overwrite to replace them",
            "lab",
        )


def _lab_outputs(directory: str) -> list[str]:
    """The files an earlier lab wrote in `directory`: lab.jsonl and the transcripts."""
    found = [os.path.join(directory, "lab.jsonl")]
    transcripts = os.path.join(directory, "transcripts")
    if os.path.isdir(transcripts):
        names = sorted(os.listdir(transcripts))
        found += [os.path.join(transcripts, name) for name in names if name.endswith(".txt")]
    return [path for path in found if os.path.isfile(path)]


class _LabOutput:
    """lab.jsonl and the transcripts in --output, an earlier lab's kept until this one has a run.

    The first run's line goes beside lab.jsonl; once it is written, the earlier lab's outputs
    (--overwrite said to replace them) are removed and the new lab.jsonl takes their place. A
    lab that ends before its first run leaves the earlier one as it was, and removes the
    folders it made, so that the next try finds no "earlier lab" there.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._transcripts = os.path.join(folder, "transcripts")
        self._made = [p for p in (folder, self._transcripts) if not os.path.isdir(p)]
        try:
            os.makedirs(self._transcripts, exist_ok=True)
            self._lines = Beside(os.path.join(folder, "lab.jsonl"))
            self._out = open(self._lines.partial, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as error:
            self._remove_made()
            raise _Failure(f"--output {folder}: cannot write there ({error.strerror})") from None
        self._shown = False

    def write(self, args: argparse.Namespace, run: Any, model: Any) -> None:
        """A run's line, with the model it ran on, and its transcript, whole.

        The line is flushed at once: a lab stopped after this run keeps it.
        """
        from .transcript import format_transcript

        line = {"model": args.model, "base_url": args.base_url, **run.as_dict()}
        self._out.write(json.dumps(line) + "\n")
        self._out.flush()
        if not self._shown:  # the new lab has something to show: it replaces the earlier
            for earlier in _lab_outputs(self.folder):
                os.remove(earlier)
            os.replace(self._lines.partial, self._lines.path)  # the file open writes on
            self._shown = True
        name = f"{run.task}-{run.condition}-{run.run}.txt"
        with open(os.path.join(self._transcripts, name), "w", encoding="utf-8") as text:
            text.write(format_transcript(run.messages, width=None, sent_to=model) + "\n")

    def close(self) -> None:
        """Complete up to the last run; with none, nothing of this lab is left."""
        self._out.close()
        if not self._shown:
            self._lines.discard()
            self._remove_made()

    def _remove_made(self) -> None:
        for folder in reversed(self._made):
            with contextlib.suppress(OSError):  # not empty: something else is there
                os.rmdir(folder)


def _lab_model(args: argparse.Namespace) -> Any:
    """The chat model the lab runs: an init_chat_model string, or an OpenAI-compatible one."""
    options = {} if args.temperature is None else {"temperature": args.temperature}
    try:
        if args.base_url is not None:
            from langchain_openai import ChatOpenAI

            key = SecretStr(os.environ.get("OPENAI_API_KEY") or "none")  # a local server wants none
            return ChatOpenAI(model=args.model, base_url=args.base_url, api_key=key, **options)
        from langchain.chat_models import init_chat_model

        model = init_chat_model(args.model, **options)
    except ImportError as error:
        if error.name in _PROVIDERS:  # ChatOpenAI, for --base-url: the providers extra
            from .._install import install_hint

            raise _Failure(f"{error.name}: not installed ({install_hint('providers')})") from None
        # Another provider's package: LangChain's message names it, and how to install it.
        raise _Failure(f"--model {args.model}: {' '.join(str(error).split())}") from None
    except Exception as error:  # an unknown provider, a missing API key: said by LangChain
        said = " ".join(str(error).split())
        raise _UsageError(f"--model {args.model}: {type(error).__name__}: {said}", "lab") from None
    # A provider that builds its model without a key (Anthropic's) would fail at the first call,
    # as a connection error: said here, before any. Its field is named for its variable.
    empty = [n for n, v in model if n.endswith("api_key") and v == SecretStr("")]
    if empty:
        raise _UsageError(f"--model {args.model}: no API key: set {empty[0].upper()}", "lab")
    return model


_PROVIDERS = ("langchain_openai", "langchain_anthropic")
"""The packages of the providers extra."""


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before reading, an output that would lose a file.

    That is one that is there (unless --overwrite), one that is an input of the audit, and
    two outputs on one file.
    """
    named = (("--write-config", args.write_config), ("--html", args.html))
    written = [(option, path) for option, path in named if path is not None]
    if args.overwrite and not written:
        raise _UsageError("--overwrite goes with --write-config FILE or --html FILE", "audit")
    if len(written) == 2 and same_file(args.write_config, args.html):
        raise _UsageError(
            f"--write-config {args.write_config} and --html {args.html} are one file: name two",
            "audit",
        )
    for option, path in written:
        source = next((s for s in _inputs(args) if same_file(path, s)), None)
        if source is not None:
            raise _UsageError(
                f"{option} {path}: that is {source}, which the audit reads; name another file",
                "audit",
            )
        if os.path.isdir(path):
            raise _UsageError(f"{option} {path}: a directory, not a file", "audit")
        if option == "--write-config":
            try:
                settings_text({}, path)  # the kind of file, said before the audit
            except ValueError as error:
                raise _UsageError(str(error), "audit") from None
        if os.path.exists(path) and not args.overwrite:
            raise _UsageError(
                f"{option} {path}: the file is there already; name another, or add "
                "--overwrite to replace it",
                "audit",
            )


def _inputs(args: argparse.Namespace) -> list[str]:
    """The files the audit reads: those named, or the SQLite checkpointer's.

    Globs are expanded as the reader expands them. With a name that is no file, none: the
    audit fails on it before it writes anything.
    """
    from ._checkpointer import sqlite_path
    from ._logs import LogError, LogReader

    if args.checkpointer is not None:
        path = sqlite_path(args.checkpointer)
        return [] if path is None else [path]
    try:
        return [name for name in LogReader().expand(args.files) if name != "-"]
    except LogError:
        return []


def _output(path: str, what: str) -> Beside:
    """The file an output is written beside until it is complete.

    Made now: a folder that cannot take it fails before the audit.
    """
    try:
        return Beside(path)
    except OSError as error:
        raise _Failure(f"{path}: cannot write the {what} ({error.strerror})") from None


def _write_config(config: ReminderConfig, written: Beside) -> None:
    """The settings, once the audit is done, in the file made beside theirs at its start."""
    try:
        written.commit(file_text(config, written.path))
    except ConfigError as error:
        written.discard()
        raise _UsageError(str(error), "audit") from None
    except OSError as error:
        raise _Failure(f"{written.path}: cannot write the settings ({error.strerror})") from None
    print(f"settings: {os.path.abspath(written.path)}", file=sys.stderr)


def _sources(args: argparse.Namespace) -> None:
    """Files or a checkpointer, and only the options that go with the one named."""
    if args.checkpointer is None:
        if not args.files:
            raise _UsageError("name the FILE(s) to audit, or a --checkpointer URL", "audit")
        for name in _THREAD_OPTIONS:
            if getattr(args, name) is not None:
                raise _UsageError(f"--{name} selects threads: it needs --checkpointer", "audit")
    elif args.files:
        raise _UsageError("audit FILEs or a --checkpointer, not both", "audit")
    elif args.id_key is not None:
        raise _UsageError("--id-key names a record field: a thread's id is its own", "audit")


def _suggest(args: argparse.Namespace, config: ReminderConfig) -> int:
    from ._suggest import Suggester, Sweeper
    from ._tables import format_suggestion

    for name in ("html", "fail_on"):
        if getattr(args, name) is not None:
            option = f"--{name.replace('_', '-')}"
            raise _UsageError(f"{option} goes with the audit, not --suggest", "audit")
    written = _output(args.write_config, "settings") if args.write_config is not None else None
    with written or nullcontext():  # on a failure, removed: the file there is untouched
        suggester = Suggester(config)
        spool = _spool(args)
        _read(args, suggester.add, stdin=spool)
        suggestion = suggester.finish()
        if spool is not None:
            spool.seek(0)
        sweeper = Sweeper(suggestion)
        _read(args, sweeper.add, stdin=spool, again=True)  # the counts under what it suggests
        suggestion = sweeper.finish()  # and the detectors they support
    if written is not None:
        _write_config(suggestion.config, written)
    if args.json:
        print(json.dumps(suggestion.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_suggestion(suggestion))
    return 0


def _spool(args: argparse.Namespace) -> IO[bytes] | None:
    """Standard input, kept to be read twice (in memory, or on disk when it is large)."""
    if args.checkpointer is not None or "-" not in args.files:
        return None
    spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 - closed at exit
    shutil.copyfileobj(sys.stdin.buffer, spool)
    spool.seek(0)
    return spool


def _read(
    args: argparse.Namespace,
    add: Callable[[Any], object],
    *,
    stdin: IO[bytes] | None,
    again: bool = False,
) -> Any:
    """Hand every conversation the command names to `add`, with the progress bar; the reader.

    Read `again`, what it skips and notes is not said twice.

    Raises:
        _Failure: Something cannot be read.
    """
    from ._logs import LogError
    from ._progress import ProgressBar

    bar: ProgressBar | None = None

    def say(line: str) -> None:
        if again:
            return
        if bar is not None:
            bar.close()  # redrawn at the next conversation, below the line
        print(line, file=sys.stderr)

    def warn(problem: str) -> None:
        say(f"warning: skipped {problem}")

    def note(line: str) -> None:
        say(f"note: {line}")

    reader, conversations = _reader(args, warn, note, stdin=stdin)
    try:
        with closing(conversations):
            for conversation in conversations:
                if bar is None:
                    bar = _bar(reader, drawn=not args.quiet and sys.stderr.isatty())
                add(conversation)
                bar.update(_done(reader), conversation.index + 1)
    except LogError as error:
        raise _Failure(str(error)) from None
    finally:
        if bar is not None:
            bar.close()
    return reader


def _audit(args: argparse.Namespace, config: ReminderConfig) -> int:
    from ._tables import format_audit
    from .audit import Auditor

    _sources(args)
    _check_outputs(args)
    if args.suggest:
        return _suggest(args, config)
    auditor = Auditor(config, timelines=_shown() if args.html else 0)
    # Made first, beside the files they will replace, so that a folder that cannot take them
    # fails before a long audit; a file that was there is replaced only once the audit is done.
    settings = _output(args.write_config, "settings") if args.write_config is not None else None
    with settings or nullcontext():
        html = _output(args.html, "report") if args.html is not None else None
        with html or nullcontext():
            reader = _read(args, auditor.add, stdin=None)
            result = auditor.finish(
                reader.skipped,
                reader.problems,
                reader.sources,
                threads=args.checkpointer is not None,
            )
            if html is not None:
                from ._report import report_html

                try:
                    html.commit(report_html(result, top=args.top))
                except OSError as error:
                    message = f"{args.html}: cannot write the report ({error.strerror})"
                    raise _Failure(message) from None
                print(f"HTML report: {os.path.abspath(args.html)}", file=sys.stderr)
    if settings is not None:
        _write_config(config, settings)
    if args.json:
        print(json.dumps(result.as_dict(top=args.top), indent=2, ensure_ascii=False))
    else:
        print(format_audit(result, top=args.top))
    reason = _fails(result, args.fail_on)
    if reason is not None:
        print(f"audit: {reason}", file=sys.stderr)
        return 1
    return 0


def _reader(
    args: argparse.Namespace,
    warn: Callable[[str], None],
    note: Callable[[str], None],
    *,
    stdin: IO[bytes] | None = None,
) -> tuple[Any, Generator[Any, None, None]]:
    """What reads the conversations (files, or a checkpointer's threads), and what it reads.

    `warn` is told of a thread skipped, `note` of an empty conversation of the files.
    """
    from ._checkpointer import CheckpointReader, Selection
    from ._logs import LogReader

    if args.checkpointer is None:
        files = LogReader(
            messages_key=args.messages_key,
            id_key=args.id_key,
            skip_bad=args.skip_bad,
            stdin=stdin,
            note=note,
        )
        return files, files.read(args.files)
    selection = Selection(
        tuple(args.thread or ()),
        args.since,
        args.limit,
        args.namespace or "",
        args.messages_key or "messages",
    )
    threads = CheckpointReader(args.checkpointer, selection, skip_bad=args.skip_bad, warn=warn)
    return threads, threads.read()


def _done(reader: Any) -> int:
    """How far the reader is: bytes read, or threads visited."""
    from ._logs import LogReader

    return reader.read_bytes if isinstance(reader, LogReader) else int(reader.visited)


def _bar(reader: Any, *, drawn: bool) -> Any:
    """The progress bar: bytes of files, or threads (counted only when a bar can be drawn)."""
    from ._logs import LogReader
    from ._progress import ProgressBar

    if isinstance(reader, LogReader):
        return ProgressBar(sys.stderr, reader.total if drawn else 0)
    return ProgressBar(sys.stderr, reader.count() if drawn else 0, threads=True)


def _shown() -> int:
    from ._report import SHOWN

    return SHOWN


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    try:
        try:
            with warnings.catch_warnings():  # Python's own form, restored after
                warnings.showwarning = _one_line(set())
                code = _run(argv)
        except KeyboardInterrupt:  # Ctrl-C: what was done is printed (the lab's table)
            print("interrupted", file=sys.stderr)
            code = 130
        sys.stdout.flush()  # a reader gone away is met here, not when the interpreter exits
    except BrokenPipeError:
        # The reader stopped early (`| head`): it has what it wanted, and that is no error.
        _discard_output()
        return 0
    return code


def _one_line(said: set[str]) -> Callable[..., None]:
    """How the command says a warning raised in it: as its errors, one line on standard error.

    Not Python's form, which names the command's own line (`sys.exit(main())`) as where it
    comes from: its kind says whose it is (`RepeatToolReminderWarning: ...`, the guard's). Each
    line once per run of the command: Python says a warning once per place it is raised from,
    and again whenever the filters change (a library may change them as it runs: on this
    project's lowest versions a model's warning came once per model call).
    """

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        line = f"warning: {category.__name__}: {' '.join(str(message).split())}"
        if line not in said:
            said.add(line)
            print(line, file=sys.stderr)

    return show


def run() -> NoReturn:
    """The command as a program runs it (the console script, `python -m`): `main`, then exit."""
    code = main()
    if code == 130:
        # Ctrl-C can land while a library starts a worker thread, before the thread is listed
        # to be told to stop: the interpreter would then wait for it at exit, forever. What
        # was to be written is written (the lab's lines as each run ended, the table): go now.
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _discard_output() -> None:
    """Send what is left of standard output nowhere, so that no flush at exit fails again."""
    nowhere = os.open(os.devnull, os.O_WRONLY)
    os.dup2(nowhere, sys.stdout.fileno())
    os.close(nowhere)


def _run(argv: Sequence[str] | None) -> int:
    try:
        args, unknown = _parser().parse_known_args(argv)
        if unknown:  # said here, where the command is known, so that its usage follows
            raise _UsageError(f"unrecognized arguments: {' '.join(unknown)}", args.command or "")
        if args.command is None:
            raise _UsageError("the following arguments are required: {demo,audit,lab}")
        if args.command == "lab":
            return _lab(args)
        config = _config(args)
        if args.command == "demo":
            from .demo import _run_command

            return _run_command(config, args.scenario)
        return _audit(args, config)
    except _Failure as error:
        print(f"error: {error}", file=sys.stderr)
        if isinstance(error, _UsageError):
            print(_usage(error.command), file=sys.stderr)
        return 2
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
