"""Tools: declarative kinds interpreted over SQL, or registered Python functions.

Every spec tool has a JSON-Schema ``parameters`` object and an ``impl``:

* ``get`` / ``list`` (alias ``search``) / ``aggregate`` read rows with bound filters
  and pagination;
* ``create`` / ``update`` / ``delete`` / ``transition`` write, with preconditions and
  declarative side effects (``insert`` / ``update`` / ``increment``);
* ``python`` names a function registered with :func:`python_tool` (hand-built domains).

Value expressions inside ``values`` / ``set`` / effects are literals or strings
``$param:NAME``, ``$now``, ``$today``, ``$row:COLUMN`` (the target row before the
change), ``$key`` and ``$new_id`` (the row a ``create`` inserted); ``{"value": x}``
quotes a literal that starts with ``$``.

All SQL is parameterised; a write runs inside a SAVEPOINT and is rolled back whole
on any error, so a failed call never leaves a half-written state.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .argcheck import compile_accept
from .language import singular
from ..util.registry import Registry

if TYPE_CHECKING:
    import jsonschema

WRITE_KINDS = frozenset({"create", "update", "delete", "transition"})
#: Longest string accepted inside tool arguments (the agent's text, not our data).
MAX_ARG_STRING = 4096
_MISSING = object()
#: Per-call savepoint names: a shared name let one call's ROLLBACK TO undo another call's write.
#: ``next()`` on itertools.count is atomic under the GIL.
_SAVEPOINTS = itertools.count()


class ToolError(Exception):
    """A controlled tool failure: becomes an error observation with ``code``."""

    def __init__(self, code: str, message: str):
        self.code, self.message = code, message
        super().__init__(f"{code}: {message}")


PythonTool = Callable[..., Any]
#: Python tool implementations: ``fn(ctx: ToolContext, **arguments)``, named ``domain.function``.
PYTHON_TOOLS: Registry[PythonTool] = Registry("Python tool")
python_tool = PYTHON_TOOLS.register
get_python_tool = PYTHON_TOOLS.get


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def rows_as_dicts(cur: sqlite3.Cursor) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


class ToolContext:
    """What a Python tool sees: the episode's connection, the frozen clock, small SQL helpers."""

    def __init__(self, conn: sqlite3.Connection, now: str):
        self.conn = conn
        self.now = now
        self.today = now[:10]

    def all(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return rows_as_dicts(self.conn.execute(sql, params))

    def one(self, sql: str, *params: Any) -> dict[str, Any] | None:
        cur = self.conn.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))

    def value(self, sql: str, *params: Any) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def execute(self, sql: str, *params: Any) -> int:
        return self.conn.execute(sql, params).rowcount

    def insert(self, table: str, **values: Any) -> int:
        cols = ", ".join(map(q, values))
        marks = ", ".join("?" * len(values))
        return self.conn.execute(f"INSERT INTO {q(table)} ({cols}) VALUES ({marks})", tuple(values.values())).lastrowid

    def update(self, table: str, where: dict[str, Any], **values: Any) -> int:
        sets = ", ".join(f"{q(c)} = ?" for c in values)
        cond = " AND ".join(f"{q(c)} = ?" for c in where)
        return self.conn.execute(
            f"UPDATE {q(table)} SET {sets} WHERE {cond}", (*values.values(), *where.values())
        ).rowcount

    def require(self, sql: str, *params: Any, what: str) -> dict[str, Any]:
        """The single row ``sql`` selects, or a ``not_found`` error naming ``what``."""
        row = self.one(sql, *params)
        if row is None:
            raise ToolError("not_found", f"{what} not found")
        return row

    @staticmethod
    def fail(code: str, message: str) -> None:
        raise ToolError(code, message)


