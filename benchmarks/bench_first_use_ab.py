"""First use of one env id in two checkouts, measured in alternating fresh processes.

    git worktree add /tmp/base <commit>
    python benchmarks/bench_first_use_ab.py agentworld/retail-v0 base=/tmp/base:/tmp/cache-base new=.:/tmp/cache-new

Each side is ``NAME=CHECKOUT:CACHE``: its processes run in the checkout (``python -c`` puts the
working directory first on ``sys.path``, ahead of an editable install), and the cache
is the ``AGENTWORLD_CACHE`` that side uses (keep them apart: each checkout has its own bundle
keys). This VM's speed drifts by tens of percent from minute to minute, so comparing two runs
of ``bench_first_use.py`` taken minutes apart misleads; here the sides take turns, process by
process. Per side it prints the p50 of ``gym.make`` + ``reset(seed=0)``, of the first step (the
first action of that task's reference solution), and of their sum. Each side runs once first so
its cache is warm. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CHILD = r"""
import sys, time
import gymnasium as gym
import agentworld_envs, agentworld_envs.env
t0 = time.perf_counter()
env = gym.make(sys.argv[1]); env.reset(seed=0)
t1 = time.perf_counter()
action = env.unwrapped.solution_actions()[0]
t2 = time.perf_counter()
env.step(action)
t3 = time.perf_counter()
print(t1 - t0, t3 - t2)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("env_id")
    ap.add_argument("sides", nargs=2, metavar="NAME=CHECKOUT:CACHE")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    sides = []
    for arg in args.sides:
        name, _, rest = arg.partition("=")
        checkout, _, cache = rest.rpartition(":")
        if not name or not checkout or not cache:
            ap.error(f"{arg!r}: expected NAME=CHECKOUT:CACHE")
        if not os.path.isdir(os.path.join(checkout, "agentworld_envs")):
            ap.error(f"{checkout!r} is not an agentworld checkout")
        env = dict(os.environ, AGENTWORLD_CACHE=cache, PYTHONPATH=os.path.abspath(checkout))
        sides.append((name, env, os.path.abspath(checkout)))
    for _, env, cwd in sides:  # warm each side's cache
        subprocess.run([sys.executable, "-c", CHILD, args.env_id], env=env, cwd=cwd, check=True, capture_output=True)
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, _, _ in sides}
    for i in range(args.runs):
        for name, env, cwd in sides if i % 2 == 0 else sides[::-1]:
            out = subprocess.run([sys.executable, "-c", CHILD, args.env_id], env=env, cwd=cwd, check=True,
                                 capture_output=True, text=True).stdout.split()
            samples[name][0].append(float(out[0]) * 1e3)
            samples[name][1].append(float(out[1]) * 1e3)
    print(f"{args.env_id}  ({args.runs} fresh processes per side, alternating)")
    for name, (make_reset, step) in samples.items():
        total = [a + b for a, b in zip(make_reset, step)]
        print(f"  {name:<8} make+reset p50 {statistics.median(make_reset):6.2f} ms   first step p50 "
              f"{statistics.median(step):6.2f} ms   sum p50 {statistics.median(total):6.2f} ms")


if __name__ == "__main__":
    main()
