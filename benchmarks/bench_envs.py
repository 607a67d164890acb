"""Environment speed and memory: reset, read/write steps, verification, replays, live episodes, vectors.

    python benchmarks/bench_envs.py [ENV_ID ...]        # default: retail-v0 and two synthesised envs

Same figures as ``agentworld bench --json``. Prints; asserts nothing.
"""

from __future__ import annotations

import json
import sys

import agentworld_envs  # noqa: F401  (registers ids)
from agentworld_envs.audit.bench import bench_env, summary_lines

DEFAULT = ["agentworld/retail-v0", "agentworld/wine-club-subscriptions-v0", "agentworld/veterinary-clinic-appointments-v0"]

if __name__ == "__main__":
    for env_id in sys.argv[1:] or DEFAULT:
        result = bench_env(env_id, n=2000, live=1024)
        print("\n".join(summary_lines(result)))
        print(json.dumps(result), flush=True)
