"""Exact state diffs: what an episode changed, row by row and column by column.

Every user table logs the rowids its writes touch (``state._change_triggers``), so the diff
of an episode reads only the written rows of the final database and the same rowids of the
golden one. A task's intended change is the diff its reference solution makes; the ``state``
check passes iff a trajectory's diff equals it, except in columns the task declares *free*
(generated ids of inserted rows, free text the instruction does not specify).

A diff is JSON (it lives in task files)::

    {"orders": {"update": [[rowid, {"status": "cancelled", ...}], ...],   # changed columns only
                "insert": [{"id": 901, "order_id": 7, ...}, ...],          # whole new rows
                "delete": [rowid, ...]}}
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections import Counter
from typing import Any, TypedDict

from .state import CHANGES_TABLE


class TableDiff(TypedDict, total=False):
    update: list[list[Any]]          # [rowid, {column: new value}]
    insert: list[dict[str, Any]]
    delete: list[int]


Diff = dict[str, TableDiff]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rows(conn: sqlite3.Connection, table: str, rowids: list[int]) -> dict[int, dict[str, Any]]:
    marks = ", ".join("?" * len(rowids))
    cur = conn.execute(f"SELECT rowid AS _aw_rowid, * FROM {_q(table)} WHERE rowid IN ({marks})", rowids)
    names = [d[0] for d in cur.description]
    return {r[0]: dict(zip(names[1:], r[1:])) for r in cur.fetchall()}


def touched(conn: sqlite3.Connection) -> dict[str, list[int]]:
    """Rowids each table's writes touched in this episode (possibly written back to their old values)."""
    out: dict[str, list[int]] = {}
    for tbl, rid in conn.execute(f"SELECT DISTINCT tbl, rid FROM {CHANGES_TABLE} ORDER BY tbl, rid"):
        if rid is not None:
            out.setdefault(tbl, []).append(rid)
    return out


def diff(initial: sqlite3.Connection, final: sqlite3.Connection) -> Diff:
    """What ``final`` changed relative to ``initial`` (a row written back unchanged is no change)."""
    out: Diff = {}
    for table, rowids in touched(final).items():
        before, after = _rows(initial, table, rowids), _rows(final, table, rowids)
        td: TableDiff = {}
        for rid in rowids:
            old, new = before.get(rid), after.get(rid)
            if old is None and new is not None:
                td.setdefault("insert", []).append(new)
            elif old is not None and new is None:
                td.setdefault("delete", []).append(rid)
            elif old is not None and new is not None and old != new:
                td.setdefault("update", []).append([rid, {c: v for c, v in new.items() if old.get(c) != v}])
        if td:
            out[table] = td
    return out


