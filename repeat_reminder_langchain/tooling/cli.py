"""Command line: `python -m repeat_reminder_langchain demo|audit ...` (`--help` for each)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ..callbacks import RepeatToolReminderCallbackHandler
from ..config import ReminderConfig


def _thresholds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, like 3,5,8; got {text!r}"
        ) from None


def _ignore(text: str) -> tuple[str, list[str]]:
    tool, _, keys = text.partition("=")
    if not tool or not keys:
        raise argparse.ArgumentTypeError(
            f"expected TOOL=ARGUMENT[,ARGUMENT...], like run_shell=description; got {text!r}"
        )
    return tool, [key for key in keys.split(",") if key]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m repeat_reminder_langchain",
        description="A loop guard for LangChain and LangGraph agents.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run an agent that loops on a finished job, offline, and print its transcript",
    )
    audit = commands.add_parser(
        "audit",
        help="count the streaks in saved conversations and the reminders the guard would send",
        description="FILE: a JSON list of LangChain message dicts (as messages_to_dict writes "
        "them), a list of such lists, or JSON Lines of either.",
    )
    audit.add_argument("file", metavar="FILE")
    audit.add_argument("--json", action="store_true", help="print JSON instead of a table")
    for command in (demo, audit):
        command.add_argument(
            "--thresholds",
            type=_thresholds,
            help="run lengths that draw a reminder, comma-separated (default 3,5,8)",
        )
        command.add_argument(
            "--repeat-every",
            type=int,
            help="after the last threshold, remind again every N repeats",
        )
    demo.add_argument(
        "--message-type",
        choices=["system", "human"],
        help="send reminders as system messages (default) or as tagged user messages",
    )
    demo.add_argument(
        "--mode",
        choices=["remind", "observe"],
        help="observe: count and report, add nothing to the conversation",
    )
    audit.add_argument("--include", nargs="+", metavar="PATTERN", help="tools to track")
    audit.add_argument("--exclude", nargs="+", metavar="PATTERN", help="tools to leave out")
    audit.add_argument(
        "--progress",
        choices=["none", "result", "auto"],
        help="result: the same call with a new result starts a new run",
    )
    audit.add_argument(
        "--ignore-arguments",
        type=_ignore,
        nargs="+",
        metavar="TOOL=ARGS",
        help="arguments left out of the key, e.g. run_shell=description,timeout*",
    )
    return parser


def _config(args: argparse.Namespace) -> ReminderConfig:
    names = ("thresholds", "repeat_every", "message_type", "mode", "include", "exclude")
    fields: dict[str, Any] = {
        name: getattr(args, name) for name in (*names, "progress") if getattr(args, name, None)
    }
    if getattr(args, "ignore_arguments", None):
        fields["ignore_arguments"] = dict(args.ignore_arguments)
    if args.repeat_every is not None:
        fields["repeat_every"] = args.repeat_every
    return ReminderConfig.model_validate(fields)


def _demo(config: ReminderConfig) -> int:
    from .demo import QUESTION, run_demo
    from .transcript import format_transcript, summarize

    thresholds = ", ".join(map(str, config.thresholds))
    print(f"Demo: {QUESTION!r} — the model keeps polling a job that has already finished.")
    print(
        f"Guard: thresholds {thresholds}; reminders sent as {config.message_type} messages"
        f"{'' if config.mode == 'remind' else ' (observe mode: none are sent)'}.\n"
    )
    guard = RepeatToolReminderCallbackHandler(config)
    messages = run_demo(guard)
    print(format_transcript(messages))
    label = "With the guard:" if config.mode == "remind" else "Guard observing:"
    print(f"\n{label:<16} {summarize(messages, config)}")
    print(f"{'Without it:':<16} {summarize(run_demo(None), config)}")
    stats = guard.stats.snapshot()
    rate = stats["recovery_rate"]
    print(
        f"{'Guard stats:':<16} {stats['calls']} calls counted · reminders {stats['reminders']} · "
        f"recovery rate {'n/a' if rate is None else f'{rate:.0%}'}"
    )
    return 0


def _audit(path: str, as_json: bool, config: ReminderConfig) -> int:
    from .audit import AuditError, audit, format_audit, load_conversations

    try:
        conversations = load_conversations(path)
    except AuditError as error:
        print(f"error: {path}: {error}", file=sys.stderr)
        return 2
    result = audit(conversations, config)
    print(json.dumps(result.as_dict(), indent=2) if as_json else format_audit(result, config))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = _parser().parse_args(argv)
    try:
        config = _config(args)
    except ValidationError as error:
        detail = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in error.errors())
        print(f"error: {detail}", file=sys.stderr)
        return 2
    if args.command == "demo":
        return _demo(config)
    return _audit(args.file, args.json, config)


if __name__ == "__main__":
    sys.exit(main())
