"""Verifiers: declarative checks over the final database (and the answer), plus a Python hook.

Check types live in one registry, :data:`CHECKS` (a task's ``checks`` list; the score is 1.0
only when all pass; ``info["checks"]`` reports each by name):

* ``state`` — the episode's exact diff from the golden state equals the task's intended
  change (``expected``), column by column over every table, except the task's ``free`` columns;
* ``sql`` — ``query`` (with ``params``) over the final DB must return ``expect`` rows;
* ``answer`` — the submitted answer, matched by :mod:`agentworld_envs.answers`: it names every
  ``expected`` value and no competing one (``candidates``: ``table.column`` sources in the
  golden state), ``numeric`` within ``tolerance``, ``set`` exactly the members, or is a
  ``refusal`` that gives one of the task's ``reasons`` and claims none of its ``results``;
* ``footprint`` — every table outside ``tables`` is unchanged;
* ``python`` — a function registered with :func:`python_verifier`, given read-only
  initial and final connections and the answer.

Verifiers read state; they never take the agent's word for what the DB says.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from . import answers, program_checks, state, statediff
from .registry import Registry, load_domain_of
from .sqlcheck import read_only

PythonVerifier = Callable[..., Any]


#: Python verification functions: ``fn(initial, final, answer, task, **args) -> bool | (bool, str)``;
#: the built-in ``tasks.*`` ones, and hand-built domains' (loaded on first use of their name).
PYTHON_VERIFIERS: Registry[PythonVerifier] = Registry("Python verifier", load_domain_of)
python_verifier = PYTHON_VERIFIERS.register
get_python_verifier = PYTHON_VERIFIERS.get
for _name, _fn in program_checks.VERIFIERS.items():
    python_verifier(_name)(_fn)


def normalise(value: Any) -> Any:
    """Make values comparable across SQLite/JSON: floats rounded, tuples as lists."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


class CheckResult(TypedDict):
    type: str
    passed: bool
    detail: str
    description: str


@dataclass
class VerifierContext:
    """What the checks read: the final state, the golden state, its per-table hashes, and a
    per-environment memo of competing-value sets read from the golden state."""

    final: sqlite3.Connection
    initial: sqlite3.Connection
    initial_table_hashes: Mapping[str, str]   # may compute each table's hash on first access
    memo: dict[Any, Any] = field(default_factory=dict)

    def column_values(self, source: str) -> list[Any]:
        """Distinct non-null values of ``table.column`` in the golden state (memoised)."""
        key = ("col", source)
        if key not in self.memo:
            table, _, column = source.partition(".")
            q = '"' + table.replace('"', '""') + '"', '"' + column.replace('"', '""') + '"'
            try:
                rows = self.initial.execute(f"SELECT DISTINCT {q[1]} FROM {q[0]} WHERE {q[1]} IS NOT NULL").fetchall()
            except sqlite3.Error:
                rows = []
            self.memo[key] = [r[0] for r in rows]
        return self.memo[key]

    def candidates(self, check: dict[str, Any], instruction: str) -> answers.Candidates | None:
        """The competing values of an answer check (memoised per check and instruction)."""
        if not check.get("candidates") and not check.get("values"):
            return answers.Candidates((), instruction)
        key = ("cand", json.dumps([check.get("candidates"), check.get("values"), check.get("exclude")], default=str),
               instruction)
        if key not in self.memo:
            values = [v for src in check.get("candidates", []) for v in self.column_values(src)]
            values += list(check.get("values", []))
            skip = {answers.value_key(v) for v in check.get("exclude", [])}
            self.memo[key] = answers.Candidates([v for v in values if answers.value_key(v) not in skip], instruction)
        return self.memo[key]


def _expected_list(check: dict[str, Any]) -> list[Any]:
    expected = check.get("expected")
    if check["mode"] == "set" and isinstance(expected, str):
        return answers.split_list(expected)
    return list(expected) if isinstance(expected, list) else [expected]


def check_answer(check: dict[str, Any], answer: Any, ctx: VerifierContext | None = None, instruction: str = "") -> tuple[bool, str]:
    """Match ``answer`` against one ``answer`` check (see :mod:`agentworld_envs.answers`)."""
    mode = check["mode"]
    cands = ctx.candidates(check, instruction) if ctx is not None else answers.Candidates(
        list(check.get("values", [])), instruction)
    if mode == "refusal":
        m = answers.match_refusal(answer, check.get("reasons", []), cands, results=check.get("results", []),
                                  about=check.get("about", []))
    elif mode == "set":
        m = answers.match_set(answer, _expected_list(check), cands)
    else:
        m = answers.match_values(answer, _expected_list(check), cands, numeric=True if mode == "numeric" else None,
                                 tolerance=check.get("tolerance", 0.01))
    return m.ok, m.detail


CheckFn = Callable[[dict[str, Any], dict[str, Any], Any, VerifierContext], tuple[bool, str]]


#: Check types: ``fn(check, task, answer, ctx) -> (passed, detail)``.
CHECKS: Registry[CheckFn] = Registry("check type")


@CHECKS.register("state")
def _state_check(check, task, answer, ctx):
    return statediff.compare(check["expected"], statediff.diff(ctx.initial, ctx.final), check.get("free"))


@CHECKS.register("sql")
def _sql_check(check, task, answer, ctx):
    got = normalise(ctx.final.execute(check["query"], check.get("params", [])).fetchall())
    ok = got == normalise(check["expect"])
    return ok, "" if ok else f"got {json.dumps(got)[:200]}"


@CHECKS.register("answer")
def _answer_check(check, task, answer, ctx):
    return check_answer(check, answer, ctx, task.get("instruction", ""))


@CHECKS.register("footprint")
def _footprint_check(check, task, answer, ctx):
    allowed = set(check["tables"])
    touched = set(statediff.touched(ctx.final)) - allowed
    changed = sorted(t for t in touched if state.table_hash(ctx.final, t) != ctx.initial_table_hashes[t])
    return not changed, f"changed outside footprint: {changed}" if changed else ""


@CHECKS.register("python")
def _python_check(check, task, answer, ctx):
    out = get_python_verifier(check["function"])(ctx.initial, ctx.final, answer, task, **check.get("args", {}))
    return out if isinstance(out, tuple) else (bool(out), "")


def run_checks(task: dict[str, Any], answer: Any, ctx: VerifierContext, *,
               first_failure: bool = False) -> tuple[float, list[CheckResult]]:
    """Score a finished episode. Returns (score, per-check results) — score is 1.0 iff all pass.

    With ``first_failure``, stops at the first failing check (same score, less work)."""
    results: list[CheckResult] = []
    # Read-only in a way a check's SQL cannot undo: no PRAGMA, ATTACH, DDL or transactions (sqlcheck.read_only).
    with read_only(ctx.final):
        for check in task["checks"]:
            kind = check["type"]
            try:
                ok, detail = CHECKS.get(kind)(check, task, answer, ctx)
            except sqlite3.Error as exc:
                ok, detail = False, f"check error: {exc}"
            results.append({"type": kind, "passed": bool(ok), "detail": detail, "description": check.get("description", "")})
            if first_failure and not ok:
                break
    score = 1.0 if results and all(r["passed"] for r in results) else 0.0
    return score, results
