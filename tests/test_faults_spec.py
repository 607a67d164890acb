"""Specs are validated, not trusted: unsafe names, CHECK injection, broken foreign keys, unbounded recipes."""

from __future__ import annotations

import copy
import sqlite3

import pytest

import agentworld_envs
from agentworld_envs.engine import state
from agentworld_envs.util.registry import Registry
from agentworld_envs.engine.spec import SpecError, validate_spec
from agentworld_envs.engine.sqlcheck import UnsafeExpression, check_expression


@pytest.fixture()
def spec():
    from toy_spec import _TOY

    return copy.deepcopy(_TOY)


def _col(spec, table, name):
    t = next(t for t in spec["tables"] if t["name"] == table)
    return next(c for c in t["columns"] if c["name"] == name)


INJECTION = "1))), evil_col TEXT DEFAULT 'pwned', CHECK (((1"


@pytest.mark.parametrize("expr", [
    INJECTION,
    "copies >= 0; DROP TABLE books",
    "copies >= 0 -- trailing comment",
    "copies >= 0 /* comment */",
    "randomblob(1000000) IS NOT NULL",
    "copies IN (SELECT id FROM members)",
    "(copies > 0",
    "copies > 0)",
    "copies >= :limit",
    "copies >= ?",
    "copies = x'00'",
    "load_extension('evil')",
    "nosuchcolumn > 0",
    "copies > 0, 1",
    "",
    "copies > 0 AND " * 40 + "1",
    "(" * 20 + "copies" + ")" * 20,
])
def test_unsafe_column_checks_are_rejected_with_their_path(spec, expr):
    _col(spec, "books", "copies")["check"] = expr
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    assert info.value.path == "$.tables[1].columns[3].check"


def test_injected_check_would_have_changed_the_schema(spec):
    """The injection is real: pasted into the DDL it adds a column, which validation now prevents."""
    _col(spec, "books", "copies")["check"] = INJECTION
    conn = sqlite3.connect(":memory:")
    for stmt in state.table_ddl(spec["tables"][1]):
        conn.execute(stmt)
    assert "evil_col" in [r[1] for r in conn.execute("PRAGMA table_info(books)")]
    with pytest.raises(SpecError, match="unbalanced"):
        validate_spec(spec)


def test_unsafe_table_check_is_rejected(spec):
    spec["tables"][2]["checks"] = ["status = 'active'", "1); DROP TABLE members; --"]
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    assert info.value.path == "$.tables[2].checks[1]"


@pytest.mark.parametrize("expr", [
    "copies >= 0", "copies BETWEEN 0 AND 10", "copies IN (1, 2, 3)", "coalesce(copies, 0) >= 0",
    "length(title) > 0 AND lower(title) <> 'x'", "(status = 'lost') = (copies = 0)", "\"copies\" >= -1.5e2",
    "title NOT LIKE '%''%'", "date(title) IS NULL OR julianday(title) > 0",
])
def test_safe_checks_are_accepted_and_build(spec, expr):
    _col(spec, "books", "copies")["check"] = expr
    validate_spec(spec)
    conn = sqlite3.connect(":memory:")
    for stmt in state.table_ddl(spec["tables"][1]):
        conn.execute(stmt)


def test_check_grammar_names_the_token():
    with pytest.raises(UnsafeExpression, match="randomblob"):
        check_expression("randomblob(4) > 0", ["a"])
    with pytest.raises(UnsafeExpression, match="SELECT"):
        check_expression("a IN (SELECT 1)", ["a"])


