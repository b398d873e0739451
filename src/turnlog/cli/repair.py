"""Commands that repair crashed sessions: `recover`, `revive` and `sweep`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from turnlog import events as ev
from turnlog.cli._common import (
    EXIT_FINDINGS,
    _console,
    _emit_json,
    _progress,
    _reports_errors,
    _to_builtins,
    json_option,
    max_revivals_option,
    store_option,
)
from turnlog.cli.numbers import Seconds
from turnlog.errors import UsageError
from turnlog.stores import existing_store, resolve_session

if TYPE_CHECKING:
    from rich.console import Console


@click.command("recover")
@click.argument("session")
@store_option
@click.option(
    "--force",
    is_flag=True,
    help="Append even though a live writer holds the session (only for a stuck holder).",
)
@json_option
@_reports_errors
def recover_command(session: str, store_url: str | None, force: bool, as_json: bool) -> None:
    """Repair a crashed SESSION by appending: a result per owed call, then the turn end.

    A torn tail is moved to a sidecar file first. Running it again appends nothing.
    """
    from turnlog.ops.recover import recover

    store, session_id = resolve_session(session, store_url)
    recovery = recover(store, session_id, force=force)
    repairs, torn = recovery.plan, recovery.torn_tail
    if as_json:
        _emit_json(
            {
                "session_id": session_id,
                "appended": [ev.to_builtins(e) for e in repairs.events],
                "torn_tail": _to_builtins(torn),
                "warnings": list(repairs.warnings),
                "reports_owed": list(recovery.reports_owed),
                "awaiting": [_to_builtins(one) for one in recovery.awaiting],
            }
        )
        return
    console = _console()
    if torn is not None:
        console.print(f"moved a torn tail of {torn.size_bytes} bytes to {torn.sidecar}")
    if repairs.events:
        from turnlog.cli.render import render_events

        render_events(console, repairs.events, title="appended")
    elif not recovery.awaiting:
        console.print("nothing to recover: no open turn")
    if recovery.awaiting:
        from turnlog.core.pauses import describe_pause, how_to_decide

        # A pause is not a crash: left as it is, and said why.
        console.print(
            f"nothing to recover for the pause: {describe_pause(recovery.awaiting)}; "
            + how_to_decide(recovery.awaiting)
        )
    if recovery.reports_owed:
        console.print(
            f"reports still owed by background subagents: {', '.join(recovery.reports_owed)}; "
            "the session's next turn (after `turnlog revive`) delivers each once or reports "
            "the subagent lost"
        )


@click.command("revive")
@click.argument("session")
@store_option
@click.option("--tree", is_flag=True, help="Revive the subagents it waits on too, each as itself.")
@max_revivals_option("The revival cap, counted from each session's log; 0 turns revival off.")
@json_option
@_reports_errors
def revive_command(
    session: str, store_url: str | None, tree: bool, max_revivals: int, as_json: bool
) -> None:
    """Revive a crashed SESSION as itself: recover, mark the revival, tell the model.

    Prints what it appended (each synthetic result with its risk, the
    run_revived marker, the notice) and what the agent's loop must do next:
    which session to carry on, as which agent, and (with --tree) which waits
    on subagents stay pending until those subagents finish. Tool calls are
    never replayed. A session already revived and not run on since is not
    told again (exit 0, nothing written). Exits 0 when the session is revived,
    1 when there was nothing to revive (finished, empty, past the cap), 4
    while a live writer holds a session.
    """
    from turnlog.ops.open import open as open_log
    from turnlog.ops.revival import revive
    from turnlog.ops.tree import revive_tree

    store, session_id = resolve_session(session, store_url)
    if tree:
        with revive_tree(store, session_id, max_revivals=max_revivals) as revived_tree:
            nodes = [_revived_node(node) for node in revived_tree.nodes]
            appended = [node.appended for node in revived_tree.nodes]
        revived_any = any(node["revived"] for node in nodes)
        if as_json:
            _emit_json({"session_id": session_id, "revived": revived_any, "sessions": nodes})
        else:
            console = _console()
            for node, events in zip(nodes, appended, strict=True):
                _print_node(console, node, events)
            if revived_any:
                console.print(
                    "next: run the revived sessions in the order above (children first); "
                    "each child's answer goes to its parent's pending wait under its call id "
                    "(turnlog.revive_tree, then turnlog.continue_tree)"
                )
        if not revived_any:
            _not_revived(nodes[0] if nodes else {}, as_json=as_json)
        return
    with open_log(store, session_id, create=False) as log:
        torn = log.torn_tail
        revival = revive(log, max_revivals=max_revivals)
    node = _revival_fields(session_id, revival)
    node["torn_tail"] = _to_builtins(torn)
    if as_json:
        _emit_json(node)
    else:
        console = _console()
        if torn is not None:
            console.print(f"moved a torn tail of {torn.size_bytes} bytes to {torn.sidecar}")
        _print_node(console, node, revival.appended)
        if node["next"]:
            console.print(f"next: {node['next']}")
    if revival.reason == "paused":
        # Not a failure: a paused run is left to its decisions, on purpose.
        if not as_json:
            click.echo(f"not revived: {revival.hint}")
        return
    if not revival.revived:
        _not_revived(node, as_json=as_json)


def _next_step(session_id: str, revival: Any) -> str | None:
    """What the agent's loop must do now, in words; None when nothing was revived."""
    if not revival.revived:
        return None
    agent = revival.agent
    who = f" as agent {agent.id}" if agent is not None and agent.id else ""
    if revival.pending:
        return (
            f"run the subagents {', '.join(w.agent_id for w in revival.pending)} to their "
            f"answers, write each to {session_id}'s pending wait under its call id, then "
            f"resume {session_id}'s open turn{who} (turnlog.revive_tree and "
            "turnlog.continue_tree do all of it)"
        )
    return (
        f"run the agent's loop on {session_id}{who}: it carries on from the log as it is, "
        "and the model reads the synthetic results and the notice (turnlog.continue_run, "
        "or your own loop with log.messages); no tool call is replayed"
    )


