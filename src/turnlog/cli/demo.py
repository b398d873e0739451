"""`turnlog demo`: a scripted crash, inspected, recovered and revived."""

from __future__ import annotations

import click

from turnlog.cli._common import _console, _reports_errors
from turnlog.stores import DEFAULT_STORE


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    default=DEFAULT_STORE,
    show_default=True,
    help="Where the demo leaves its session.",
)
@_reports_errors
def demo_command(directory: str) -> None:
    """Crash a scripted agent mid-tool-call, then inspect, plan, recover and revive it."""
    from turnlog.cli.demo_agent import run_demo

    # The demo draws rules across the width: piped, it keeps a terminal's.
    run_demo(_console(unfolded_when_piped=False), directory)
