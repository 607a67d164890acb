"""Mechanical probe of task headroom (issue 23), independent of the task generator.

    python scripts/probe_tasks.py --sample 40 --seed 7            # a sample of synthesised envs (+ retail)
    python scripts/probe_tasks.py retail wine-club-subscriptions   # named envs
    python scripts/probe_tasks.py --sample 40 --json               # the numbers as one JSON object

It builds (or loads) each environment, replays every task's reference on the golden state and
measures, from the tool calls and their results only (never the generator's knobs):

* **loop-back chains** — the records a reference reaches by reads before its first write (a
  get's row, a search's single result), consecutive repeats collapsed: a chain loops back when
  a record comes up again after another one; a task is *multi-hop* when it reaches two or more;
* **announced traps** — a task whose verifier expects a refusal (a refusal answer check, or a
  program check with refused statuses) and whose instruction names the blocking value: a
  refused status, or every non-identifying word of one of the refusal check's reasons;
* **reference length** — tool calls before ``submit``; its median in the top third of tasks by
  difficulty, in the hard tier (``tags`` holds ``hard``), and its Pearson correlation with the
  difficulty number;
* **skeleton repetition** — instructions with values masked (figures, codes, e-mails, quoted
  text, enum values, the names and labels of the env's records, greetings and thanks): the
  largest share one skeleton holds among an env's tasks;
* **filler** — chatty openers ("Quick request:", "Several requests:", "Add up the … over the");
* **dead knobs** — tasks claiming ``obscure_tools`` (the env shows the same tool names).

Targets (issue 23): loop-back <= 2 % of multi-hop tasks, announced traps <= 10 %, top-third median
reference >= 6 calls, hard tier >= 8, correlation >= 0.5, every env >= 10 tasks.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from collections import Counter
from typing import Any

import env_registry

FILLER = re.compile(r"quick request|several requests|add up the .{1,40} over the", re.I)
GREETING = re.compile(r"^(hi|hello|hey|hey there|good morning|good afternoon|morning)[,!.]?\s+", re.I)
THANKS = re.compile(r"\s*(thanks( in advance)?|thank you|appreciate it|cheers)[.!]?\s*$", re.I)
WRITE_KINDS = {"create", "update", "delete", "transition"}


def pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sx = sum((x - mx) ** 2 for x in xs) ** 0.5
    sy = sum((y - my) ** 2 for y in ys) ** 0.5
    if not sx or not sy:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy)


def norm(text: str) -> str:
    return " " + re.sub(r"[^a-z0-9@.\-]+", " ", str(text).casefold().replace("_", " ")).strip() + " "


def says(instruction: str, value: Any) -> bool:
    v = norm(value).strip()
    return bool(v) and f" {v} " in norm(instruction)


# ------------------------------------------------------------------------------ records a call reaches


def _python_table(tool: dict[str, Any], tables: list[str]) -> str | None:
    words = tool["name"].split("_")
    for t in tables:
        stem = t[:-1] if t.endswith("s") else t
        if stem in words or t in words:
            return t
    return None


def reached(tool: dict[str, Any], args: dict[str, Any], result: Any, tables: list[str]) -> tuple[str, Any]:
    """("one", (table, id)) for a single record read, ("write", (table, id)) for a write, ("many"|"none", None)."""
    impl = tool["impl"]
    kind = impl["kind"]
    if isinstance(result, dict) and set(result) <= {"error", "message"} and "error" in result:
        return "none", None
    table = impl.get("table") if kind != "python" else _python_table(tool, tables)
    writes = kind in WRITE_KINDS or (kind == "python" and "read" not in tool.get("tags", []))
    if writes:
        if kind == "create" and isinstance(result, dict) and isinstance(result.get("created"), dict):
            return "write", (table, result["created"].get("id"))
        key = (impl.get("key") or {}).get("param")
        if key and key in args:
            return "write", (table, args[key])
        if isinstance(result, dict) and "id" in result:
            return "write", (table, result["id"])
        return "write", (table, None)
    if isinstance(result, dict) and isinstance(result.get("results"), list):
        rows = result["results"]
        if len(rows) == 1 and isinstance(rows[0], dict) and "id" in rows[0]:
            return "one", (table, rows[0]["id"])
        return "many", None
    if isinstance(result, dict) and "id" in result and kind in ("get", "python"):
        return "one", (table, result["id"])
    return "none", None


def read_path(spec: dict[str, Any], solution: list[dict[str, Any]], results: list[Any]) -> list[tuple[str, Any]]:
    tools = {t["name"]: t for t in spec["tools"]}
    tables = [t["name"] for t in spec["tables"]]
    path: list[tuple[str, Any]] = []
    for step, res in zip(solution, results):
        if step["name"] not in tools:
            continue
        what, rec = reached(tools[step["name"]], step["arguments"], res, tables)
        if what == "write":
            break
        if what == "one" and (not path or path[-1] != rec):
            path.append(rec)
    return path


def loops_back(path: list[tuple[str, Any]]) -> bool:
    return len(set(path)) < len(path)


# ------------------------------------------------------------------------------ traps


def blocking_values(task: dict[str, Any], labels: set[str] = frozenset()) -> list[list[str]]:
    """The value groups whose mention would announce a trap (empty: not a trap). A reason that cites a
    record's label (a code, an e-mail: how the request names the record) is not a blocking value."""
    groups: list[list[str]] = []
    for c in task["checks"]:
        if c["type"] == "python" and (c.get("args") or {}).get("refuse_statuses"):
            groups += [[s] for s in c["args"]["refuse_statuses"]]
        if c["type"] == "answer" and c.get("mode") == "refusal":
            about = {norm(a).strip() for a in c.get("about", [])}
            for reason in c.get("reasons", []):
                if any(str(x) in labels for x in reason):
                    continue
                words = [str(x) for x in reason if norm(x).strip() not in about]
                if words:
                    groups.append(words)
    return groups