def norm(value: Any) -> Any:
    """How two cell values are compared: numbers to 6 decimals, text modulo case, spacing and a final period."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return round(value, 6) if value != int(value) else int(value)
    if isinstance(value, str):
        text = " ".join(unicodedata.normalize("NFKC", value).casefold().split())
        return text[:-1].rstrip() if text.endswith(".") else text
    return value


def _update_map(td: TableDiff, free: set[str]) -> dict[int, dict[str, Any]]:
    out = {}
    for rid, cols in td.get("update", []):
        kept = {c: norm(v) for c, v in cols.items() if c not in free}
        if kept:
            out[rid] = kept
    return out


def _insert_bag(td: TableDiff, free: set[str]) -> Counter:
    return Counter(tuple(sorted((c, norm(v)) for c, v in row.items() if c not in free)) for row in td.get("insert", []))


def compare(expected: Diff, actual: Diff, free: dict[str, list[str]] | None = None,
            links: "Links | None" = None) -> tuple[bool, str]:
    """Does ``actual`` make exactly the ``expected`` change (modulo ``free`` columns per table)?

    ``links`` (the schema's primary keys and foreign keys, :func:`schema_links`): inserted rows whose
    primary key the database generates (a free integer key) match up to a consistent renaming of
    those ids, so the rows that reference them (``return_items.return_id`` → ``returns.id``) may
    differ only by that renaming: two returns made in the other order still match, an item attached
    to the other return does not."""
    free = free or {}
    ok, detail = _compare_exact(expected, actual, free)
    if not links or not (_generated_refs(expected, free, links) or _generated_refs(actual, free, links)):
        return ok, detail
    # Literal ids of generated keys mean nothing (the same id may name another parent): compare the shapes.
    if _canonical(expected, free, links) == _canonical(actual, free, links):
        return True, "exactly the intended change (up to the order of generated ids)"
    return False, detail if not ok else "rows refer to generated records other than the intended ones"


def _compare_exact(expected: Diff, actual: Diff, free: dict[str, list[str]]) -> tuple[bool, str]:
    for table in sorted(set(expected) | set(actual)):
        want, got = expected.get(table, {}), actual.get(table, {})
        f = set(free.get(table, ()))
        wu, gu = _update_map(want, f), _update_map(got, f)
        if wu != gu:
            extra = sorted(set(gu) - set(wu))
            missing = sorted(set(wu) - set(gu))
            if extra:
                return False, f"{table}: rows {extra[:5]} changed that the task does not change"
            if missing:
                return False, f"{table}: rows {missing[:5]} not changed as required"
            bad = next(r for r in wu if wu[r] != gu[r])
            return False, f"{table} row {bad}: {_show(gu[bad])} instead of {_show(wu[bad])}"
        if sorted(want.get("delete", [])) != sorted(got.get("delete", [])):
            return False, f"{table}: deleted rows {sorted(got.get('delete', []))[:5]}, expected {sorted(want.get('delete', []))[:5]}"
        wi, gi = _insert_bag(want, f), _insert_bag(got, f)
        if wi != gi:
            n_w, n_g = sum(wi.values()), sum(gi.values())
            if n_w != n_g:
                return False, f"{table}: {n_g} rows inserted, expected {n_w}"
            return False, f"{table}: inserted rows differ from the required ones"
    return True, "exactly the intended change"


class Links(TypedDict):
    """Primary and foreign keys of a schema: ``keys[table]`` its single integer primary key column,
    ``refs[table][column]`` the table a column references."""

    keys: dict[str, str]
    refs: dict[str, dict[str, str]]


def schema_links(spec: dict[str, Any]) -> Links:
    """The :class:`Links` of a spec's tables."""
    keys: dict[str, str] = {}
    refs: dict[str, dict[str, str]] = {}
    for t in spec.get("tables", []):
        pks = [c for c in t.get("columns", []) if c.get("primary_key")]
        if len(pks) == 1 and pks[0].get("type") == "INTEGER":
            keys[t["name"]] = pks[0]["name"]
        for c in t.get("columns", []):
            target = str(c.get("references") or "")
            if target:
                refs.setdefault(t["name"], {})[c["name"]] = target.split(".", 1)[0]
    return {"keys": keys, "refs": refs}


def _generated(d: Diff, free: dict[str, list[str]], links: Links) -> dict[str, dict[Any, int]]:
    """Per table whose inserted rows get a generated key (its integer primary key is free): id → row index."""
    out: dict[str, dict[Any, int]] = {}
    for table, td in d.items():
        key = links["keys"].get(table)
        if key is None or key not in free.get(table, ()):
            continue
        ids = {row.get(key): i for i, row in enumerate(td.get("insert", [])) if row.get(key) is not None}
        if ids:
            out[table] = ids
    return out


def _generated_refs(d: Diff, free: dict[str, list[str]], links: Links) -> bool:
    """Does any written cell reference a generated key of the same diff?"""
    gen = _generated(d, free, links)
    if not gen:
        return False
    for table, td in d.items():
        refs = links["refs"].get(table, {})
        rows = [row for row in td.get("insert", [])] + [cols for _, cols in td.get("update", [])]
        for row in rows:
            if any(c in refs and refs[c] in gen and v in gen[refs[c]] for c, v in row.items()):
                return True
    return False


def _canonical(d: Diff, free: dict[str, list[str]], links: Links) -> tuple[Any, ...]:
    """The diff with every generated key replaced by a label of what its row holds and what refers to
    it (refined a few rounds, as in Weisfeiler-Lehman), so two diffs are equal here iff they are equal
    up to a renaming of generated keys (for the trees that foreign keys make)."""
    gen = _generated(d, free, links)
    nodes: list[tuple[str, str, Any, dict[str, Any]]] = []   # (table, kind, rowid or index, columns)
    owner: dict[tuple[str, Any], int] = {}
    for table in sorted(d):
        td = d[table]
        for i, row in enumerate(td.get("insert", [])):
            key = links["keys"].get(table)
            if table in gen and key is not None and row.get(key) in gen[table]:
                owner[(table, row[key])] = len(nodes)
            nodes.append((table, "insert", i, row))
        for rid, cols in td.get("update", []):
            nodes.append((table, "update", rid, cols))

    def target(table: str, column: str, value: Any) -> int | None:
        ref = links["refs"].get(table, {}).get(column)
        if ref is None or ref not in gen:
            return None
        return owner.get((ref, value))

    base: list[tuple[Any, ...]] = []
    edges: list[list[tuple[str, int]]] = []   # per node: (column, referenced node)
    for table, kind, rid, cols in nodes:
        skip = set(free.get(table, ()))
        plain, out = [], []
        for c, v in sorted(cols.items()):
            t = target(table, c, v)
            if t is not None:
                out.append((c, t))
            elif c not in skip:
                plain.append((c, norm(v)))
        base.append((table, kind, rid if kind == "update" else None, tuple(plain)))
        edges.append(out)
    # an update that only touches free columns is no change (as in the exact comparison)
    keep = [i for i in range(len(nodes)) if nodes[i][1] == "insert" or base[i][3] or edges[i]]
    if len(keep) < len(nodes):
        index = {old: new for new, old in enumerate(keep)}
        nodes = [nodes[i] for i in keep]
        base = [base[i] for i in keep]
        edges = [[(c, index[t]) for c, t in edges[i]] for i in keep]
    incoming: list[list[tuple[str, str, int]]] = [[] for _ in nodes]
    for i, out in enumerate(edges):
        for c, t in out:
            incoming[t].append((nodes[i][0], c, i))
    labels = [hash(b) for b in base]
    for _ in range(4):
        labels = [hash((base[i], tuple(sorted((c, labels[t]) for c, t in edges[i])),
                        tuple(sorted((tb, c, labels[j]) for tb, c, j in incoming[i])))) for i in range(len(nodes))]
    inserted = Counter((nodes[i][0], labels[i]) for i in range(len(nodes)) if nodes[i][1] == "insert")
    updated = sorted((nodes[i][0], nodes[i][2], labels[i]) for i in range(len(nodes)) if nodes[i][1] == "update")
    deleted = sorted((t, tuple(sorted(td.get("delete", [])))) for t, td in d.items() if td.get("delete"))
    return tuple(sorted(inserted.items())), tuple(updated), tuple(deleted)


def _show(cols: dict[str, Any]) -> str:
    return ", ".join(f"{c}={v!r}"[:60] for c, v in list(cols.items())[:4])


def changed_cells(d: Diff) -> list[tuple[str, str, Any, bool]]:
    """``(table, column, new value, inserted?)`` for every cell a diff writes."""
    out = []
    for table, td in d.items():
        for _, cols in td.get("update", []):
            out += [(table, c, v, False) for c, v in cols.items()]
        for row in td.get("insert", []):
            out += [(table, c, v, True) for c, v in row.items()]
    return out
