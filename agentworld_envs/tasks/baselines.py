"""Scripted baselines: what a policy without judgement scores on a task.

Two agents, each scripted from the task's reference (so they know which tools to call) but
without the judgement the reference encodes:

* ``greedy`` — the *first plausible record* agent. It makes the reference's reads, but where the
  reference picks records out of a listing (the one meeting a condition, the ones to change), it
  takes the first record listed for a single pick and every record listed for several; it never
  refuses (a refused part is attempted and reported done); an answer is read from the same call of
  its own trajectory the reference read it from.
* ``no_lookup`` — reads nothing. It makes only the reference's writes whose every argument the
  request spells out (it cannot know an id it never looked up), complies with everything, and
  answers only with a value the request itself contains.

:func:`play` returns, per baseline, whether it *failed* (scored below 1.0) — a task a greedy agent
solves has no headroom for judgement. ``agentworld stats`` reports the failure rates and how they
relate to the difficulty number.
"""

from __future__ import annotations

from typing import Any

from .factors import reached, tool_writes

BASELINES = ("greedy", "no_lookup")


def _is_refusal(task: dict[str, Any]) -> bool:
    return any((c["type"] == "answer" and c.get("mode") == "refusal")
               or (c["type"] == "python" and (c.get("args") or {}).get("refuse_statuses")) for c in task["checks"])


def _answer(task: dict[str, Any]) -> Any:
    last = task["solution"][-1] if task["solution"] else {}
    return last.get("arguments", {}).get("answer") if last.get("name") == "submit" else None


def _row_keys(row: dict[str, Any]) -> set[Any]:
    """The values that identify a listed row in a later call: its id and its longer text fields."""
    keys: set[Any] = {("id", row.get("id"))}
    keys |= {("text", v) for v in row.values() if isinstance(v, str) and len(v) >= 4}
    return keys


def _target(step: dict[str, Any], listing: list[dict[str, Any]], key_param: str | None) -> int | None:
    """Which row of ``listing`` a write acts on (its index), or None."""
    args = step["arguments"]
    for i, row in enumerate(listing):
        if key_param and args.get(key_param) == row.get("id"):
            return i
        if any(("text", v) in _row_keys(row) for v in args.values() if isinstance(v, str)):
            return i
    return None


def _retarget(step: dict[str, Any], old: dict[str, Any], new: dict[str, Any], key_param: str | None) -> dict[str, Any]:
    args = dict(step["arguments"])
    for k, v in args.items():
        if k == key_param and v == old.get("id"):
            args[k] = new.get("id")
        elif isinstance(v, str):
            for col, ov in old.items():
                if ov == v and isinstance(new.get(col), str):
                    args[k] = new[col]
    return {"name": step["name"], "arguments": args}


def greedy_steps(runner, task: dict[str, Any], results: list[Any]) -> list[dict[str, Any]]:
    """The greedy agent's calls, from the reference's calls and their ``results``."""
    body = [s for s in task["solution"] if s["name"] != "submit"]
    spec_tools = {t["name"]: t for t in runner.spec["tools"]}
    tables = [t["name"] for t in runner.spec["tables"]]
    listings: list[tuple[int, list[dict[str, Any]]]] = []
    picks: dict[int, list[tuple[int, int]]] = {}        # listing index -> [(step index, row index)]
    for i, (step, res) in enumerate(zip(body, results)):
        tool = spec_tools.get(step["name"])
        if tool is None:
            continue
        what, _ = reached(tool, step["arguments"], res, tables)
        if what == "many" and isinstance(res, dict) and len(res.get("results", [])) > 1:
            listings.append((i, [r for r in res["results"] if isinstance(r, dict)]))
        elif tool_writes(tool) and listings:
            key = (tool["impl"].get("key") or {}).get("param")
            for li in range(len(listings) - 1, -1, -1):
                row = _target(step, listings[li][1], key)
                if row is not None:
                    picks.setdefault(li, []).append((i, row))
                    break
    out: list[dict[str, Any]] = []
    replaced: dict[int, list[dict[str, Any]]] = {}
    for li, chosen in picks.items():
        rows = listings[li][1]
        first_step, first_row = chosen[0]
        key = (spec_tools[body[first_step]["name"]]["impl"].get("key") or {}).get("param")
        template = body[first_step]
        if len(chosen) == 1:
            replaced[first_step] = [_retarget(template, rows[first_row], rows[0], key)]
        else:   # several picked: the greedy agent acts on every listed record
            replaced[first_step] = [_retarget(template, rows[first_row], r, key) for r in rows]
            for i, _ in chosen[1:]:
                replaced[i] = []
    for i, step in enumerate(body):
        out += replaced.get(i, [step])
    # A refused request is not attempted here: the tools enforce the policy, so an attempt changes nothing;
    # what fails the greedy agent is its report ("Done.") instead of the refusal and its reason.
    return out


def _read_answer(runner, task: dict[str, Any], steps: list[dict[str, Any]], ref: list[Any]) -> Any:
    """The reference's answer if it is read off one call's result: the same field of the same call here."""
    answer = _answer(task)
    if answer is None or _is_refusal(task):
        return "Done." if _is_refusal(task) else None
    if not any(isinstance(r, dict) and str(r.get("value", r.get("total"))) == str(answer) for r in ref):
        return answer
    mine = runner.run(None, steps).results
    text = str(answer)
    for i in range(len(ref) - 1, -1, -1):
        res = ref[i]
        if not isinstance(res, dict):
            continue
        for field in ("value", "total"):
            if field in res and str(res[field]) == text and i < len(mine) and isinstance(mine[i], dict) and field in mine[i]:
                return str(mine[i][field])
    return answer


def play(runner, task: dict[str, Any], results: list[Any] | None = None) -> dict[str, bool]:
    """Per baseline, whether it fails ``task`` (scores below 1.0). ``results``: the reference's call results."""
    body = [s for s in task["solution"] if s["name"] != "submit"]
    if results is None:
        results = runner.run(None, body).results
    greedy = greedy_steps(runner, task, results)
    g_answer = _read_answer(runner, task, greedy, results)
    g = runner.run(task, greedy + [{"name": "submit", "arguments": {} if g_answer is None else {"answer": g_answer}}])
    said = task["instruction"]
    spec_tools = {t["name"]: t for t in runner.spec["tools"]}
    blind = [s for s in task["solution"] if s["name"] in spec_tools and tool_writes(spec_tools[s["name"]])
             and all(str(v) in said for v in s["arguments"].values())]
    answer = _answer(task)
    n_answer = "Done." if _is_refusal(task) else (answer if answer is not None and str(answer) in said else None)
    n = runner.run(task, blind + [{"name": "submit", "arguments": {} if n_answer is None else {"answer": n_answer}}])
    return {"greedy": g.score < 1.0, "no_lookup": n.score < 1.0}
