"""A safe grammar for the SQL expressions a spec may put into ``CHECK (...)`` constraints.

Spec ``check`` / ``checks`` texts are pasted into ``CREATE TABLE`` statements, so they are
accepted only when every token is harmless: names of the table's own columns, numeric and
string literals, comparison / arithmetic / logic operators, balanced parentheses and a small
allowlist of pure functions. Anything else (``;``, comments, subqueries, ``randomblob``,
bind parameters, unbalanced parentheses that could close the constraint and smuggle in a
column definition) is rejected with a message naming the offending token. Size limits keep a
constraint cheap to evaluate on every write.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Collection

#: Pure, cheap SQLite functions a constraint may call.
FUNCTIONS = frozenset({"length", "lower", "upper", "abs", "substr", "trim", "ltrim", "rtrim", "date", "datetime",
                       "julianday", "strftime", "coalesce", "ifnull", "round", "min", "max", "instr", "typeof"})
KEYWORDS = frozenset({"and", "or", "not", "is", "null", "in", "between", "like", "glob", "true", "false", "case",
                      "when", "then", "else", "end", "escape"})
MAX_LENGTH = 500
MAX_TOKENS = 128
MAX_DEPTH = 16
MAX_LITERAL = 200

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<quoted>"[A-Za-z_][A-Za-z0-9_]*")
  | (?P<op><=|>=|<>|!=|==|\|\||[=<>+\-*/%(),])
""", re.VERBOSE)


class UnsafeExpression(ValueError):
    """The expression is outside the safe grammar; the message says which token and why."""


def check_expression(expr: object, columns: Collection[str]) -> None:
    """Raise :class:`UnsafeExpression` unless ``expr`` is a safe boolean expression over ``columns``."""
    if not isinstance(expr, str) or not expr.strip():
        raise UnsafeExpression("must be a non-empty string")
    if len(expr) > MAX_LENGTH:
        raise UnsafeExpression(f"is {len(expr)} characters; at most {MAX_LENGTH} are allowed")
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:
            raise UnsafeExpression(f"unexpected {expr[pos:pos + 12]!r} at character {pos} "
                                   "(allowed: columns, literals, operators, parentheses, "
                                   f"functions {', '.join(sorted(FUNCTIONS))})")
        if match.lastgroup != "ws":
            tokens.append((match.lastgroup or "", match.group()))
        pos = match.end()
    if len(tokens) > MAX_TOKENS:
        raise UnsafeExpression(f"has {len(tokens)} tokens; at most {MAX_TOKENS} are allowed")
    depth = 0
    calls: list[bool] = []  # per open parenthesis: is it a function call or IN list (commas allowed)?
    cols = set(columns)
    for i, (kind, text) in enumerate(tokens):
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        previous = tokens[i - 1][1].lower() if i else ""
        if kind == "string" and len(text) > MAX_LITERAL + 2:
            raise UnsafeExpression(f"a string literal is longer than {MAX_LITERAL} characters")
        if kind == "name":
            low = text.lower()
            if low in KEYWORDS:
                continue
            if low in FUNCTIONS and following == "(":
                continue
            if text in cols:
                continue
            raise UnsafeExpression(f"{text!r} is not a column of this table, an allowed function or an operator")
        if kind == "quoted" and text[1:-1] not in cols:
            raise UnsafeExpression(f"{text} is not a column of this table")
        if text == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise UnsafeExpression(f"nests parentheses deeper than {MAX_DEPTH}")
            calls.append(previous in FUNCTIONS or previous == "in")
        elif text == ")":
            depth -= 1
            if depth < 0:
                raise UnsafeExpression(f"has an unbalanced ')' (token {i + 1})")
            calls.pop()
        elif text == "," and not (calls and calls[-1]):
            raise UnsafeExpression("has a ',' outside a function call or IN list")
    if depth:
        raise UnsafeExpression("has an unbalanced '('")


# --------------------------------------------------------------------------- read-only queries
#: SQLite authorizer actions a verifier query or tool precondition may need: reading and pure functions.
_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                           getattr(sqlite3, "SQLITE_RECURSIVE", 33)})
#: Functions that are reads in SQLite's eyes but can allocate without bound or reach outside the database.
DENIED_FUNCTIONS = frozenset({"randomblob", "zeroblob", "load_extension", "readfile", "writefile", "edit",
                              "fts3_tokenizer"})


class _AnyParams(dict):
    """Bindings for compiling only: every named parameter is present (as NULL)."""

    def __missing__(self, key: str) -> None:
        return None


def read_only_problem(conn: sqlite3.Connection, sql: str, params: object = None) -> str | None:
    """Why ``sql`` is not one read-only statement over ``conn``'s schema, or ``None`` when it is.

    The statement is compiled (``EXPLAIN``, never run) under an authorizer that allows only
    reads and pure functions, so writes, ``ATTACH``, ``PRAGMA`` and DDL are refused however
    they are spelled, and it must be a query (``VACUUM`` compiles without asking the authorizer). ``params``: the positional list the query will get, or ``None`` for
    named parameters (bound as NULL here).
    """
    denied: list[str] = []
    selects: list[int] = []

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
        if action == sqlite3.SQLITE_SELECT:
            selects.append(action)
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
            denied.append(f"function {arg2}()")
            return sqlite3.SQLITE_DENY
        if action not in _READ_ACTIONS:
            denied.append(f"a write or schema operation (SQLite action {action})")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    conn.set_authorizer(authorize)
    try:
        conn.execute("EXPLAIN " + sql, _AnyParams() if params is None else params)
    except (sqlite3.Error, ValueError, TypeError) as exc:
        return denied[0] + " is not allowed" if denied else f"does not compile: {exc}"
    finally:
        conn.set_authorizer(None)
    if not selects:   # e.g. VACUUM [INTO 'file'], which asks the authorizer nothing when compiled
        return "is not a SELECT query"
    return None


#: SQLite VM instructions one verification may run (a runaway recursive query ends as a failed check).
CHECK_BUDGET = 50_000_000
_PROGRESS_EVERY = 10_000
#: Read-only PRAGMAs (schema introspection) a verifier may use; every other PRAGMA is refused.
_READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo",
                           "foreign_key_list"})


@contextlib.contextmanager
def read_only(conn: sqlite3.Connection, budget: int = CHECK_BUDGET):
    """Run the block with ``conn`` read-only in a way SQL cannot switch off.

    ``PRAGMA query_only`` refuses writes, and an authorizer refuses at compile time every
    statement that is not a read -- ``ATTACH`` / ``DETACH``, ``PRAGMA`` (so ``query_only``
    stays on), DDL, transactions and savepoints included -- plus the functions in
    :data:`DENIED_FUNCTIONS`. A progress handler stops a query after ``budget`` VM steps.
    (Installing or removing an authorizer makes SQLite re-compile cached statements, so a
    statement compiled earlier, e.g. the engine's own ``PRAGMA query_only = OFF``, is checked too.)
    """
    steps = [0]

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_DENY if (arg2 or "").lower() in DENIED_FUNCTIONS else sqlite3.SQLITE_OK
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS and arg2 is None:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def progress() -> int:
        steps[0] += _PROGRESS_EVERY
        return 1 if steps[0] > budget else 0

    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(authorize)
    conn.set_progress_handler(progress, _PROGRESS_EVERY)
    try:
        yield conn
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
        conn.execute("PRAGMA query_only = OFF")
