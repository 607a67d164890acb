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


def compare(expected: Diff, actual: Diff, free: dict[str, list[str]] | None = None) -> tuple[bool, str]:
    """Does ``actual`` make exactly the ``expected`` change (modulo ``free`` columns per table)?"""
    free = free or {}
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
