"""Verifiers: declarative checks over the final database (and the answer), plus a Python hook.

Check types (a task's ``checks`` list; the score is 1.0 only when all pass):

* ``sql`` — ``query`` (with ``params``) over the final DB must return ``expect`` rows;
* ``answer`` — the submitted answer matches ``expected`` (``exact`` / ``numeric`` with
  ``tolerance`` / ``set`` / ``contains``) or is a refusal (``refusal``);
* ``footprint`` — every table outside ``tables`` is unchanged (no collateral damage);
* ``python`` — a function registered with :func:`python_verifier`, given read-only
  initial and final connections and the answer.

Verifiers read state; they never take the agent's word for what the DB says.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import state
from .registry import Registry, load_domain_of

PythonVerifier = Callable[..., Any]
REFUSAL_MARKERS = ("cannot", "can't", "can not", "unable", "refuse", "not allowed", "not possible",
                   "not permitted", "won't", "will not", "decline")


def _load_verifier(name: str) -> None:
    if name.startswith("tasks."):
        import agentworld_envs.tasks  # noqa: F401  (registers the tasks.* verifiers)
    else:
        load_domain_of(name)


#: Python verification functions: ``fn(initial, final, answer, task, **args) -> bool | (bool, str)``.
PYTHON_VERIFIERS: Registry[PythonVerifier] = Registry("Python verifier", _load_verifier)
python_verifier = PYTHON_VERIFIERS.register
get_python_verifier = PYTHON_VERIFIERS.get


def normalise(value: Any) -> Any:
    """Make values comparable across SQLite/JSON: floats rounded, tuples as lists."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _to_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        cleaned = value.strip().replace(",", "").lstrip("$€£").strip()
        try:
            return float(cleaned)
        except ValueError:
            return None
    return None


def _as_set(value: Any) -> set[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = [p for p in (s.strip() for s in value.replace(";", ",").split(",")) if p]
    if not isinstance(value, list):
        value = [value]
    return {_as_text(v).strip().casefold() for v in value}


def check_answer(check: dict[str, Any], answer: Any) -> tuple[bool, str]:
    mode, expected = check["mode"], check.get("expected")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return False, "no answer submitted"
    if mode == "exact":
        ok = _as_text(answer).strip().casefold() == _as_text(expected).strip().casefold()
    elif mode == "numeric":
        got, want = _to_number(answer), _to_number(expected)
        ok = got is not None and want is not None and math.isclose(got, want, rel_tol=0, abs_tol=check.get("tolerance", 0.01))
    elif mode == "set":
        ok = _as_set(answer) == _as_set(expected)
    elif mode == "contains":
        text = _as_text(answer).casefold()
        wanted = expected if isinstance(expected, list) else [expected]
        ok = all(_as_text(w).casefold() in text for w in wanted)
    else:  # refusal
        text = _as_text(answer).casefold()
        ok = any(m in text for m in REFUSAL_MARKERS)
    return ok, f"answer {_as_text(answer)[:80]!r} vs expected {_as_text(expected)[:80]!r} ({mode})"


@dataclass
class VerifierContext:
    """What the checks read: the final state, the golden state, and the per-table golden hashes."""

    final: sqlite3.Connection
    initial: sqlite3.Connection
    initial_table_hashes: dict[str, str]


def run_checks(task: dict[str, Any], answer: Any, ctx: VerifierContext) -> tuple[float, list[dict[str, Any]]]:
    """Score a finished episode. Returns (score, per-check results) — score is 1.0 iff all pass."""
    results = []
    ctx.final.execute("PRAGMA query_only = ON")
    try:
        for check in task["checks"]:
            kind = check["type"]
            try:
                if kind == "sql":
                    got = normalise(ctx.final.execute(check["query"], check.get("params", [])).fetchall())
                    ok = got == normalise(check["expect"])
                    detail = "" if ok else f"got {json.dumps(got)[:200]}"
                elif kind == "answer":
                    ok, detail = check_answer(check, answer)
                elif kind == "footprint":
                    allowed = set(check["tables"])
                    touched = state.changed_tables(ctx.final) - allowed
                    changed = sorted(t for t in touched if state.table_hash(ctx.final, t) != ctx.initial_table_hashes[t])
                    ok, detail = not changed, f"changed outside footprint: {changed}" if changed else ""
                else:
                    out = get_python_verifier(check["function"])(ctx.initial, ctx.final, answer, task, **check.get("args", {}))
                    ok, detail = (out if isinstance(out, tuple) else (bool(out), ""))
            except sqlite3.Error as exc:
                ok, detail = False, f"check error: {exc}"
            results.append({"type": kind, "passed": bool(ok), "detail": detail, "description": check.get("description", "")})
    finally:
        ctx.final.execute("PRAGMA query_only = OFF")
    score = 1.0 if results and all(r["passed"] for r in results) else 0.0
    return score, results
