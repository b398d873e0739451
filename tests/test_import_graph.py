"""The layers, read from the imports (tests/import_graph.py): every folder stands on a
floor, and no import runs upward but the few the cycle cuts still have to remove."""

from __future__ import annotations

from import_graph import FLOORS, folder_cycles, is_door, modules, room, upward

# What the move into folders left, each to be cut (the layout's cycles):
# `Content` living with the events.
# This list only shrinks.
STILL_UPWARD = {
    ("turnlog.text", "turnlog.events"),
}


def test_every_module_stands_on_a_floor() -> None:
    unplaced = sorted(m for m, path in modules() if not is_door(path) and room(m) not in FLOORS)
    assert not unplaced, unplaced


def test_no_import_runs_upward_but_the_ones_still_to_cut() -> None:
    found = set(upward())
    assert found <= STILL_UPWARD, sorted(found - STILL_UPWARD)


def test_no_two_folders_import_each_other_but_through_those() -> None:
    assert set(folder_cycles()) <= {("events", "text")}