@dataclass
class Tool:
    """One compiled tool: an argument check plus an executor.

    ``accept`` is the compiled conservative check (:mod:`agentworld_envs.engine.argcheck`) that decides
    valid calls without jsonschema; the jsonschema ``validator`` is built only when a call fails
    that check (to decide edge cases and word the error) or for a schema outside its subset.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    impl: dict[str, Any]
    writes: bool
    dates: dict[str, str] = field(default_factory=dict)   # parameter -> "date" | "date-time"

    def __post_init__(self) -> None:
        self._validator: jsonschema.protocols.Validator | None = None
        self._accept: Callable[[Any], bool] | None | bool = False   # False: not compiled yet
        self._run: Callable[[ToolContext, dict[str, Any]], Any] | None = None

    @property
    def run(self) -> Callable[[ToolContext, dict[str, Any]], Any]:
        """The executor, built on first call: an env has ~70 tools and an episode calls a handful
        (building them all was a third of loading a synthesised env, and their closures were
        thousands of objects per env for the garbage collector to scan)."""
        if self._run is None:
            self._run = _make_runner(self.impl, self.parameters)
        return self._run

    @property
    def accept(self) -> Callable[[Any], bool] | None:
        """The compiled accept-check (None: the schema is outside its subset), compiled on first call."""
        if self._accept is False:
            self._accept = compile_accept(self.parameters)
        return self._accept  # type: ignore[return-value]

    @property
    def validator(self) -> "jsonschema.protocols.Validator":
        """The full jsonschema validator of ``parameters`` (built on first need: it costs ~15 ms)."""
        if self._validator is None:
            import jsonschema

            cls = jsonschema.validators.validator_for(self.parameters, default=jsonschema.Draft202012Validator)
            self._validator = cls(self.parameters)
        return self._validator

    def openai_schema(self, name: str | None = None) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": name or self.name, "description": self.description, "parameters": self.parameters}}


#: Control characters a text argument may not hold (tab, LF and CR are text). SQLite reads a NUL as the
#: end of a LIKE pattern, so ``"\x00"`` matched every row and ``"a\x00zz"`` acted like "ends with a".
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_control = CONTROL_CHARS.search


def _bad_text(value: Any, depth: int = 0) -> str | None:
    """``"long"`` (a string over :data:`MAX_ARG_STRING`, or too deep / too many items), ``"control"``
    (a control character in a string or key), or None."""
    if isinstance(value, str):
        return "long" if len(value) > MAX_ARG_STRING else ("control" if _control(value) else None)
    if depth > 8:
        return "long"
    if isinstance(value, dict):
        for k in value:
            if type(k) is str and _control(k):
                return "control"
        items: Any = value.values()
    elif isinstance(value, list):
        if len(value) > 1000:
            return "long"
        items = value
    else:
        return None
    for v in items:  # inline the common scalar cases: one call per argument showed up in read profiles
        if type(v) is str:
            if len(v) > MAX_ARG_STRING:
                return "long"
            if _control(v):
                return "control"
        elif isinstance(v, (dict, list, str)):
            bad = _bad_text(v, depth + 1)
            if bad:
                return bad
    return None


def text_problem(value: Any) -> str | None:
    """Why ``value`` is not acceptable argument text (None when it is)."""
    bad = _bad_text(value)
    if bad == "long":
        return f"an argument is longer than {MAX_ARG_STRING} characters or nested too deeply"
    if bad == "control":
        return control_message(value)
    return None


def control_message(value: Any) -> str:
    found = _first_control(value)
    return (f"an argument contains the control character U+{ord(found):04X}; text arguments must be plain text "
            "(tab and line breaks are fine)")


def _first_control(value: Any) -> str:
    if isinstance(value, str):
        m = _control(value)
        return m.group() if m else ""
    if isinstance(value, dict):
        return next((c for k, v in value.items() for c in (_first_control(k), _first_control(v)) if c), "")
    if isinstance(value, list):
        return next((c for c in map(_first_control, value) if c), "")
    return ""


def validate_arguments(tool: Tool, args: Any) -> None:
    """Raise ``invalid_arguments`` naming the offending argument, before anything runs."""
    if not isinstance(args, dict):
        raise ToolError("invalid_arguments", f"arguments for {tool.name} must be a JSON object")
    accept = tool.accept
    if (accept is not None and accept(args)) or tool.validator.is_valid(args):
        if _bad_text(args):
            raise ToolError("invalid_arguments", text_problem(args))
        for name, fmt in tool.dates.items():
            value = args.get(name)
            if isinstance(value, str) and not _valid_date(value, fmt):
                example = "2026-03-15" if fmt == "date" else "2026-03-15T09:30:00Z"
                raise ToolError("invalid_arguments", f"{name}: {value[:40]!r} is not a valid {fmt} (use ISO 8601, e.g. {example})")
        return
    import jsonschema

    err = jsonschema.exceptions.best_match(tool.validator.iter_errors(args))
    where = err.json_path.replace("$.", "", 1) if err.json_path != "$" else "arguments"
    message = err.message if len(err.message) <= 300 else err.message[:300] + "…"
    raise ToolError("invalid_arguments", f"{where}: {message}")


def invoke(conn: sqlite3.Connection, tool: Tool, args: dict[str, Any], now: str) -> Any:
    """Validate and run one tool call; writes are atomic (all or nothing)."""
    validate_arguments(tool, args)
    ctx = ToolContext(conn, now)
    if not tool.writes:
        return _guard(tool.run, ctx, args)
    savepoint = f"tool_call_{next(_SAVEPOINTS)}"
    conn.execute(f"SAVEPOINT {savepoint}")
    try:
        result = _guard(tool.run, ctx, args)
    except BaseException:
        conn.execute(f"ROLLBACK TO {savepoint}")
        conn.execute(f"RELEASE {savepoint}")
        raise
    conn.execute(f"RELEASE {savepoint}")
    return result


def _guard(run: Callable[[ToolContext, dict[str, Any]], Any], ctx: ToolContext, args: dict[str, Any]) -> Any:
    try:
        return run(ctx, args)
    except sqlite3.IntegrityError as exc:
        raise ToolError("constraint_violation", str(exc)) from None
    except (OverflowError, sqlite3.InterfaceError, sqlite3.ProgrammingError) as exc:
        raise ToolError("invalid_arguments", f"argument cannot be stored: {exc}") from None


# --------------------------------------------------------------------------- declarative kinds


def _resolve(expr: Any, env: dict[str, Any]) -> Any:
    if isinstance(expr, dict) and set(expr) == {"value"}:
        return expr["value"]
    if not (isinstance(expr, str) and expr.startswith("$")):
        return expr
    head, _, arg = expr[1:].partition(":")
    if head == "param":
        return env["args"].get(arg, _MISSING)
    if head == "row":
        return env["row"][arg]
    if head in ("now", "today", "key", "new_id"):
        return env[head]
    raise ValueError(f"unknown value expression {expr!r}")


def _resolve_all(mapping: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for col, expr in mapping.items():
        value = _resolve(expr, env)
        if value is not _MISSING:
            out[col] = value
    return out


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_PLAIN_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_OPS = {"eq": "=", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def _where(filters: list[dict[str, Any]], args: dict[str, Any]) -> tuple[str, list[Any]]:
    conds, params = [], []
    for flt in filters:
        if flt["param"] not in args or args[flt["param"]] is None:
            continue
        value, col, op = args[flt["param"]], q(flt["column"]), flt.get("op", "eq")
        if op in ("lte", "gt") and isinstance(value, str) and _PLAIN_DATE.fullmatch(value):
            col = f"substr({col}, 1, 10)"   # "up to 2026-05-31" holds 2026-05-31T10:00, "after" it does not
        if op in _OPS:
            conds.append(f"{col} {_OPS[op]} ?")
            params.append(value)
        elif op == "like":
            conds.append(f"{col} LIKE ? ESCAPE '\\'")
            params.append(f"%{_like_escape(str(value))}%")
        elif op == "prefix":
            conds.append(f"{col} LIKE ? ESCAPE '\\'")
            params.append(f"{_like_escape(str(value))}%")
        elif op == "in":
            values = value if isinstance(value, list) else [value]
            if not values:
                conds.append("0")
                continue
            conds.append(f"{col} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    return (" WHERE " + " AND ".join(conds)) if conds else "", params


def _entity(table: str) -> str:
    return singular(table)


def _fetch_target(ctx: ToolContext, impl: dict[str, Any], args: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    key = args[impl["key"]["param"]]
    row = ctx.one(f"SELECT * FROM {q(impl['table'])} WHERE {q(impl['key']['column'])} = ?", key)
    if row is None:
        raise ToolError("not_found", f"no {_entity(impl['table'])} with {impl['key']['column']} {key!r}")
    return key, row


def precondition_sql(impl: dict[str, Any], expr: str) -> str:
    """The statement an ``expr`` precondition runs: over the target row for tools with a key (update,
    delete, transition), over the arguments alone for ``create`` (e.g. a quota on existing rows)."""
    if "key" not in impl:
        return f"SELECT ({expr})"
    return f"SELECT ({expr}) FROM {q(impl['table'])} WHERE {q(impl['key']['column'])} = :__key"


def _check_preconditions(ctx: ToolContext, impl: dict[str, Any], args: dict[str, Any], key: Any,
                         row: dict[str, Any], param_names: list[str]) -> None:
    for pre in impl.get("preconditions", []):
        if "column" in pre:
            value = row[pre["column"]]
            if ("in" in pre and value not in pre["in"]) or ("not_in" in pre and value in pre["not_in"]):
                raise ToolError("precondition_failed", f"{pre['message']} ({pre['column']} is {value!r})")
        else:
            named = {n: args.get(n) for n in param_names}
            named.update(__key=key, now=ctx.now, today=ctx.today)
            ok = ctx.conn.execute(precondition_sql(impl, pre["expr"]), named).fetchone()
            if not ok or not ok[0]:
                raise ToolError("precondition_failed", pre["message"])


def _apply_effects(ctx: ToolContext, effects: list[dict[str, Any]], env: dict[str, Any]) -> None:
    for eff in effects:
        table = eff["table"]
        if eff["op"] == "insert":
            ctx.insert(table, **_resolve_all(eff["values"], env))
            continue
        where = _resolve_all(eff.get("where", {}), env)
        cond = " AND ".join(f"{q(c)} = ?" for c in where) or "1"
        if eff["op"] == "update":
            values = _resolve_all(eff["set"], env)
            sets = ", ".join(f"{q(c)} = ?" for c in values)
            ctx.conn.execute(f"UPDATE {q(table)} SET {sets} WHERE {cond}", (*values.values(), *where.values()))
        else:  # increment
            by = _resolve(eff["by"], env)
            ctx.conn.execute(f"UPDATE {q(table)} SET {q(eff['column'])} = {q(eff['column'])} + ? WHERE {cond}",
                             (by, *where.values()))


def _projection(impl: dict[str, Any]) -> str:
    return ", ".join(map(q, impl["columns"])) if impl.get("columns") else "*"


_KINDS = frozenset({"python", "get", "list", "search", "aggregate"}) | WRITE_KINDS


def _make_runner(impl: dict[str, Any], parameters: dict[str, Any]) -> Callable[[ToolContext, dict[str, Any]], Any]:
    kind = impl["kind"]
    table = impl.get("table", "")
    param_names = list(parameters.get("properties", {}))

    if kind == "python":
        # Resolved on first call: resolving imports the hand-built domain's module (~30 ms for
        # retail), which a reset never needs. Specs registered at run time had their names
        # resolved already (plugins.check_plugins), so a typo still fails at registration.
        resolved: list[PythonTool] = []

        def run_python(ctx: ToolContext, args: dict[str, Any]) -> Any:
            if not resolved:
                resolved.append(get_python_tool(impl["function"]))
            return resolved[0](ctx, **args)

        return run_python

    if kind == "get":
        # Everything that does not depend on the call is built once here: the statements (so
        # sqlite3's statement cache finds them by identity of text) and their column names, which
        # are fixed by the spec's tables (read from the first result, then reused).
        sql = f"SELECT {_projection(impl)} FROM {q(table)} WHERE {q(impl['key']['column'])} = ?"
        key_param, key_col = impl["key"]["param"], impl["key"]["column"]
        includes = []
        for inc in impl.get("include", []):
            lim = f" LIMIT {int(inc['limit'])}" if inc.get("limit") else ""
            includes.append((inc.get("as", inc["table"]),
                             f"SELECT * FROM {q(inc['table'])} WHERE {q(inc['column'])} = ? ORDER BY rowid{lim}", []))
        main_cols: list[str] = []

        def run_get(ctx: ToolContext, args: dict[str, Any]) -> Any:
            key = args[key_param]
            cur = ctx.conn.execute(sql, (key,))
            found = cur.fetchone()
            if found is None:
                raise ToolError("not_found", f"no {_entity(table)} with {key_col} {key!r}")
            if not main_cols:
                main_cols.extend(d[0] for d in cur.description)
            row = dict(zip(main_cols, found))
            for name, inc_sql, cols in includes:
                cur = ctx.conn.execute(inc_sql, (key,))
                rows = cur.fetchall()
                if not cols and cur.description:
                    cols.extend(d[0] for d in cur.description)
                row[name] = [dict(zip(cols, r)) for r in rows]
            return row

        return run_get

    if kind in ("list", "search"):
        limit_spec = impl.get("limit", {})
        default_limit, max_limit = limit_spec.get("default", 20), limit_spec.get("max", 50)
        order = ", ".join(f"{q(c)} {d.upper()}" for c, d in impl.get("order_by", [])) or "rowid"

        def run_list(ctx: ToolContext, args: dict[str, Any]) -> Any:
            where, params = _where(impl.get("filters", []), args)
            limit = min(int(args.get(limit_spec.get("param", ""), default_limit)), max_limit)
            offset = int(args.get(impl.get("offset_param", ""), 0) or 0)
            total = ctx.value(f"SELECT COUNT(*) FROM {q(table)}{where}", *params)
            rows = ctx.all(f"SELECT {_projection(impl)} FROM {q(table)}{where} ORDER BY {order} LIMIT ? OFFSET ?",
                           *params, max(limit, 0), max(offset, 0))
            return {"total": total, "offset": offset, "results": rows}

        return run_list

    if kind == "aggregate":
        func = impl["func"].upper()
        target = q(impl["column"]) if impl.get("column") else "*"

        def run_aggregate(ctx: ToolContext, args: dict[str, Any]) -> Any:
            where, params = _where(impl.get("filters", []), args)
            if impl.get("group_by"):
                g = q(impl["group_by"])
                rows = ctx.conn.execute(f"SELECT {g}, {func}({target}) FROM {q(table)}{where} GROUP BY {g} ORDER BY {g}",
                                        params).fetchall()
                return {"groups": [{impl["group_by"]: k, "value": _round(v)} for k, v in rows]}
            return {"value": _round(ctx.value(f"SELECT {func}({target}) FROM {q(table)}{where}", *params))}

        return run_aggregate

    if kind == "create":

        def run_create(ctx: ToolContext, args: dict[str, Any]) -> Any:
            _check_preconditions(ctx, impl, args, None, {}, param_names)
            env = {"args": args, "now": ctx.now, "today": ctx.today, "row": {}, "key": None, "new_id": None}
            new_id = ctx.insert(table, **_resolve_all(impl["values"], env))
            env["new_id"] = env["key"] = new_id
            _apply_effects(ctx, impl.get("effects", []), env)
            return {"created": ctx.one(f"SELECT * FROM {q(table)} WHERE rowid = ?", new_id)}

        return run_create

    if kind in ("update", "delete", "transition"):
        key_col = impl["key"]["column"]

        def run_write(ctx: ToolContext, args: dict[str, Any]) -> Any:
            key, row = _fetch_target(ctx, impl, args)
            if kind == "transition" and row[impl["column"]] not in impl["from"]:
                raise ToolError("precondition_failed",
                                f"{_entity(table)} {key!r} is {row[impl['column']]!r}; this action needs "
                                f"{impl['column']} in {impl['from']}")
            _check_preconditions(ctx, impl, args, key, row, param_names)
            env = {"args": args, "now": ctx.now, "today": ctx.today, "row": row, "key": key, "new_id": None}
            if kind == "delete":
                _apply_effects(ctx, impl.get("effects", []), env)
                ctx.conn.execute(f"DELETE FROM {q(table)} WHERE {q(key_col)} = ?", (key,))
                return {"deleted": row}
            values = _resolve_all(impl.get("set", {}), env)
            if kind == "transition":
                values[impl["column"]] = impl["to"]
            elif not values:
                raise ToolError("invalid_arguments", "nothing to update: give at least one field to change")
            ctx.update(table, {key_col: key}, **values)
            _apply_effects(ctx, impl.get("effects", []), env)
            return {"updated": ctx.one(f"SELECT * FROM {q(table)} WHERE {q(key_col)} = ?", key)}

        return run_write

    raise ValueError(f"unknown tool kind {kind!r}")


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


_DATE_TIME_NAME = re.compile(r"(?:^|_)(?:at|datetime|timestamp)(?:_from|_to|_before|_after)?$")
_DATE_NAME = re.compile(r"(?:^|_)(?:date|on)(?:_from|_to|_before|_after)?$")


def date_format(name: str, schema: dict[str, Any]) -> str | None:
    """``"date"`` or ``"date-time"`` for a string parameter that holds one (by its declared
    ``format``, else by its name: ``*_date``, ``*_on``, ``*_at``, and their ranges ``*_from`` /
    ``*_to``; a date-time parameter also takes a plain date)."""
    if schema.get("format") in ("date", "date-time"):
        return schema["format"]
    types = schema.get("type")
    if types != "string" and not (isinstance(types, list) and "string" in types) or "enum" in schema:
        return None
    if _DATE_TIME_NAME.search(name):
        return "date-time"
    if _DATE_NAME.search(name):
        return "date"
    return None


def _valid_date(value: str, fmt: str) -> bool:
    import datetime as dt

    try:
        if fmt == "date":
            return len(value) == 10 and bool(dt.date.fromisoformat(value))
        return bool(dt.datetime.fromisoformat(value.replace("Z", "+00:00"))) and len(value) >= 10
    except ValueError:
        return False


def compile_tool(tool_spec: dict[str, Any]) -> Tool:
    params = dict(tool_spec["parameters"])
    params.setdefault("additionalProperties", False)
    # Date parameters say so in their schema (so the agent sees the format) and are checked.
    props = dict(params.get("properties", {}))
    dates = {}
    for name, schema in props.items():
        fmt = date_format(name, schema) if isinstance(schema, dict) else None
        if fmt:
            dates[name] = fmt
            props[name] = {**schema, "format": fmt}
    if dates:
        params["properties"] = props
    impl = tool_spec["impl"]
    if impl["kind"] not in _KINDS:  # fail at load, not in the middle of an episode
        raise ValueError(f"unknown tool kind {impl['kind']!r}")
    writes = impl["kind"] in WRITE_KINDS or (impl["kind"] == "python" and "read" not in tool_spec.get("tags", []))
    return Tool(
        name=tool_spec["name"], description=tool_spec["description"], parameters=params, impl=impl,
        writes=writes, dates=dates,
    )


