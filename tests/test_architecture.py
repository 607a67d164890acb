"""Structure: the project's modules depend on each other without cycles, and the suite never on the trainer.

An edge ``a -> b`` is any way module ``a`` can make ``b`` run:

* an ``import`` / ``from ... import`` of ``b``, at any level (module, function, ``if``);
* ``importlib.import_module("b")`` with a literal name;
* a ``"b:attr"`` string in ``a`` (a plug-in named by string: gymnasium entry points, the
  catalogue's spec builders and task sources, Python hooks), and a string that is exactly the
  dotted name of a project submodule (modules to import, e.g. ``env_import_modules``);
* an entry point ``name = "b:attr"`` of a group in ``pyproject.toml``, from every module that
  names that group (``entry_points(group="agentworld.cli")`` in ``cli`` loads it);
* a computed ``import_module(...)`` name: only where listed in :data:`DYNAMIC_IMPORTS`, with
  the modules it can reach.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agentworld_envs", "agentworld_rl", "env_registry")
#: The environment suite: installable and importable without the trainer (``pip install agentworld``).
SUITE = ("agentworld_envs", "env_registry")
TRAINER = "agentworld_rl"
PLUGIN_STRING = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")

#: Modules that call ``import_module`` with a computed name -> prefix of the modules it can import
#: (``None``: only modules its caller names, which are counted where they are written).
DYNAMIC_IMPORTS: dict[str, str | None] = {
    "agentworld_envs": None,   # an old module name (alias of a moved module): what a caller names
    "agentworld_envs.domains": "agentworld_envs.domains.",  # domains.load(name): one subpackage per domain
    "agentworld_envs.util.registry": None,   # resolve("module:attr"): counted where the string is written
    "agentworld_envs.serving.workers": None,    # EnvHost(import_modules=...): modules the caller names
    "agentworld_rl.vector_env": None,   # EpisodeSlot(import_modules=...): likewise
    "agentworld_rl.tasks": None,        # import_env_modules(cfg.env_import_modules): likewise
    "agentworld_envs.external": None,   # the benchmark package (bfcl_eval, tau2) and each env's "module:Class" string
    "agentworld_rl.suites": None,       # an evaluation suite named "module:function": likewise
}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _entry_points() -> dict[str, list[str]]:
    """``pyproject.toml`` entry-point group -> the modules its entry points name."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups: dict[str, list[str]] = {}
    for group, eps in project.get("entry-points", {}).items():
        groups[group] = [value.split(":")[0].strip() for value in eps.values()]
    return groups


