"""The layers, read from the imports (tests/support/import_graph.py): every folder stands on a
floor, no import runs upward, and no two folders import each other."""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import (
    FLOORS,
    SRC,
    folder_cycles,
    graph,
    is_door,
    module_cycles,
    modules,
    room,
    upward,
)


def test_every_module_stands_on_a_floor() -> None:
    unplaced = sorted(m for m, path in modules() if not is_door(path) and room(m) not in FLOORS)
    assert not unplaced, unplaced


def test_no_import_runs_upward() -> None:
    assert upward() == []


def test_no_two_folders_import_each_other() -> None:
    assert folder_cycles() == []


def test_the_framework_adapters_do_not_import_the_foreign_transcript_readers() -> None:
    found = sorted(
        (module, target)
        for module, targets in graph().items()
        if room(module) == "integrations"
        for target in targets
        if room(target) == "formats"
    )
    assert found == []


# What the pure core may import from outside turnlog: data shapes, the codec,
# and the clock (`utc_now` reads the time; it touches no file, socket or process).
CORE_MAY_IMPORT = frozenset(
    {"__future__", "collections", "copy", "dataclasses", "datetime", "enum", "msgspec", "time"}
    | {"typing", "re", "itertools", "functools", "math"}
)
# The floors the core stands on: nothing above it, so no store and no handle.
CORE_STANDS_ON = frozenset({"errors", "text", "events", "core"})


def _outside_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found - {"turnlog"}


def _calls_open(path: Path) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
        for node in ast.walk(ast.parse(path.read_text()))
    )


def test_the_core_does_no_io_and_imports_no_store() -> None:
    core = [(module, path) for module, path in modules() if room(module) == "core"]
    assert len(core) >= 15  # read from the tree: every module the folder holds
    for module, path in core:
        outside = _outside_imports(path) - CORE_MAY_IMPORT
        assert not outside, (module, sorted(outside))
        assert not _calls_open(path), module
        above = {room(target) for target in graph()[module]} - CORE_STANDS_ON
        assert not above, (module, sorted(above))


# One concept per module, and a function that fits on a screen or two. Limits
# on everything: a module that grows past these is split by concept.
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120


def test_every_module_and_function_stays_small() -> None:
    too_long = []
    for module, path in modules():
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{module}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{module}.{node.name}: {length} lines")
    assert not too_long, too_long


def test_no_modules_import_each_other() -> None:
    # At any depth of their code, type-only imports included: a circle of
    # modules is one concept spread over files, or two tangled.
    assert module_cycles() == []


# A bench file is read to check a claim: one that grows past this is split
# by what it measures.
MAX_BENCH_LINES = 650


def test_every_bench_file_stays_small() -> None:
    bench = Path(__file__).resolve().parents[2] / "bench"
    too_long = [
        f"{path.name}: {n} lines"
        for path in sorted(bench.glob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_BENCH_LINES
    ]
    assert not too_long, too_long


# The integrations wing: one package per framework on the shared kit.
FRAMEWORK_PACKAGES = ("openai_agents", "adk", "langgraph", "pydantic_ai")
# The agent frameworks' own top-level packages, which only their adapter imports.
FRAMEWORKS = frozenset(
    {"agents", "google", "langgraph", "langchain_core", "pydantic_ai", "claude_agent_sdk"}
)
INTEGRATIONS = "turnlog.integrations."
SRC_INTEGRATIONS = SRC / "integrations"


def _package(module: str) -> str | None:
    """The framework package (or `kit`) an integrations module is in."""
    if not module.startswith(INTEGRATIONS):
        return None
    return module[len(INTEGRATIONS) :].split(".")[0]


def test_no_framework_package_imports_another() -> None:
    crossing = sorted(
        (module, target)
        for module, targets in graph().items()
        if _package(module) in FRAMEWORK_PACKAGES
        for target in targets
        if _package(target) in FRAMEWORK_PACKAGES and _package(target) != _package(module)
    )
    assert crossing == []


def test_every_adapter_handle_is_opened_by_the_kit() -> None:
    # One place opens (and shares) the handles adapters hold: kit/handles.py.
    opening = sorted(
        module
        for module, targets in graph().items()
        if _package(module) in FRAMEWORK_PACKAGES and "turnlog.ops.open" in targets
    )
    assert opening == []


def test_the_kit_imports_no_framework_nor_an_adapter() -> None:
    kit = [(module, path) for module, path in modules() if _package(module) == "kit"]
    assert len(kit) >= 8
    for module, path in kit:
        assert not _outside_imports(path) & FRAMEWORKS, module
        adapters = {_package(target) for target in graph()[module]} & set(FRAMEWORK_PACKAGES)
        assert not adapters, (module, sorted(adapters))


def test_the_package_faces_stay_thin() -> None:
    # A face re-exports its public names, and holds no code of its own.
    faces = [SRC_INTEGRATIONS / name / "__init__.py" for name in (*FRAMEWORK_PACKAGES, "kit")]
    faces.append(SRC_INTEGRATIONS / "__init__.py")
    for face in faces:
        source = face.read_text()
        assert len(source.splitlines()) <= 25, face
        body = [node for node in ast.parse(source).body[1:]]  # after the docstring
        assert all(isinstance(node, ast.ImportFrom) for node in body), face
