"""`python -m repeat_reminder_langchain demo|audit ...`: the command line (`--help` for each)."""

import sys

from .tooling._cli import main

if __name__ == "__main__":
    sys.exit(main())
