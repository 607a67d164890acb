"""Generate and gate the task sets of a seeded sample of synthesised envs; print kept and rejected counts.

    python scripts/sample_task_gate.py --envs 40 --seed 11

Uses the task cache like ``agentworld build`` (a set already cached for the current generator
version is read, not regenerated), so run it with a fresh ``AGENTWORLD_CACHE`` to measure the gate.
"""

from __future__ import annotations

import argparse
import collections
import random
import time

import env_registry

from agentworld_envs.tasks.store import task_summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    names = [e["name"] for e in env_registry.manifest() if e["source"] == "synth"]
    random.Random(args.seed).shuffle(names)
    kept: list[int] = []
    rejected: collections.Counter[str] = collections.Counter()
    ran = failed = 0
    t0 = time.time()
    for name in names[:args.envs]:
        s = task_summary(name)
        kept.append(s["tasks"])
        rejected.update(s["tasks_rejected"])
        for row in s.get("task_probes", {}).values():
            ran += row["ran"]
            failed += row["failed"]
        if s.get("task_error"):
            print("error", name, s["task_error"])
    print(f"{len(kept)} envs: {sum(kept)} tasks kept, min {min(kept)} per env, {time.time() - t0:.0f} s")
    print("rejected:", dict(sorted(rejected.items())))
    print(f"probe trajectories over the kept tasks: {ran}, failing: {failed}")


if __name__ == "__main__":
    main()
