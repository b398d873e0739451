"""Every Python block in README.md and docs/ type-checks under mypy --strict, as written."""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
from pathlib import Path

from paths import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def module_of(block: str) -> str:
    """The block as the body of an async function (docs use top-level
    `await`), after a declaration of each name it uses and does not define
    (`agent`, `bank`, ... stand for the reader's own objects) as `Any`."""
    body = "async def _block() -> None:\n" + "".join(f"    {line}\n" for line in block.splitlines())
    tree = ast.parse(body)
    bound: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    free = sorted(used - bound - set(dir(builtins)))
    return "from typing import Any\n" + "".join(f"{name}: Any\n" for name in free) + body


def test_every_doc_block_type_checks(tmp_path: Path) -> None:
    modules = []
    for doc in DOCS:
        for index, block in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)):
            path = tmp_path / f"{doc.stem.lower().replace('-', '_')}_{index}.py"
            path.write_text(module_of(block))
            modules.append(path)
    assert len(modules) >= 10  # the README's and every doc page's examples
    # Run from the project with its own mypy settings (strict) and cache, so
    # the library and its dependencies are read from the cache `make
    # typecheck` left, and only the examples are checked afresh.
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *map(str, modules)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_checksum_recipe_in_format_md_checks_real_lines(tmp_path: Path) -> None:
    """docs/format.md's two-slice check, run as written on lines turnlog wrote."""
    import zlib

    import turnlog

    block = next(
        b
        for b in re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "format.md").read_text(), re.S)
        if "zlib.crc32" in b
    )
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("check me")
    lines = (tmp_path / "s.jsonl").read_bytes().splitlines(keepends=True)
    for line in lines:
        namespace: dict[str, object] = {"zlib": zlib, "line": line}
        exec(block, namespace)
        assert namespace["ok"] is True
    damaged = lines[1].replace(b"check", b"CHECK")
    namespace = {"zlib": zlib, "line": damaged}
    exec(block, namespace)
    assert namespace["ok"] is False