def _revival_fields(session_id: str, revival: Any) -> dict[str, Any]:
    agent = revival.agent
    return {
        "session_id": session_id,
        "revived": revival.revived,
        "reason": revival.reason,
        "revival": revival.revival,
        "agent_id": agent.id if agent is not None else None,
        "agent_type": agent.type if agent is not None else None,
        "agent_label": agent.label if agent is not None else None,
        "appended": [ev.to_builtins(e) for e in revival.appended],
        "pending": [_to_builtins(wait) for wait in revival.pending],
        "next": _next_step(session_id, revival),
        "hint": revival.hint,
    }


def _revived_node(node: Any) -> dict[str, Any]:
    if node.revival is not None:
        fields = _revival_fields(node.session_id, node.revival)
        # With the answers of finished children, written before the revival.
        fields["appended"] = [ev.to_builtins(e) for e in node.appended]
    else:
        fields = {
            "session_id": node.session_id,
            "revived": False,
            "reason": node.outcome,
            "revival": node.verdict.revivals,
            "agent_id": node.agent_id,
            "agent_type": node.agent_type,
            "agent_label": None,
            "appended": [],
            "pending": [],
            "next": None,
            "hint": None,
        }
    fields["parent"] = node.parent_id
    fields["outcome"] = node.outcome
    return fields


def _describe_node(node: dict[str, Any]) -> str:
    who = f" as agent {node['agent_id']}" if node.get("agent_id") else ""
    if not node["revived"]:
        return f"{node['session_id']}: not revived ({node.get('outcome') or node['reason']})"
    if node["reason"] == "already_revived":
        line = (
            f"{node['session_id']}: already revived{who} (revival {node['revival']}) and not "
            "run on since: not told again, no revival spent"
        )
    else:
        line = f"{node['session_id']}: revived{who} (revival {node['revival']})"
    for wait in node["pending"]:
        line += f"\n  pending wait {wait['call_id']} on agent {wait['agent_id']}"
    return line


