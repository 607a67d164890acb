"""What makes a task hard, measured on its reference, and the difficulty number made from it.

:func:`measure` replays a task's reference on the golden state and reads off

* ``calls`` — tool calls before ``submit``; ``reads`` and ``writes`` among them;
* ``hops`` — records the reference reaches one by one (a get's row, a search's single result)
  before its first write, minus one: the length of the chain it follows;
* ``branches`` — records a search shows that the reference must look at and then leave alone
  (siblings, distractors, the rows a condition rules out), capped at :data:`MAX_BRANCHES`;
* ``touched`` — rows the intended change writes (the sealed state diff; the write calls for a task
  not sealed yet);
* ``hidden`` — conditions the outcome hinges on that the request does not state (a blocking
  status, a rule's figure, a related record's field), as the generator set them up; a
  hand-written trap counts one;
* ``parts`` — separate requests in one instruction;
* ``loop_back`` — whether the chain of records came back to one it had passed (a defect:
  ``agentworld lint`` reports it).

:func:`difficulty` is a fixed weighted sum of these, the same for synthesised and hand-written
tasks, so ``agentworld stats`` can report how it relates to reference length and to the failure
rates of the scripted baselines (:mod:`.baselines`).
"""

from __future__ import annotations

from typing import Any

from ..engine.tools import WRITE_KINDS

MAX_BRANCHES = 12
WEIGHTS = {"calls": 0.5, "hops": 0.6, "branches": 0.15, "touched": 0.3, "hidden": 1.2, "parts": 0.6}


def python_table(tool: dict[str, Any], tables: list[str]) -> str | None:
    """The table a Python tool (hand-built domains) works on, from its name ("get_order_details" → orders)."""
    parts = tool["name"].split("_")
    for t in tables:
        stem = t[:-1] if t.endswith("s") else t
        if stem in parts or t in parts:
            return t
    return None


def tool_writes(tool: dict[str, Any]) -> bool:
    kind = tool["impl"]["kind"]
    return kind in WRITE_KINDS or (kind == "python" and "read" not in tool.get("tags", []))


def reached(tool: dict[str, Any], args: dict[str, Any], result: Any, tables: list[str]) -> tuple[str, Any]:
    """What one call reached: ``("one", (table, id))`` for a single record read, ``("many", [(table, id), …])``
    for a listing, ``("write", (table, id))`` for a write, ``("none", None)`` otherwise (errors, aggregates)."""
    impl = tool["impl"]
    kind = impl["kind"]
    if isinstance(result, dict) and "error" in result and set(result) <= {"error", "message"}:
        return "none", None
    table = impl.get("table") if kind != "python" else python_table(tool, tables)
    if tool_writes(tool):
        if kind == "create" and isinstance(result, dict) and isinstance(result.get("created"), dict):
            return "write", (table, result["created"].get("id"))
        key = (impl.get("key") or {}).get("param")
        if key and key in args:
            return "write", (table, args[key])
        if isinstance(result, dict) and "id" in result:
            return "write", (table, result["id"])
        return "write", (table, None)
    if isinstance(result, dict) and isinstance(result.get("results"), list):
        rows = [(table, r["id"]) for r in result["results"] if isinstance(r, dict) and "id" in r]
        if len(rows) == 1 and len(result["results"]) == 1:
            return "one", rows[0]
        return "many", rows
    if isinstance(result, dict) and "id" in result and kind in ("get", "python"):
        return "one", (table, result["id"])
    return "none", None


def trace(spec: dict[str, Any], solution: list[dict[str, Any]], results: list[Any]) -> dict[str, Any]:
    """The records a reference's calls reached, from the calls and their results."""
    tools = {t["name"]: t for t in spec["tools"]}
    tables = [t["name"] for t in spec["tables"]]
    path: list[Any] = []
    listed: set[Any] = set()
    written: set[Any] = set()
    reads = writes = 0
    before_write = True
    for step, res in zip(solution, results):
        tool = tools.get(step["name"])
        if tool is None:
            continue
        what, rec = reached(tool, step["arguments"], res, tables)
        if tool_writes(tool):
            writes += 1
        else:
            reads += 1
        if what == "write":
            before_write = False
            written.add(rec)
        elif what == "one":
            if before_write and (not path or path[-1] != rec):
                path.append(rec)
        elif what == "many":
            listed.update(rec)
    return {"path": path, "listed": listed, "written": written, "reads": reads, "writes": writes}


def loops_back(path: list[Any]) -> bool:
    """A chain comes back to a record it passed (consecutive repeats are one visit)."""
    return len(set(path)) < len(path)


def _diff_rows(task: dict[str, Any]) -> int | None:
    for c in task["checks"]:
        if c["type"] == "state":
            return sum(len(td.get("update", [])) + len(td.get("insert", [])) + len(td.get("delete", []))
                       for td in c["expected"].values())
    return None


def measure(runner, task: dict[str, Any], results: list[Any] | None = None) -> dict[str, Any]:
    """The measured factors of ``task`` (see the module doc), replaying its reference on ``runner``
    (or from ``results``, its calls' results)."""
    body = [s for s in task["solution"] if s["name"] != "submit"]
    if results is None:
        results = runner.run(None, body).results
    tr = trace(runner.spec, body, results)
    path = tr["path"]
    knobs = task.get("knobs") or {}
    hidden = knobs.get("hidden")
    if hidden is None:
        hidden = 1 if "trap" in (task.get("tags") or ()) else 0
    touched = _diff_rows(task)
    return {"calls": len(body), "reads": tr["reads"], "writes": tr["writes"],
            "hops": max(0, len(set(path)) - 1), "branches": min(MAX_BRANCHES, len(tr["listed"] - tr["written"] - set(path))),
            "touched": touched if touched is not None else tr["writes"], "hidden": int(hidden),
            "parts": int(knobs.get("compound", 1)), "loop_back": loops_back(path)}


def difficulty(f: dict[str, Any]) -> float:
    return round(sum(w * f[k] if k != "parts" else w * (f[k] - 1) for k, w in WEIGHTS.items()), 2)
