"""`python -m repeat_reminder_langchain demo|audit ...`: the command line (`--help` for each)."""

from .tooling._cli import run

if __name__ == "__main__":
    run()
