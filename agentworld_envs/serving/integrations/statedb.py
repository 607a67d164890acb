"""An environment's state as a standalone SQLite file you can open with ``sqlite-utils`` or Datasette.

``agentworld db retail-v0 --out retail.db`` writes the golden database; ``--task T
--after-solution`` writes the state after task T's reference solution (the state its verifier
expects). ``agentworld show retail-v0 --table orders`` prints a table's rows through the same
path. Then::

    sqlite-utils tables retail.db --counts       # every table with its row count
    sqlite-utils rows retail.db orders --limit 5
    datasette retail.db

The file holds the environment's own tables with their DDL (types, keys, ``CHECK``
constraints, foreign keys, which Datasette turns into links) and indexes, copied row by row
with ``sqlite-utils``. The engine's change tracking (the ``_aw_changes`` table and the
triggers that fill it) stays out: it is how verifiers find written rows, not part of the world.
The episode engine itself never uses ``sqlite-utils`` (this is not a hot path).

Output files are owned: the database is written to a temporary file beside ``--out`` and
renamed into place, so a failed export leaves nothing half-written. An existing file is never
replaced unless ``overwrite=True``, and even then only a database this command wrote at that path
and that is unchanged since (it stamps SQLite's ``application_id`` header field and records the
file's path and SHA-256 with :func:`agentworld_envs.util.outputs.remember_file`), never any other file:
a database you edited, copied or moved there is kept.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ...util.errors import UnknownTaskError, UserInputError
from ...util.outputs import file_digest, remember_file, wrote_file

#: SQLite ``PRAGMA application_id`` of files written here ("AWDB"): marks a file as ours to replace.
APPLICATION_ID = 0x41574442
#: Tables and triggers of the engine (change tracking), not of the world.
INTERNAL_PREFIX = "_aw_"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _sqlite_utils():
    try:
        import sqlite_utils
    except ImportError:
        raise UserInputError("this needs sqlite-utils: pip install 'agentworld[db]'") from None
    return sqlite_utils


@dataclass(frozen=True)
class StateSource:
    """Which state to export: an environment's golden state, or the state after a task's reference solution."""

    env_id: str
    task_id: str | None = None
    after_solution: bool = False

    def describe(self) -> str:
        if self.after_solution:
            return f"{self.env_id} after the reference solution of {self.task_id}"
        return f"{self.env_id} golden state"


def _is_internal(name: str) -> bool:
    return name.startswith(INTERNAL_PREFIX) or name.startswith("sqlite_")


@contextlib.contextmanager
def source_connection(source: StateSource) -> Iterator[tuple[sqlite3.Connection, str]]:
    """A private connection holding the state ``source`` names, and the canonical env id (closed on exit)."""
    import agentworld_envs  # noqa: F401  (registers the ids)

    from ...catalogue.catalog import load_bundle

    bundle = load_bundle(source.env_id)
    if source.task_id is not None and source.task_id not in bundle.task_index:
        raise UnknownTaskError(f"{bundle.env_id} has no task {source.task_id[:200]!r}; "
                               f"see `agentworld show {bundle.env_id} --json`")
    if not source.after_solution:
        conn = bundle.connect()
        try:
            yield conn, bundle.env_id
        finally:
            conn.close()
        return
    if source.task_id is None:
        raise UserInputError("--after-solution needs --task (the task whose reference solution to replay)")
    from ...env import AgentWorldEnv

    env = AgentWorldEnv(bundle.env_id)
    try:
        env.reset(options={"task_id": source.task_id})
        reward, terminated, info = 0.0, False, {}
        for action in env.solution_actions():
            _, reward, terminated, _, info = env.step(action)
        if not (terminated and reward >= 1.0):  # the gate keeps only tasks whose reference scores 1.0
            failed = [c for c in info.get("checks", []) if not c.get("passed")][:2]
            raise RuntimeError(f"{bundle.env_id} {source.task_id}: the reference solution scored {reward} ({failed})")
        # Read through the episode's own connection: its writes are inside the episode's transaction.
        yield env.conn, bundle.env_id
    finally:
        env.close()


def build(source: StateSource):
    """The state of ``source`` copied into a new in-memory ``sqlite_utils.Database`` (world tables only).

    Returns ``(database, canonical env id)``.
    """
    sqlite_utils = _sqlite_utils()
    with source_connection(source) as (conn, env_id):
        src = sqlite_utils.Database(conn)
        out = sqlite_utils.Database(memory=True)
        out.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        schema = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                              "ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, rowid").fetchall()
        tables = [name for kind, name, _, _ in schema if kind == "table" and not _is_internal(name)]
        for kind, name, table, sql in schema:
            # Indexes on world tables come along; triggers are all change tracking.
            if kind in ("table", "index") and not _is_internal(name) and not _is_internal(table):
                out.execute(sql)
        with out.conn:
            for name in tables:
                out[name].insert_all(src[name].rows, batch_size=500)
        return out, env_id


# ---------------------------------------------------------------------- owned output files
def _written_here(path: Path) -> bool:
    """Whether ``path`` is an SQLite database this module wrote (its header carries our application id)."""
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError:
        return False
    return len(header) == 100 and header[:16] == _SQLITE_MAGIC and int.from_bytes(header[68:72], "big") == APPLICATION_ID


def check_output(out: str | os.PathLike[str], overwrite: bool) -> Path:
    """The output path, or a one-line :class:`UserInputError` saying why it cannot be written."""
    path = Path(out)
    if path.is_symlink():
        raise UserInputError(f"--out {path} is a symbolic link; give the path of a new file")
    if path.is_dir():
        raise UserInputError(f"--out {path} is a directory; give the path of a new .db file")
    if path.exists():
        if not overwrite:
            raise UserInputError(f"--out {path} already exists; pass --overwrite to replace a database "
                                 "written by `agentworld db`")
        if not _written_here(path):
            raise UserInputError(f"--out {path} already exists and was not written by `agentworld db`; "
                                 "not replacing it (remove it yourself or pick another path)")
        if not wrote_file(path):
            raise UserInputError(f"--out {path} was changed since `agentworld db` wrote it there (or was copied "
                                 "there); not replacing it (remove it yourself or pick another path)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserInputError(f"--out {path}: directory {parent} does not exist")
    return path


@dataclass(frozen=True)
class Written:
    path: Path
    env_id: str
    counts: dict[str, int]


def write(source: StateSource, out: str | os.PathLike[str], overwrite: bool = False) -> Written:
    """Write the state of ``source`` to ``out`` as a standalone SQLite file (atomically; see the module doc)."""
    path = check_output(out, overwrite)
    db, env_id = build(source)
    counts = {t.name: t.count for t in db.tables}
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    except OSError as exc:
        db.conn.close()
        raise UserInputError(f"--out {path}: cannot write in {path.parent or '.'}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        dest = sqlite3.connect(tmp)
        try:
            db.conn.backup(dest)
        finally:
            dest.close()
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; a written database is an ordinary file
        # Checked again just before the rename: a file that appeared meanwhile is never clobbered.
        check_output(path, overwrite)
        old = file_digest(path)
        os.replace(tmp, path)
        remember_file(path, forget=old)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, (OSError, sqlite3.Error)):  # disk full, permissions: a user's problem, one line
            raise UserInputError(f"--out {path}: could not write the database: {exc}") from None
        raise
    finally:
        db.conn.close()
    return Written(path=path, env_id=env_id, counts=counts)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def table_rows(source: StateSource, table: str, limit: int | None = 20) -> tuple[list[str], Iterator[dict[str, Any]], int]:
    """``(columns, rows, total)`` of one world table of ``source``, read through :func:`build`."""
    db, env_id = build(source)
    names = db.table_names()
    if table not in names:
        raise UserInputError(f"no table {table[:100]!r} in {env_id}; tables: {', '.join(names)}")
    t = db[table]
    return [c.name for c in t.columns], t.rows_where(limit=limit), t.count
