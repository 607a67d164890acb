"""Python verification functions of programmatic tasks (``tasks.*``), parameterised by a check's ``args``.

:mod:`agentworld_envs.engine.verifiers` registers :data:`VERIFIERS` under their names, so this module
depends on nothing above the answer matcher and the state layer.

Each reads the read-only initial and final databases; the agent's text is used only
for the facts it must *report*, never for facts about the database.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from . import answers
from .state import CHANGES_TABLE as CHANGES


def _observed(answer: Any) -> answers.Observed | None:
    """What the episode's lookups showed, when the verifier passed it along with the words."""
    return getattr(answer, "observed", None)


def _looked_up_nothing(answer: Any) -> bool:
    observed = _observed(answer)
    return observed is not None and observed.empty


def _slot(values: Any, task: dict[str, Any], answer: Any) -> answers.Candidates:
    """The competing ``values`` of an answer, with the env's category words, record nouns, today's date
    and policy when the verifier passed them along with the words."""
    vocabulary, nouns, today = getattr(answer, "lexicon", None) or ((), (), "")
    return answers.Candidates(values, task["instruction"], vocabulary=vocabulary, nouns=nouns, today=today,
                              policy=getattr(answer, "policy", "") or "")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ids(conn: sqlite3.Connection, table: str, where: dict[str, Any], extra: str = "", params: tuple = ()) -> list[int]:
    conds = " AND ".join(f"{_q(c)} = ?" for c in where) or "1"
    sql = f"SELECT id FROM {_q(table)} WHERE {conds}{extra} ORDER BY id"
    return [r[0] for r in conn.execute(sql, (*where.values(), *params)).fetchall()]


def _others_unchanged(initial: sqlite3.Connection, final: sqlite3.Connection, table: str, ids: list[int]) -> bool:
    if not final.execute(f"SELECT 1 FROM {CHANGES} WHERE tbl = ? LIMIT 1", (table,)).fetchone():
        return True  # the engine logs every write to a user table; none reached this one
    marks = ", ".join("?" * len(ids)) or "NULL"
    sql = f"SELECT * FROM {_q(table)} WHERE id NOT IN ({marks}) ORDER BY id"
    return initial.execute(sql, ids).fetchall() == final.execute(sql, ids).fetchall()


def _distinct(conn: sqlite3.Connection, table: str, column: str) -> list[Any]:
    """The distinct values of a column: the competing candidates of an answer naming one of them."""
    return [r[0] for r in conn.execute(f"SELECT DISTINCT {_q(column)} FROM {_q(table)} WHERE {_q(column)} IS NOT NULL")]


def _status_of(conn: sqlite3.Connection, table: str, column: str, ids: list[int]) -> list[Any]:
    marks = ", ".join("?" * len(ids)) or "NULL"
    return [r[0] for r in conn.execute(f"SELECT {_q(column)} FROM {_q(table)} WHERE id IN ({marks}) ORDER BY id", ids)]


def _parent_id(initial: sqlite3.Connection, parent_table: str, label_col: str, label: str) -> int | None:
    row = initial.execute(f"SELECT id FROM {_q(parent_table)} WHERE {_q(label_col)} = ?", (label,)).fetchone()
    return None if row is None else row[0]


def _targets(initial: sqlite3.Connection, table: str, fk: str, parent: int, column: str, statuses: list[str],
             threshold: dict[str, Any] | None) -> list[int]:
    marks = ", ".join("?" * len(statuses))
    extra, params = f" AND {_q(column)} IN ({marks})", tuple(statuses)
    if threshold:
        extra += f" AND {_q(threshold['column'])} > ?"
        params += (threshold["value"],)
    return _ids(initial, table, {fk: parent}, extra, params)


def bulk_transition(initial, final, answer, task, *, table: str, fk: str, parent_table: str, parent_label_col: str,
                    parent_label: str, column: str, from_statuses: list[str], to: str,
                    threshold: dict[str, Any] | None = None, refuse_statuses: list[str] | None = None):
    """Every child of the parent in ``from_statuses`` (and over ``threshold``) now has status ``to``;
    every other row of the table is unchanged (children in ``refuse_statuses`` too, and then the
    answer must explain the refusal)."""
    parent = _parent_id(initial, parent_table, parent_label_col, parent_label)
    if parent is None:
        return False, "parent not found"
    ids = _targets(initial, table, fk, parent, column, from_statuses, threshold)
    if not ids:
        return False, "no target rows"
    if any(s != to for s in _status_of(final, table, column, ids)):
        return False, f"not every target {table} row is {to}"
    if not _others_unchanged(initial, final, table, ids):
        return False, f"other {table} rows changed"
    if refuse_statuses:
        others = [v for v in _distinct(initial, table, column) if v not in (*from_statuses, to, *refuse_statuses)]
        m = answers.match_refusal(answer, [[s] for s in refuse_statuses], _slot(others, task, answer),
                                  results=[to], about=refuse_statuses, observed=_observed(answer), partial=True)
        if not m.ok:
            return False, "the refused part is not explained: " + m.detail
    return True, f"{len(ids)} rows moved to {to}"