BAD = {
    "table-name-upper": (lambda s: s["tables"][0].__setitem__("name", "Members"), "$.tables[0].name"),
    "column-name-underscore": (lambda s: s["tables"][0]["columns"].append({"name": "_x", "type": "TEXT"}),
                               "$.tables[0].columns[4].name"),
    "tool-name-upper": (lambda s: s["tools"][0].__setitem__("name", "GetMember"), "$.tools[0].name"),
    "param-name-dunder": (lambda s: s["tools"][0]["parameters"]["properties"].__setitem__("__class__", {"type": "string"}),
                          "$.tools[0].parameters.properties.__class__"),
    "spec-id-too-long": (lambda s: s.__setitem__("id", "a" * 65), "$.id"),
    "task-id-path": (lambda s: s["tasks"][0].__setitem__("id", "../../etc"), "$.tasks[0].id"),
    "task-id-too-long": (lambda s: s["tasks"][0].__setitem__("id", "t" * 65), "$.tasks[0].id"),
    "now-not-a-date": (lambda s: s.__setitem__("now", "2026-13-45T99:99:99Z"), "$.now"),
    "fk-self": (lambda s: s["tables"][0]["columns"].append(
        {"name": "referrer_id", "type": "INTEGER", "references": "members.id"}), "$.tables[0].columns[4].references"),
    "fk-dangling": (lambda s: _col(s, "loans", "book_id").__setitem__("references", "books.nope"),
                    "$.tables[2].columns[2].references"),
    "fk-not-unique": (lambda s: _col(s, "loans", "member_id").__setitem__("references", "members.name"),
                      "$.tables[2].columns[1].references"),
    "fk-cycle": (lambda s: s["tables"][0]["columns"].append(
        {"name": "last_loan", "type": "INTEGER", "references": "loans.id"}), "references"),
    "rows-too-many": (lambda s: s["data"]["tables"]["members"].__setitem__("rows", 5001), "$.data.tables.members.rows"),
    "data-unknown-table": (lambda s: s["data"]["tables"].__setitem__("nope", {"rows": 1}), "$.data.tables.nope"),
    "data-unknown-column": (lambda s: s["data"]["tables"]["members"]["columns"].__setitem__("nope", {"gen": "bool"}),
                            "$.data.tables.members.columns.nope"),
    "gen-unknown": (lambda s: s["data"]["tables"]["books"]["columns"].__setitem__("copies", {"gen": "shell"}),
                    "$.data.tables.books.columns.copies.gen"),
    "gen-int-reversed": (lambda s: s["data"]["tables"]["books"]["columns"].__setitem__(
        "copies", {"gen": "int", "min": 5, "max": 1}), "$.data.tables.books.columns.copies.min"),
    "gen-int-missing": (lambda s: s["data"]["tables"]["books"]["columns"].__setitem__("copies", {"gen": "int"}),
                        "$.data.tables.books.columns.copies.min"),
    "gen-words-huge": (lambda s: s["data"]["tables"]["books"]["columns"]["title"].__setitem__("count", [1, 10**6]),
                       "$.data.tables.books.columns.title.count"),
    "gen-weights-mismatch": (lambda s: s["data"]["tables"]["members"]["columns"]["tier"].__setitem__("weights", [1]),
                             "$.data.tables.members.columns.tier.weights"),
    "gen-format-attribute": (lambda s: s["data"]["tables"]["members"]["columns"].__setitem__(
        "email", {"gen": "format", "template": "{name.__class__}"}), "$.data.tables.members.columns.email.template"),
    "gen-faker-private": (lambda s: s["data"]["tables"]["members"]["columns"]["name"].__setitem__("provider", "_load"),
                          "$.data.tables.members.columns.name.provider"),
    "gen-ref-later-table": (lambda s: s["data"]["tables"]["books"]["columns"].__setitem__(
        "copies", {"gen": "ref", "ref": "loans.id"}), "$.data.tables.books.columns.copies.ref"),
    "gen-null-p": (lambda s: s["data"]["tables"]["loans"]["columns"]["opened_at"].__setitem__("null_p", 2),
                   "$.data.tables.loans.columns.opened_at.null_p"),
    "gen-days-huge": (lambda s: s["data"]["tables"]["loans"]["columns"]["opened_at"].__setitem__("days", [-10**9, 0]),
                      "$.data.tables.loans.columns.opened_at.days"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_specs_raise_spec_error_with_path(spec, case):
    mutate, path = BAD[case]
    mutate(spec)
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    assert info.value.path == path or (path == "references" and info.value.path.endswith(".references"))
    assert str(info.value).startswith(info.value.path + ": ")


def test_python_hooks_are_resolved_at_registration(spec):
    spec["id"] = "faults-python-tool"
    spec["tools"][0]["impl"] = {"kind": "python", "function": "retail.no_such_tool"}
    with pytest.raises(SpecError) as info:
        agentworld_envs.register_spec(spec)
    assert info.value.path == "$.tools[0].impl.function"


def test_python_verifier_is_resolved_at_registration(spec):
    spec["id"] = "faults-python-verifier"
    spec["tasks"][0]["checks"].append({"type": "python", "function": "nodomain.check"})
    with pytest.raises(SpecError) as info:
        agentworld_envs.register_spec(spec)
    assert info.value.path == "$.tasks[0].checks[2].function"


def test_registered_ids_are_not_silently_replaced(spec):
    spec["id"] = "faults-unique-id"
    env_id = agentworld_envs.register_spec(spec)
    assert agentworld_envs.register_spec(copy.deepcopy(spec)) == env_id  # the same spec again: fine
    changed = copy.deepcopy(spec)
    changed["title"] = "Another library"
    with pytest.raises(SpecError, match="already registered") as info:
        agentworld_envs.register_spec(changed)
    assert info.value.path == "$.id"
    assert agentworld_envs.register_spec(changed, replace=True) == env_id
    from agentworld_envs.catalogue.catalog import build_spec

    assert build_spec(env_id)["title"] == "Another library"
    spec["title"] = "edited after registration"  # the registry holds its own copy
    assert build_spec(env_id)["title"] == "Another library"


def test_catalogue_ids_are_protected(spec):
    spec["id"] = "retail"
    with pytest.raises(SpecError, match="catalogue"):
        agentworld_envs.register_spec(spec)


def test_plugin_names_are_not_silently_replaced():
    reg: Registry = Registry("thing")

    @reg.register("a")
    def first():
        pass

    def second():
        pass

    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(second)
    assert reg.get("a") is first
    reg.register("a", replace=True)(second)
    assert reg.get("a") is second


def test_too_many_tools_is_a_spec_error(spec):
    spec["tools"] = [dict(spec["tools"][0], name=f"tool_{i}") for i in range(257)]
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    assert info.value.path == "$.tools"


@pytest.mark.parametrize("query", [
    "DELETE FROM books",
    "SELECT 1; DROP TABLE books",
    "ATTACH DATABASE '/tmp/agentworld-evil.db' AS evil",
    "PRAGMA writable_schema = 1",
    "SELECT randomblob(1000000000)",
    "SELECT nope FROM books",
])
def test_verifier_queries_must_be_one_read_only_statement(spec, query):
    spec["id"] = "faults-sql-check"
    spec["tasks"][0]["checks"][0]["query"] = query
    with pytest.raises(SpecError) as info:
        agentworld_envs.register_spec(spec)
    assert info.value.path == "$.tasks[0].checks[0].query"
    assert not __import__("os").path.exists("/tmp/agentworld-evil.db")


def test_tool_preconditions_must_be_read_only(spec):
    spec["id"] = "faults-precondition"
    lend = next(t for t in spec["tools"] if t["name"] == "lend_book")
    lend["impl"]["preconditions"][0]["expr"] = "(SELECT load_extension('x'))"
    with pytest.raises(SpecError) as info:
        agentworld_envs.register_spec(spec)
    assert info.value.path == "$.tools[5].impl.preconditions[0].expr"


def test_the_toy_spec_queries_pass(spec):
    from agentworld_envs.plugins import check_sql

    check_sql(spec)  # subqueries with named parameters, sql checks with expectations


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def test_random_spec_damage_is_always_a_spec_error(spec):
    """Any one field replaced by junk or deleted: validation passes or raises SpecError, nothing else."""
    import random

    junk = [None, "", -1, 10**9, "x;y", [], {}, "Members", True, 1.5, "members.id", ["a"], {"gen": "int"}, "1)) --"]
    rng = random.Random(12)
    places = [p for p in _paths(spec) if p]
    for _ in range(400):
        damaged = copy.deepcopy(spec)
        place = rng.choice(places)
        parent = damaged
        for key in place[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[place[-1]]
        else:
            parent[place[-1]] = rng.choice(junk)
        try:
            validate_spec(damaged)
        except SpecError as exc:
            assert exc.path.startswith("$"), place


# ----------------------------------------------------------------------------- names SQLite or the engine reserve

@pytest.mark.parametrize("name", ["rowid", "oid"])
def test_a_column_named_like_the_row_id_is_refused(spec, name):
    _col(spec, "books", "copies")["name"] = name
    spec["data"]["tables"]["books"]["columns"][name] = spec["data"]["tables"]["books"]["columns"].pop("copies")
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    assert info.value.path == "$.tables[1].columns[3].name" and "reserved" in info.value.message


@pytest.mark.parametrize("name", ["_rowid_", "ROWID", "Oid", "_aw_x"])
def test_reserved_column_spellings_are_refused(spec, name):
    _col(spec, "books", "copies")["name"] = name
    with pytest.raises(SpecError, match=r"\$\.tables\[1\]\.columns\[3\]\.name"):
        validate_spec(spec)


@pytest.mark.parametrize("name", ["sqlite_stat1", "sqlite_sequence", "_aw_changes"])
def test_reserved_table_names_are_refused(spec, name):
    spec["tables"][0]["name"] = name
    with pytest.raises(SpecError, match=r"\$\.tables\[0\]\.name"):
        validate_spec(spec)


def test_a_table_named_like_an_engine_index_is_refused(spec):
    spec["tables"].append({"name": "ix_loans_0", "columns": [{"name": "id", "type": "INTEGER", "primary_key": True}]})
    with pytest.raises(SpecError, match=r"\$\.tables\[3\]\.name.*index"):
        validate_spec(spec)


def test_parameters_that_shadow_precondition_bindings_are_refused(spec):
    lend = next(t for t in spec["tools"] if t["name"] == "lend_book")
    lend["parameters"]["properties"]["now"] = {"type": "string"}
    with pytest.raises(SpecError, match=r"\$\.tools\[5\]\.parameters\.properties\.now"):
        validate_spec(spec)


def test_the_rowid_spec_could_not_blind_the_verifier(spec):
    """What the refusal prevents: with a ``rowid`` column, a write goes unseen by the change log."""
    table = {"name": "t", "columns": [{"name": "id", "type": "INTEGER", "primary_key": True},
                                      {"name": "rowid", "type": "INTEGER"}]}
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for stmt in state.table_ddl(table):
        conn.execute(stmt)
    conn.execute(f"CREATE TABLE {state.CHANGES_TABLE} (tbl TEXT NOT NULL, rid INTEGER)")
    for stmt in state._change_triggers("t"):
        conn.execute(stmt)
    conn.execute("INSERT INTO t (id, rowid) VALUES (1, NULL)")
    assert conn.execute(f"SELECT rid FROM {state.CHANGES_TABLE}").fetchall() == [(None,)]   # the row id is lost
    spec["tables"].append(table)
    with pytest.raises(SpecError, match="reserved"):
        validate_spec(spec)
