"""Generated unit tests for synthesised tools, run against the built golden database.

Every tool gets a valid call (checked against a direct SQL computation of the
expected rows or effect) and invalid calls (missing record, wrong type, broken
reference, forbidden transition) that must return a clear error and change nothing.
A tool is kept when more than half of its tests pass; the pipeline aims for all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine import state
from ..engine.tools import Tool, ToolError, compile_tool, date_format, invoke, precondition_sql, q

NOW = "2026-06-15T12:00:00Z"


@dataclass
class ToolReport:
    name: str
    passed: int = 0
    failed: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + len(self.failed)

    @property
    def kept(self) -> bool:
        return self.total > 0 and self.passed / self.total > 0.5


class _Case:
    """One test: arguments, and what must hold of (result | error, before, after connections)."""

    def __init__(self, label: str, args: dict[str, Any], expect: Callable[[Any, sqlite3.Connection], bool],
                 error: str | None = None):
        self.label, self.args, self.expect, self.error = label, args, expect, error


def _row(conn: sqlite3.Connection, sql: str, *params: Any) -> dict[str, Any] | None:
    cur = conn.execute(sql, params)
    row = cur.fetchone()
    return None if row is None else dict(zip([d[0] for d in cur.description], row))


def _count(conn: sqlite3.Connection, table: str, where: str = "", params: tuple = ()) -> int:
    return conn.execute(f"SELECT COUNT(*) FROM {q(table)}{where}", params).fetchone()[0]


def _sample(conn: sqlite3.Connection, table: str, where: str = "1", params: tuple = ()) -> dict[str, Any] | None:
    n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {where}", params).fetchone()[0]
    if not n:
        return None
    return _row(conn, f"SELECT * FROM {q(table)} WHERE {where} ORDER BY id LIMIT 1 OFFSET ?", *params, n // 2)


def _arg(value: Any, schema: dict[str, Any]) -> Any:
    """A stored value as a tool argument (SQLite keeps booleans as 0/1)."""
    return bool(value) if schema.get("type") == "boolean" and value is not None else value


def _wrong_type(schema: dict[str, Any]) -> Any:
    return "not-a-number" if schema.get("type") in ("integer", "number") else 12345 if schema.get("type") == "string" else "x"


def _cases(tool: dict[str, Any], conn: sqlite3.Connection) -> list[_Case]:
    impl, params = tool["impl"], tool["parameters"]
    props = params.get("properties", {})
    kind, table = impl["kind"], impl.get("table")
    cases: list[_Case] = []
    if kind == "get":
        key = impl["key"]
        row = _sample(conn, table, f"{q(key['column'])} IS NOT NULL")
        if row is None:
            return cases
        cases.append(_Case("valid lookup", {key["param"]: row[key["column"]]},
                           lambda res, c, row=row: all(res.get(k) == v for k, v in row.items())))
        missing = -1 if props[key["param"]]["type"] == "integer" else "__no_such_record__"
        cases.append(_Case("missing record", {key["param"]: missing}, lambda res, c: True, error="not_found"))
        cases.append(_Case("wrong type", {key["param"]: _wrong_type(props[key["param"]])}, lambda res, c: True,
                           error="invalid_arguments"))
    elif kind in ("search", "list"):
        total = _count(conn, table)
        cases.append(_Case("no filters", {}, lambda res, c: res["total"] == total and len(res["results"]) == min(10, total)))
        for flt in impl.get("filters", [])[:3]:
            row = _sample(conn, table, f"{q(flt['column'])} IS NOT NULL")
            if row is None:
                continue
            value = row[flt["column"]]
            op = flt.get("op", "eq")
            if op == "like":
                value = str(value)[1:4] or str(value)
                where, bind = f" WHERE {q(flt['column'])} LIKE ?", (f"%{value}%",)
            elif op == "prefix":
                value = str(value)[:3]
                where, bind = f" WHERE {q(flt['column'])} LIKE ?", (f"{value}%",)
            else:
                sym = {"eq": "=", "gte": ">=", "lte": "<=", "gt": ">", "lt": "<", "ne": "!="}[op]
                where, bind = f" WHERE {q(flt['column'])} {sym} ?", (value,)
            if "_" in str(value) or "%" in str(value):
                continue  # the SQL oracle above would treat them as wildcards
            expected = _count(conn, table, where, bind)
            cases.append(_Case(f"filter {flt['param']}", {flt["param"]: _arg(value, props[flt["param"]])},
                               lambda res, c, expected=expected: res["total"] == expected))
        cases.append(_Case("bad page size", {"limit": 0}, lambda res, c: True, error="invalid_arguments"))
    elif kind == "aggregate":
        func, col = impl["func"].upper(), q(impl["column"]) if impl.get("column") else "*"
        if impl.get("group_by"):
            g = q(impl["group_by"])
            expected = [list(r) for r in conn.execute(f"SELECT {g}, {func}({col}) FROM {q(table)} GROUP BY {g} ORDER BY {g}")]
            cases.append(_Case("grouped", {}, lambda res, c, e=expected: [[x[impl["group_by"]], x["value"]] for x in res["groups"]]
                               == [[k, round(v, 4) if isinstance(v, float) else v] for k, v in e]))
        else:
            value = conn.execute(f"SELECT {func}({col}) FROM {q(table)}").fetchone()[0]
            cases.append(_Case("all rows", {}, lambda res, c, v=value: res["value"] == (round(v, 4) if isinstance(v, float) else v)))
            for flt in impl.get("filters", [])[:1]:
                row = _sample(conn, table, f"{q(flt['column'])} IS NOT NULL")
                if row is not None:
                    v = conn.execute(f"SELECT {func}({col}) FROM {q(table)} WHERE {q(flt['column'])} = ?", (row[flt["column"]],)).fetchone()[0]
                    cases.append(_Case(f"filter {flt['param']}", {flt["param"]: _arg(row[flt["column"]], props[flt["param"]])},
                                       lambda res, c, v=v: res["value"] == (round(v, 4) if isinstance(v, float) else v)))
            cases.append(_Case("unknown argument", {"no_such_filter": 1}, lambda res, c: True, error="invalid_arguments"))
    elif kind == "create":
        def create_args(row: dict[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, schema in props.items():
                value = row.get(name)
                if value is None:
                    continue
                if name in params.get("required", []) and _is_unique(conn, table, name):
                    value = _fresh(conn, table, name, value)
                out[name] = bool(value) if schema.get("type") == "boolean" else value
            return out

        # The middle row first (as for every tool), then a spread of others for a policy to accept or refuse.
        rows = [r for r in [_sample(conn, table), *(_row(conn, f"SELECT * FROM {q(table)} ORDER BY id LIMIT 1 OFFSET ?", k)
                                                    for k in range(0, 400, 13))] if r is not None]
        if not rows:
            return cases
        # A create with a policy (a quota) is tested with a row the policy allows, and refused for one it does not.
        verdicts = [(create_args(r), _allowed(conn, impl, props, create_args(r))) for r in rows]
        args = next((a for a, ok in verdicts if ok), None)
        refused = next((a for a, ok in verdicts if not ok), None)
        if args is None:
            return cases
        if refused is not None:
            cases.append(_Case("policy refused", refused, lambda res, c: True, error="precondition_failed"))
        before = _count(conn, table)
        cases.append(_Case("valid create", args, lambda res, c: _count(c, table) == before + 1
                           and all(res["created"].get(k) == v for k, v in args.items())))
        required = params.get("required", [])
        if required:
            partial = {k: v for k, v in args.items() if k != required[0]}
            cases.append(_Case(f"missing {required[0]}", partial, lambda res, c: True, error="invalid_arguments"))
        fk = next((name for name, v in impl["values"].items() if _references(tool, name)), None)
        if fk and fk in args:
            cases.append(_Case("broken reference", {**args, fk: 10**9}, lambda res, c: True, error="constraint_violation"))
    elif kind == "update":
        key = impl["key"]
        row = _sample(conn, table)
        other = _row(conn, f"SELECT * FROM {q(table)} ORDER BY id DESC LIMIT 1")
        if row is None:
            return cases
        col = next(iter(impl["set"]))
        new = other.get(col) if other and other.get(col) not in (None, row[col]) else _bump(row[col], props[col], col)
        new = _arg(new, props[col])
        if new is not None and not _is_unique(conn, table, col):
            cases.append(_Case(f"update {col}", {key["param"]: row["id"], col: new},
                               lambda res, c, col=col, new=new: res["updated"][col] == new))
        cases.append(_Case("missing record", {key["param"]: 10**9, col: new if new is not None else row[col]},
                           lambda res, c: True, error="not_found"))
        cases.append(_Case("nothing to change", {key["param"]: row["id"]}, lambda res, c: True, error="invalid_arguments"))
    elif kind == "delete":
        key = impl["key"]
        refs = _referencing(conn, table)
        free = " AND ".join(f"id NOT IN (SELECT {q(c)} FROM {q(t)} WHERE {q(c)} IS NOT NULL)" for t, c in refs) or "1"
        row = _sample(conn, table, free)
        if row is not None:
            cases.append(_Case("delete unreferenced", {key["param"]: row["id"]},
                               lambda res, c, rid=row["id"]: _count(c, table, " WHERE id = ?", (rid,)) == 0))
        if refs:
            t, c = refs[0]
            used = conn.execute(f"SELECT {q(c)} FROM {q(t)} WHERE {q(c)} IS NOT NULL LIMIT 1").fetchone()
            if used:
                cases.append(_Case("referenced record", {key["param"]: used[0]}, lambda res, c: True, error="constraint_violation"))
        cases.append(_Case("missing record", {key["param"]: 10**9}, lambda res, c: True, error="not_found"))
    elif kind == "transition":
        key, col = impl["key"], impl["column"]
        marks = ", ".join("?" * len(impl["from"]))
        extra = {"reason": "requested by the customer"} if "reason" in props else {}
        # Policy preconditions (thresholds, time windows) are SQL over the row with :now bound.
        rules = " AND ".join(f"({p['expr']})" for p in impl.get("preconditions", []) if "expr" in p)
        rule_sql = rules.replace(":now", f"'{NOW}'")
        allowed_sql = f"{q(col)} IN ({marks})" + (f" AND {rule_sql}" if rules else "")
        row = _sample(conn, table, allowed_sql, tuple(impl["from"]))
        if row is not None:
            cases.append(_Case("allowed transition", {key["param"]: row["id"], **extra},
                               lambda res, c: res["updated"][col] == impl["to"]))
        if rules:
            broken = _sample(conn, table, f"{q(col)} IN ({marks}) AND NOT ({rule_sql})", tuple(impl["from"]))
            if broken is not None:
                cases.append(_Case("policy refused", {key["param"]: broken["id"], **extra}, lambda res, c: True,
                                   error="precondition_failed"))
        bad = _sample(conn, table, f"{q(col)} NOT IN ({marks})", tuple(impl["from"]))
        if bad is not None:
            cases.append(_Case("forbidden transition", {key["param"]: bad["id"], **extra}, lambda res, c: True,
                               error="precondition_failed"))
        cases.append(_Case("missing record", {key["param"]: 10**9, **extra}, lambda res, c: True, error="not_found"))
    return cases


def _allowed(conn: sqlite3.Connection, impl: dict[str, Any], props: dict[str, Any], args: dict[str, Any]) -> bool:
    """Whether a create's ``expr`` preconditions hold for ``args`` (the statement the tool runs)."""
    named = {n: args.get(n) for n in props}
    named.update(now=NOW, today=NOW[:10], __key=None)
    for pre in impl.get("preconditions", []):
        if "expr" in pre:
            ok = conn.execute(precondition_sql(impl, pre["expr"]), named).fetchone()
            if not ok or not ok[0]:
                return False
    return True