def _print_node(console: Console, node: dict[str, Any], events: Sequence[ev.Event]) -> None:
    """A node's outcome, then every event it appended, synthetic results with their risk."""
    from turnlog.cli.render import render_events

    console.print(_describe_node(node))
    if events:
        render_events(console, events, title="appended")
    elif node["revived"]:
        console.print("appended: nothing")


def _not_revived(node: dict[str, Any], *, as_json: bool) -> NoReturn:
    hint = node.get("hint")
    if hint and not as_json:
        click.echo(f"hint: {hint}", err=True)
    sys.exit(EXIT_FINDINGS)


@click.command("sweep")
@click.argument("store_positional", metavar="[STORE]", required=False)
@store_option
@click.option(
    "--older-than",
    "older_than_s",
    type=Seconds(example="600"),
    default=0,
    metavar="SECONDS",
    help="Only sessions whose last event is at least this old.",
)
@click.option("--revive", is_flag=True, help="Revive each recovered session, within the cap.")
@click.option(
    "--paused-max-age",
    "paused_max_age_s",
    type=Seconds(example="604800"),
    default=None,
    metavar="SECONDS",
    help="Settle pauses waiting longer than this as not run (A2); without it a pause "
    "expires only at its own deadline.",
)
@max_revivals_option("The revival cap for --revive.")
@click.option(
    "--otlp-endpoint",
    help="Send the trace of each session this sweep repaired to this OTLP/HTTP endpoint.",
)
@click.option(
    "--otlp-header",
    "otlp_headers",
    multiple=True,
    metavar="K=V",
    help="A header sent to --otlp-endpoint (auth); never printed.",
)
@json_option
@_reports_errors
def sweep_command(
    store_positional: str | None,
    store_url: str | None,
    older_than_s: float,
    revive: bool,
    paused_max_age_s: float | None,
    max_revivals: int,
    otlp_endpoint: str | None,
    otlp_headers: tuple[str, ...],
    as_json: bool,
) -> None:
    """Recover every crashed session in the store (--store, as every command
    takes it; a STORE argument is still read): an open turn and no live writer.

    Safe to run from many processes or machines at once: each session is
    repaired under its writer lock, once. Lists what this sweeper did and what
    it skipped (running, corrupt, too recent, paused), and why. A paused
    session is left as it is; only its pauses past their deadline (or
    --paused-max-age) are settled, as not run.
    """
    from turnlog.ops.sweep import sweep

    if store_positional is not None and store_url is not None and store_positional != store_url:
        raise UsageError(
            f"two stores given: {store_positional!r} and --store {store_url!r}",
            hint="name the store once, with --store",
        )
    store = existing_store(store_url or store_positional)
    console = _console()
    if otlp_endpoint is not None:
        from turnlog.cli.otlp_http import parse_headers, traces_url

        # Checked before anything is repaired: a bad address is a usage error.
        traces_url(otlp_endpoint)
        parse_headers(otlp_headers)
    done = sweep(
        store,
        older_than_s=older_than_s,
        revive=revive,
        max_revivals=max_revivals,
        progress=lambda ids: _progress(console, ids, "sweeping", as_json=as_json),
        paused_max_age_s=paused_max_age_s,
    )
    # A cron sweeper must not report success for a repair that failed.
    failed = sum(item.action == "failed" for item in done)
    if otlp_endpoint is not None:
        from turnlog.cli.traces import send_repaired

        failed += send_repaired(store, done, otlp_endpoint, otlp_headers)
    if as_json:
        _emit_json({"store": store.url, "sessions": done})
    else:
        for item in done:
            extra = f", {item.appended} events appended" if item.appended else ""
            console.print(f"{item.session_id}: {item.action} ({item.reason}{extra})")
        if not done:
            console.print("nothing to sweep: no session has an open turn without a writer")
        if failed:
            click.echo(f"error: {failed} of {len(done)} repairs failed", err=True)
    if failed:
        sys.exit(EXIT_FINDINGS)
