"""SQLite state: schema DDL, golden files in a content-addressed cache, episode copies, hashes.

The golden file of an environment is built once per spec content hash into
``$AGENTWORLD_CACHE`` (default: the user cache dir). Each episode deserialises the
golden bytes into its own in-memory connection, so episodes never see each other's
writes and a reset costs a memcpy, not a rebuild.

Every user table carries AFTER INSERT/UPDATE/DELETE triggers that log the table name
into ``_aw_changes``; verifiers use it to find which tables an episode touched
without hashing the whole database. ``_aw_*`` tables are excluded from state hashes.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from ..util import cachefile
from . import datagen
from .spec import content_hash

#: Bump when DDL or generation semantics change, so old golden files are not reused.
BUILD_VERSION = "2"
CHANGES_TABLE = "_aw_changes"


#: ``$AGENTWORLD_CACHE`` value -> its directory, once created. ``mkdir -p`` of an existing directory
#: costs ~0.1 ms (a failing syscall and its exception), and a first ``make`` asked twice. A directory
#: removed later is recreated by the write that needs it (:func:`cachefile.store` makes parents).
_ENSURED: dict[str, Path] = {}


def cache_dir() -> Path:
    """Where generated artefacts live: ``$AGENTWORLD_CACHE`` or the platform user cache."""
    env = os.environ.get("AGENTWORLD_CACHE") or ""
    known = _ENSURED.get(env)
    if known is not None:
        return known
    if env:
        path = Path(env)
    else:
        import platformdirs

        path = Path(platformdirs.user_cache_dir("agentworld"))
    _ENSURED[env] = cachefile.ensure_dir(path)
    return path


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


#: Public alias: the identifier quoting every generated statement uses.
quote = _quote


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def table_ddl(table: dict[str, Any]) -> list[str]:
    """``CREATE TABLE`` (+ indexes) for one spec table."""
    parts = []
    pks = [c["name"] for c in table["columns"] if c.get("primary_key")]
    for col in table["columns"]:
        sql_type = "INTEGER" if col["type"] == "BOOLEAN" else col["type"]
        bits = [_quote(col["name"]), sql_type]
        if col.get("primary_key") and len(pks) == 1:
            bits.append("PRIMARY KEY")
        if col.get("nullable") is False and not col.get("primary_key"):
            bits.append("NOT NULL")
        if col.get("unique"):
            bits.append("UNIQUE")
        if "default" in col:
            bits.append(f"DEFAULT {_literal(col['default'])}")
        checks = []
        if col.get("enum"):
            checks.append(f"{_quote(col['name'])} IN ({', '.join(_literal(v) for v in col['enum'])})")
        if col["type"] == "BOOLEAN":
            checks.append(f"{_quote(col['name'])} IN (0, 1)")
        if col.get("check"):
            checks.append(col["check"])
        if checks:
            cond = " AND ".join(f"({c})" for c in checks)
            bits.append(f"CHECK ({_quote(col['name'])} IS NULL OR ({cond}))")
        if col.get("references"):
            rt, rc = col["references"].split(".")
            bits.append(f"REFERENCES {_quote(rt)}({_quote(rc)})")
        parts.append(" ".join(bits))
    if len(pks) > 1:
        parts.append(f"PRIMARY KEY ({', '.join(map(_quote, pks))})")
    for cols in table.get("unique", []):
        parts.append(f"UNIQUE ({', '.join(map(_quote, cols))})")
    for check in table.get("checks", []):
        parts.append(f"CHECK ({check})")
    name = table["name"]
    stmts = [f"CREATE TABLE {_quote(name)} (\n  " + ",\n  ".join(parts) + "\n)"]
    fk_cols = [c["name"] for c in table["columns"] if c.get("references")]
    for i, cols in enumerate([[c] for c in fk_cols] + table.get("indexes", [])):
        stmts.append(f"CREATE INDEX {_quote(f'ix_{name}_{i}')} ON {_quote(name)} ({', '.join(map(_quote, cols))})")
    return stmts


def _change_triggers(table: str) -> list[str]:
    # Each write logs the table and the rowids it touched, so a verifier can diff exactly the
    # written rows against the golden state instead of hashing whole tables.
    rows = {"INSERT": ["NEW.rowid"], "UPDATE": ["OLD.rowid", "NEW.rowid"], "DELETE": ["OLD.rowid"]}
    return [
        f"CREATE TRIGGER {_quote(f'_aw_{op}_{table}')} AFTER {op} ON {_quote(table)} BEGIN "
        + " ".join(f"INSERT INTO {CHANGES_TABLE}(tbl, rid) VALUES ({_literal(table)}, {r});" for r in rows[op])
        + " END"
        for op in ("INSERT", "UPDATE", "DELETE")
    ]


def connect_memory() -> sqlite3.Connection:
    """An in-memory connection in autocommit mode; the engine manages savepoints itself."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


#: SQLite page size of golden databases (see :func:`build_database`).
GOLDEN_PAGE_SIZE = 1024


