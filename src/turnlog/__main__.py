"""`python -m turnlog`: the command line, as the `turnlog` script runs it."""

from turnlog.cli import run

run()
