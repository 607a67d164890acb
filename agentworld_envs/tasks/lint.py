"""Task-level lint classes: does a task set leave headroom for judgement?

Checked on the built task set of an environment (hooked into :func:`agentworld_envs.audit.lint.lint_built`,
so ``agentworld lint`` and ``agentworld validate`` report them like the world-level rules):

===================  =============================================================================
``loop_back``        a reference's chain of records (reads before its first write, each reaching one
                     record) comes back to a record it passed: the answer is guessable without the chain
``announced_trap``   a task whose right outcome is a refusal names the blocking value in its request (a
                     refused status, the record's figure that breaks a rule): no lookup needed
``skeleton_repeat``  one instruction skeleton (values, names and greetings masked) covers more than
                     :data:`MAX_SKELETON_SHARE` of an environment's tasks (and at least three)
``filler``           chatty openers that carry nothing ("Quick request:", "Several requests:", "Add up
                     the … over the")
``dead_knob``        a task claiming ``obscure_tools``: an env shows tool names per episode, not per task
``hard_too_short``   a hard-tier task (tag ``hard``) whose reference has fewer than :data:`HARD_MIN_CALLS`
                     tool calls
===================  =============================================================================

The chain is measured by replaying the reference's reads on the golden state, never read from the
generator's knobs, so a hand-edited task or another generator is held to the same standard.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from .factors import loops_back, tool_writes, trace

TASK_RULES = ("loop_back", "announced_trap", "skeleton_repeat", "filler", "dead_knob", "hard_too_short")
MAX_SKELETON_SHARE = 0.25
HARD_MIN_CALLS = 8
FILLER = re.compile(r"\b(quick request|several requests)\b|\badd up the .{1,60}? over the\b", re.I)
_GREETING = re.compile(r"^(hi|hello|hey|hey there|good morning|good afternoon)[,!.]?\s+", re.I)
_THANKS = re.compile(r"\s*(thanks( in advance)?|thank you|appreciate it)[.!]?\s*$", re.I)


@dataclass(frozen=True)
class Violation:
    """One finding, shaped like :class:`agentworld_envs.audit.lint.Violation` (lint.py imports this module)."""

    rule: str
    where: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ------------------------------------------------------------------------------------------ chains


def read_results(spec: dict[str, Any], conn: sqlite3.Connection, task: dict[str, Any],
                 tools: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The reference's calls up to its first write and their results on ``conn`` (nothing is written)."""
    from ..engine.tools import ToolError, invoke

    specs = {t["name"]: t for t in spec["tools"]}
    steps, results = [], []
    for step in task["solution"]:
        tool = specs.get(step["name"])
        if tool is None or tool_writes(tool):
            break
        try:
            res = invoke(conn, tools[step["name"]], step["arguments"], spec["now"])
        except ToolError as exc:
            res = {"error": exc.code, "message": exc.message}
        steps.append(step)
        results.append(res)
    return steps, results


def check_chains(spec: dict[str, Any], conn: sqlite3.Connection, tasks: list[dict[str, Any]],
                 tools: dict[str, Any] | None = None) -> Iterable[Violation]:
    from ..engine.tools import compile_tool

    tools = tools or {t["name"]: compile_tool(t) for t in spec["tools"]}
    for task in tasks:
        steps, results = read_results(spec, conn, task, tools)
        path = trace(spec, steps, results)["path"]
        if loops_back(path):
            again = next(r for i, r in enumerate(path) if r in path[:i])
            yield Violation("loop_back", task["id"], f"the chain comes back to {again[0]} {again[1]}: "
                                                     f"{task['instruction'][:120]!r}")


# ------------------------------------------------------------------------------------------ traps


def _norm(value: Any) -> str:
    """Lower-case words, a full stop or dash ending a sentence or clause dropped ("891.43." -> "891.43")."""
    tokens = re.sub(r"[^a-z0-9@.\-]+", " ", str(value).casefold().replace("_", " ")).split()
    return " " + " ".join(t.strip(".-") for t in tokens) + " "


def says(text: str, value: Any) -> bool:
    v = _norm(value).strip()
    return bool(v) and f" {v} " in _norm(text)


def _is_label(spec: dict[str, Any], conn: sqlite3.Connection, value: Any) -> bool:
    """A value that names a record (a code, an e-mail, a unique name): an identifier, not a blocking value."""
    if not isinstance(value, str):
        return False
    for t in spec["tables"]:
        for c in t["columns"]:
            if c.get("unique") and c["type"] == "TEXT":
                if conn.execute(f"SELECT 1 FROM {_q(t['name'])} WHERE {_q(c['name'])} = ? LIMIT 1", (value,)).fetchone():
                    return True
    return False


