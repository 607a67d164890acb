"""The whole registry in one process: one reference episode in every environment, warm cache.

    agentworld build --all --jobs 1                 # once: fills the cache (10-15 min on a quiet 2-core box)
    python benchmarks/bench_registry.py             # every id in the manifest
    python benchmarks/bench_registry.py --built-only --limit 500

For each id: ``gym.make`` → ``reset(task 0)`` → replay the task's reference actions (ending in
``submit``) → ``close``. Prints the wall time, envs/s, peak RSS (``ru_maxrss``) and how many
episodes scored 1.0; a failing episode or env is listed, never hidden. With ``--built-only``,
envs whose cache artefacts are missing are skipped (and counted) instead of built, so a
partially built cache can be measured without a build inside the timing. Asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time


def _built_names(cache) -> set[str]:
    """Names of envs with a golden file in the cache (``golden/<name>-<key>.sqlite``)."""
    import os

    folder = cache / "golden"
    files = os.listdir(folder) if folder.is_dir() else []
    return {f.rsplit("-", 1)[0] for f in files if f.endswith(".sqlite")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0, help="first N ids only (0: all)")
    ap.add_argument("--built-only", action="store_true", help="skip ids with no golden file in the cache")
    args = ap.parse_args()

    t_import = time.perf_counter()
    import gymnasium as gym

    import agentworld_envs  # noqa: F401  (registers ids)
    import env_registry

    entries = list(env_registry.manifest())
    if args.limit:
        entries = entries[: args.limit]
    skipped = 0
    if args.built_only:
        from agentworld_envs.engine import state

        built = _built_names(state.cache_dir())
        kept = [e for e in entries if e["name"] in built]
        skipped = len(entries) - len(kept)
        entries = kept
    print(f"import {time.perf_counter() - t_import:.2f} s; {len(entries)} envs"
          + (f" ({skipped} not built, skipped)" if skipped else ""), flush=True)

    t0, c0 = time.perf_counter(), time.process_time()
    solved, failures, steps = 0, [], 0
    for i, e in enumerate(entries):
        try:
            env = gym.make(e["id"])
            base = env.unwrapped
            _, info = env.reset(options={"task_index": 0})
            reward = 0.0
            for action in base.solution_actions():
                _, reward, terminated, truncated, info = env.step(action)
                steps += 1
                if terminated or truncated:
                    break
            env.close()
            if reward >= 1.0:
                solved += 1
            else:
                failures.append((e["id"], f"reward {reward}: {[c for c in info.get('checks', []) if not c['passed']][:1]}"))
        except Exception as exc:  # noqa: BLE001 - listed below, and the run goes on
            failures.append((e["id"], f"{type(exc).__name__}: {str(exc)[:200]}"))
        if (i + 1) % 250 == 0:
            print(f"  {i + 1} envs, {time.perf_counter() - t0:.1f} s", flush=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    from agentworld_envs.catalogue import catalog

    info = catalog.load_bundle.cache_info()
    print(f"{len(entries)} envs, one reference episode each: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"({len(entries) / wall:.0f} envs/s, {steps} steps); peak RSS {peak:.0f} MiB; solved {solved}/{len(entries)}")
    print(f"bundle cache: {info['currsize']} bundles, ~{info['bytes'] / 2**20:.0f} MiB estimated "
          f"(budget {info['budget'] / 2**20:.0f} MiB), {info['misses']} loads")
    for env_id, why in failures[:20]:
        print(f"  FAILED {env_id}: {why}")
    if len(failures) > 20:
        print(f"  ... and {len(failures) - 20} more failures")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