def build_database(spec: dict[str, Any]) -> bytes:
    """Create the schema, generate the data, add change triggers; return the SQLite bytes."""
    conn = connect_memory()
    # Small pages: a world has a few dozen small tables and indexes, each at least one page, so
    # 4 KiB pages left a third of retail's golden file empty (227 of 696 KB). Every env's first
    # use in a process copies the golden bytes twice into fresh memory (the read, then SQLite's
    # private copy), so the smaller file is faster to open: 535 KB for retail at 1 KiB pages.
    conn.execute(f"PRAGMA page_size = {GOLDEN_PAGE_SIZE}")
    conn.execute("BEGIN")
    for table in spec["tables"]:
        for stmt in table_ddl(table):
            conn.execute(stmt)
    conn.execute(f"CREATE TABLE {CHANGES_TABLE} (tbl TEXT NOT NULL, rid INTEGER)")
    datagen.generate(conn, spec)
    for table in spec["tables"]:
        for stmt in _change_triggers(table["name"]):
            conn.execute(stmt)
    conn.execute("COMMIT")
    problems = conn.execute("PRAGMA foreign_key_check").fetchall()
    if problems:
        raise ValueError(f"{spec['id']}: generated data breaks foreign keys: {problems[:3]}")
    conn.execute("VACUUM")
    data = conn.serialize()
    conn.close()
    return data


#: The spec fields that determine the golden database; tools, tasks and texts do not.
STATE_FIELDS = ("id", "now", "tables", "data")


def golden_key(spec: dict[str, Any]) -> str:
    """Cache key of the golden file: hash of the state-defining spec fields, build version and Faker release."""
    import faker

    state_part: dict[str, Any] = {k: spec[k] for k in STATE_FIELDS}
    if "generator" in spec["data"]:
        # A Python generator's code defines the data too: editing it must rebuild.
        import inspect

        fn = datagen.get_data_generator(spec["data"]["generator"])
        state_part["generator_source"] = inspect.getsource(inspect.getmodule(fn))
    return content_hash({"spec": state_part, "build": BUILD_VERSION, "faker": faker.VERSION, "code": builder_source_hash()})[:24]


@functools.cache
def builder_source_hash() -> str:
    """Hash of the code that turns a spec into a database, so editing it invalidates golden files."""
    import inspect

    from . import textgen

    parts = [datagen, textgen, table_ddl, _change_triggers, build_database]
    return hashlib.sha256("".join(inspect.getsource(p) for p in parts).encode()).hexdigest()


GOLDEN_KIND = "golden database"


def golden_path(spec: dict[str, Any]) -> tuple[Path, str]:
    """Where the golden file of ``spec`` lives, and the cache key its integrity record must name."""
    key = f"{spec['id']}-{golden_key(spec)}"
    return Path(golden_file(key)), key


def golden_file(key: str) -> str:
    """The golden file whose integrity record names ``key`` (a str: a loaded bundle asks on every first use)."""
    return os.path.join(cache_dir(), "golden", f"{key}.sqlite")


def golden_bytes(spec: dict[str, Any]) -> bytes:
    """The golden database of ``spec``: from the cache when its integrity record matches, else built and stored.

    A corrupt or foreign file is rebuilt with a :class:`~agentworld_envs.util.cachefile.CacheWarning`; an
    unwritable cache raises :class:`~agentworld_envs.util.errors.CacheError`.
    """
    path, key = golden_path(spec)
    data = cachefile.load(path, key, GOLDEN_KIND)
    if data is not None:
        return data
    data = build_database(spec)
    cachefile.store(path, key, GOLDEN_KIND, data)
    return data


def episode_connection(golden: bytes | mmap.mmap) -> sqlite3.Connection:
    """A private, writable in-memory copy of a golden database (any bytes-like source: SQLite copies it)."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.deserialize(golden)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '\\_aw\\_%' ESCAPE '\\' ORDER BY name"
    ).fetchall()
    return [r[0] for r in rows]


def table_hash(conn: sqlite3.Connection, table: str) -> str:
    """Content hash of one table: column names and all rows in rowid order."""
    h = hashlib.sha256()
    cur = conn.execute(f"SELECT * FROM {_quote(table)} ORDER BY rowid")
    h.update(repr([d[0] for d in cur.description]).encode())
    for row in cur:
        h.update(repr(row).encode())
    return h.hexdigest()


def state_hash(conn: sqlite3.Connection, tables: Iterable[str] | None = None) -> str:
    """Canonical hash of the user-visible state: same data gives the same hash in any process."""
    h = hashlib.sha256()
    for table in tables if tables is not None else user_tables(conn):
        h.update(table.encode() + b"\0" + table_hash(conn, table).encode())
    return h.hexdigest()


def changed_tables(conn: sqlite3.Connection) -> set[str]:
    """Tables an episode has written to (possibly back to their original content)."""
    return {r[0] for r in conn.execute(f"SELECT DISTINCT tbl FROM {CHANGES_TABLE}")}
