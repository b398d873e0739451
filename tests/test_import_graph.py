"""The layers, read from the imports (tests/import_graph.py): every folder stands on a
floor, no import runs upward, and no two folders import each other."""

from __future__ import annotations

from import_graph import FLOORS, folder_cycles, graph, is_door, modules, room, upward


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
