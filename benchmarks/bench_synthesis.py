"""Synthesis time: one environment built on first use, from an empty cache, in a fresh process.

    python benchmarks/bench_synthesis.py [N]      # N themes spread over the registry (default 10)

The whole registry: ``AGENTWORLD_CACHE=$(mktemp -d) agentworld build --all --jobs 2`` (prints its time).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

import env_registry

SCRIPT = (
    "import time; t0 = time.perf_counter(); import gymnasium as gym, agentworld_envs; t1 = time.perf_counter();"
    "env = gym.make({env_id!r}); env.reset(seed=0); t2 = time.perf_counter();"
    "print(f'{{t1 - t0:.3f}} {{t2 - t1:.3f}} {{len(env.unwrapped.bundle.tasks)}}')"
)

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    synth = [e for e in env_registry.manifest() if e["source"] == "synth"]
    picks = synth[:: max(1, len(synth) // n)][:n]
    first_use = []
    for e in picks:
        with tempfile.TemporaryDirectory() as cache:
            out = subprocess.run([sys.executable, "-c", SCRIPT.format(env_id=e["id"])], capture_output=True, text=True,
                                 env={**os.environ, "AGENTWORLD_CACHE": cache}, check=True).stdout.split()
        imp, build, tasks = float(out[0]), float(out[1]), int(out[2])
        first_use.append(build)
        print(f"{e['id']:<60} import {imp:.2f} s  first make+reset {build:.2f} s  tasks {tasks}")
    print(f"first use (spec + golden + tool tests + tasks): p50 {statistics.median(first_use):.2f} s, "
          f"max {max(first_use):.2f} s over {len(first_use)} envs")
