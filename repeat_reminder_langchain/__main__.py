"""Command line: `python -m repeat_reminder_langchain demo [--thresholds 2,4] [...]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from .callbacks import RepeatToolReminderCallbackHandler
from .config import ReminderConfig
from .transcript import format_transcript, summarize


def _thresholds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, like 3,5,8; got {text!r}"
        ) from None


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
    demo.add_argument(
        "--thresholds",
        type=_thresholds,
        default=None,
        help="run lengths that draw a reminder, comma-separated (default 3,5,8)",
    )
    demo.add_argument(
        "--message-type",
        choices=["system", "human"],
        default="system",
        help="send reminders as system messages (default) or as tagged user messages",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    from .demo import QUESTION, run_demo

    args = _parser().parse_args(argv)
    fields: dict[str, object] = {"message_type": args.message_type}
    if args.thresholds is not None:
        fields["thresholds"] = args.thresholds
    try:
        config = ReminderConfig.model_validate(fields)
    except ValidationError as error:
        detail = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in error.errors())
        print(f"error: {detail}", file=sys.stderr)
        return 2
    thresholds = ", ".join(map(str, config.thresholds))
    print(f"Demo: {QUESTION!r} — the model keeps polling a job that has already finished.")
    print(f"Guard: thresholds {thresholds}; reminders sent as {config.message_type} messages.\n")
    messages = run_demo(RepeatToolReminderCallbackHandler(config))
    print(format_transcript(messages))
    print(f"\nWith the guard: {summarize(messages, config)}")
    unguarded = summarize(run_demo(None), config)
    print(f"Without it:     {unguarded}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
