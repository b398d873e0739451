"""The test layout: the groups that must run in one worker name real tests."""

from __future__ import annotations

import ast

from conftest import ONE_WORKER, one_worker_group
from paths import ROOT


def test_every_test_kept_in_one_worker_exists() -> None:
    for path, names in ONE_WORKER.items():
        source = ROOT / path
        assert source.is_file(), path
        defined = {
            node.name
            for node in ast.parse(source.read_text()).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        }
        assert defined, path
        assert names is None or set(names) <= defined, (path, set(names or ()) - defined)


def test_groups_by_node_id() -> None:
    assert one_worker_group("tests/ops/test_revival.py::test_kill_matrix[body-async]") == (
        "tests/ops/test_revival.py"
    )
    assert one_worker_group("tests/ops/test_revival.py::test_kill_matrix_report") is not None
    assert one_worker_group("tests/ops/test_revival.py::test_kill_matrix_other") is None
    assert one_worker_group("tests/ops/test_memory_bounds.py::test_x[a]") is not None
    assert one_worker_group("tests/cli/test_cli.py::test_kill_matrix") is None
