"""One namespace, layers without circles: the package's shape, checked from its source.

The layers, lowest first (docs/architecture.md draws them): a module imports only modules of
its own layer or of lower ones, siblings in a layer never import each other, and the graph
(type-only imports included) has no circle.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import scope_tool

ROOT = Path(scope_tool.__file__).parent

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"scope_tool"}),  # the protocol: no Temporal
    frozenset({"scope_tool.wire"}),  # values both sides of Temporal share
    frozenset({"scope_tool.config", "scope_tool.gateway"}),  # settings ...; the MCP gateway
    frozenset({"scope_tool.workflows"}),  # the workflow side
    frozenset({"scope_tool.client", "scope_tool.workers"}),  # the client and worker sides
    frozenset({"scope_tool.serving", "scope_tool.testing"}),  # serving pieces, test helpers
    frozenset({"scope_tool.inbox", "scope_tool.mcp", "scope_tool.agents"}),  # front ends
    frozenset({"scope_tool.cli"}),  # the command, which composes the front ends
)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, _dirs, files in os.walk(ROOT, followlinks=True):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = Path(folder, name)
            parts = path.relative_to(ROOT.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in MODULES:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and not parts[1].startswith("_") and parts[1] != "errors":
        return ".".join(parts[:2])
    return "scope_tool"


def _layer(module: str) -> int:
    package = _package(module)
    for index, members in enumerate(LAYERS):
        if package in members:
            return index
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS")


def test_every_module_belongs_to_a_layer() -> None:
    assert len(MODULES) > 100
    assert {_layer(module) for module in MODULES} == set(range(len(LAYERS)))


def test_no_import_runs_up_a_layer_or_across_siblings() -> None:
    wrong = []
    for module, targets in GRAPH.items():
        for target in targets:
            same = _package(module) == _package(target)
            if _layer(target) > _layer(module) or (_layer(target) == _layer(module) and not same):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_the_import_graph_has_no_circle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            visit(node)
    assert not circles, f"import circles: {circles}"


def test_nothing_is_imported_under_a_bare_top_level_name() -> None:
    """Importing every module loads no bare ``workflows``, ``workers`` or old front-end name."""
    names = sorted(name for name in MODULES if not name.endswith("__main__"))
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "tops = sorted({m.split('.')[0] for m in sys.modules})\n"
        "print(' '.join(tops))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT.parent
    )
    assert done.returncode == 0, done.stderr
    tops = set(done.stdout.split())
    assert "scope_tool" in tops
    bare = {"workflows", "workers", "examples"} | {
        f"scope_tool_{front}" for front in ("cli", "inbox", "mcp", "agents")
    }
    assert not tops & bare, tops & bare


@pytest.mark.timeout(300)
def test_a_built_wheel_holds_one_top_level_package(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "--wheel-dir",
            str(tmp_path),
            str(ROOT.parent),
        ],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("scope_tool-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"scope_tool"}
    for needed in (
        "scope_tool/workflows/_workflow.py",
        "scope_tool/workers/__main__.py",
        "scope_tool/client/_client.py",
        "scope_tool/inbox/templates/base.html",
        "scope_tool/py.typed",
    ):
        assert needed in names, needed
    assert not [name for name in names if "examples" in name.split("/")]
    entry = next(name for name in names if name.endswith("entry_points.txt"))
    assert (
        "scope-tool = scope_tool.cli.__main__:main" in zipfile.ZipFile(wheel).read(entry).decode()
    )