def blocking_values(spec: dict[str, Any], conn: sqlite3.Connection, task: dict[str, Any]) -> list[list[str]]:
    """The groups of values whose mention in the request would give a trap away: each refused status,
    and each refusal reason (without the record identifiers it cites)."""
    groups: list[list[str]] = []
    for c in task["checks"]:
        if c["type"] == "python" and (c.get("args") or {}).get("refuse_statuses"):
            groups += [[str(s)] for s in c["args"]["refuse_statuses"]]
        if c["type"] == "answer" and c.get("mode") == "refusal":
            about = {_norm(a) for a in c.get("about", [])}
            for reason in c.get("reasons", []):
                if any(_is_label(spec, conn, x) for x in reason):
                    continue
                words = [str(x) for x in reason if _norm(x) not in about]
                if words:
                    groups.append(words)
    return groups


def check_traps(spec: dict[str, Any], conn: sqlite3.Connection, tasks: list[dict[str, Any]]) -> Iterable[Violation]:
    for task in tasks:
        for group in blocking_values(spec, conn, task):
            if all(says(task["instruction"], w) for w in group):
                yield Violation("announced_trap", task["id"], f"the request names {', '.join(group)!r}: "
                                                              f"{task['instruction'][:120]!r}")
                break


# ------------------------------------------------------------------------------------------ wording


def mask_values(spec: dict[str, Any], conn: sqlite3.Connection, limit: int = 4000) -> list[str]:
    """Values an instruction may quote: enum words and the env's names, titles, labels and codes."""
    out: set[str] = set()
    for t in spec["tables"]:
        for c in t["columns"]:
            for v in c.get("enum") or []:
                out |= {str(v), str(v).replace("_", " ")}
            name = c["name"]
            if c["type"] == "TEXT" and (c.get("unique") or any(k in name for k in ("name", "title", "label", "code"))):
                rows = conn.execute(f"SELECT DISTINCT {_q(name)} FROM {_q(t['name'])} WHERE {_q(name)} IS NOT NULL LIMIT ?", (limit,))
                out |= {v for (v,) in rows if isinstance(v, str) and len(v) >= 3}
    return sorted(out, key=len, reverse=True)


def skeleton(text: str, values: list[str]) -> str:
    """An instruction with its greeting, thanks, quoted text, known values and figures masked."""
    s = _THANKS.sub("", _GREETING.sub("", text.strip()))
    s = re.sub(r'"[^"]*"', " Q ", s)
    for v in values:
        if v in s:
            s = s.replace(v, " V ")
    s = re.sub(r"\S*[\d@#]\S*", " N ", s)
    return " ".join(s.casefold().split())


def check_wording(spec: dict[str, Any], conn: sqlite3.Connection, tasks: list[dict[str, Any]]) -> Iterable[Violation]:
    if not tasks:
        return
    values = mask_values(spec, conn)
    shapes = Counter(skeleton(t["instruction"], values) for t in tasks)
    for sk, n in shapes.most_common():
        if n < 3 or n / len(tasks) <= MAX_SKELETON_SHARE:
            break
        yield Violation("skeleton_repeat", sk[:80], f"{n} of {len(tasks)} tasks share this skeleton")
    for task in tasks:
        m = FILLER.search(task["instruction"])
        if m:
            yield Violation("filler", task["id"], f"{m.group(0)!r} in {task['instruction'][:100]!r}")
        if (task.get("knobs") or {}).get("obscure_tools"):
            yield Violation("dead_knob", task["id"], "obscure_tools on a task: tools are renamed per env, not per task")
        calls = sum(1 for s in task["solution"] if s["name"] != "submit")
        if "hard" in (task.get("tags") or ()) and calls < HARD_MIN_CALLS:
            yield Violation("hard_too_short", task["id"], f"a hard-tier reference of {calls} calls")


def check_tasks(spec: dict[str, Any], conn: sqlite3.Connection, tasks: list[dict[str, Any]],
                tools: dict[str, Any] | None = None) -> list[Violation]:
    """Every task-level lint class over one environment's tasks (``conn``: its golden state)."""
    return [*check_chains(spec, conn, tasks, tools), *check_traps(spec, conn, tasks), *check_wording(spec, conn, tasks)]
