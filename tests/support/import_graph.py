"""The import graph of src/turnlog between its folders (layers): who imports whom,
read from the source, with the floors the folders stand on.

    .venv/bin/python tests/support/import_graph.py     # prints floors, upward arrows, cycles
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "turnlog"

# The floors, bottom up (the layout the folders follow). A module at the top
# of the package that is not a door counts as its own room on its floor.
FLOORS: dict[str, int] = {
    "errors": 1,
    "text": 1,
    "json_depth": 1,
    "events": 2,
    "words": 1,
    "core": 3,
    "stores": 4,
    "providers": 4,
    "exports": 4,
    "handle": 5,
    "ops": 6,
    "runtime": 7,
    "formats": 7,
    "models": 8,
    "integrations": 8,
    "__init__": 8,
    "cli": 9,
    "testing": 9,
    "__main__": 9,
}


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def is_door(path: Path) -> bool:
    """A module at an old path that only re-exports (no code of its own)."""
    tree = ast.parse(path.read_text())
    body = [
        n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
    ]
    return bool(body) and all(isinstance(n, ast.ImportFrom) for n in body)


def room(module: str) -> str:
    """The folder (or top-level module) a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> set[str]:
    """Every turnlog module `path` imports, at any depth (lazy imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("turnlog"):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("turnlog"))
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Module → the real modules it imports (names that are not modules dropped).
    Read once per test process: the tree does not change under a test run.
    The callers only read it."""
    known = dict(modules())
    out: dict[str, set[str]] = {}
    for module, path in known.items():
        # `from turnlog import events` imports `turnlog.events`, not the top level;
        # and a module's own packages are imported before it whatever it says.
        out[module] = {
            m
            for m in imports(path)
            if m in known and m != module and not module.startswith(m + ".") and m != "turnlog"
        }
    return out


def module_cycles() -> list[list[str]]:
    """Groups of modules that import each other, directly or around a circle
    (strongly connected, at any depth of their code: lazy and type-only imports too)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(groups)


def upward() -> list[tuple[str, str]]:
    """(importer, imported) pairs whose imported room stands on a higher floor."""
    known = dict(modules())
    arrows = []
    for module, targets in graph().items():
        if is_door(known[module]):
            continue
        here = FLOORS.get(room(module), 0)
        for target in sorted(targets):
            if FLOORS.get(room(target), 0) > here:
                arrows.append((module, target))
    return sorted(arrows)


def folder_cycles() -> list[tuple[str, str]]:
    """Pairs of rooms that import each other (doors left out)."""
    known = dict(modules())
    edges = {
        (room(module), room(target))
        for module, targets in graph().items()
        if not is_door(known[module])
        for target in targets
        if room(module) != room(target)
    }
    return sorted((a, b) for a, b in edges if (b, a) in edges and a < b)


def main() -> int:
    known = dict(modules())
    rooms = sorted(
        {room(m) for m, p in known.items() if not is_door(p)}, key=lambda r: (FLOORS.get(r, 0), r)
    )
    print("floors:", ", ".join(f"{r}={FLOORS.get(r, '?')}" for r in rooms))
    print(f"modules: {len(known)}, doors: {sum(is_door(p) for p in known.values())}")
    arrows = upward()
    print(f"imports running upward between folders: {len(arrows)}")
    for importer, imported in arrows:
        print(f"  {importer} -> {imported}")
    cycles = folder_cycles()
    print(f"folder pairs importing each other: {len(cycles)}")
    for a, b in cycles:
        print(f"  {a} <-> {b}")
    groups = module_cycles()
    print(f"module cycles: {len(groups)}")
    for group in groups:
        print("  " + " <-> ".join(group))
    largest = max(known.items(), key=lambda kv: len(kv[1].read_text().splitlines()))
    print(f"largest module: {largest[0]} ({len(largest[1].read_text().splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