def is_trap(task: dict[str, Any]) -> bool:
    return bool(blocking_values(task)) or any(c["type"] == "answer" and c.get("mode") == "refusal" for c in task["checks"])


def announced(task: dict[str, Any], labels: set[str] = frozenset()) -> bool:
    return any(all(says(task["instruction"], w) for w in group) for group in blocking_values(task, labels))


# ------------------------------------------------------------------------------ skeletons


def mask_values(spec: dict[str, Any], conn) -> list[str]:
    out: set[str] = set()
    for t in spec["tables"]:
        for c in t["columns"]:
            for v in c.get("enum") or []:
                out.add(str(v))
                out.add(str(v).replace("_", " "))
            name = c["name"]
            if c["type"] == "TEXT" and (c.get("unique") or any(k in name for k in ("name", "title", "label", "code",
                                                                                     "city", "brand", "options"))):
                for (v,) in conn.execute(f'SELECT DISTINCT "{name}" FROM "{t["name"]}" WHERE "{name}" IS NOT NULL LIMIT 4000'):
                    if isinstance(v, str) and len(v) >= 3:
                        out.add(v)
    return sorted(out, key=len, reverse=True)


def skeleton(text: str, values: list[str]) -> str:
    s = text.strip()
    s = GREETING.sub("", s)
    s = THANKS.sub("", s)
    s = re.sub(r"\"[^\"]*\"|'[^']*'", " Q ", s)
    for v in values:
        if v in s:
            s = s.replace(v, " V ")
    s = re.sub(r"\S*[\d@#]\S*", " N ", s)
    return re.sub(r"\s+", " ", s).strip().casefold()


# ------------------------------------------------------------------------------ driver


def probe_env(name: str) -> dict[str, Any]:
    from agentworld_envs.catalogue import catalog
    from agentworld_envs.tasks.runner import Runner

    bundle = catalog.load_bundle(name)
    spec, tasks = bundle.spec, bundle.tasks
    runner = Runner(spec, bundle.golden, bundle.tools)
    values = mask_values(spec, runner.initial)
    labels = {v for t in spec["tables"] for c in t["columns"] if c.get("unique") and c["type"] == "TEXT"
              for (v,) in runner.initial.execute(f'SELECT "{c["name"]}" FROM "{t["name"]}"') if isinstance(v, str)}
    rows = []
    try:
        for t in tasks:
            body = [s for s in t["solution"] if s["name"] != "submit"]
            out = runner.run(None, body)
            path = read_path(spec, body, out.results)
            rows.append({"id": t["id"], "calls": len(body), "difficulty": float(t.get("difficulty") or 0),
                         "multi_hop": len(set(path)) >= 2, "loop_back": loops_back(path), "trap": is_trap(t),
                         "announced": is_trap(t) and announced(t, labels), "hard": "hard" in (t.get("tags") or []),
                         "filler": bool(FILLER.search(t["instruction"])),
                         "obscure_knob": bool((t.get("knobs") or {}).get("obscure_tools")),
                         "skeleton": skeleton(t["instruction"], values), "instruction": t["instruction"]})
    finally:
        runner.close()
    sk = Counter(r["skeleton"] for r in rows)
    top = sk.most_common(1)[0] if sk else ("", 0)
    return {"env": name, "tasks": rows, "skeleton_max_share": top[1] / max(1, len(rows)), "skeleton_top": top[0]}


