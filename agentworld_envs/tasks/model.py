"""What the task generator knows about an environment, read off its spec (tables, FKs, tool impls)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .graph import tool_graph


def words(name: str) -> str:
    return name.replace("_", " ")


@dataclass
class TableInfo:
    name: str
    cols: dict[str, dict[str, Any]]
    singular: str = ""
    get: str | None = None                                   # get-by-id tool
    get_param: str = ""
    finders: dict[str, tuple[str, str]] = field(default_factory=dict)  # label column -> (tool, param)
    search: str | None = None
    search_params: dict[str, str] = field(default_factory=dict)        # column -> eq-filter param
    search_limit: str | None = None
    search_offset: str | None = None
    count: str | None = None
    count_params: dict[str, str] = field(default_factory=dict)
    sums: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # column -> (tool, col->param)
    transitions: list[dict[str, Any]] = field(default_factory=list)   # tool specs
    update: dict[str, Any] | None = None
    fks: dict[str, str] = field(default_factory=dict)                  # fk column -> parent table
    children: list[tuple[str, str]] = field(default_factory=list)      # (child table, fk column)

    @property
    def plural(self) -> str:
        return words(self.name)

    @property
    def label(self) -> str | None:
        return next(iter(self.finders), None)

    def status_col(self) -> str | None:
        if self.transitions:
            return self.transitions[0]["impl"]["column"]
        return None


class EnvModel:
    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.graph = tool_graph(spec)
        self.tools = {t["name"]: t for t in spec["tools"]}
        self.tables: dict[str, TableInfo] = {}
        for t in spec["tables"]:
            info = TableInfo(t["name"], {c["name"]: c for c in t["columns"]})
            for c in t["columns"]:
                if c.get("references"):
                    info.fks[c["name"]] = c["references"].split(".")[0]
            self.tables[t["name"]] = info
        for t in self.tables.values():
            links = Counter(t.fks.values())
            for fk, parent in t.fks.items():
                # "the conversions of the wallet" means nothing where a conversion names two wallets (from, to)
                if parent in self.tables and parent != t.name and links[parent] == 1:
                    self.tables[parent].children.append((t.name, fk))
        for tool in spec["tools"]:
            impl, name = tool["impl"], tool["name"]
            props = tool["parameters"].get("properties", {})
            info = self.tables.get(impl.get("table") or "")
            if info is None:
                continue
            kind = impl["kind"]
            if kind == "get":
                col = impl["key"]["column"]
                if info.cols.get(col, {}).get("primary_key"):
                    if info.get is None and not impl.get("columns"):
                        info.get, info.get_param = name, impl["key"]["param"]
                elif info.cols.get(col, {}).get("unique") and info.cols[col]["type"] == "TEXT" and not impl.get("columns"):
                    info.finders.setdefault(col, (name, impl["key"]["param"]))
            elif kind in ("list", "search") and info.search is None and not impl.get("columns"):
                info.search = name
                info.search_params = {f["column"]: f["param"] for f in impl.get("filters", []) if f.get("op", "eq") == "eq"}
                info.search_limit = impl.get("limit", {}).get("param")
                info.search_offset = impl.get("offset_param")
            elif kind == "aggregate" and not impl.get("group_by"):
                params = {f["column"]: f["param"] for f in impl.get("filters", []) if f.get("op", "eq") == "eq"}
                if impl["func"] == "count" and info.count is None:
                    info.count, info.count_params = name, params
                elif impl["func"] == "sum" and impl.get("column"):
                    info.sums.setdefault(impl["column"], (name, params))
            elif kind == "transition":
                info.transitions.append(tool)
            elif kind == "update" and info.update is None:
                info.update = tool
            del props
        for info in self.tables.values():
            # a search filtering a unique text column by equality also finds one record by its label
            for col, param in info.search_params.items():
                spec_col = info.cols.get(col, {})
                if spec_col.get("unique") and spec_col.get("type") == "TEXT" and col not in info.finders:
                    info.finders[col] = (info.search, param)
            if info.get_param.endswith("_id"):
                info.singular = words(info.get_param[:-3])
            else:
                n = info.name
                info.singular = words(n[:-3] + "y" if n.endswith("ies") else n[:-1] if n.endswith("s") else n)

    def rows(self, conn, table: str, where: str = "1", params: tuple = ()) -> list[dict[str, Any]]:
        cur = conn.execute(f'SELECT * FROM "{table}" WHERE {where} ORDER BY id', params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def edge(self, a: str, b: str) -> dict[str, Any] | None:
        return self.graph.get_edge_data(a, b)

    def feeds(self, a: str, b: str, out_col: str, param: str) -> bool:
        """Does the graph say output ``out_col`` (``table.column``) of tool ``a`` can fill ``param`` of ``b``?"""
        e = self.edge(a, b)
        return bool(e) and [out_col, param] in e["via"]


def clock_gen(spec: dict[str, Any], table: str, column: str) -> dict[str, Any] | None:
    """The ``clock`` generator ``column`` is drawn from (at any depth of its generator), or None."""
    todo: list[Any] = [((spec.get("data") or {}).get("tables", {}).get(table) or {}).get("columns", {}).get(column)]
    while todo:
        g = todo.pop()
        if isinstance(g, dict):
            if g.get("gen") == "clock":
                return g
            todo += [v for v in g.values() if isinstance(v, (dict, list))]
        elif isinstance(g, list):
            todo += g
    return None


def clock_side(spec: dict[str, Any], table: str, column: str, status: str) -> str | None:
    """Which side of today the world keeps ``column`` on for records in ``status`` ("past", "future"), from
    the column's ``clock`` generator; None where the world's clock says nothing."""
    gen = clock_gen(spec, table, column)
    if gen is None:
        return None
    return "past" if status in gen.get("past", ()) else "future" if status in gen.get("future", ()) else None
