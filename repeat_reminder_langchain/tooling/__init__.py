"""The tooling users run rather than import into an agent.

The demo, the audit of saved conversations (reading logs, the HTML report), transcripts and
timeline plots, and the command line. Nothing in the guard itself imports from here.
"""
