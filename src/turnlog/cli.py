"""The turnlog command line."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="turnlog")
def main() -> None:
    """turnlog: a crash-safe session log for LLM agents."""


@main.command()
def demo() -> None:
    """Crash a scripted agent and recover it (placeholder until the CLI lands)."""
    click.echo("turnlog demo: coming with the command line.")
