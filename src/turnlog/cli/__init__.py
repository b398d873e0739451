"""The turnlog command line: parsing arguments and printing what the library says.

Each command lives in the module named for what it works on, and that module
is imported only when the command runs (or its help is shown): `turnlog
inspect --json`, the call a supervisor or a shell hook makes per session,
never loads the renderer, the providers, the loop, the writers or the other
commands.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any, Final

import click

# Each command and where it is defined: (module, attribute).
COMMANDS: Final[Mapping[str, tuple[str, str]]] = {
    "ls": ("turnlog.cli.sessions", "ls_command"),
    "inspect": ("turnlog.cli.sessions", "inspect_command"),
    "plan": ("turnlog.cli.sessions", "plan_command"),
    "show": ("turnlog.cli.records", "show_command"),
    "verify": ("turnlog.cli.records", "verify_command"),
    "recover": ("turnlog.cli.repair", "recover_command"),
    "revive": ("turnlog.cli.repair", "revive_command"),
    "sweep": ("turnlog.cli.repair", "sweep_command"),
    "approve": ("turnlog.cli.decide", "approve_command"),
    "reject": ("turnlog.cli.decide", "reject_command"),
    "deliver": ("turnlog.cli.decide", "deliver_command"),
    "fork": ("turnlog.cli.transfer", "fork_command"),
    "export": ("turnlog.cli.transfer", "export_command"),
    "copy": ("turnlog.cli.transfer", "copy_command"),
    "store": ("turnlog.cli.stores", "store_group"),
    "doctor": ("turnlog.cli.foreign", "doctor_command"),
    "import": ("turnlog.cli.foreign", "import_command"),
    "demo": ("turnlog.cli.demo", "demo_command"),
}

# One example per command, shown at the end of its --help. Kept together so a
# new command is easy to check for one (tests/cli/test_cli.py does).
EXAMPLES: Final = {
    "ls": "turnlog ls --store sessions --json",
    "inspect": "turnlog inspect sessions/run-1.jsonl",
    "plan": "turnlog plan sessions/run-1.jsonl --check",
    "recover": "turnlog recover sessions/run-1.jsonl",
    "revive": "turnlog revive sessions/run-1.jsonl --json",
    "show": "turnlog show sessions/run-1.jsonl",
    "verify": "turnlog verify --store sessions --strict",
    "fork": "turnlog fork sessions/run-1.jsonl --at 12 --id run-1-retry",
    "export": "turnlog export sessions/run-1.jsonl --to anthropic --validate",
    "copy": "turnlog copy sessions sqlite:///sessions.db",
    "sweep": "turnlog sweep --store sessions --revive",
    "approve": "turnlog approve sessions/run-1.jsonl call_7 --by alice",
    "reject": "turnlog reject sessions/run-1.jsonl call_7 --by alice --reason 'not this week'",
    "deliver": "turnlog deliver sessions/run-1.jsonl call_7 'shipment 42 arrived' --by erp",
    "store init": "turnlog store init sqlite:///sessions.db",
    "doctor": "turnlog doctor claude-code --all --dry-run",
    "import": "turnlog import claude-code ~/.claude/projects/my-app/*.jsonl --store sessions",
    "demo": "turnlog demo --dir /tmp/turnlog-demo",
}


def _add_examples(command: click.Command, path: str) -> None:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            _add_examples(sub, f"{path} {name}")
    elif path in EXAMPLES:
        # `\b` keeps click from rewrapping the command line.
        command.epilog = f"\b\nExample:\n  {EXAMPLES[path]}"


class LazyGroup(click.Group):
    """A group whose commands are imported by name when first asked for:
    running one command builds that command alone. `commands` still maps
    every name to its command, for whatever walks the whole tree."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, tuple[str, str]], **kwargs: Any):
        self._lazy = dict(lazy_commands)
        self._loaded: dict[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> MutableMapping[str, click.Command]:
        for name in self._lazy:
            self._load(name)
        return self._loaded

    @commands.setter
    def commands(self, value: MutableMapping[str, click.Command]) -> None:
        self._loaded.update(value)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._lazy, *self._loaded})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            return self._load(cmd_name)
        return self._loaded.get(cmd_name)

    def _load(self, name: str) -> click.Command:
        command = self._loaded.get(name)
        if command is None:
            module, attribute = self._lazy[name]
            command = getattr(importlib.import_module(module), attribute)
            if _freeze_imports:
                gc.freeze()
            if not isinstance(command, click.Command):
                raise TypeError(f"{module}.{attribute} is not a click command")
            _add_examples(command, name)
            self._loaded[name] = command
        return command


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="turnlog")
def main() -> None:
    """turnlog: a crash-safe session log for LLM agents.

    SESSION is a path to a .jsonl file, or a session id in --store.
    Exit codes: 0 ok, 1 findings, 2 usage, 3 unreadable or corrupt input,
    4 a live writer holds the session.
    """
    # Output piped into `head` ends quietly, as other command-line tools do,
    # not with an error about a broken pipe. `_signal` is what `signal` wraps
    # in enums: importing it alone spares every call a third of a millisecond.
    import _signal  # type: ignore[import-not-found]  # no stubs: the C half of `signal`

    if hasattr(_signal, "SIGPIPE"):
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)


def run() -> None:
    """The `turnlog` script: `main`, with what imports made kept out of the
    cycle collector's way.

    A command-line call is short, and the objects its imports make live until
    it ends: frozen (`gc.freeze`), no collection walks them again, the one at
    exit included. `main` alone leaves the collector as it is, for programs
    that call it in-process.
    """
    global _freeze_imports
    _freeze_imports = True
    gc.freeze()
    main()


# Set by `run`: freeze what a command's module brings, too, once it is loaded.
_freeze_imports = False
