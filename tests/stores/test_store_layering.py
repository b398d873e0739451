"""The storage layer's import graph: stores import only what lies below them."""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

SRC = ROOT / "src" / "turnlog"
# What a store may build on: the vocabulary, the errors, the damage report,
# the pure tail reader and the foreign-file sniffer, and the stores package.
BELOW_STORES = {
    "turnlog",
    "turnlog.events",
    "turnlog.errors",
    "turnlog.core.damage",
    "turnlog.core.tail",
    "turnlog.core.sniff",
}


def imports(path: Path) -> set[str]:
    """Every turnlog module a file imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("turnlog"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("turnlog"))
    return found


def test_stores_import_nothing_above_them() -> None:
    for path in sorted((SRC / "stores").rglob("*.py")):
        upward = {
            module
            for module in imports(path)
            if module not in BELOW_STORES and not module.startswith("turnlog.stores")
        }
        assert not upward, f"{path.relative_to(SRC)} imports {sorted(upward)}"
