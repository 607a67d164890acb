"""Environment specs: load, validate against the shipped JSON Schema, and hash.

A spec is plain JSON (see ``schemas/env_spec.json``). Validation errors name the
JSON path that is wrong, e.g. ``$.tools[3].parameters.type``, so a spec author can
find the mistake without reading the schema.

Specs are validated, not trusted: beyond the schema, names follow a safe identifier grammar,
``check`` expressions a safe SQL grammar (:mod:`agentworld_envs.engine.sqlcheck`), foreign keys must
be acyclic and point at unique columns, and data recipes are bounded (:data:`LIMITS`), so a
spec cannot inject SQL into the DDL or make a build unboundedly expensive. Checks that need the
engine (Python hooks, read-only spec SQL) live in :mod:`agentworld_envs.plugins`.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import re
import string
from importlib import resources
from typing import TYPE_CHECKING, Any

from .sqlcheck import UnsafeExpression, check_expression
from .textgen import PURPOSES, TEXT_KINDS
from ..util.errors import SpecError as SpecError  # defined with the other user errors; public here too

if TYPE_CHECKING:  # jsonschema costs ~60 ms to import: loaded when a spec is validated, not with the package
    import jsonschema

SPEC_VERSION = 1

#: Table, column, tool and parameter names: they end up in SQL, file names and Python keyword arguments.
IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
#: Spec ids name cache files (``<id>-<key>.sqlite``), so they are short and path-safe.
SPEC_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
#: Task ids travel through datasets, CLIs and MCP; bounded and free of path or shell syntax.
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
#: Limits that keep one spec's build and episodes cheap (the registry's largest specs are far below).
LIMITS = {"tables": 64, "columns": 64, "rows": 5000, "tools": 256, "tasks": 2000, "enum": 256, "checks": 16,
          "words": 50, "days": 36500, "pattern": 32, "template": 500, "pool": 4096, "choices": 1000}
GENERATORS = frozenset({"const", "sequence", "int", "float", "money", "bool", "choice", "ref", "code", "format",
                        "date", "datetime", "faker", "words", "pick", "after", "when", "by", "text", "mime_of", "sum",
                        "product", "clock", "changed", "at_most", "paid", "lookup", "lookup_row", "email_of",
                        "not_before", "part_of", "at_least", "after_parents", "recent", "terms", "within",
                        "rollup", "soon", "per_day", "accrued", "differs", "spent_since", "per_year",
                        "minutes_between", "period_end", "floored", "annuity", "band", "elapsed", "ordinal",
                        "amortized"})


@functools.cache
def spec_schema() -> dict[str, Any]:
    """The JSON Schema every environment spec must satisfy."""
    return json.loads(resources.files("agentworld_envs").joinpath("schemas/env_spec.json").read_text())


@functools.cache
def _validator() -> "jsonschema.protocols.Validator":
    import jsonschema

    schema = spec_schema()
    # The schema itself is checked against its metaschema by the tests; doing it here cost ~0.7 s per process.
    return jsonschema.validators.validator_for(schema)(schema)


def _json_path(error: "jsonschema.ValidationError") -> str:
    # best_match descends into oneOf branches; its absolute_path is the data location.
    return error.json_path


def validate_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Validate ``spec`` structurally and referentially; return it unchanged or raise :class:`SpecError`."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(spec))
    if error is not None:
        raise SpecError(_json_path(error), error.message)
    _check_identifiers(spec)  # first: unsafe names are reported before anything that uses them
    _check_reserved(spec)
    _check_references(spec)
    _check_rules(spec)
    return spec


def _check_references(spec: dict[str, Any]) -> None:
    """Cross-field checks a JSON Schema cannot express (names that must exist)."""
    tables = {t["name"]: {c["name"] for c in t["columns"]} for t in spec["tables"]}
    seen: set[str] = set()
    for i, table in enumerate(spec["tables"]):
        if table["name"] in seen:
            raise SpecError(f"$.tables[{i}].name", f"duplicate table {table['name']!r}")
        seen.add(table["name"])
        if table["name"].startswith(("sqlite_", "_aw_")):
            raise SpecError(f"$.tables[{i}].name", "reserved table name prefix")
        for j, col in enumerate(table["columns"]):
            ref = col.get("references")
            if ref:
                rt, rc = ref.split(".")
                if rt not in tables or rc not in tables[rt]:
                    raise SpecError(f"$.tables[{i}].columns[{j}].references", f"unknown column {ref!r}")
    tool_names: set[str] = set()
    for i, tool in enumerate(spec["tools"]):
        if tool["name"] in tool_names or tool["name"] == "submit":
            raise SpecError(f"$.tools[{i}].name", f"duplicate or reserved tool name {tool['name']!r}")
        tool_names.add(tool["name"])
        impl = tool["impl"]
        table = impl.get("table")
        if table is not None and table not in tables:
            raise SpecError(f"$.tools[{i}].impl.table", f"unknown table {table!r}")
        params = tool["parameters"].get("properties", {})
        for key_name in ("key",):
            key = impl.get(key_name)
            if key and key["param"] not in params:
                raise SpecError(f"$.tools[{i}].impl.key.param", f"{key['param']!r} is not a parameter")
            if key and key["column"] not in tables[table]:
                raise SpecError(f"$.tools[{i}].impl.key.column", f"unknown column {key['column']!r}")
        for j, flt in enumerate(impl.get("filters", [])):
            if flt["param"] not in params:
                raise SpecError(f"$.tools[{i}].impl.filters[{j}].param", f"{flt['param']!r} is not a parameter")
            if flt["column"] not in tables[table]:
                raise SpecError(f"$.tools[{i}].impl.filters[{j}].column", f"unknown column {flt['column']!r}")
        for field in ("values", "set"):
            for col in impl.get(field, {}):
                if col not in tables[table]:
                    raise SpecError(f"$.tools[{i}].impl.{field}.{col}", f"unknown column {col!r} in {table!r}")
    for i, rule in enumerate(spec.get("rules", [])):
        if rule["tool"] not in tool_names:
            raise SpecError(f"$.rules[{i}].tool", f"unknown tool {rule['tool']!r}")
        if rule["column"] not in tables.get(rule["table"], ()):
            raise SpecError(f"$.rules[{i}].column", f"unknown column {rule['column']!r} in {rule['table']!r}")
        if rule["kind"] == "duty":
            if rule.get("follow") not in tool_names:
                raise SpecError(f"$.rules[{i}].follow", f"unknown tool {rule.get('follow')!r}")
            if rule.get("parent") not in tables:
                raise SpecError(f"$.rules[{i}].parent", f"unknown table {rule.get('parent')!r}")
    task_ids: set[str] = set()
    for i, task in enumerate(spec.get("tasks", [])):
        if task["id"] in task_ids:
            raise SpecError(f"$.tasks[{i}].id", f"duplicate task id {task['id']!r}")
        task_ids.add(task["id"])
        for j, step in enumerate(task["solution"]):
            if step["name"] not in tool_names and step["name"] != "submit":
                raise SpecError(f"$.tasks[{i}].solution[{j}].name", f"unknown tool {step['name']!r}")


def _name(value: Any, path: str, what: str = "name") -> None:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
        raise SpecError(path, f"{what} {str(value)[:80]!r} must match {IDENTIFIER.pattern} "
                              "(lower-case letters, digits and _, at most 63 characters)")


#: Column names SQLite gives a meaning of its own: a column so named hides the row id that the change
#: log, state hashes and diffs rely on (writes to its table would go unseen by the verifier).
RESERVED_COLUMNS = frozenset({"rowid", "oid", "_rowid_"})
#: Names bound next to a tool's parameters when its ``expr`` preconditions run (``:now``, ``:today``).
PRECONDITION_NAMES = frozenset({"now", "today"})


def _check_reserved(spec: dict[str, Any]) -> None:
    """Names that would shadow what SQLite or the engine relies on are refused, with their path."""
    index_names: dict[str, str] = {}
    for i, table in enumerate(spec["tables"]):
        name = table["name"]
        if name.lower().startswith(("sqlite_", "_aw_")):
            raise SpecError(f"$.tables[{i}].name", f"table name {name!r} uses a prefix reserved by SQLite or the engine")
        for j, col in enumerate(table["columns"]):
            if col["name"].lower() in RESERVED_COLUMNS or col["name"].lower().startswith("_aw_"):
                raise SpecError(f"$.tables[{i}].columns[{j}].name",
                                f"column name {col['name']!r} is reserved by SQLite (it would hide the row id the "
                                f"engine tracks changes by); rename it, e.g. {col['name']}_value")
        n_indexes = sum(1 for c in table["columns"] if c.get("references")) + len(table.get("indexes", []))
        for k in range(n_indexes):
            index_names[f"ix_{name}_{k}"] = f"$.tables[{i}]"
    for i, table in enumerate(spec["tables"]):
        if table["name"] in index_names:
            raise SpecError(f"$.tables[{i}].name", f"table name {table['name']!r} is the name of an index the engine "
                                                   f"creates for {index_names[table['name']]}")
    for i, tool in enumerate(spec["tools"]):
        impl = tool.get("impl", {})
        params = tool["parameters"].get("properties", {})
        if any("expr" in pre for pre in impl.get("preconditions", [])):
            for param in params:
                if param in PRECONDITION_NAMES or param == "__key":
                    raise SpecError(f"$.tools[{i}].parameters.properties.{param}",
                                    f"parameter name {param!r} is bound by the engine in precondition expressions "
                                    f"(:{param}); rename it")
        if impl.get("kind") == "python" and "ctx" in params:
            raise SpecError(f"$.tools[{i}].parameters.properties.ctx",
                            "parameter name 'ctx' is the tool context of Python tools; rename it")


def _check_identifiers(spec: dict[str, Any]) -> None:
    """Every name that reaches SQL, a file name or Python keyword arguments follows the safe grammar."""
    for field in ("tools", "tasks"):
        if len(spec.get(field, [])) > LIMITS[field]:
            raise SpecError(f"$.{field}", f"{len(spec[field])} {field}; at most {LIMITS[field]} are allowed")
    if not SPEC_ID.fullmatch(spec["id"]):
        raise SpecError("$.id", f"id {spec['id'][:80]!r} must match {SPEC_ID.pattern} (at most 64 characters)")
    for i, table in enumerate(spec["tables"]):
        _name(table["name"], f"$.tables[{i}].name", "table name")
        for j, col in enumerate(table["columns"]):
            _name(col["name"], f"$.tables[{i}].columns[{j}].name", "column name")
    for i, tool in enumerate(spec["tools"]):
        _name(tool["name"], f"$.tools[{i}].name", "tool name")
        for param in tool["parameters"].get("properties", {}):
            _name(param, f"$.tools[{i}].parameters.properties.{param}", "parameter name")
    for i, task in enumerate(spec.get("tasks", [])):
        if not TASK_ID.fullmatch(task["id"]):
            raise SpecError(f"$.tasks[{i}].id", f"task id {task['id'][:80]!r} must match {TASK_ID.pattern}")


def _check_rules(spec: dict[str, Any]) -> None:
    """Safety rules: safe CHECK expressions, sound foreign keys, bounded data recipes and sizes."""
    try:
        dt.datetime.strptime(spec["now"], "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise SpecError("$.now", f"{spec['now']!r} is not a real UTC time like 2026-06-15T12:00:00Z") from None
    _check_tables(spec["tables"])
    parents = _check_foreign_keys(spec["tables"], declarative="generator" not in spec["data"])
    _check_data(spec, parents)


def _check_tables(tables: list[dict[str, Any]]) -> None:
    if len(tables) > LIMITS["tables"]:
        raise SpecError("$.tables", f"{len(tables)} tables; at most {LIMITS['tables']} are allowed")
    for i, table in enumerate(tables):
        columns = [c["name"] for c in table["columns"]]
        if len(columns) > LIMITS["columns"]:
            raise SpecError(f"$.tables[{i}].columns", f"{len(columns)} columns; at most {LIMITS['columns']} are allowed")
        seen: set[str] = set()
        for j, col in enumerate(table["columns"]):
            path = f"$.tables[{i}].columns[{j}]"
            if col["name"] in seen:
                raise SpecError(f"{path}.name", f"duplicate column {col['name']!r}")
            seen.add(col["name"])
            if len(col.get("enum", [])) > LIMITS["enum"]:
                raise SpecError(f"{path}.enum", f"at most {LIMITS['enum']} values are allowed")
            if "check" in col:
                _safe_check(col["check"], columns, f"{path}.check")
        for field in ("unique", "indexes"):
            for k, cols in enumerate(table.get(field, [])):
                for m, name in enumerate(cols):
                    if name not in seen:
                        raise SpecError(f"$.tables[{i}].{field}[{k}][{m}]", f"unknown column {name!r}")
        if len(table.get("checks", [])) > LIMITS["checks"]:
            raise SpecError(f"$.tables[{i}].checks", f"at most {LIMITS['checks']} checks are allowed")
        for k, check in enumerate(table.get("checks", [])):
            _safe_check(check, columns, f"$.tables[{i}].checks[{k}]")


def _safe_check(expr: Any, columns: list[str], path: str) -> None:
    try:
        check_expression(expr, columns)
    except UnsafeExpression as exc:
        raise SpecError(path, f"CHECK expression {str(expr)[:80]!r} {exc}") from None


def _check_foreign_keys(tables: list[dict[str, Any]], declarative: bool) -> dict[str, dict[str, str]]:
    """References must point at a primary or unique column, without cycles (data is generated parents-first).

    A self-reference (``categories.parent_id``) is allowed only with a Python data generator,
    which fills it itself; the declarative recipe cannot. Returns ``{table: {parent: path}}``.
    """
    by_name = {t["name"]: t for t in tables}
    parents: dict[str, dict[str, str]] = {}  # table -> {parent table: JSON path of the referencing column}
    for i, table in enumerate(tables):
        for j, col in enumerate(table["columns"]):
            ref = col.get("references")
            if not ref:
                continue
            path = f"$.tables[{i}].columns[{j}].references"
            rt, rc = ref.split(".")
            if rt == table["name"] and declarative:
                raise SpecError(path, f"{table['name']}.{col['name']} references its own table; self-references are "
                                      "not supported (data is generated parents-first)")
            target = next(c for c in by_name[rt]["columns"] if c["name"] == rc)
            single_unique = [rc] in by_name[rt].get("unique", [])
            pks = [c["name"] for c in by_name[rt]["columns"] if c.get("primary_key")]
            if not (target.get("unique") or single_unique or pks == [rc]):
                raise SpecError(path, f"{ref} is neither the primary key nor a unique column of {rt!r}")
            if rt != table["name"]:
                parents.setdefault(table["name"], {}).setdefault(rt, path)
    marks: dict[str, int] = {}  # 1: on the DFS stack, 2: done

    def visit(name: str, trail: list[str]) -> None:
        marks[name] = 1
        for parent, path in parents.get(name, {}).items():
            if marks.get(parent) == 1:
                cycle = " -> ".join(trail[trail.index(parent):] + [name, parent]) if parent in trail else f"{name} -> {parent}"
                raise SpecError(path, f"foreign keys form a cycle ({cycle}); data could not be generated")
            if parent not in marks:
                visit(parent, trail + [name])
        marks[name] = 2

    for t in tables:
        if t["name"] not in marks:
            visit(t["name"], [])
    return parents


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) < 1e15


def _ancestors(table: str, parents: dict[str, dict[str, str]]) -> set[str]:
    seen: set[str] = set()
    todo = [table]
    while todo:
        for parent in parents.get(todo.pop(), {}):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def _check_data(spec: dict[str, Any], parents: dict[str, dict[str, str]]) -> None:
    recipe = spec["data"]
    if "locale" in recipe and not re.fullmatch(r"[a-z]{2}(_[A-Z]{2})?", str(recipe["locale"])):
        raise SpecError("$.data.locale", f"{recipe['locale']!r} is not a locale like en_US")
    if "generator" in recipe:
        return  # a registered Python generator; resolved when the spec is registered
    tables = {t["name"]: t for t in spec["tables"]}
    columns_of = {name: [c["name"] for c in t["columns"]] for name, t in tables.items()}
    for name, plan in recipe["tables"].items():
        base = f"$.data.tables.{name}"
        if name not in tables:
            raise SpecError(base, f"unknown table {name!r}")
        if plan["rows"] > LIMITS["rows"]:
            raise SpecError(f"{base}.rows", f"{plan['rows']} rows; at most {LIMITS['rows']} per table are allowed")
        earlier: list[str] = [c["name"] for c in tables[name]["columns"] if c.get("primary_key")]
        for col, gen in plan.get("columns", {}).items():
            path = f"{base}.columns.{col}"
            if col not in columns_of[name]:
                raise SpecError(path, f"unknown column {col!r} in {name!r}")
            _check_generator(gen, path, columns_of, earlier)
            if gen["gen"] == "ref" and gen["ref"].split(".")[0] not in _ancestors(name, parents):
                # Rows are generated in foreign-key order: only an ancestor table's rows exist yet.
                raise SpecError(f"{path}.ref", f"{gen['ref']!r} is not in a table {name!r} references "
                                               "(directly or through its parents)")
            earlier.append(col)


def _check_generator(g: dict[str, Any], path: str, columns_of: dict[str, list[str]], earlier: list[str]) -> None:
    """Each generator kind's parameters: present, well-typed and bounded (see :mod:`agentworld_envs.engine.datagen`)."""
    kind = g["gen"]

    def bad(key: str, message: str) -> SpecError:
        return SpecError(f"{path}.{key}", message)

    def pair(key: str, lo_bound: float, hi_bound: float, integer: bool = False) -> None:
        value = g[key]
        if not (isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)
                and (not integer or all(isinstance(v, int) for v in value))
                and lo_bound <= value[0] <= value[1] <= hi_bound):
            raise bad(key, f"must be [low, high] with {lo_bound} <= low <= high <= {hi_bound}")

    if not isinstance(kind, str) or kind not in GENERATORS:
        raise bad("gen", f"unknown generator {str(kind)[:40]!r}; one of {', '.join(sorted(GENERATORS))}")
    if "null_p" in g and not (_number(g["null_p"]) and 0 <= g["null_p"] <= 1):
        raise bad("null_p", "must be a probability between 0 and 1")
    if "unique" in g and not isinstance(g["unique"], bool):
        raise bad("unique", "must be true or false")
    if "weekday" in g and (g["weekday"] not in range(7) or isinstance(g["weekday"], bool)):
        raise bad("weekday", "the day of the week a date falls on: 0 (Monday) to 6")
    required = {"const": ["value"], "int": ["min", "max"], "float": ["min", "max"], "money": ["min", "max"],
                "choice": ["values"], "pick": ["values"], "ref": ["ref"], "code": ["pattern"], "format": ["template"],
                "faker": ["provider"]}.get(kind, [])
    for key in required:
        if key not in g:
            raise bad(key, f"a {kind!r} generator needs {key!r}")
    if kind in ("int", "float", "money"):
        for key in ("min", "max"):
            if not _number(g[key]) or (kind == "int" and not isinstance(g[key], int)):
                raise bad(key, "must be an integer" if kind == "int" else "must be a number")
        if g["min"] > g["max"]:
            raise bad("min", "must not exceed max")
        if "decimals" in g and not (isinstance(g["decimals"], int) and 0 <= g["decimals"] <= 10):
            raise bad("decimals", "must be an integer from 0 to 10")
    elif kind == "sequence":
        for key in ("start", "step"):
            if key in g and not (isinstance(g[key], int) and not isinstance(g[key], bool) and abs(g[key]) < 10**12):
                raise bad(key, "must be an integer")
    elif kind == "bool":
        if "p" in g and not (_number(g["p"]) and 0 <= g["p"] <= 1):
            raise bad("p", "must be a probability between 0 and 1")
    elif kind in ("choice", "pick"):
        values = g["values"]
        if not (isinstance(values, list) and 0 < len(values) <= LIMITS["choices"]):
            raise bad("values", f"must be a list of 1 to {LIMITS['choices']} values")
        if any(isinstance(v, (dict, list)) or (isinstance(v, str) and len(v) > 1000) for v in values):
            raise bad("values", "must hold scalars (strings of at most 1000 characters)")
        weights = g.get("weights")
        if weights is not None and not (isinstance(weights, list) and len(weights) == len(values)
                                        and all(_number(w) and w >= 0 for w in weights) and sum(weights) > 0):
            raise bad("weights", "must be one non-negative number per value, not all zero")
    elif kind == "ref":
        ref = g["ref"]
        table, _, column = str(ref).partition(".")
        if column not in columns_of.get(table, []):
            raise bad("ref", f"unknown column {ref!r}")
        if "cover" in g and not isinstance(g["cover"], bool):
            raise bad("cover", "must be true or false")
        alive = g.get("alive_after", {"parents": [], "in": []})
        if not (isinstance(alive, dict) and isinstance(alive.get("in"), list) and isinstance(alive.get("parents"), list)
                and all(isinstance(p, dict) and p.get("via") in earlier and p.get("field") in columns_of.get(p.get("table"), [])
                        for p in alive["parents"])
                and all(isinstance(p, dict) and p.get("via") in earlier and "status" in columns_of.get(p.get("table"), [])
                        for p in alive.get("before_shut", ()))
                and alive.get("made", "id") in columns_of.get(table, [])
                and isinstance(alive.get("by", []), list) and all(c in earlier for c in alive.get("by", []))):
            raise bad("alive_after", "needs 'parents' ({'via': an earlier column, 'table', 'field'}) and 'in' (statuses)")
        for c in g.get("open_through", []) if isinstance(g.get("open_through", []), list) else [None]:
            if not (isinstance(c, dict) and c.get("column") in earlier and c.get("field") in columns_of.get(table, [])
                    and "status" in columns_of.get(c.get("table"), []) and isinstance(c.get("in"), list)
                    and isinstance(c.get("parent_not_in"), list)):
                raise bad("open_through", "must list {'column': an earlier column, 'in': [...], 'table': a table with "
                                          "a status, 'field': a key of the referenced table, 'parent_not_in': [...]}")
        for key in ("quota", "same", "not_after"):
            if key in g and (not isinstance(g[key], dict) or g[key].get("column") not in earlier):
                raise bad(f"{key}.column", "must name an earlier column of the row")
        term = g.get("in_term")
        if term is not None and not (isinstance(term, dict) and term.get("column") in earlier
                                     and term.get("end") in columns_of.get(table, [])
                                     and isinstance(term.get("windows"), dict)
                                     and all(isinstance(d, int) and -LIMITS["days"] <= d <= 0 for d in term["windows"].values())):
            raise bad("in_term", f"needs 'column' (an earlier column), 'end' (a column of {table!r}) and 'windows' "
                                 "({value: days before today, at most 0})")
        if "same" in g and g["same"].get("via") not in columns_of.get(table, []):
            raise bad("same.via", f"must name a column of {table!r}")
        if "quota" in g and not (isinstance(g["quota"].get("in"), list) and isinstance(g["quota"].get("cap"), int)):
            raise bad("quota", "needs 'in' (a list of values) and 'cap' (an integer)")
        if "made_by" in g:
            made_by = g["made_by"]
            made_table = (made_by.get("through") or {}).get("table", table) if isinstance(made_by, dict) else None
            if not isinstance(made_by, dict) or not _number(made_by.get("days")) or not isinstance(made_by.get("fields"), list) \
                    or any(f not in columns_of.get(made_table, []) for f in made_by["fields"]) \
                    or any(c not in earlier for c in made_by.get("by", ())) \
                    or any(f not in columns_of.get(table, []) for f in made_by.get("own", ())) \
                    or not isinstance(made_by.get("in", {}), dict) \
                    or any(f not in made_by["fields"] or not isinstance(v, list) for f, v in made_by.get("in", {}).items()) \
                    or made_by.get("in") and "status" not in columns_of.get(made_table, []):
                raise bad("made_by", "needs 'fields' (columns of the table made), 'days' and optional 'by' (earlier "
                                     "columns of the row) and 'in' ({field: statuses of a table with a status})")
    elif kind == "code":
        if not (isinstance(g["pattern"], str) and 0 < len(g["pattern"]) <= LIMITS["pattern"]):
            raise bad("pattern", f"must be a string of 1 to {LIMITS['pattern']} characters")
    elif kind == "format":
        template = g["template"]
        if not (isinstance(template, str) and len(template) <= LIMITS["template"]):
            raise bad("template", f"must be a string of at most {LIMITS['template']} characters")
        try:
            fields = [f for _, f, spec_, conv in string.Formatter().parse(template) if f is not None]
        except ValueError as exc:
            raise bad("template", f"is not a valid format string: {exc}") from None
        for field in fields:
            # Plain names only: "{x.__class__}" or "{x[0]}" would reach into Python objects.
            if field != "i" and field not in earlier:
                raise bad("template", f"{{{field}}} must name an earlier column of the row or i")
    elif kind in ("date", "datetime"):
        if "days" in g:
            pair("days", -LIMITS["days"], LIMITS["days"])
    elif kind == "faker":
        if not (isinstance(g["provider"], str) and IDENTIFIER.fullmatch(g["provider"])):
            raise bad("provider", "must be a Faker provider name like 'name' or 'email'")
        if "pool" in g and not (isinstance(g["pool"], int) and 1 <= g["pool"] <= LIMITS["pool"]):
            raise bad("pool", f"must be an integer from 1 to {LIMITS['pool']}")
        if "locale" in g and not re.fullmatch(r"[a-z]{2}(_[A-Z]{2})?", str(g["locale"])):
            raise bad("locale", f"{g['locale']!r} is not a locale like en_US")
    elif kind == "words":
        if "count" in g:
            pair("count", 0, LIMITS["words"], integer=True)
    elif kind in ("after", "mime_of"):
        if g.get("of") not in earlier:
            raise bad("of", "must name an earlier column of the row")
        if kind == "after":
            for key in ("days", "else_days"):
                if key in g:
                    pair(key, -LIMITS["days"], LIMITS["days"])
            if g.get("kind", "datetime") not in ("date", "datetime"):
                raise bad("kind", "must be 'date' or 'datetime'")
            floors = g.get("at_least", [])
            if not isinstance(floors, list) or any(c not in earlier for c in floors):
                raise bad("at_least", "must list earlier columns of the row")
            if not isinstance(g.get("whole_days", False), bool) or g.get("whole_days") and not (
                    all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in g.get("days", [0]))):
                raise bad("whole_days", "whole days need 'days' of whole numbers from 1")
            # a status passed through on the way floored at the row's parents' making and capped at their shutting
            for key, shut in (("parents", False), ("until", True)):
                if key in g and not (isinstance(g[key], list) and all(
                        isinstance(p, dict) and p.get("via") in earlier and p.get("field") in columns_of.get(p.get("table"), [])
                        and (not shut or isinstance(p.get("in"), list) and "status" in columns_of.get(p.get("table"), []))
                        for p in g[key])):
                    raise bad(key, "must list {'via': earlier column, 'table': table, 'field': its date"
                                   + (", 'in': [statuses]}" if shut else "}"))
    elif kind in ("spent_since", "per_year"):
        of, rate = ("of", "per_day") if kind == "spent_since" else ("year", "per_year")
        if g.get(of) not in earlier or isinstance(g.get(rate), bool) or not isinstance(g.get(rate), (int, float)) \
                or not 0 < g[rate] <= 1e6:
            raise bad(of, f"a '{kind}' value names an earlier column ('{of}') and a positive '{rate}'")
        if kind == "spent_since" and g.get("kind", "datetime") not in ("date", "datetime"):
            raise bad("kind", "must be 'date' or 'datetime'")
        if not isinstance(g.get("inner"), dict):
            raise bad("inner", "must be a generator")
        _check_generator(g["inner"], f"{path}.inner", columns_of, earlier)
    elif kind == "period_end":
        if not all(g.get(k) in earlier for k in ("start", "period", "column")) or not isinstance(g.get("live"), list) \
                or g.get("kind", "datetime") not in ("date", "datetime") or not isinstance(g.get("inner"), dict):
            raise bad("start", "a 'period_end' names earlier 'start', 'period' and status 'column' columns, the 'live' "
                               "statuses and an inner generator")
        _check_generator(g["inner"], f"{path}.inner", columns_of, earlier)
    elif kind == "floored":
        if g.get("floor") not in earlier or g.get("kind", "datetime") not in ("date", "datetime") \
                or not isinstance(g.get("inner"), dict):
            raise bad("floor", "a 'floored' date names an earlier date column ('floor') and an inner generator")
        _check_generator(g["inner"], f"{path}.inner", columns_of, earlier)
    elif kind == "minutes_between":
        if g.get("start") not in earlier or g.get("end") not in earlier:
            raise bad("start", "minutes between two earlier columns of the row ('start', 'end')")
    elif kind == "differs":
        if g.get("apart_from") not in earlier or not isinstance(g.get("inner"), dict):
            raise bad("apart_from", "a 'differs' value names an earlier column ('apart_from') and an inner generator")
        _check_generator(g["inner"], f"{path}.inner", columns_of, earlier)
    elif kind == "accrued":
        if g.get("since") not in earlier or isinstance(g.get("per_day"), bool) \
                or not isinstance(g.get("per_day"), (int, float)) or not 0 < g["per_day"] <= 1e6:
            raise bad("since", "an 'accrued' figure names an earlier date column ('since') and a positive 'per_day'")
        if not isinstance(g.get("inner"), dict):
            raise bad("inner", "must be a generator")
        _check_generator(g["inner"], f"{path}.inner", columns_of, earlier)
    elif kind == "per_day":
        if not (isinstance(g.get("of"), list) and len(g["of"]) == 3 and all(c in earlier for c in g["of"])):
            raise bad("of", "must list three earlier columns of the row: the daily rate, the start and the end")
    elif kind == "annuity":
        if not (isinstance(g.get("of"), list) and len(g["of"]) == 3 and all(c in earlier for c in g["of"])):
            raise bad("of", "must list three earlier columns of the row: the principal, the annual rate and the months")
    elif kind == "amortized":
        if not (g.get("via") in earlier and g.get("number") in earlier and g.get("part") in ("interest_portion",
                                                                                           "principal_portion")
                and all(c in columns_of.get(g.get("table"), []) for c in ("principal", "interest_rate", "monthly_payment"))
                and isinstance(g.get("inner"), dict)):
            raise bad("amortized", "needs 'via' and 'number' (earlier columns), 'part' (interest_portion or "
                                   "principal_portion), 'table' (a loan with principal, interest_rate, monthly_payment) "
                                   "and 'inner' (a generator)")
        _check_generator(g["inner"], f"{path}.inner", columns_of, earlier)
    elif kind in ("sum", "product"):
        if not (isinstance(g.get("of"), list) and g["of"] and all(c in earlier for c in g["of"])):
            raise bad("of", "must list earlier columns of the row")
        if "factor" in g and (kind != "product" or isinstance(g["factor"], bool)
                              or not isinstance(g["factor"], (int, float)) or not 0 <= g["factor"] <= 1000):
            raise bad("factor", "a product's factor is a number from 0 to 1000")
        if "less_percent" in g and (kind != "product" or g["less_percent"] not in earlier):
            raise bad("less_percent", "a product may be less a percentage an earlier column of the row gives")
        if "less" in g and (kind != "sum" or not isinstance(g["less"], list) or not all(c in earlier for c in g["less"])):
            raise bad("less", "a sum may be less earlier columns of the row")
        spread = g.get("spread", [1, 1])
        if kind != "product" and "spread" in g or not (isinstance(spread, list) and len(spread) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in spread) and 0 <= spread[0] <= spread[1] <= 10):
            raise bad("spread", "a product's spread is [low, high], factors from 0 to 10 drawn per row")
    elif kind == "band":
        ranges, labels = g.get("ranges"), g.get("labels")
        if g.get("column") not in earlier or g.get("of") not in earlier:
            raise bad("column", "a 'band' generator reads 'column' (the key) and 'of' (the figure), earlier columns")
        if not (isinstance(labels, list) and len(labels) == 3 and all(isinstance(x, str) for x in labels)
                and isinstance(ranges, dict) and all(isinstance(r, list) and len(r) == 2 and all(_number(x) for x in r)
                                                     and r[0] <= r[1] for r in ranges.values())
                and isinstance(g.get("default"), dict) and "gen" in g["default"]):
            raise bad("ranges", "a 'band' generator needs 'ranges' ({key: [lo, hi]}), 3 'labels' (below, within, "
                                "above) and 'default' (a generator)")
        _check_generator(g["default"], f"{path}.default", columns_of, earlier)
    elif kind in ("when", "by"):
        if g.get("column") not in earlier:
            raise bad("column", "must name an earlier column of the row")
        if kind == "when":
            if not isinstance(g.get("in"), list) or not isinstance(g.get("then"), dict) or "gen" not in g["then"]:
                raise bad("then", "a 'when' generator needs 'in' (a list) and 'then' (a generator)")
            _check_generator(g["then"], f"{path}.then", columns_of, earlier)
        else:
            cases = g.get("cases")
            if not isinstance(cases, dict) or not isinstance(g.get("default"), dict) or "gen" not in g["default"]:
                raise bad("cases", "a 'by' generator needs 'cases' ({value: generator}) and 'default' (a generator)")
            for key, sub in cases.items():
                if not isinstance(sub, dict) or "gen" not in sub:
                    raise bad(f"cases.{key}", "must be a generator")
                _check_generator(sub, f"{path}.cases.{key}", columns_of, earlier)
            _check_generator(g["default"], f"{path}.default", columns_of, earlier)
    elif kind in ("clock", "changed", "at_most", "at_least", "paid", "lookup", "lookup_row", "email_of", "not_before",
                  "part_of", "after_parents", "recent", "terms", "within", "rollup", "soon", "elapsed", "ordinal"):
        _check_coherence_generator(g, path, columns_of, earlier, bad)
    elif kind == "text":
        if g.get("kind") not in TEXT_KINDS:
            raise bad("kind", f"must be one of {', '.join(TEXT_KINDS)}")
        if g.get("kind") == "purpose" and g.get("of", "visit") not in PURPOSES:
            raise bad("of", f"a purpose is one of {', '.join(PURPOSES)}")
        for key in ("subject", "service"):
            if key in g and not (isinstance(g[key], str) and len(g[key]) <= LIMITS["template"]):
                raise bad(key, f"must be a string of at most {LIMITS['template']} characters")
        if "by_status" in g and (g.get("kind") != "reason" or g["by_status"] not in earlier):
            raise bad("by_status", "is for a reason, and must name an earlier column of the row")


