"""`turnlog store`: managing stores."""

from __future__ import annotations

import click

from turnlog.cli._common import _console, _emit_json, _reports_errors, json_option
from turnlog.stores import store_from_url


@click.group("store")
def store_group() -> None:
    """Manage stores."""


@store_group.command("init")
@click.argument("store_url", metavar="URL")
@json_option
@_reports_errors
def store_init_command(store_url: str, as_json: bool) -> None:
    """Create the store at URL (a directory, or a database and its schema)."""
    store = store_from_url(store_url)
    store.init()
    if as_json:
        _emit_json({"store": store.url, "sessions": len(store.sessions())})
    else:
        _console().print(f"ready: {store.url} ({len(store.sessions())} sessions)")
