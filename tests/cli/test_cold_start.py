"""Cold start, as a contract on what loads rather than on a time: `turnlog
inspect --json`, run per session by supervisors and shell hooks, imports none
of what it does not use; and the lazy top level still gives every name."""

from __future__ import annotations

import inspect
import json
import pkgutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path
from types import ModuleType

import pytest

import turnlog
from paths import ROOT
from turnlog import events as ev

# Runs the command as the entry point does, in a fresh interpreter, then
# prints the modules it loaded; stdout holds the command's JSON first.
_PROGRAM = """
import sys
from turnlog.cli import main
main(["inspect", "--json", sys.argv[1]], standalone_mode=False)
print("MODULES", " ".join(sorted(sys.modules)))
"""


NEVER_ON_THE_PATH = (
    "rich",
    "asyncio",
    "turnlog.providers",
    "turnlog.formats",
    "turnlog.integrations",
    "turnlog.runtime.loop",
    "turnlog.ops.tree",
    "turnlog.runtime.async_loop",
    "turnlog.handle.log",
    "turnlog.ops.revival",
    "turnlog.ops.transfer",
    "turnlog.ops.sweep",
    "turnlog.cli.render",
    "turnlog.stores.sqlite",
    "turnlog.stores.postgres",
    "sqlite3",
    "secrets",
    # The store's other parts: the whole-file scanner, the writer, the
    # sidecar, the in-memory store and the foreign-file sniffer.
    "turnlog.stores.jsonl.forward",
    "turnlog.stores.jsonl.writer",
    "turnlog.stores.sidecar",
    "turnlog.stores.memory",
    "turnlog.core.sniff",
    # The other commands' modules, and what they alone use.
    "turnlog.cli.records",
    "turnlog.cli.repair",
    "turnlog.cli.transfer",
    "turnlog.cli.stores",
    "turnlog.cli.foreign",
    "turnlog.cli.demo",
    "turnlog.formats.rescue",
    # Recovery's plan, its check, and the command that appends it.
    "turnlog.core.recovery",
    "turnlog.handle.selfcheck",
    "turnlog.ops.recover",
    "turnlog.ops.verify",
    "turnlog.ops.fork",
    "turnlog.cli.demo_agent",
)


def _modules_loaded_by_inspect(path: Path) -> tuple[dict[str, object], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, str(path)], capture_output=True, text=True, check=True
    )
    document, _, modules = done.stdout.partition("MODULES ")
    return json.loads(document), set(modules.split())


def test_inspect_json_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "tiny.jsonl") as log:
        log.user("hi")
    document, modules = _modules_loaded_by_inspect(tmp_path / "tiny.jsonl")
    assert document["status"] == "idle"
    loaded = sorted(
        module
        for module in modules
        for banned in NEVER_ON_THE_PATH
        if module == banned or module.startswith(banned + ".")
    )
    assert loaded == []
    # The path itself is still there: the check above is not vacuous.
    assert {
        "turnlog.ops.inspection",
        "turnlog.stores.jsonl",
        "turnlog.cli.sessions",
        "msgspec",
        "click",
    } <= modules


