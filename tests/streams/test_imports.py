"""The import graph of streams/: no cycle, the contracts a leaf, every import downward.

Static: each ``.py`` file under streams/ (and models/) is parsed with ``ast`` and every
``import`` / ``from ... import`` in it counts, wherever it stands: at module level, inside a
function or method (a lazy import only puts the cycle off until the first call; the modules are
as coupled as with the import at the top), and under ``if TYPE_CHECKING:`` (the annotations
still name the module). ``from streams.a import b`` is an edge to the module ``streams.a.b`` if
there is one, else to ``streams.a``; a parent package is not an edge of its own (its
``__init__`` has its own imports). Dynamic imports (``importlib``) are not seen.

The layers, bottom to top, are :data:`LAYERS`. A module may import a module of a lower layer or
of its own unit (the same package: ``streams.sources.moab`` -> ``streams.sources.files``); of
another unit of its own layer only where the layer says so (:data:`OPEN_LAYERS`); never of a
higher layer. Any cycle between modules fails, whatever the layers say.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# bottom to top: (layer, its units); a unit is a module or a package with all its modules
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the leaf: the Source / Stage / Sink contracts and the types they speak
    ("contracts", ("streams.contracts",)),
    # the output tables, declared by family (-> contracts): the stages write them, the sinks
    # map them to measurements, the catalogue of them all makes docs/outputs.md
    ("tables", ("streams.tables",)),
    # the policies written once, no flow: output format, errors, topics, log lines, memory,
    # files written whole
    (
        "policies",
        (
            "streams.format",
            "streams.errors",
            "streams.topics",
            "streams.logs",
            "streams.tuning",
            "streams.atomic",
        ),
    ),
    # the record codecs (-> contracts, format, topics), the settings (-> errors, logs) and the
    # check that a run's reads and writes are apart (-> errors)
    ("codecs and settings", ("streams.codecs", "streams.config", "streams.overlap")),
    # the Kafka plumbing shared by the shippers, the state store and the worker (-> config,
    # topics)
    ("plumbing", ("streams.kafka",)),
    # the parts of the flow that read and account, peers that never import each other:
    # sources (the replay's readers) and stages
    ("flow parts", ("streams.sources", "streams.stages")),
    # the shippers: each source system's records to Kafka, read with the sources' readers
    # (-> sources, codecs, contracts)
    ("shippers", ("streams.ship",)),
    # the outputs: sinks write the stages' tables (and map them to measurements)
    ("outputs", ("streams.sinks",)),
    # what puts the parts together: the replay flow, the Faust app
    ("flow", ("streams.driver", "streams.app")),
    # the programs: the live worker (streams/live/), the commands, the report and Grafana
    # generators
    (
        "programs",
        (
            "streams.live",
            "streams.commands",
            "streams.cli",
            "streams.demo",
            "streams.demo_live",
            "streams.report",
            "streams.grafana",
            "streams",  # the package itself (its __init__ only: no prefix match)
        ),
    ),
)
# layers whose units may import each other (cycles still fail): the programs use one another
OPEN_LAYERS = frozenset({"programs"})

RANK = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}
LAYER_NAME = {unit: name for name, units in LAYERS for unit in units}


@dataclass(frozen=True, slots=True)
class Import:
    src: str  # importing module
    dst: str  # imported module (streams.* or models.* only)
    where: str  # path:line of the import statement

    def __str__(self) -> str:
        return f"{self.where}: {self.src} -> {self.dst}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of streams/ and models/ by dotted name."""
    out: dict[str, Path] = {}
    for pkg in ("streams", "models"):
        for p in sorted((REPO / pkg).rglob("*.py")):
            if "__pycache__" not in p.parts:
                out[module_name(p)] = p
    return out


def _targets(node: ast.Import | ast.ImportFrom, src: str, is_package: bool) -> Iterator[str]:
    """The modules one import statement names."""
    known = modules()
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    if node.level:  # relative: from the importing module's package, one level up per extra dot
        base = src.split(".") if is_package else src.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        mod = ".".join([*base, *([node.module] if node.module else [])])
    else:
        mod = node.module or ""
    for alias in node.names:
        yield f"{mod}.{alias.name}" if f"{mod}.{alias.name}" in known else mod


def _ours(name: str) -> bool:
    return name.split(".", 1)[0] in ("streams", "models")


@cache
def imports() -> tuple[Import, ...]:
    """Every streams/models import of every streams/models module."""
    out: list[tuple[int, Import]] = []
    for src, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):  # every statement: module level, functions, TYPE_CHECKING
            if isinstance(node, ast.Import | ast.ImportFrom):
                for dst in _targets(node, src, path.name == "__init__.py"):
                    if _ours(dst):
                        where = f"{path.relative_to(REPO)}:{node.lineno}"
                        out.append((node.lineno, Import(src, dst, where)))
    out.sort(key=lambda x: (x[1].src, x[0]))  # by module, then by line
    return tuple(dict.fromkeys(i for _, i in out))