def _check_coherence_generator(g: dict[str, Any], path: str, columns_of: dict[str, list[str]], earlier: list[str],
                               bad: Any) -> None:
    """Generators that keep a row coherent (``clock``, ``changed``, ``at_most``, ``paid``, ``lookup``,
    ``lookup_row``): every column they read is an earlier column of the row."""
    kind = g["gen"]
    reads = [g[k] for k in ("of", "column", "via", "floor", "lasts") if k in g and not isinstance(g[k], list)]
    reads += list(g.get("after", [])) + (g["of"] if isinstance(g.get("of"), list) else [])
    if kind in ("changed", "after_parents", "recent") and (kind == "after_parents" or "parents" in g):
        parents = g.get("parents")
        if not isinstance(parents, list) or not (parents or g.get("until")) or not all(
                isinstance(p, dict) and p.get("field") in columns_of.get(p.get("table"), []) for p in parents):
            raise bad("parents", "must list {'via': column, 'table': table, 'field': column of that table}")
        reads += [p.get("via") for p in parents]
    if "until" in g:
        until = g["until"]
        if kind not in ("after_parents", "recent") or not isinstance(until, list) or not all(
                isinstance(p, dict) and p.get("field") in columns_of.get(p.get("table"), []) and isinstance(p.get("in"), list)
                and "status" in columns_of.get(p.get("table"), []) for p in until):
            raise bad("until", "must list {'via': column, 'table': table with a status, 'field': its date, 'in': [statuses]}")
        reads += [p.get("via") for p in until]
    for window in (g.get("windows") or {}).values() if kind != "recent" else ():
        if not isinstance(window, dict):
            raise bad("windows", "must map a status to {'before': column, 'hours': n} or {'after': column, 'days': n}")
        reads += [window[k] for k in ("before", "after", "at", "plus", "for") if k in window]
        if window.get("unit", "minutes") not in ("minutes", "hours", "seconds"):
            raise bad("windows", "a window's unit is minutes, hours or seconds")
    if kind == "changed" and "dwell" in g and not (isinstance(g["dwell"], dict) and all(
            isinstance(d, int) and 0 <= d <= LIMITS["days"] for d in g["dwell"].values())):
        raise bad("dwell", "must map a status to a number of days")
    if kind == "terms" and not (isinstance(g.get("days"), dict) and all(
            isinstance(d, int) and 0 <= d <= LIMITS["days"] for d in g["days"].values())
            and isinstance(g.get("inner"), dict) and g["inner"].get("gen") == "choice"
            and set(g["inner"].get("values", ())) <= set(g["days"])):
        raise bad("days", "a 'terms' generator maps each of its inner choice's terms to a number of days")
    if kind == "recent":
        windows = g.get("windows")
        if not isinstance(windows, dict) or not all(
                isinstance(w, dict) and (list(w) == ["minutes"] and isinstance(w["minutes"], int) and 0 < w["minutes"] <= 1440
                                         or list(w) == ["days"] and isinstance(w["days"], list) and len(w["days"]) == 2
                                         and all(isinstance(d, int) and -LIMITS["days"] <= d <= 0 for d in w["days"])
                                         and w["days"][0] <= w["days"][1])
                for w in windows.values()):
            raise bad("windows", "must map a status to {'days': [lo, hi]} (days before today, lo <= hi <= 0) "
                                 "or {'minutes': m} (1 to 1440)")
        if g.get("kind", "datetime") not in ("date", "datetime"):
            raise bad("kind", "must be 'date' or 'datetime'")
    for col in reads:
        if col not in earlier:
            raise bad("gen", f"{kind!r} reads {str(col)[:40]!r}, which is not an earlier column of the row")
    if kind == "elapsed" and (g.get("unit") not in ("hours", "minutes", "days") or not isinstance(g.get("default"), dict)):
        raise bad("unit", "an 'elapsed' generator needs 'unit' (hours, minutes or days) and 'default' (a generator)")
    if kind in ("lookup", "not_before", "part_of", "within", "elapsed", "ordinal") and g.get("field") not in columns_of.get(g.get("table"), []):
        raise bad("field", f"unknown column {g.get('table')!r}.{g.get('field')!r}")
    if kind == "soon" and not (isinstance(g.get("days"), dict) and all(isinstance(d, int) and 0 <= d <= LIMITS["days"]
                                                                       for d in g["days"].values())):
        raise bad("days", "must map a status to the whole days ahead within which the date lies")
    if kind == "within" and g.get("side") not in ("max", "min"):
        raise bad("side", "must be 'max' or 'min'")
    if kind == "rollup" and not (isinstance(g.get("figures"), list) and (g["figures"] or g.get("count") is True) and all(
            f in columns_of.get(g.get("table"), []) for f in [g.get("key"), *g["figures"]])):
        raise bad("figures", "a rollup names its lines' table, their key to the record and the figures a line multiplies "
                             "(none where it counts them: 'count': true)")
    for key in ("inner", "else"):
        if key in g:
            if not isinstance(g[key], dict) or "gen" not in g[key]:
                raise bad(key, "must be a generator")
            _check_generator(g[key], f"{path}.{key}", columns_of, earlier)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, Unicode kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(obj: Any) -> str:
    """SHA-256 of :func:`canonical_json` (hex, 16 chars are plenty for cache keys)."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()
