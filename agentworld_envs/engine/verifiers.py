"""Verifiers: declarative checks over the final database (and the answer), plus a Python hook.

Check types live in one registry, :data:`CHECKS` (a task's ``checks`` list; the score is 1.0
only when all pass; ``info["checks"]`` reports each by name):

* ``state`` — the episode's exact diff from the golden state equals the task's intended
  change (``expected``), column by column over every table, except the task's ``free`` columns;
* ``sql`` — ``query`` (with ``params``) over the final DB must return ``expect`` rows;
* ``answer`` — the submitted answer, matched by :mod:`agentworld_envs.engine.answers`: it names every
  ``expected`` value and no competing one (``candidates``: ``table.column`` sources in the
  golden state), ``numeric`` within ``tolerance``, ``set`` exactly the members, or is a
  ``refusal`` that gives one of the task's ``reasons`` (the blocking record's own values, which a
  lookup of this episode returned) and claims none of its ``results``;
* ``outcome`` — ``submit``'s declared outcome (``done`` / ``refused`` / ``partial``; read from the words
  when none is declared) is the task's; every task is checked for it, listed or not;
* ``composed`` — text the agent composed for ``table.column`` names what the request is about;
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
from ..util.registry import Registry
from .sqlcheck import read_only
from .submission import ANSWER_CONTRACT, as_submission, declared_outcome

PythonVerifier = Callable[..., Any]


#: Python verification functions: ``fn(initial, final, answer, task, **args) -> bool | (bool, str)``;
#: the built-in ``tasks.*`` ones, and hand-built domains' (loaded on first use of their name).
PYTHON_VERIFIERS: Registry[PythonVerifier] = Registry("Python verifier")
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
    """What the checks read: the final state, the golden state, its per-table hashes, a per-environment
    memo of competing-value sets read from the golden state, what this episode's tool results showed
    (``observed``; None when unknown) and the spec (or a function returning it, read only when an
    answer check needs the environment's category words and record nouns)."""

    final: sqlite3.Connection
    initial: sqlite3.Connection
    initial_table_hashes: Mapping[str, str]   # may compute each table's hash on first access
    memo: dict[Any, Any] = field(default_factory=dict)
    observed: answers.Observed | None = None
    spec: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None
    _diff: statediff.Diff | None = field(default=None, init=False, repr=False)

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

    def diff(self) -> statediff.Diff:
        """This episode's exact change to the golden state (computed once per context)."""
        if self._diff is None:
            self._diff = statediff.diff(self.initial, self.final)
        return self._diff

    def lexicon(self) -> tuple[list[str], list[str], str]:
        """The environment's category words (enum values), record nouns and today's date (memoised)."""
        key = ("lexicon",)
        if key not in self.memo:
            spec = self.spec() if callable(self.spec) else self.spec
            vocab: list[str] = []
            nouns: list[str] = []
            today = ""
            if spec:
                vocab = list(dict.fromkeys(str(v) for t in spec.get("tables", []) for c in t.get("columns", [])
                                           for v in c.get("enum", []) if isinstance(v, str)))
                for t in spec.get("tables", []):
                    name = str(t.get("name", ""))
                    nouns += [name, name[:-3] + "y" if name.endswith("ies") else name.rstrip("s")]
                    nouns += [name.rsplit("_", 1)[-1].rstrip("s")]
                today = str(spec.get("now", ""))[:10]
            self.memo[key] = (vocab, nouns, today)
        return self.memo[key]

    def policy(self) -> str:
        """The environment's policy text (memoised; "" when the spec is not known)."""
        key = ("policy",)
        if key not in self.memo:
            spec = self.spec() if callable(self.spec) else self.spec
            self.memo[key] = str((spec or {}).get("policy") or "")
        return self.memo[key]

    def links(self) -> statediff.Links | None:
        """The schema's primary and foreign keys (memoised; None when the spec is not known)."""
        key = ("links",)
        if key not in self.memo:
            spec = self.spec() if callable(self.spec) else self.spec
            self.memo[key] = statediff.schema_links(spec) if spec else None
        return self.memo[key]

    def candidates(self, check: dict[str, Any], instruction: str, rule: str = "") -> answers.Candidates:
        """The slot of an answer check: its competing values, and what never competes (memoised per
        check, instruction and rule)."""
        key = ("cand", json.dumps([check.get("candidates"), check.get("values"), check.get("exclude")], default=str),
               instruction, rule)
        if key not in self.memo:
            values = [v for src in check.get("candidates", []) for v in self.column_values(src)]
            values += list(check.get("values", []))
            skip = {answers.value_key(v) for v in check.get("exclude", [])}
            vocab, nouns, today = self.lexicon()
            self.memo[key] = answers.Candidates([v for v in values if answers.value_key(v) not in skip], instruction,
                                                allowed=list(check.get("exclude", [])), vocabulary=vocab, nouns=nouns,
                                                today=today, policy=f"{self.policy()}\n{ANSWER_CONTRACT}", rule=rule)
        return self.memo[key]


def _expected_list(check: dict[str, Any]) -> list[Any]:
    expected = check.get("expected")
    if check["mode"] == "set" and isinstance(expected, str):
        return answers.split_list(expected)
    return list(expected) if isinstance(expected, list) else [expected]


def is_refusal_task(task: dict[str, Any]) -> bool:
    """Does the task expect (part of) its request to be refused?"""
    for c in task["checks"]:
        if c["type"] == "answer" and c.get("mode") == "refusal":
            return True
        if c["type"] == "python" and (c.get("args") or {}).get("refuse_statuses"):
            return True
    return False


def expected_outcome(task: dict[str, Any]) -> str:
    """``done``, ``refused`` or ``partial``: the task's ``outcome`` check, else read off its checks (a
    refusal whose intended change is empty is ``refused``, one with a change ``partial``)."""
    for c in task["checks"]:
        if c["type"] == "outcome":
            return c["expected"]
    if not is_refusal_task(task):
        return "done"
    state_check = next((c for c in task["checks"] if c["type"] == "state"), None)
    if state_check is not None:
        return "partial" if state_check.get("expected") else "refused"
    mixed = (task.get("knobs") or {}).get("policy_trap") == "mixed" or "mixed" in (task.get("tags") or ())
    return "partial" if mixed else "refused"


def _changed_count(task: dict[str, Any]) -> int | None:
    """How many records the task's state check changes, adds or removes (the parts a partial refusal did)."""
    for check in task.get("checks") or ():
        if check.get("type") == "state" and isinstance(check.get("expected"), dict):
            return sum(len(ops) for table in check["expected"].values() if isinstance(table, dict)
                       for ops in table.values() if isinstance(ops, list))
    return None


def check_answer(check: dict[str, Any], answer: Any, ctx: VerifierContext | None = None, instruction: str = "",
                 task: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Match ``answer`` (a submission, its words or a bare answer) against one ``answer`` check
    (see :mod:`agentworld_envs.engine.answers`)."""
    mode = check["mode"]
    rule = str(((task or {}).get("knobs") or {}).get("rule") or "")
    if ctx is not None:
        cands = ctx.candidates(check, instruction, rule)
    else:
        cands = answers.Candidates(list(check.get("values", [])), instruction, allowed=list(check.get("exclude", [])),
                                   rule=rule)
    observed = ctx.observed if ctx is not None else None
    sub = as_submission(answer)
    text = sub.words()
    if mode != "refusal" and observed is not None and observed.empty:
        return False, "answered without looking anything up (no tool call of this episode succeeded)"
    if mode == "refusal":
        partial = task is not None and expected_outcome(task) == "partial"
        m = answers.match_refusal(text, check.get("reasons", []), cands, results=check.get("results", []),
                                  about=check.get("about", []), declared=bool(sub.outcome), observed=observed,
                                  evidence=check.get("evidence"), partial=partial, records=check.get("records", ()),
                                  done=_changed_count(task) if partial and task is not None else None)
    elif mode == "set":
        m = answers.match_set(text, _expected_list(check), cands, observed=observed)
    else:
        m = answers.match_values(text, _expected_list(check), cands, numeric=True if mode == "numeric" else None,
                                 tolerance=check.get("tolerance", 0.01), observed=observed)
    return m.ok, m.detail


CheckFn = Callable[[dict[str, Any], dict[str, Any], Any, VerifierContext], tuple[bool, str]]


#: Check types: ``fn(check, task, answer, ctx) -> (passed, detail)``.
CHECKS: Registry[CheckFn] = Registry("check type")


@CHECKS.register("state")
def _state_check(check, task, answer, ctx):
    # With generated keys (free integer ids of inserted rows), inserted rows match up to a consistent
    # renaming of those ids, references to them included; that needs the schema's keys.
    links = ctx.links() if check.get("free") else None
    return statediff.compare(check["expected"], ctx.diff(), check.get("free"), links)


@CHECKS.register("outcome")
def _outcome_check(check, task, answer, ctx):
    """The declared ``outcome`` of ``submit`` (or, when none is given, the one its words stand for)."""
    expected = check.get("expected") or expected_outcome(task)
    got, declared = declared_outcome(as_submission(answer), expected)
    how = "declared" if declared else "read from the words"
    if got != expected:
        return False, f"outcome {got!r} ({how}), the task's is {expected!r}"
    return True, f"outcome {got!r} ({how})"


@CHECKS.register("composed")
def _composed_check(check, task, answer, ctx):
    """Text the agent composed for ``table.column`` names what the request is about (one of ``mentions``)."""
    keys = [answers.value_key(m) for m in check.get("mentions", []) if answers.value_key(m)]
    written = [v for t, c, v, _ in statediff.changed_cells(ctx.diff())
               if t == check["table"] and c == check["column"] and isinstance(v, str)]
    for value in written:
        spans = answers.runs(answers.words(value), 16)
        if not any(k in spans for k in keys):
            return False, f"{check['column']} {value[:60]!r} does not say what it is about ({', '.join(check.get('mentions', [])[:4])})"
    return True, f"{len(written)} composed {check['column']} text(s) name the subject"


@CHECKS.register("sql")
def _sql_check(check, task, answer, ctx):
    got = normalise(ctx.final.execute(check["query"], check.get("params", [])).fetchall())
    ok = got == normalise(check["expect"])
    return ok, "" if ok else f"got {json.dumps(got)[:200]}"


@CHECKS.register("answer")
def _answer_check(check, task, answer, ctx):
    return check_answer(check, answer, ctx, task.get("instruction", ""), task)


@CHECKS.register("footprint")
def _footprint_check(check, task, answer, ctx):
    allowed = set(check["tables"])
    touched = set(statediff.touched(ctx.final)) - allowed
    changed = sorted(t for t in touched if state.table_hash(ctx.final, t) != ctx.initial_table_hashes[t])
    return not changed, f"changed outside footprint: {changed}" if changed else ""


@CHECKS.register("python")
def _python_check(check, task, answer, ctx):
    # Python verifiers receive the words as a str (None when empty) that also carries the submission
    # and what the episode's lookups showed.
    words = as_submission(answer).words()
    if words is not None:
        words.observed, words.lexicon, words.policy = ctx.observed, ctx.lexicon(), ctx.policy()
    out = get_python_verifier(check["function"])(ctx.initial, ctx.final, words, task, **check.get("args", {}))
    return out if isinstance(out, tuple) else (bool(out), "")


def run_checks(task: dict[str, Any], answer: Any, ctx: VerifierContext, *,
               first_failure: bool = False) -> tuple[float, list[CheckResult]]:
    """Score a finished episode. Returns (score, per-check results) — score is 1.0 iff all pass.

    ``answer`` is the submission (:class:`~agentworld_envs.engine.submission.Submission`, ``submit``'s
    arguments, or a bare answer). The outcome is checked first, whether or not the task lists an
    ``outcome`` check. With ``first_failure``, stops at the first failing check (same score, less work)."""
    results: list[CheckResult] = []
    sub = as_submission(answer)
    checks = task["checks"]
    if not any(c["type"] == "outcome" for c in checks):
        checks = [{"type": "outcome", "expected": expected_outcome(task),
                   "description": "submit's outcome is the task's"}, *checks]
    # Read-only in a way a check's SQL cannot undo: no PRAGMA, ATTACH, DDL or transactions (sqlcheck.read_only).
    with read_only(ctx.final):
        for check in checks:
            kind = check["type"]
            try:
                ok, detail = CHECKS.get(kind)(check, task, sub, ctx)
            except sqlite3.Error as exc:
                ok, detail = False, f"check error: {exc}"
            results.append({"type": kind, "passed": bool(ok), "detail": detail, "description": check.get("description", "")})
            if first_failure and not ok:
                break
    score = 1.0 if results and all(r["passed"] for r in results) else 0.0
    return score, results
