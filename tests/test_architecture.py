"""Structure: the project's modules import each other without cycles (any import, at any level)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agentworld_envs", "agentworld_rl", "env_registry")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def import_graph() -> nx.DiGraph:
    mods = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for mod, path in mods.items():
        base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parent = ".".join(base.split(".")[: len(base.split(".")) - node.level + 1])
                    target = f"{parent}.{node.module}" if node.module else parent
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names]
                # `from pkg import submodule` depends on the submodule, not on pkg/__init__
                targets = subs if all(s in mods for s in subs) else [target, *subs]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    g.add_edge(mod, t)
    return g


def test_no_import_cycles():
    g = import_graph()
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_the_graph_sees_imports():
    g = import_graph()   # the check is not vacuous: known edges are found
    assert g.has_edge("agentworld_envs.env", "agentworld_envs.catalog")
    assert g.has_edge("agentworld_envs.tasks.gate", "agentworld_envs.tasks.probes")
