"""Memory and speed of the benchmark envs (agentworld_envs.external) over many consecutive episodes.

BFCL keeps its instances in module globals; each episode must release its own. This plays N
consecutive episodes (reference trajectories, cycling through the entries of every category in
turn, one env per category) and prints the process's resident memory and BFCL's global count
every ``--every`` episodes, plus the per-episode time; with ``--tau2`` also τ² episodes.

    python benchmarks/bench_external.py --episodes 800            # BFCL, all four categories
    python benchmarks/bench_external.py --episodes 60 --tau2      # τ² retail, airline, telecom
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import gymnasium as gym
import psutil

import agentworld_envs  # noqa: F401
from agentworld_envs.external import SUITES


def run(env_ids: list[str], episodes: int, every: int) -> dict:
    envs = {i: gym.make(i) for i in env_ids}
    proc = psutil.Process()
    rows, t0 = [], time.perf_counter()
    rewards = 0.0
    g = None
    if any("bfcl" in i for i in env_ids):
        from agentworld_envs.external.bfcl import bfcl
        g = bfcl()["globals"]
    for n in range(episodes):
        env_id = env_ids[n % len(env_ids)]
        env = envs[env_id]
        ids = env.unwrapped.task_ids
        env.reset(options={"task_id": ids[(n // len(env_ids)) % len(ids)]})
        reward = 0.0
        for action in env.unwrapped.solution_actions():
            _, reward, term, trunc, _ = env.step(action)
            if term or trunc:
                break
        rewards += reward
        if (n + 1) % every == 0 or n == 0:
            gc.collect()
            rows.append({"episodes": n + 1, "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                         "bfcl_globals": len(g) if g is not None else None,
                         "seconds": round(time.perf_counter() - t0, 1)})
            print(json.dumps(rows[-1]), flush=True)
    for env in envs.values():
        env.close()
    elapsed = time.perf_counter() - t0
    return {"episodes": episodes, "reward_mean": rewards / episodes, "ms_per_episode": round(1000 * elapsed / episodes, 1),
            "rss_mb_first": rows[0]["rss_mb"], "rss_mb_last": rows[-1]["rss_mb"],
            "rss_mb_growth_after_first_pass": round(rows[-1]["rss_mb"] - rows[min(len(rows) - 1, 1)]["rss_mb"], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=800)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--tau2", action="store_true", help="τ² envs instead of BFCL")
    args = ap.parse_args()
    summary = run(SUITES["tau2" if args.tau2 else "bfcl"], args.episodes, args.every)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
