"""The test layout: the groups that must run in one worker name real tests."""

from __future__ import annotations

import ast

from conftest import ONE_WORKER, SAMPLED, one_worker_group
from matrix_sample import covering
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


def _defined(path: str) -> set[str]:
    return {
        node.name
        for node in ast.parse((ROOT / path).read_text()).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def test_every_sampled_matrix_exists_and_says_why() -> None:
    for test, (why, _) in SAMPLED.items():
        path, _, name = test.partition("::")
        assert name in _defined(path), test
        assert why.strip(), test


class _Case:
    def __init__(self, **params: int) -> None:
        self.callspec = type("CallSpec", (), {"params": params})()


def test_a_sample_covers_every_value_of_every_parameter_in_few_cases() -> None:
    cases = [_Case(hooks=h, kind=k, store=s) for h in range(2) for k in range(2) for s in range(3)]
    chosen = covering(cases)  # type: ignore[arg-type]
    assert len(chosen) == 3
    for axis, size in (("hooks", 2), ("kind", 2), ("store", 3)):
        assert {c.callspec.params[axis] for c in chosen} == set(range(size))
