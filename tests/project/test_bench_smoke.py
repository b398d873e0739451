"""Every benchmark section runs to the end (`bench/run.py --quick`): a change to
the write order that a bench's event sequence breaks fails here, not in the
next `make bench`. Targets are not judged: the quick sizes are too small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from paths import ROOT

BENCH = ROOT / "bench" / "run.py"


@pytest.mark.slow
def test_every_bench_section_runs_at_quick_sizes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--out", str(tmp_path / "quick.md")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert "FAILED sections" not in result.stderr, result.stderr[-4000:]
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-4000:]
    assert (tmp_path / "quick.md").stat().st_size > 0
