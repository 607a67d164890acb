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

from .factors import tool_writes

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


def _listings(body: list[dict[str, Any]], results: list[Any], spec_tools: dict[str, Any],
              tables: list[str]) -> dict[int, list[dict[str, Any]]]:
    """Step index -> the rows of every multi-row listing the reference's calls returned."""
    out = {}
    for i, (step, res) in enumerate(zip(body, results)):
        tool = spec_tools.get(step["name"])
        if tool is not None and not tool_writes(tool) and isinstance(res, dict) and len(res.get("results") or []) > 1:
            out[i] = [r for r in res["results"] if isinstance(r, dict)]
    return out


def _source(i: int, step: dict[str, Any], listings: dict[int, list[dict[str, Any]]], key: str | None,
            value_match: bool) -> tuple[int, int] | None:
    """(listing step, row index) the reference took this step's record from: the latest listing that holds it."""
    for j in sorted((j for j in listings if j < i), reverse=True):
        rows = listings[j]
        row = _target(step, rows, key)
        if row is None and value_match:
            row = next((n for n, r in enumerate(rows) for v in step["arguments"].values()
                        if not isinstance(v, (bool, list, dict)) and v is not None and n > 0
                        and any(c != "id" and r.get(c) == v and rows[0].get(c) != v for c in r)), None)
        if row is not None:
            return j, row
    return None


def greedy_play(runner, task: dict[str, Any], results: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Play the greedy agent live: the reference's calls, but every record picked out of a listing is the
    first one listed (every one listed where the reference picked several), and what it read that way
    flows into its later calls. Returns (its calls, the result of its call standing for each reference step)."""
    body = [s for s in task["solution"] if s["name"] != "submit"]
    spec_tools = {t["name"]: t for t in runner.spec["tools"]}
    tables = [t["name"] for t in runner.spec["tables"]]
    listings = _listings(body, results, spec_tools, tables)
    picks: dict[int, int] = {}
    for i, step in enumerate(body):
        tool = spec_tools.get(step["name"])
        if tool is not None and tool_writes(tool):
            src = _source(i, step, listings, (tool["impl"].get("key") or {}).get("param"), False)
            if src:
                picks[src[0]] = picks.get(src[0], 0) + 1
    steps: list[dict[str, Any]] = []
    mine: list[Any] = []
    mapping: dict[Any, Any] = {}
    acted: set[int] = set()
    runner.drop_prefix()
    runner.conn.execute("SAVEPOINT greedy")
    try:
        _greedy_loop(runner, body, spec_tools, listings, picks, steps, mine, mapping, acted)
    finally:
        runner.conn.execute("ROLLBACK TO greedy")
        runner.conn.execute("RELEASE greedy")
    return steps, mine


def _greedy_loop(runner, body, spec_tools, listings, picks, steps, mine, mapping, acted) -> None:
    for i, step in enumerate(body):
        tool = spec_tools.get(step["name"])
        args = {k: mapping.get(v, v) if isinstance(v, (str, int, float)) else v for k, v in step["arguments"].items()}
        step = {"name": step["name"], "arguments": args}
        emitted = [step]
        if tool is not None:
            writes = tool_writes(tool)
            key = (tool["impl"].get("key") or {}).get("param")
            src = _source(i, step, listings, key, not writes)
            if src is not None:
                j, row = src
                ref_row = listings[j][row]
                own = mine[j].get("results") if j < len(mine) and isinstance(mine[j], dict) else None
                own = [r for r in own or [] if isinstance(r, dict)]
                if not own:
                    emitted = [step]
                elif writes and picks.get(j, 0) > 1:
                    emitted = [] if j in acted else [_retarget(step, ref_row, r, key) for r in own]
                    acted.add(j)
                else:
                    emitted = [_retarget(step, ref_row, own[0], key)]
                    if not writes:
                        for k, v in step["arguments"].items():
                            if isinstance(v, (str, int, float)) and emitted[0]["arguments"].get(k) != v:
                                mapping[v] = emitted[0]["arguments"][k]
        steps += emitted
        out = [r for e in emitted for c in runner.act(e).calls
               for r in [c.result if not c.error else {"error": c.error, "message": c.message}]]
        mine.append(out[-1] if out else None)


def _read_answer(task: dict[str, Any], ref: list[Any], mine: list[Any]) -> Any:
    """The reference's answer if it is read off one call's result: the same field of the same call here."""
    answer = _answer(task)
    if answer is None or _is_refusal(task):
        return "Done." if _is_refusal(task) else None
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
    greedy, mine = greedy_play(runner, task, results)
    g_answer = _read_answer(task, results, mine)
    g = runner.run(task, greedy + [{"name": "submit", "arguments": {} if g_answer is None else {"answer": g_answer}}])
    said = task["instruction"]
    spec_tools = {t["name"]: t for t in runner.spec["tools"]}
    blind = [s for s in task["solution"] if s["name"] in spec_tools and tool_writes(spec_tools[s["name"]])
             and all(str(v) in said for v in s["arguments"].values())]
    answer = _answer(task)
    n_answer = "Done." if _is_refusal(task) else (answer if answer is not None and str(answer) in said else None)
    n = runner.run(task, blind + [{"name": "submit", "arguments": {} if n_answer is None else {"answer": n_answer}}])
    return {"greedy": g.score < 1.0, "no_lookup": n.score < 1.0}
