"""Tool dependency graph: which tool's output can feed which tool's parameter.

Derived from the spec, never guessed: every tool's *outputs* are the (table, column)
pairs its ``impl`` returns (rows of its table, included child rows, group keys), and
its *inputs* are the (parameter → table.column) bindings of its ``impl`` (key, filters,
values, set). Two columns share a value domain when they are the same column or one
``references`` the other (foreign keys); an edge A → B carries every (output column,
parameter) pair that connects them, weighted by how identifying the domain is
(ids and foreign keys 1.0, other unique columns such as codes and e-mails 0.8).
Python tools (hand-built domains) declare no impl bindings, so their inputs come from
parameter names (``order_id`` → ``orders.id``, a unique column's name → that column).
"""

from __future__ import annotations

from typing import Any

import networkx as nx

ID_WEIGHT, KEY_WEIGHT = 1.0, 0.8


def _columns(spec: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    return {t["name"]: {c["name"]: c for c in t["columns"]} for t in spec["tables"]}


def domain(cols: dict[str, dict[str, dict[str, Any]]], table: str, column: str) -> tuple[str, str]:
    """The value domain of a column: the column it references, else itself."""
    ref = cols.get(table, {}).get(column, {}).get("references")
    if ref:
        rt, rc = ref.split(".")
        return rt, rc
    return table, column


def _identifying(cols: dict[str, dict[str, dict[str, Any]]], dom: tuple[str, str]) -> float:
    col = cols.get(dom[0], {}).get(dom[1], {})
    if col.get("primary_key"):
        return ID_WEIGHT
    if col.get("unique"):
        return KEY_WEIGHT
    return 0.0


def tool_outputs(tool: dict[str, Any], cols: dict[str, dict[str, dict[str, Any]]]) -> set[tuple[str, str]]:
    impl = tool["impl"]
    kind, table = impl["kind"], impl.get("table")
    out: set[tuple[str, str]] = set()
    if kind == "python":
        words = tool["name"].split("_")
        for t in cols:
            stem = t[:-1] if t.endswith("s") else t
            if stem in words or t in words:
                out.update((t, c) for c in cols[t])
        return out
    if kind == "aggregate":
        return {(table, impl["group_by"])} if impl.get("group_by") else set()
    visible = impl.get("columns") or list(cols[table])
    out.update((table, c) for c in visible)
    for inc in impl.get("include", []):
        out.update((inc["table"], c) for c in cols.get(inc["table"], {}))
    return out


def tool_inputs(tool: dict[str, Any], cols: dict[str, dict[str, dict[str, Any]]]) -> list[tuple[str, str, str]]:
    """(parameter, table, column) bindings of a tool."""
    impl = tool["impl"]
    table = impl.get("table")
    params = tool["parameters"].get("properties", {})
    out: list[tuple[str, str, str]] = []
    if impl["kind"] == "python":
        for p in params:
            for t, tcols in cols.items():
                stem = t[:-1] if t.endswith("s") else t
                if p == f"{stem}_id":
                    out.append((p, t, "id"))
                elif p in tcols and tcols[p].get("unique"):
                    out.append((p, t, p))
        return out
    if impl.get("key"):
        out.append((impl["key"]["param"], table, impl["key"]["column"]))
    for flt in impl.get("filters", []):
        out.append((flt["param"], table, flt["column"]))
    for field in ("values", "set"):
        for col, expr in impl.get(field, {}).items():
            if isinstance(expr, str) and expr.startswith("$param:"):
                out.append((expr.split(":", 1)[1], table, col))
    return [(p, t, c) for p, t, c in out if p in params]


def tool_graph(spec: dict[str, Any]) -> nx.DiGraph:
    """Directed, weighted dependency graph over the tools of ``spec``."""
    cols = _columns(spec)
    g = nx.DiGraph()
    outputs: dict[str, dict[tuple[str, str], list[str]]] = {}
    for tool in spec["tools"]:
        impl = tool["impl"]
        g.add_node(tool["name"], kind=impl["kind"], table=impl.get("table"),
                   writes=impl["kind"] in ("create", "update", "delete", "transition"))
        by_dom: dict[tuple[str, str], list[str]] = {}
        for t, c in sorted(tool_outputs(tool, cols)):
            by_dom.setdefault(domain(cols, t, c), []).append(f"{t}.{c}")
        outputs[tool["name"]] = by_dom
    inputs = {}
    for t in spec["tools"]:
        bound = []
        for param, tt, c in tool_inputs(t, cols):
            dom = domain(cols, tt, c)
            w = _identifying(cols, dom)
            if w:
                bound.append((param, dom, w))
        inputs[t["name"]] = bound
    for a in spec["tools"]:
        outs = outputs[a["name"]]
        if not outs:
            continue
        for b in spec["tools"]:
            if a["name"] == b["name"]:
                continue
            via, weight, kinds = [], 0.0, set()
            for param, dom, w in inputs[b["name"]]:
                srcs = outs.get(dom)
                if not srcs:
                    continue
                via.extend([src, param] for src in srcs)
                weight = max(weight, w)
                kinds.add("id" if w == ID_WEIGHT else "key")
            if via:
                g.add_edge(a["name"], b["name"], weight=weight, kind="id" if "id" in kinds else "key", via=via)
    return g


def graph_json(g: nx.DiGraph) -> dict[str, Any]:
    return {"nodes": [{"name": n, **d} for n, d in g.nodes(data=True)],
            "edges": [{"source": a, "target": b, **d} for a, b, d in g.edges(data=True)]}


def describe_graph(g: nx.DiGraph) -> str:
    """A readable listing: per tool, which tools its outputs feed and through which parameters."""
    lines = [f"{g.number_of_nodes()} tools, {g.number_of_edges()} dependency edges "
             f"(A -> B: an output field of A can fill a parameter of B)"]
    for n in g.nodes:
        succ = sorted(g.successors(n), key=lambda b: (-g[n][b]["weight"], b))
        kind = g.nodes[n]["kind"]
        if not succ:
            lines.append(f"{n} ({kind}): (feeds nothing)")
            continue
        parts = []
        for b in succ:
            via = g[n][b]["via"]
            params = sorted({p for _, p in via})
            parts.append(f"{b}({', '.join(params)}; w={g[n][b]['weight']})")
        lines.append(f"{n} ({kind}) -> " + ", ".join(parts))
    return "\n".join(lines)