def test_every_command_is_in_the_lazy_table_and_loads_from_it() -> None:
    # The group lists the table's names without importing a command's module;
    # each name then resolves to the command of that name, with its example.
    program = """
import sys
import click
from turnlog.cli import COMMANDS, EXAMPLES, main
names = main.list_commands(click.Context(main))
assert not [m for m in sys.modules if m.startswith("turnlog.cli.")], sorted(sys.modules)
for name in names:
    command = main.get_command(click.Context(main), name)
    assert command is not None and command.name == name, name
    if not isinstance(command, click.Group):
        assert EXAMPLES[name] in (command.epilog or ""), name
assert names == sorted(COMMANDS) == sorted(main.commands)
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_import_turnlog_alone_loads_no_submodule() -> None:
    program = (
        "import sys, turnlog; print(sorted(m for m in sys.modules if m.startswith('turnlog')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['turnlog']"


def test_every_name_in_all_resolves_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in turnlog.__all__:
            value = getattr(turnlog, name)
            assert value is not None, name
            if name in turnlog._SHADOWED:
                assert callable(value), name  # a callable module (see below)
            elif name != "__version__":
                assert not isinstance(value, ModuleType), name
            namespace: dict[str, object] = {}
            exec(f"from turnlog import {name}", namespace)
            assert namespace[name] is value


def test_the_top_level_is_the_short_list() -> None:
    assert len(turnlog.__all__) == len(set(turnlog.__all__)) == 52
    assert set(turnlog.__all__) == {*turnlog._HOMES, "__version__"}
    assert not set(turnlog._HOMES) & set(turnlog._MOVED)
    for name in ("open", "aopen", "Log", "ToolCall", "inspect", "recover", "revive", "plan"):
        assert name in turnlog.__all__


# `fold` and `fork` are module paths too: their module warns when called (below).
@pytest.mark.parametrize("name", sorted(set(turnlog._MOVED) - turnlog._SHADOWED))
def test_a_moved_name_still_resolves_and_names_its_module(name: str) -> None:
    home = turnlog._MOVED[name]
    module = __import__(home, fromlist=[name])
    with pytest.warns(DeprecationWarning, match=rf"import it from {home}\b"):
        value = getattr(turnlog, name)
    assert value is getattr(module, name)
    assert name not in turnlog.__all__


def test_a_function_named_like_its_module_is_its_module_and_calls_as_the_function() -> None:
    # `turnlog.verdict`, `turnlog.fold` and `turnlog.fork` are module paths
    # and (documented or moved) top-level functions: the attribute is the
    # module, and calling it calls the function the module re-exports.
    import turnlog.fold as fold_module
    import turnlog.fork as fork_module
    import turnlog.verdict as verdict_module
    from turnlog.core.fold import fold
    from turnlog.core.verdict import verdict

    for module in (fold_module, fork_module, verdict_module):
        assert isinstance(module, ModuleType)
    assert turnlog.verdict is verdict_module and turnlog.fold is fold_module
    events = [ev.Event(seq=0, data=ev.Session(session_id="s"), ts="2026-01-01T00:00:00Z")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert turnlog.verdict(events) == verdict(events)
        assert inspect.signature(turnlog.verdict) == inspect.signature(verdict)
    # `fold` left the top level: calling it there warns, as every moved name does.
    with pytest.warns(DeprecationWarning, match="import it from turnlog.core.fold"):
        assert turnlog.fold(events) == fold(events)
    with pytest.warns(DeprecationWarning, match="import it from turnlog.ops.fork"):
        made = "2026-01-02T00:00:00Z"
        forked = turnlog.fork(events, 0, session_id="f", created_at=made)
        assert forked == fork_module.fork(events, 0, session_id="f", created_at=made)
    # Every name that collides with a submodule is one of these.
    submodules = {info.name for info in pkgutil.iter_modules(turnlog.__path__)}
    colliding = (set(turnlog._HOMES) | set(turnlog._MOVED)) & submodules
    assert colliding == turnlog._SHADOWED


def test_submodules_resolve_after_a_bare_import() -> None:
    assert turnlog.events.ToolCall is turnlog.ToolCall
    assert turnlog.stores.open_store is turnlog.open_store
    with pytest.raises(AttributeError):
        turnlog.no_such_name  # noqa: B018


def test_the_script_freezes_what_its_imports_made_and_main_does_not(tmp_path: Path) -> None:
    """`turnlog` (the script, `run`) freezes the objects its imports made, the
    command's module included; `main`, which programs call in-process, leaves
    the collector as it is."""
    with turnlog.open(tmp_path / "tiny.jsonl") as log:
        log.user("hi")
    program = """
import atexit, gc, sys
from turnlog.cli import {entry}
def report():
    # Frozen objects are in no generation the collector walks.
    from turnlog.cli.sessions import inspect_command
    walked = any(o is inspect_command for o in gc.get_objects())
    print("FROZEN", gc.get_freeze_count(), walked)
atexit.register(report)
sys.argv = ["turnlog", "inspect", "--json", sys.argv[1]]
{entry}()
"""
    frozen, walked = {}, {}
    for entry in ("run", "main"):
        done = subprocess.run(
            [sys.executable, "-c", program.format(entry=entry), str(tmp_path / "tiny.jsonl")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        document, _, tail = done.stdout.partition("FROZEN ")
        assert json.loads(document)["status"] == "idle"
        count, seen = tail.split()
        frozen[entry], walked[entry] = int(count), seen == "True"
    assert frozen["main"] == 0 and walked["main"]
    # The command's module, imported after the first freeze, is frozen too.
    assert frozen["run"] > 10_000 and not walked["run"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["turnlog"] == "turnlog.cli:run"