def _is_unique(conn: sqlite3.Connection, table: str, column: str) -> bool:
    for idx in conn.execute(f"PRAGMA index_list({q(table)})").fetchall():
        if idx[2]:
            cols = [r[2] for r in conn.execute(f"PRAGMA index_info({q(idx[1])})")]
            if cols == [column]:
                return True
    return False


def _fresh(conn: sqlite3.Connection, table: str, column: str, value: Any) -> Any:
    if isinstance(value, int):
        return conn.execute(f"SELECT MAX({q(column)}) FROM {q(table)}").fetchone()[0] + 1
    text = str(value)
    candidate = ("new." + text) if "@" in text else text[:-1] + ("Z" if text[-1:] != "Z" else "Y")
    while _count(conn, table, f" WHERE {q(column)} = ?", (candidate,)):
        candidate = "x" + candidate
    return candidate


def _bump(value: Any, schema: dict[str, Any], name: str = "") -> Any:
    fmt = date_format(name, schema)
    if fmt:   # a date parameter gets a valid, different date (the tool rejects anything else)
        import datetime as dt

        try:
            day = dt.date.fromisoformat(str(value)[:10]) + dt.timedelta(days=1)
        except ValueError:
            day = dt.date(2026, 1, 15)
        return day.isoformat() if fmt == "date" else day.isoformat() + "T09:00:00Z"
    if "enum" in schema:
        others = [v for v in schema["enum"] if v != value]
        return others[0] if others else None
    if schema.get("type") == "boolean":
        return not bool(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value + 1
    if value is None:
        return {"integer": 1, "number": 1.5, "boolean": True}.get(schema.get("type"), "revised")
    return f"{value} (revised)"


def _referencing(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    out = []
    for t in state.user_tables(conn):
        for fk in conn.execute(f"PRAGMA foreign_key_list({q(t)})").fetchall():
            if fk[2] == table:
                out.append((t, fk[3]))
    return out


def _references(tool: dict[str, Any], column: str) -> bool:
    desc = tool["parameters"]["properties"].get(column, {}).get("description", "")
    return column.endswith("_id") and desc.startswith("Id of the")


def check_tool(tool_spec: dict[str, Any], golden: bytes | sqlite3.Connection) -> ToolReport:
    """Run the generated tests of one tool against the golden state (bytes, or a connection to reuse)."""
    report = ToolReport(tool_spec["name"])
    own = not isinstance(golden, sqlite3.Connection)
    conn = state.episode_connection(golden) if own else golden
    try:
        tool: Tool = compile_tool(tool_spec)
        cases = _cases(tool_spec, conn)
    except Exception as exc:  # a tool that does not compile fails all its tests
        report.failed.append(f"compile: {exc}")
        if own:
            conn.close()
        return report
    try:
        for case in cases:
            # Each case runs inside its own savepoint, rolled back afterwards: one copy of the
            # golden state serves every case (a fresh deserialise per case cost ~40% of a build).
            conn.execute("SAVEPOINT test_case")
            try:
                result = invoke(conn, tool, case.args, NOW)
                ok = case.error is None and bool(case.expect(result, conn))
                why = "" if ok else f"{case.label}: unexpected result {str(result)[:120]}"
            except ToolError as exc:
                # the change log is rolled back with the write, so an empty log means nothing changed
                ok = case.error == exc.code and not state.changed_tables(conn)
                why = "" if ok else f"{case.label}: {exc.code} {exc.message[:120]}"
            except Exception as exc:
                ok, why = False, f"{case.label}: crashed {type(exc).__name__}: {exc}"
            finally:
                conn.execute("ROLLBACK TO test_case")
                conn.execute("RELEASE test_case")
            if ok:
                report.passed += 1
            else:
                report.failed.append(why)
    finally:
        if own:
            conn.close()
    return report