def unit_of(mod: str) -> str | None:
    """The unit of the layer table a streams module belongs to (the longest that holds it)."""
    best = None
    for unit in RANK:
        holds = mod == unit or (unit != "streams" and mod.startswith(unit + "."))
        if holds and (best is None or len(unit) > len(best)):
            best = unit
    return best


def streams_edges() -> list[Import]:
    return [
        i
        for i in imports()
        if i.src.split(".")[0] == "streams" and i.dst.split(".")[0] == "streams"
    ]


def _fail(what: str, offences: list[str]) -> None:
    """Fail with every offence, one a line (path:line: importer -> imported)."""
    if offences:
        pytest.fail(f"{what} ({len(offences)}):\n  " + "\n  ".join(offences), pytrace=False)


def test_the_contracts_import_nothing_of_streams() -> None:
    offences = [str(i) for i in streams_edges() if i.src == "streams.contracts"]
    _fail(
        "streams.contracts is the leaf: it imports models and the standard library only", offences
    )


def test_models_never_import_streams() -> None:
    offences = [
        str(i)
        for i in imports()
        if i.src.split(".")[0] == "models" and i.dst.split(".")[0] == "streams"
    ]
    _fail("models/ is the pure core: it never imports streams", offences)


def test_every_streams_module_has_a_layer() -> None:
    offences = [
        f"{path.relative_to(REPO)}: {mod} is in no unit of LAYERS (add it where it belongs)"
        for mod, path in modules().items()
        if mod.split(".")[0] == "streams" and unit_of(mod) is None
    ]
    _fail("every module of streams/ has a layer", offences)


def layer_violations() -> list[str]:
    out: list[str] = []
    for i in streams_edges():
        src_unit, dst_unit = unit_of(i.src), unit_of(i.dst)
        if src_unit is None or dst_unit is None or src_unit == dst_unit:
            continue  # a module with no layer fails the test above; its own unit is free
        src_layer, dst_layer = LAYER_NAME[src_unit], LAYER_NAME[dst_unit]
        if RANK[dst_unit] > RANK[src_unit]:
            out.append(f"{i}  ({src_layer} may not import {dst_layer}: upward)")
        elif RANK[dst_unit] == RANK[src_unit] and src_layer not in OPEN_LAYERS:
            out.append(f"{i}  ({src_unit} may not import its peer {dst_unit} in {src_layer})")
    return out


def test_imports_go_down_the_layers() -> None:
    _fail("imports against the layers of tests/streams/test_imports.py", layer_violations())


def cycles() -> list[list[str]]:
    """One shortest cycle through each strongly connected group of streams modules (a module
    that imports itself counts)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for i in streams_edges():
        graph[i.src].add(i.dst)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        group.append(x)
                        if x == v:
                            break
                    groups.append(sorted(group))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    out: list[list[str]] = []
    for group in groups:
        start = group[0]
        if len(group) == 1 and start not in graph[start]:
            continue
        inside = set(group)
        paths = {start: [start]}  # breadth first: the shortest way back to start
        queue = [start]
        found: list[str] | None = None
        while queue and found is None:
            v = queue.pop(0)
            for w in sorted(graph[v] & inside):
                if w == start:
                    found = [*paths[v], start]
                    break
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        assert found is not None
        out.append(found)
    return sorted(out)


def test_no_import_cycles() -> None:
    where: dict[tuple[str, str], str] = {}
    for i in streams_edges():
        where.setdefault((i.src, i.dst), i.where)
    offences = [
        " -> ".join(c) + "  [" + ", ".join(where[e] for e in pairwise(c)) + "]" for c in cycles()
    ]
    _fail("import cycles between modules of streams/", offences)


def test_the_checker_sees_what_it_must() -> None:
    """The walk finds lazy and TYPE_CHECKING imports, resolves submodules and relative imports,
    and the layer table orders what the issue names."""
    tree = ast.parse(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from streams.driver import Run\n"
        "def f():\n"
        "    from streams.stages import drain\n"
        "    import streams.sinks.files as s\n"
        "from . import readahead\n"
        "from .files import line_chunks\n"
    )
    found = [
        t
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for t in _targets(node, "streams.sources.moab", False)
    ]
    assert set(found) >= {
        "streams.driver",
        "streams.stages.drain",
        "streams.sinks.files",
        "streams.sources.readahead",
        "streams.sources.files",
    }
    assert unit_of("streams.codecs.nodestatus") == "streams.codecs"
    assert unit_of("streams.live.agents") == "streams.live"
    assert unit_of("streams.newthing") is None
    below = [
        ("streams.contracts", "streams.format"),
        ("streams.format", "streams.codecs"),
        ("streams.codecs", "streams.sources"),
        ("streams.logs", "streams.config"),
        ("streams.contracts", "streams.sources"),
        ("streams.sources", "streams.driver"),
        ("streams.sources", "streams.ship"),
        ("streams.stages", "streams.driver"),
        ("streams.sinks", "streams.driver"),
        ("streams.driver", "streams.live"),
    ]
    for lo, hi in below:
        assert RANK[lo] < RANK[hi], (lo, hi)
    assert RANK["streams.sources"] == RANK["streams.stages"] < RANK["streams.sinks"]
    assert "flow parts" not in OPEN_LAYERS
