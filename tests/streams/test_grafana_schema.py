"""The generated dashboards against Grafana 10.0's published schema types: each dashboard
becomes a TypeScript constant typed with ``@grafana/schema`` 10.0.3 (grafana/typecheck/) and
``tsc --strict`` must accept it, unknown and missing keys included; a broken copy must fail.
The npm packages are installed once into the state directory (.drainwatch/typecheck)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "grafana" / "typecheck"


def _workdir() -> Path:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the dashboards cannot be type-checked with tsc")
    state = Path(os.environ.get("DRAINWATCH_STATE_DIR") or REPO / ".drainwatch")
    work = state / "typecheck"
    work.mkdir(parents=True, exist_ok=True)
    lock = (SRC / "package-lock.json").read_bytes()
    stamp = work / "node_modules" / ".lock.sha256"
    if not stamp.exists() or stamp.read_text() != hashlib.sha256(lock).hexdigest():
        for name in ("package.json", "package-lock.json"):
            shutil.copy(SRC / name, work / name)
        p = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--silent"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr
        stamp.write_text(hashlib.sha256(lock).hexdigest())
    shutil.copy(SRC / "tsconfig.json", work / "tsconfig.json")
    for old in work.glob("*.ts"):
        old.unlink()
    return work


def _check(work: Path, boards: dict[str, str]) -> subprocess.CompletedProcess[str]:
    header = (SRC / "header.ts").read_text()
    for name, text in boards.items():
        (work / f"{name}.ts").write_text(f"{header}export const {name}: Board = {text};\n")
    return subprocess.run(
        [str(work / "node_modules" / ".bin" / "tsc"), "-p", str(work)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_dashboards_type_check_against_grafana_schema() -> None:
    work = _workdir()
    boards = {p.stem: p.read_text() for p in sorted((REPO / "grafana/dashboards").glob("*.json"))}
    assert len(boards) == 6
    p = _check(work, boards)
    assert p.returncode == 0, p.stdout + p.stderr
    for old in work.glob("*.ts"):
        old.unlink()
    broken = boards["drain"].replace('"gridPos"', '"gridpos"', 1)
    p = _check(work, {"drain": broken})
    assert p.returncode != 0 and "gridpos" in p.stdout
