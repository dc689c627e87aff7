"""The engine's layers as a caller meets them: the window's wire loads no llama.cpp and no numpy, the decision layer
runs without a loaded model, and no module of the app imports itself round a circle.

import-linter (pyproject.toml) keeps the direction of each import; these check what that means when a module is
imported, in a fresh interpreter, since this test process has long loaded everything.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(statement: str, modules: list[str]) -> list[str]:
    """Which of `modules` a fresh Python has loaded after running `statement`."""
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_window_s_wire_loads_neither_llama_cpp_nor_numpy():
    loaded = _loaded_after(
        "import app.engine.host.wire", ["llama_cpp", "numpy", "app.engine.local.llama_model", "app.engine.local"]
    )
    assert loaded == []


def test_the_wire_check_would_see_numpy_if_it_were_loaded():
    """The check above can fail: a module that does load numpy is seen."""
    assert _loaded_after("import app.engine.speculation.history", ["numpy"]) == ["numpy"]


def test_the_decision_layer_runs_without_llama_cpp():
    loaded = _loaded_after(
        "from app.engine.speculation import acceptance, auto_controller, batch_plan, costs, drafters, history, history_file, "
        "online_costs, policy, rounds",
        ["llama_cpp", "app.engine.local", "app.engine.local.llama_model"],
    )
    assert loaded == []


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import each other round a circle (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_module_of_the_app_imports_itself_round_a_circle():
    graph = grimp.build_graph("app")
    assert _circles(graph) == []
    graph.add_import(importer="app.engine.placement.rpc_check", imported="app.engine.placement.rpc")
    assert _circles(graph) == [["app.engine.placement.rpc", "app.engine.placement.rpc_check"]]  # as it once was


def _layered(contract: dict) -> set[str]:
    return {name.strip() for layer in contract["layers"] for name in layer.split("|")}


def test_every_room_of_the_app_and_of_the_engine_sits_in_a_layer():
    """A package or module no layer names is checked by no contract: its imports could run any way unseen."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: import-linter's own TOML reader
        import tomli as tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    outer = next(c for c in contracts if c["type"] == "layers" and "containers" not in c)
    engine = next(c for c in contracts if c.get("containers") == ["app.engine"])

    def rooms(folder: Path, prefix: str) -> set[str]:
        return {
            prefix + (p.stem if p.is_file() else p.name)
            for p in folder.iterdir()
            if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").exists()
        }

    assert rooms(ROOT / "app", "app.") - _layered(outer) == set()
    assert rooms(ROOT / "app" / "engine", "") - _layered(engine) == set()