def _is_import_module(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (isinstance(f, ast.Name) and f.id == "import_module")


def module_edges(mod: str, path: Path, mods: dict[str, Path], groups: dict[str, list[str]]) -> dict[str, set[str]]:
    """Targets of ``mod`` by kind: ``import``, ``string`` (import_module literals, plug-in strings), ``entry point``."""
    base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found: dict[str, set[str]] = {"import": set(), "string": set(), "entry point": set()}
    for node in ast.walk(tree):
        kind, targets = "import", []
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
        elif isinstance(node, ast.Call) and _is_import_module(node):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                kind, targets = "string", [arg.value]
            else:
                assert mod in DYNAMIC_IMPORTS, f"{mod} imports a computed module name; list it in DYNAMIC_IMPORTS"
                prefix = DYNAMIC_IMPORTS[mod]
                kind, targets = "string", [m for m in mods if prefix and m.startswith(prefix)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value.strip()
            match = PLUGIN_STRING.fullmatch(text)
            if match:
                kind, targets = "string", [match.group(1)]
            elif "." in text and text in mods:
                kind, targets = "string", [text]
            elif text in groups:
                kind, targets = "entry point", groups[text]
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != mod:
                found[kind].add(t)
    return found


def import_graph(kinds: tuple[str, ...] = ("import", "string", "entry point")) -> nx.DiGraph:
    mods = _modules()
    groups = _entry_points()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for mod, path in mods.items():
        for kind, targets in module_edges(mod, path, mods, groups).items():
            if kind in kinds:
                for t in targets:
                    g.add_edge(mod, t, kind=kind)
    return g


def test_no_import_cycles():
    g = import_graph()
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"import cycles (imports, import_module names, plug-in strings, entry points): {cycles}"


def test_the_graph_sees_imports_and_plugin_names():
    g = import_graph()   # the check is not vacuous: known edges of every kind are found
    assert g.edges["agentworld_envs.env", "agentworld_envs.catalogue.catalog"]["kind"] == "import"
    assert g.has_edge("agentworld_envs.tasks.gate", "agentworld_envs.tasks.probes")
    # plug-ins named by string
    assert g.edges["agentworld_envs.registration", "agentworld_envs.env"]["kind"] == "string"
    assert g.edges["agentworld_envs.catalogue.catalog", "agentworld_envs.synthesis.builder"]["kind"] == "string"
    assert g.edges["agentworld_envs.catalogue.catalog", "agentworld_envs.tasks.store"]["kind"] == "string"
    assert g.edges["agentworld_envs.domains", "agentworld_envs.domains.retail"]["kind"] == "string"
    # the trainer's commands, plugged into the CLI through pyproject's entry points
    assert g.edges["agentworld_envs.cli", "agentworld_rl.cli"]["kind"] == "entry point"


def test_a_plugin_string_cycle_is_caught(tmp_path):
    """A cycle made only of a plug-in string and an import is reported (the old catalogue → synthesis one)."""
    mods = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    mods["pkg.a"].write_text('BUILDERS = {"x": "pkg.b:build"}\n')
    mods["pkg.b"].write_text("from pkg import a\n\ndef build():\n    return importlib.import_module('pkg.a')\n")
    g = nx.DiGraph()
    for mod, path in mods.items():
        for targets in module_edges(mod, path, mods, {}).values():
            g.add_edges_from((mod, t) for t in targets)
    assert g.has_edge("pkg.a", "pkg.b") and g.has_edge("pkg.b", "pkg.a")
    assert not nx.is_directed_acyclic_graph(g)


@pytest.mark.parametrize("suite_pkg", SUITE)
def test_the_suite_does_not_depend_on_the_trainer(suite_pkg):
    """No suite module imports or names ``agentworld_rl``; the trainer plugs in through entry points only."""
    g = import_graph(kinds=("import", "string"))
    suite = [m for m in g if m == suite_pkg or m.startswith(suite_pkg + ".")]
    reach = {m: sorted(t for t in nx.descendants(g, m) if t.split(".")[0] == TRAINER) for m in suite}
    offenders = {m: r for m, r in reach.items() if r}
    assert not offenders, f"suite modules that reach the trainer: {offenders}"


def test_every_plugin_string_resolves():
    """Each ``"module:attr"`` string in the project names something that exists (a typo is not a fallback)."""
    from agentworld_envs.util.registry import resolve

    mods = _modules()
    bad = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                match = PLUGIN_STRING.fullmatch(node.value.strip())
                if match and match.group(1).split(".")[0] in PACKAGES:
                    try:
                        resolve(node.value.strip())
                    except ImportError as exc:
                        if not _defined_behind_missing_extra(node.value.strip(), exc, mods):
                            bad.append(f"{mod}: {exc}")
    assert not bad, bad


def _defined_behind_missing_extra(target: str, exc: ImportError, mods: dict[str, Path]) -> bool:
    """A plug-in whose module needs an optional extra that is not installed here (e.g. skyrl_gym):
    it still must name a module of the project that defines the attribute at top level."""
    cause = exc.__cause__ or exc.__context__ or exc
    missing = getattr(cause, "name", None) or ""
    if not missing or missing.split(".")[0] in PACKAGES:
        return False
    module, _, attr = target.partition(":")
    if module not in mods:
        return False
    tree = ast.parse(mods[module].read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return attr.split(".")[0] in names


# --------------------------------------------------------------------------------------------
# Layers: the suite's subpackages in one order; every edge (import, import_module name, plug-in
# string, entry point) goes from a module to its own layer or one below. The trainer is apart:
# it may use any of the suite, the suite reaches it through entry points only.
# --------------------------------------------------------------------------------------------
#: Layers, lowest first.
LAYER_ORDER = ("data", "util", "engine", "sources", "catalogue", "env", "serving", "arena", "audit", "cli")
#: Module or subpackage -> layer. A subpackage's row covers its modules; ``agentworld_envs`` itself only
#: its ``__init__``, so a new top-level module or subpackage needs a row of its own.
LAYERS: dict[str, str] = {
    "env_registry": "data",
    "agentworld_envs": "env",
    "agentworld_envs.env": "env",
    "agentworld_envs.plugins": "env",
    "agentworld_envs.registration": "env",
    "agentworld_envs.cli": "cli",
    "agentworld_envs.util": "util",
    "agentworld_envs.engine": "engine",
    "agentworld_envs.domains": "sources",
    "agentworld_envs.synthesis": "sources",
    "agentworld_envs.tasks": "sources",
    "agentworld_envs.catalogue": "catalogue",
    "agentworld_envs.external": "env",
    "agentworld_envs.serving": "serving",
    "agentworld_envs.arena": "arena",
    "agentworld_envs.audit": "audit",
}


def layer_of(mod: str) -> str | None:
    parts = mod.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in LAYERS and (i == len(parts) or name != "agentworld_envs"):
            return LAYERS[name]
    return None


def test_every_suite_module_has_a_layer():
    missing = sorted(m for m in _modules() if m.split(".")[0] in SUITE and layer_of(m) is None)
    assert not missing, f"modules with no row in LAYERS (add their subpackage): {missing}"


def test_every_edge_goes_down_the_layers():
    g = import_graph()
    rank = {name: i for i, name in enumerate(LAYER_ORDER)}
    up = []
    for a, b, kind in g.edges(data="kind"):
        if a.split(".")[0] not in SUITE or b.split(".")[0] not in SUITE:
            continue
        la, lb = layer_of(a), layer_of(b)
        if la is not None and lb is not None and rank[la] < rank[lb]:
            up.append(f"{a} ({la}) -> {b} ({lb}) [{kind}]")
    assert not up, "edges up the layers " + str(LAYER_ORDER) + ":\n" + "\n".join(sorted(up))


def test_the_layer_check_is_not_vacuous():
    g = import_graph()
    rank = {name: i for i, name in enumerate(LAYER_ORDER)}
    downs = {(layer_of(a), layer_of(b)) for a, b in g.edges if layer_of(a) and layer_of(b)}
    assert ("env", "catalogue") in downs and ("catalogue", "sources") in downs and ("engine", "util") in downs
    assert all(rank[a] >= rank[b] for a, b in downs)


def test_the_suite_reaches_the_trainer_only_through_entry_points():
    g = import_graph()
    bad = sorted(f"{a} -> {b} [{kind}]" for a, b, kind in g.edges(data="kind")
                 if a.split(".")[0] in SUITE and b.split(".")[0] == TRAINER and kind != "entry point")
    assert not bad, bad
