"""The submit contract applied to a task record (mechanically, when a task is sealed).

A task written against the old contract (``submit(answer=...)`` with prose) is brought to the new
one (:mod:`agentworld_envs.engine.submission`) by :func:`apply`, so generators and hand-written domains
need not change and a record stays readable by older code:

* an explicit ``outcome`` check (``done`` / ``refused`` / ``partial``, read off the task's checks
  and intended change) — the verifier checks the outcome of every task whether listed or not;
* the reference ``submit`` with that ``outcome``, only the requested value(s) as ``answer`` (for a
  refusal, the blocking value of its first reason) and any prose as ``message``;
* for a refusal, the ``records`` its blocking value was read off (that value and the record's id, per
  record the reference looked up): the verifier accepts the value only from a lookup of one of them;
* a ``composed`` check for each column whose text the agent writes itself (a free text column of
  the intended change): what it writes must name what the request is about — a record the
  instruction names, or a content word both the instruction and the reference's text use.

:func:`given_text_mismatch` and :func:`public_reasons` are gate conditions: a reference that writes
an instruction-given text on some writes and other text on others, and a refusal that may be
"explained" by public text alone (the instruction or the rule), are rejected.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ..engine import answers, statediff
from ..engine.submission import SUBMIT
from ..engine.verifiers import expected_outcome, is_refusal_task

_STOP = frozenset("""about above after again also been before being below between both could does doing down during
each from further have having here into just more most must need only other over please same should some such than that
their them then there these they this those through under until very were what when where which while will with would
your yours customer asked request requested thanks thank hello today order record""".split())


def _answer_value(task: dict[str, Any]) -> str | None:
    """The scored value(s) of a task: an answer check's expected value(s) or a refusal's first reason."""
    for c in task["checks"]:
        if c["type"] == "answer" and c.get("mode") == "refusal" and c.get("reasons"):
            return ", ".join(answers.as_text(v) for v in c["reasons"][0])
        if c["type"] == "python" and (c.get("args") or {}).get("refuse_statuses"):
            return ", ".join(c["args"]["refuse_statuses"])
    return None


def reference_submit(task: dict[str, Any], outcome: str) -> dict[str, Any]:
    """The reference ``submit`` arguments under the contract (unchanged when already explicit)."""
    sol = task["solution"]
    old = dict(sol[-1]["arguments"]) if sol and sol[-1]["name"] == SUBMIT else {}
    if "outcome" in old:
        return old
    text = old.get("answer")
    args: dict[str, Any] = {"outcome": outcome}
    if outcome == "done":
        if text is not None:
            args["answer"] = text
        return args
    value = _answer_value(task)
    if value is not None:
        args["answer"] = value
        if text and answers.value_key(text) != answers.value_key(value):
            args["message"] = text
    elif text is not None:
        args["answer"] = text
    return args


def _content_words(text: str) -> set[str]:
    return {w for w in answers.words(text) if len(w) >= 4 and w not in _STOP and not w.isdigit()}


def composed_checks(task: dict[str, Any], diff: statediff.Diff, free: dict[str, list[str]],
                    pk: dict[str, set[str]]) -> list[dict[str, Any]]:
    """``composed`` checks for the free text columns of the intended change (see the module doc)."""
    instruction = task["instruction"]
    said = answers.fold(instruction)
    named = []
    for step in task["solution"]:
        if step["name"] == SUBMIT:
            continue
        for v in step["arguments"].values():
            if isinstance(v, str) and len(answers.value_key(v)) >= 3 and answers.fold(v) in said:
                named.append(v)
    inst_words = _content_words(instruction)
    out = []
    for table, cols in sorted(free.items()):
        for col in cols:
            if col in pk.get(table, set()):
                continue
            values = [v for t, c, v, _ in statediff.changed_cells(diff) if t == table and c == col and isinstance(v, str)]
            if not values:
                continue
            mentions = list(dict.fromkeys(named + sorted({w for v in values for w in _content_words(v)} & inst_words)))
            if mentions:
                out.append({"type": "composed", "table": table, "column": col, "mentions": mentions,
                            "description": f"the {col.replace('_', ' ')} names what the request is about"})
    return out


def apply(spec: dict[str, Any], task: dict[str, Any], diff: statediff.Diff,
          free: dict[str, list[str]], results: list[Any] | None = None) -> dict[str, Any]:
    """``task`` under the submit contract (a copy; see the module doc). ``diff``: the intended change;
    ``results``: the reference's tool results (a refusal's blocking records are read off them)."""
    task = copy.deepcopy(task)
    if results is not None:
        for c in task["checks"]:
            if c["type"] == "answer" and c.get("mode") == "refusal" and "records" not in c:
                values = [v for alt in c.get("reasons", []) for v in alt] + list(c.get("evidence") or [])
                records = answers.blocking_records(results, values, task["instruction"])
                if records:
                    c["records"] = records
    checks = [c for c in task["checks"] if c["type"] not in ("outcome", "composed")]
    declared = [c for c in task["checks"] if c["type"] == "outcome"]
    outcome = expected_outcome({**task, "checks": declared + [{"type": "state", "expected": diff}, *checks]})
    if task["solution"] and task["solution"][-1]["name"] == SUBMIT:
        task["solution"][-1] = {"name": SUBMIT, "arguments": reference_submit(task, outcome)}
    else:
        task["solution"].append({"name": SUBMIT, "arguments": {"outcome": outcome}})
    pk = {t["name"]: {c["name"] for c in t["columns"] if c.get("primary_key")} for t in spec["tables"]}
    extra = composed_checks(task, diff, free, pk)
    outcome_check = {"type": "outcome", "expected": outcome, "description": "submit's outcome is the task's"}
    task["checks"] = [outcome_check, *checks, *extra]
    return task


# ------------------------------------------------------------------------------------------ gate conditions


def given_text_mismatch(task: dict[str, Any], spec: dict[str, Any]) -> str | None:
    """A column the reference writes with text the instruction gives on one write and other free text on
    another (a reason "entered in error" on three rows and "customer asked by phone" on the fourth), or None."""
    state_check = next((c for c in task["checks"] if c["type"] == "state"), None)
    if state_check is None:
        return None
    enums = {(t["name"], c["name"]) for t in spec["tables"] for c in t["columns"] if c.get("enum")}
    said = answers.fold(task["instruction"])
    given: dict[tuple[str, str], set[bool]] = {}
    for table, column, value, _ in statediff.changed_cells(state_check["expected"]):
        if not isinstance(value, str) or (table, column) in enums or not re.search(r"[^\W\d_]{3}", value):
            continue
        if " " not in value.strip():
            continue   # codes and single words: data, not prose
        given.setdefault((table, column), set()).add(answers.fold(value).strip().rstrip(".") in said)
    for (table, column), kinds in sorted(given.items()):
        if kinds == {True, False}:
            return f"{table}.{column}"
    return None


def public_reasons(task: dict[str, Any]) -> bool:
    """Does a refusal accept a reason the agent can give without a lookup: an alternative whose every
    value is in the instruction or the rule the task exercises?"""
    if not is_refusal_task(task):
        return False
    public = answers.fold(task["instruction"] + "\n" + str((task.get("knobs") or {}).get("rule") or ""))
    keys = set(answers.runs(answers.words(public), 64))
    nums = answers.numbers(public)
    def known(v: Any) -> bool:
        n = answers.as_number(v)
        if n is not None:
            return any(abs(n - m) < 1e-9 for m in nums)
        return answers.value_key(v) in keys

    for c in task["checks"]:
        if c["type"] != "answer" or c.get("mode") != "refusal":
            continue
        if c.get("evidence") and not any(known(v) for v in c["evidence"]):
            continue   # the verifier demands a lookup that returned one of these private values
        if any(alt and all(known(v) for v in alt) for alt in c.get("reasons", [])):
            return True
    return False
