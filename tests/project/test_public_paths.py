"""Every documented import path and the names it holds, frozen: a module that moves
keeps its old path working (a door that only re-exports), name for name."""

from __future__ import annotations

import importlib
import json
import re
import types
import warnings
from pathlib import Path

import pytest

import turnlog
from paths import ROOT, TESTS

# Made from the tree as it stood before the layers became folders: each
# documented module, with the names it defines and the documented names it
# re-exports. A name leaves this list only on purpose, with a CHANGELOG entry.
FROZEN: dict[str, list[str]] = json.loads((TESTS / "public_paths.json").read_text())


@pytest.mark.parametrize("module", sorted(FROZEN))
def test_a_documented_path_still_holds_its_names(module: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        found = importlib.import_module(module)
    assert isinstance(found, types.ModuleType)
    missing = [name for name in FROZEN[module] if not hasattr(found, name)]
    assert not missing, (module, missing)


def test_every_top_level_name_resolves_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in turnlog.__all__:
            assert getattr(turnlog, name) is not None, name


def test_the_frozen_list_is_not_empty() -> None:
    assert len(FROZEN) >= 31 and sum(map(len, FROZEN.values())) >= 350


@pytest.mark.parametrize("module", sorted(FROZEN))
def test_a_documented_path_imports_the_module(module: str) -> None:
    # `import turnlog.X as m` binds what `getattr(turnlog, "X")` gives after
    # the import: it must be the module, whatever top-level name X shares.
    namespace: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        exec(f"import {module} as m", namespace)
    assert isinstance(namespace["m"], types.ModuleType)
    assert namespace["m"] is importlib.import_module(module)


def test_the_docs_say_where_each_door_leads() -> None:
    """docs/api.md's table of documented paths matches the doors in the tree:
    every door is listed, with the module its docstring says it leads to."""
    doc = (ROOT / "docs" / "api.md").read_text()
    listed = dict(re.findall(r"^\| `(turnlog\.\w+)` \| `(turnlog\.[\w.]+)`", doc, re.M))
    src = Path(turnlog.__file__).parent
    doors = {}
    for path in sorted(src.glob("*.py")):
        found = re.match(
            r'"""The door of `(turnlog\.\w+)`, which lives in `([\w.]+)`', path.read_text()
        )
        if found:
            doors[found.group(1)] = found.group(2)
    assert len(doors) >= 18
    assert listed == doors
    for home in doors.values():
        importlib.import_module(home)