def summarise(envs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [r for e in envs for r in e["tasks"]]
    multi = [r for r in rows if r["multi_hop"]]
    traps = [r for r in rows if r["trap"]]
    by_diff = sorted(rows, key=lambda r: r["difficulty"])
    top = by_diff[len(by_diff) - len(by_diff) // 3:] if rows else []
    hard = [r for r in rows if r["hard"]]
    corr = pearson([r["difficulty"] for r in rows], [r["calls"] for r in rows])
    per_env_top = []
    for e in envs:
        ts = sorted(e["tasks"], key=lambda r: r["difficulty"])
        t3 = ts[len(ts) - max(1, len(ts) // 3):]
        per_env_top.append(statistics.median(r["calls"] for r in t3))
    shares = [e["skeleton_max_share"] for e in envs]
    return {
        "envs": len(envs), "tasks": len(rows),
        "tasks_min_per_env": min((len(e["tasks"]) for e in envs), default=0),
        "multi_hop": len(multi), "loop_back": sum(r["loop_back"] for r in multi),
        "loop_back_rate": round(sum(r["loop_back"] for r in multi) / max(1, len(multi)), 4),
        "traps": len(traps), "traps_announced": sum(r["announced"] for r in traps),
        "announced_rate": round(sum(r["announced"] for r in traps) / max(1, len(traps)), 4),
        "median_calls": statistics.median(r["calls"] for r in rows) if rows else 0,
        "top_third_median_calls": statistics.median(r["calls"] for r in top) if top else 0,
        "top_third_one_call": sum(r["calls"] <= 1 for r in top),
        "per_env_top_third_median_calls_min": min(per_env_top, default=0),
        "hard_tasks": len(hard), "envs_with_hard": sum(any(r["hard"] for r in e["tasks"]) for e in envs),
        "hard_median_calls": statistics.median(r["calls"] for r in hard) if hard else 0,
        "hard_min_calls": min((r["calls"] for r in hard), default=0),
        "difficulty_vs_calls_pearson": round(corr, 3) if corr is not None else None,
        "skeleton_max_share_max": round(max(shares, default=0), 3),
        "skeleton_max_share_median": round(statistics.median(shares), 3) if shares else 0,
        "envs_skeleton_over_25pct": sum(s > 0.25 for s in shares),
        "filler": sum(r["filler"] for r in rows), "obscure_knobs": sum(r["obscure_knob"] for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--sample", type=int, default=0, help="also probe N synthesised envs drawn with --seed")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-retail", action="store_true", help="leave the hand-built retail env out of a sample")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--examples", type=int, default=0, help="print N examples of each finding")
    args = ap.parse_args(argv)
    names = [env_registry.entry(n)["name"] for n in args.names]
    if args.sample:
        pool = [e["name"] for e in env_registry.manifest() if e["source"] == "synth"]
        names += random.Random(args.seed).sample(pool, min(args.sample, len(pool)))
        if not args.no_retail:
            names.append("retail")
    names = list(dict.fromkeys(names))
    if not names:
        ap.error("name environments or use --sample N")
    envs = []
    for n in names:
        try:
            envs.append(probe_env(n))
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"{n}: {type(exc).__name__}: {exc}", file=sys.stderr)
    result = summarise(envs)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:40s} {v}")
    if args.examples:
        for what in ("loop_back", "announced", "filler"):
            hits = [(e["env"], r) for e in envs for r in e["tasks"] if r[what]]
            for env, r in hits[: args.examples]:
                print(f"[{what}] {env} {r['id']}: {r['instruction']}")
        worst = sorted(envs, key=lambda e: -e["skeleton_max_share"])[: args.examples]
        for e in worst:
            print(f"[skeleton] {e['env']} {e['skeleton_max_share']:.2f}: {e['skeleton_top']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