def aggregate_answer(initial, final, answer, task, *, table: str, func: str, column: str | None = None,
                     where: dict[str, Any] | None = None, parent: dict[str, str] | None = None,
                     label_col: str | None = None, tolerance: float = 0.01):
    """The answer equals an aggregate over the *initial* DB (sum / count / avg / the label of the
    max row), and the DB is unchanged."""
    if _looked_up_nothing(answer):
        return False, "answered without looking anything up"
    where = dict(where or {})
    if parent:
        pid = _parent_id(initial, parent["table"], parent["label_col"], parent["label"])
        if pid is None:
            return False, "parent not found"
        where[parent["fk"]] = pid
    conds = " AND ".join(f"{_q(c)} = ?" for c in where) or "1"
    params = tuple(where.values())
    if func == "argmax":
        rows = initial.execute(f"SELECT {_q(label_col)}, {_q(column)} FROM {_q(table)} WHERE {conds} AND {_q(column)} IS NOT NULL "
                               f"ORDER BY {_q(column)} DESC LIMIT 2", params).fetchall()
        if not rows or (len(rows) > 1 and rows[0][1] == rows[1][1]):
            return False, "no unique maximum"
        m = answers.match_values(answer, [rows[0][0]], _slot(_distinct(initial, table, label_col), task, answer), numeric=False,
                                 observed=_observed(answer))
    else:
        target = "*" if func == "count" else _q(column)
        value = initial.execute(f"SELECT {func.upper()}({target}) FROM {_q(table)} WHERE {conds}", params).fetchone()[0]
        if value is None:
            return False, "no value"
        m = answers.match_values(answer, [float(value)], _slot((), task, answer), numeric=True,
                                 tolerance=tolerance, observed=_observed(answer))
    ok, detail = m.ok, m.detail
    if not ok:
        return False, detail
    if not _others_unchanged(initial, final, table, []):
        return False, f"{table} changed"
    return True, detail


def argmax_parent(initial, final, answer, task, *, table: str, fk: str, parent_table: str, parent_label_col: str,
                  column: str, status: str, to: str | None = None):
    """The parent with the most children in ``status`` (unique, from the initial DB) is named in the
    answer; if ``to`` is given, exactly that parent's children in ``status`` moved to ``to``."""
    if _looked_up_nothing(answer):
        return False, "answered without looking anything up"
    rows = initial.execute(f"SELECT {_q(fk)}, COUNT(*) AS n FROM {_q(table)} WHERE {_q(column)} = ? AND {_q(fk)} IS NOT NULL "
                           f"GROUP BY 1 ORDER BY n DESC LIMIT 2", (status,)).fetchall()
    if not rows or (len(rows) > 1 and rows[0][1] == rows[1][1]):
        return False, "no unique maximum"
    pid = rows[0][0]
    label = initial.execute(f"SELECT {_q(parent_label_col)} FROM {_q(parent_table)} WHERE id = ?", (pid,)).fetchone()[0]
    m = answers.match_values(answer, [label], _slot(_distinct(initial, parent_table, parent_label_col), task, answer), numeric=False,
                             observed=_observed(answer))
    if not m.ok:
        return False, m.detail
    ids = _ids(initial, table, {fk: pid, column: status}) if to else []
    if to and any(s != to for s in _status_of(final, table, column, ids)):
        return False, f"not every {status} row of {label} is {to}"
    if not _others_unchanged(initial, final, table, ids):
        return False, f"other {table} rows changed"
    return True, f"{label}: {rows[0][1]}"


#: The built-in Python verifiers, by the name a task's ``python`` check gives.
VERIFIERS = {"tasks.bulk_transition": bulk_transition, "tasks.aggregate_answer": aggregate_answer,
             "tasks.argmax_parent": argmax_parent}
