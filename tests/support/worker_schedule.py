"""The tests' worker schedule: pytest-xdist's loadscope with turnlog's groups, mended."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def grouped_load(config: Any, log: Any, group_of: Callable[[str], str | None]) -> Any:
    """A scheduler giving each group of `group_of` to one worker as one unit
    (the bigger ones first) and every other test its own unit."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class GroupedLoad(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            group = group_of(nodeid)
            return nodeid if group is None else f"group: {group}"

        # A worker that dies (a test that kills its own process, a crash in a
        # library) is replaced. pytest-xdist 3.8's loadscope then hangs the
        # run at its end: it requeues the dead worker's finished units as
        # empty ones and runs the crashing test again (pytest-xdist #1378,
        # #1371), and gives the new worker one test while a worker waits for
        # two before it runs one (#1327). These two methods keep the run
        # going: the crash is reported once, as a failure, and the run ends.
        def remove_node(self, node: Any) -> str | None:
            workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
            pending = [
                (scope, nodeid)
                for scope, unit in workload.items()
                for nodeid, done in unit.items()
                if not done
            ]
            if not pending:
                return None
            scope, crashed = pending[0]
            workload[scope][crashed] = True
            for scope, unit in workload.items():
                if not all(unit.values()):
                    self.workqueue[scope] = unit
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

        # A replacement that has not finished collecting gets work when it
        # has (pytest-xdist schedules every node then); handing it a unit
        # before loses the unit.

        def _reschedule(self, node: Any) -> None:
            if node not in self.registered_collections:
                return
            super()._reschedule(node)
            while (
                not node.shutting_down
                and self.workqueue
                and self._pending_of(self.assigned_work[node]) < 2
            ):
                self._assign_work_unit(node)

    return GroupedLoad(config, log)
