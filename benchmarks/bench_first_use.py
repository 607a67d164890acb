"""Import time and first use: ``import agentworld_envs`` vs ``import gymnasium``, then the first
``gym.make`` + ``reset`` of an env in a fresh process, with a warm cache.

    python benchmarks/bench_first_use.py [--runs 15] [ENV_ID ...]   # default: retail-v0 + one synthesised env

Each run is a new interpreter. Reported per env (p50 / p90 over runs):

* ``import gymnasium`` and ``import agentworld_envs`` on top of it (registers every id);
* ``engine import``: the engine modules the first ``make`` loads (agentworld_envs.env and friends);
* ``first make+reset``: ``gym.make(id)`` + ``reset(seed=0)`` once the engine is imported, i.e. the
  per-env cost: read the integrity-checked bundle, parse its header and tool schemas, pick the
  task; wall time and this process's CPU time (on a shared box the CPU time is the steadier figure);
* ``first step``: the first action of that task's reference solution. An instance copies the
  golden database into its private in-memory copy on its first step (not in reset), and SQLite
  parses the copy's schema on its first query, so this is where those costs show; then
  ``make+reset+first step``, the whole first use.
  Per-process work every first ``make`` needs (the code fingerprint that keys bundles, the
  manifest's name index, the text spaces' charset tables) runs while the engine is imported and
  is counted in ``engine import``.

The env is made once beforehand so its cache artefacts exist (warm cache). Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CHILD = r"""
import sys, time
t0 = time.perf_counter()
import gymnasium as gym
t1 = time.perf_counter()
import agentworld_envs
t2 = time.perf_counter()
import agentworld_envs.env
t3 = time.perf_counter()
c3 = time.process_time()
env = gym.make(sys.argv[1]); env.reset(seed=0)
t4 = time.perf_counter()
c4 = time.process_time()
action = env.unwrapped.solution_actions()[0]
t5 = time.perf_counter()
env.step(action)
t6 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3, c4 - c3, t6 - t5, (t4 - t3) + (t6 - t5))
"""

DEFAULT = ["agentworld/retail-v0", "agentworld/appliance-spare-parts-shop-v0"]


def _q(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("env_ids", nargs="*", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    env = dict(os.environ)
    for env_id in args.env_ids:
        subprocess.run([sys.executable, "-c", CHILD, env_id], check=True, env=env, capture_output=True)  # warm
        cols: list[list[float]] = [[], [], [], [], [], [], []]
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", CHILD, env_id], check=True, env=env, capture_output=True,
                                 text=True).stdout.split()
            for c, v in zip(cols, out):
                c.append(float(v) * 1e3)
        gym_ms, aw_ms, engine_ms, first_ms, first_cpu_ms, step_ms, use_ms = cols
        ratio = [(g + a) / g for g, a in zip(gym_ms, aw_ms)]
        print(f"{env_id}  ({args.runs} fresh processes, PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
        for label, xs in (("import gymnasium", gym_ms), ("+ import agentworld_envs", aw_ms),
                          ("engine import (first make)", engine_ms), ("first make+reset", first_ms),
                          ("first make+reset CPU time", first_cpu_ms), ("first step", step_ms),
                          ("make+reset+first step", use_ms)):
            print(f"  {label:<28} p50 {_q(xs, 0.5):8.2f} ms   p90 {_q(xs, 0.9):8.2f} ms")
        print(f"  {'import ratio (aw+gym)/gym':<28} p50 {statistics.median(ratio):8.2f}x")


if __name__ == "__main__":
    main()
