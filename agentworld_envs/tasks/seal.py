"""Sealing a task: its intended change and its answer's competitors, made explicit in the task record.

A sealed task carries

* a ``state`` check whose ``expected`` diff is what the reference solution changes in the golden
  state, with the task's ``free`` columns declared (never implied at verification time): the
  generated primary key of an inserted row, and text the agent composes itself (a value the
  reference passes as an argument that is neither in the instruction nor a fixed vocabulary);
* ``candidates`` on every answer check that names values: the ``table.column`` sources in the
  golden state where the expected values live, so an answer that also names the other values
  of the same kind (a dump of every label) fails.

Sealing is deterministic: it replays the reference on the golden state.
"""

from __future__ import annotations

import copy
import sqlite3
from typing import Any

from ..engine import answers, statediff
from . import contract
from .runner import Runner

STATE_DESCRIPTION = "exactly the intended change: every other row and column unchanged"


def is_sealed(task: dict[str, Any]) -> bool:
    return any(c["type"] == "state" for c in task["checks"])


def _columns(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(t["name"], c["name"]): c for t in spec["tables"] for c in t["columns"]}


def _argument_strings(solution: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.add(statediff.norm(v))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for step in solution:
        if step["name"] != "submit":
            walk(step["arguments"])
    return out


def free_columns(spec: dict[str, Any], diff: statediff.Diff, instruction: str,
                 solution: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The columns of the intended change whose value the agent may choose: an inserted row's
    integer primary key (allocated by the database), and composed text (see the module doc)."""
    cols = _columns(spec)
    single_pk = {t["name"] for t in spec["tables"] if sum(bool(c.get("primary_key")) for c in t["columns"]) == 1}
    said = answers.fold(instruction)
    composed = _argument_strings(solution)
    free: dict[str, set[str]] = {}
    for table, column, value, inserted in statediff.changed_cells(diff):
        col = cols.get((table, column), {})
        if inserted and table in single_pk and col.get("primary_key") and col.get("type") == "INTEGER":
            free.setdefault(table, set()).add(column)
        elif (isinstance(value, str) and not col.get("enum") and statediff.norm(value) in composed
              and answers.fold(value).strip() not in said):
            free.setdefault(table, set()).add(column)
    return {t: sorted(c) for t, c in sorted(free.items())}


def locate(conn: sqlite3.Connection, spec: dict[str, Any], values: list[Any]) -> list[str]:
    """``table.column`` of every text column of the golden state holding one of ``values``."""
    texts = [v for v in values if isinstance(v, str) and v.strip()]
    found: list[str] = []
    if not texts:
        return found
    for t in spec["tables"]:
        for c in t["columns"]:
            if c["type"] != "TEXT":
                continue
            q = f'SELECT 1 FROM "{t["name"]}" WHERE "{c["name"]}" COLLATE NOCASE IN ({", ".join("?" * len(texts))}) LIMIT 1'
            if conn.execute(q, texts).fetchone():
                found.append(f"{t['name']}.{c['name']}")
    return found


def _answer_values(check: dict[str, Any]) -> list[Any]:
    expected = check.get("expected")
    if check["mode"] == "set" and isinstance(expected, str):
        return answers.split_list(expected)
    return list(expected) if isinstance(expected, list) else [expected]


def seal(runner: Runner, task: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``task`` with its ``state`` check (from the reference's diff) and answer candidates."""
    task = copy.deepcopy(task)
    out = runner.run(None, task["solution"], diff=True)
    expected = out.diff or {}
    checks = [c for c in task["checks"] if c["type"] != "state"]
    for c in checks:
        if c["type"] == "answer" and c["mode"] != "refusal" and "candidates" not in c:
            found = locate(runner.initial, runner.spec, _answer_values(c))
            if found:
                c["candidates"] = found
    state_check = {"type": "state", "expected": expected, "description": STATE_DESCRIPTION}
    free = free_columns(runner.spec, expected, task["instruction"], task["solution"])
    if free:
        state_check["free"] = free
    task["checks"] = [state_check, *checks]
    # the submit contract: outcome, the refusal's blocking records, composed text
    return contract.apply(runner.spec, task, expected, free, out.results)


def seal_all(spec: dict[str, Any], golden: bytes, tasks: list[dict[str, Any]], tools=None) -> list[dict[str, Any]]:
    """Seal every task that is not sealed yet (hand-written and inline tasks; synthesised ones are
    sealed when generated)."""
    if all(is_sealed(t) for t in tasks):
        return tasks
    runner = Runner(spec, golden, tools)
    try:
        return [t if is_sealed(t) else seal(runner, t) for t in tasks]
    finally:
        runner.close()
