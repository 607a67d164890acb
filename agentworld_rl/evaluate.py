"""Greedy evaluation of suites of (env, task) pairs, sharded across processes, with 95 % intervals.

Each process plays every ``world``-th pair of a suite (one greedy episode each) and the
records are gathered, so every process ends with the whole result and an evaluation costs
``1 / world`` of the single-process time. Results keep one record per task, so two
evaluations of the same tasks (after SFT, after GRPO) can be compared pair by pair.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Sequence

from .distributed import Dist
from .rollout import RolloutEngine
from .stats import paired_gain, wilson


def evaluate(engine: RolloutEngine, pairs: Sequence[dict], seed: int = 0, dist: Dist | None = None,
             batch_size: int | None = None) -> dict:
    """One greedy episode per (env, task); returns a summary dict (rate, 95 % interval, per env, per task)."""
    dist = dist or Dist()
    t0 = time.time()
    indexed = list(enumerate(pairs))
    mine = dist.shard(indexed)
    n = min(engine.vec_env.num_slots, batch_size or engine.vec_env.num_slots)
    records = []
    for start in range(0, len(mine), n):
        chunk = mine[start:start + n]
        # Env seeds follow the pair's index in the suite, so sharding never changes an episode.
        for (index, _), ep in zip(chunk, _collect_each(engine, chunk, seed)):
            records.append({"index": index, "env_id": ep.env_id, "task_id": ep.task_id, "success": bool(ep.success),
                            "reward": float(ep.reward), "turns": ep.turns, "truncated": bool(ep.truncated),
                            "tool_errors": sum(ep.tool_errors.values()),
                            "context_overflow": bool(ep.context_overflow)})
    records = sorted((r for part in dist.gather(records) for r in part), key=lambda r: r["index"])
    return summarise(records, time.time() - t0)


def _collect_each(engine: RolloutEngine, chunk, seed: int):
    """Greedy episodes of ``chunk`` (``(index, pair)``), each env seeded by its pair's index."""
    tasks = [{**pair, "seed": seed * 100_003 + index} for index, pair in chunk]
    return engine.collect(tasks, group_size=1, seed=seed, greedy=True)


def summarise(records: list[dict], seconds: float = 0.0) -> dict:
    per_env: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        per_env[r["env_id"]].append(r)
    rows = {env: {"episodes": len(rs), "success_rate": sum(r["success"] for r in rs) / len(rs),
                  "reward_mean": sum(r["reward"] for r in rs) / len(rs),
                  "turns_mean": sum(r["turns"] for r in rs) / len(rs)}
            for env, rs in sorted(per_env.items())}
    n = len(records)
    k = sum(r["success"] for r in records)
    lo, hi = wilson(k, n)
    return {"episodes": n, "successes": k, "success_rate": k / max(n, 1), "ci95": [lo, hi],
            "reward_mean": sum(r["reward"] for r in records) / max(n, 1), "per_env": rows,
            "tasks": {f"{r['env_id']}::{r['task_id']}": r["success"] for r in records}, "seconds": seconds,
            # episodes stopped because the prompt left no room for a turn (e.g. long benchmark prompts)
            "context_overflows": sum(bool(r.get("context_overflow")) for r in records)}


def gain(before: dict, after: dict) -> tuple[float, float, float] | None:
    """Paired success gain ``after - before`` over the tasks both evaluated, with its 95 % interval."""
    a, b = before.get("tasks") or {}, after.get("tasks") or {}
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return paired_gain([float(a[t]) for t in common], [float(b[t]) for t in common])


def describe(ev: dict) -> str:
    """``"7/48 = 0.146 (95 % CI 0.072-0.272)"``."""
    lo, hi = ev.get("ci95", (0.0, 1.0))
    return f"{ev['successes']}/{ev['episodes']} = {ev['success_rate']:.3f} (95 % CI {lo:.3f}-{hi:.3f})"


def suites_markdown(stages: list[tuple[str, dict[str, dict]]]) -> str:
    """One row per evaluation suite: success at each stage with its interval, and the last stage's
    paired gain over the one before it. ``stages`` is ``[(stage name, {suite name: result})]``."""
    suites = [s for s in dict.fromkeys(name for _, evs in stages for name in evs)]
    stages = [(name, evs) for name, evs in stages if evs]
    if not suites or not stages:
        return ""
    head = " | ".join(f"success {name}" for name, _ in stages)
    lines = ["## Evaluation suites", "",
             "Greedy decoding, one episode per task; success with its 95 % Wilson interval. The gain is the last "
             "stage's over the one before it on the same tasks (paired), with its 95 % interval.", "",
             f"| suite | tasks | {head} | gain |", "|---|---:|" + "---|" * len(stages) + "---|"]
    for suite in suites:
        cells, n = [], "-"
        for _, evs in stages:
            ev = evs.get(suite)
            cells.append(describe(ev) if ev else "-")
            n = ev["episodes"] if ev else n
        g = None
        if len(stages) >= 2 and suite in stages[-1][1] and suite in stages[-2][1]:
            g = gain(stages[-2][1][suite], stages[-1][1][suite])
        gtxt = f"{g[0]:+.3f} ({g[1]:+.3f} to {g[2]:+.3f})" if g else "-"
        lines.append(f"| {suite} | {n} | " + " | ".join(cells) + f" | {gtxt} |")
    return "\n".join(lines) + "\n"


def report_markdown(columns: list[tuple[str, dict | None]], title: str = "Held-out evaluation") -> str:
    """Markdown table of success/reward per env for each labelled eval (e.g. base, after SFT, after GRPO)."""
    columns = [(name, ev) for name, ev in columns if ev is not None]
    head = " | ".join(f"success {n}" for n, _ in columns) + " | " + " | ".join(f"reward {n}" for n, _ in columns)
    lines = [f"## {title}", "", "Greedy decoding, one episode per (env, task).", "",
             f"| env | episodes | {head} |", "|---|---:|" + "---:|" * (2 * len(columns))]
    envs = sorted(set().union(*(ev["per_env"] for _, ev in columns)))
    for env in envs + ["**all**"]:
        row = [ev if env == "**all**" else ev["per_env"].get(env, {}) for _, ev in columns]

        def fmt(d, k):
            return f"{d[k]:.3f}" if k in d else "-"
        n = next((d["episodes"] for d in row if "episodes" in d), "-")
        cells = [fmt(d, "success_rate") for d in row] + [fmt(d, "reward_mean") for d in row]
        lines.append(f"| {env} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
