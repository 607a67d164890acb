"""Success rate of greedy rollouts, per env, for before/after comparisons."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Sequence

from .rollout import Episode, RolloutEngine


def evaluate(engine: RolloutEngine, pairs: Sequence[dict], seed: int = 0) -> dict:
    """One greedy episode per (env, task), in chunks that fit the vector env. Returns a summary dict."""
    t0 = time.time()
    episodes: list[Episode] = []
    n = engine.vec_env.num_slots
    for start in range(0, len(pairs), n):
        episodes += engine.collect(pairs[start:start + n], group_size=1, seed=seed + start, greedy=True)
    per_env: dict[str, list[Episode]] = defaultdict(list)
    for ep in episodes:
        per_env[ep.env_id].append(ep)
    rows = {env: {"episodes": len(eps), "success_rate": sum(e.success for e in eps) / len(eps),
                  "reward_mean": sum(e.reward for e in eps) / len(eps),
                  "turns_mean": sum(e.turns for e in eps) / len(eps)}
            for env, eps in sorted(per_env.items())}
    total = max(len(episodes), 1)
    return {"episodes": len(episodes), "success_rate": sum(e.success for e in episodes) / total,
            "reward_mean": sum(e.reward for e in episodes) / total, "per_env": rows, "seconds": time.time() - t0}


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
