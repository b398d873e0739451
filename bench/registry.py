"""Benchmark targets, registered by id.

Every row a benchmark produces carries a stable `id` (its label is for
people and may change). A target names the row it judges by that id, and
the baseline, floor or peer it is judged against by id too, so the two are
printed side by side. `check` judges every registered target: one whose row
(or baseline row) the run did not produce is missed, never skipped, so a
renamed or dropped row fails the run instead of silently losing its target.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

# How a target's figure is made from its rows:
#   value   - the row's own field (a paired ratio, a time, a size)
#   ratio   - the row's field over the baseline's (lower is better for times)
#   speedup - the baseline's field over the row's (how many times faster)
Mode = Literal["value", "ratio", "speedup"]
_OPS = {"<=": operator.le, ">=": operator.ge}


@dataclass(frozen=True)
class Target:
    id: str
    claim: str
    row: str
    op: Literal["<=", ">="]
    bound: float
    mode: Mode = "value"
    baseline: str | None = None
    field: str = "median"
    unit: str = "×"

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"target {self.id}: op {self.op!r} is not <= or >=")
        if self.mode not in ("value", "ratio", "speedup"):
            raise ValueError(f"target {self.id}: mode {self.mode!r} is not value, ratio or speedup")
        if self.mode in ("ratio", "speedup") and self.baseline is None:
            raise ValueError(f"target {self.id}: a {self.mode} needs a baseline row id")


@dataclass(frozen=True)
class Verdict:
    target: Target
    met: bool
    value: float | None
    # The row's own figure and the baseline's, shown beside the target.
    row_text: str
    baseline_text: str
    missing: tuple[str, ...] = ()
    # Why a figure that is there could not be judged.
    unjudged: str = ""

    @property
    def measured(self) -> str:
        if self.unjudged:
            return self.unjudged
        if self.missing:
            return "row missing: " + ", ".join(self.missing)
        assert self.value is not None
        return f"{self.value:,.3f}{self.target.unit}"


def index_rows(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows by id; every row must have one, and no id may repeat."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        row_id = row.get("id")
        if not row_id:
            raise ValueError(f"a row has no id: {row.get('workload')} / {row.get('subject')}")
        if row_id in out:
            raise ValueError(f"two rows share the id {row_id!r}")
        out[row_id] = row
    return out


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _shown(row: dict[str, Any] | None, field: str) -> str:
    """A row's id and figure (and the judged field, when not the median)."""
    if row is None:
        return ""
    text = f"`{row['id']}` {_fmt(row['median'])} {row['unit']}"
    if field != "median" and field in row:
        text += f" ({field} {_fmt(row[field])})"
    return text


def check(targets: Iterable[Target], rows: Iterable[dict[str, Any]]) -> list[Verdict]:
    """Judge every target against the rows of one run."""
    by_id = index_rows(rows)
    verdicts = []
    seen: set[str] = set()
    for target in targets:
        if target.id in seen:
            raise ValueError(f"two targets share the id {target.id!r}")
        seen.add(target.id)
        row = by_id.get(target.row)
        base = by_id.get(target.baseline) if target.baseline else None
        missing = tuple(
            name
            for name, found in ((target.row, row), (target.baseline, base))
            if name is not None and found is None
        )
        # The baseline's field is needed only when the figure is computed from
        # it; a paired ratio's baseline is shown beside it, not divided by.
        computed = ((target.row, row),) + (
            ((target.baseline, base),) if target.mode != "value" else ()
        )
        missing += tuple(
            f"{name}.{target.field}"
            for name, found in computed
            if found is not None and target.field not in found
        )
        if missing:
            verdicts.append(Verdict(target, False, None, "", "", missing))
            continue
        assert row is not None
        value = float(row[target.field])
        if target.mode != "value":
            assert base is not None
            # A ratio over zero, a negative or a non-number proves nothing
            # (timing noise can make a slope negative): missed, and said why.
            divisor = float(base[target.field]) if target.mode == "ratio" else value
            if not (math.isfinite(divisor) and divisor > 0):
                why = f"{target.mode} over a non-positive figure ({divisor})"
                verdicts.append(Verdict(target, False, None, "", "", unjudged=why))
                continue
            if target.mode == "ratio":
                value = value / divisor
            else:
                value = float(base[target.field]) / divisor
        met = bool(_OPS[target.op](value, target.bound))
        verdicts.append(
            Verdict(
                target,
                met,
                value,
                _shown(row, target.field),
                _shown(base, target.field if target.mode != "value" else "median"),
            )
        )
    return verdicts


def table(verdicts: list[Verdict]) -> list[str]:
    lines = [
        "| target id | target | measured | row | baseline, floor or peer | |",
        "|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        t = v.target
        bound = f"{t.op} {t.bound:,g}{t.unit}"
        lines.append(
            f"| `{t.id}` | {t.claim} ({bound}) | {v.measured} | {v.row_text} | "
            f"{v.baseline_text} | {'met' if v.met else 'MISSED'} |"
        )
    return lines
