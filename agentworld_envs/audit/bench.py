"""Speed and memory measurements of an environment (``agentworld bench``).

Numbers are measured on the machine that runs them and printed; tests never assert on them.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Any

import gymnasium as gym

from ..engine.actions import format_call
from ..env import AgentWorldEnv


def _pct(samples: list[float], q: float) -> float:
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(q * len(samples)))]


def _ms(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(_pct(samples, 0.5) * 1e3, 4), "p95_ms": round(_pct(samples, 0.95) * 1e3, 4)}


def _first_call(env: AgentWorldEnv, writes: bool) -> tuple[str, str] | None:
    """(task_id, action) of the first reference step that is a read (or a write) tool call."""
    for task in env.bundle.tasks:
        for step in task["solution"]:
            tool = env.bundle.tools.get(step["name"])
            if tool is not None and tool.writes == writes:
                return task["id"], format_call(step["name"], step["arguments"])
    return None


def bench_env(env_id: str = "agentworld/retail-v0", n: int = 2000, live: int = 1024, vec_envs: int = 8,
              vec_steps: int = 300) -> dict[str, Any]:
    env = AgentWorldEnv(env_id)
    out: dict[str, Any] = {"env_id": env_id, "golden_bytes": env.bundle.golden_size}

    env.reset(seed=0)
    env.conn.execute("SELECT 1")  # make its episode database: each reset below rolls it back, as in training
    t_reset = []
    for i in range(n):
        t0 = time.perf_counter()
        env.reset(seed=i)
        t_reset.append(time.perf_counter() - t0)
    out["reset"] = _ms(t_reset)

    # A cold episode: a new instance's first reset and first tool call (golden copy + schema parse).
    found = _first_call(env, writes=False)
    t_cold = []
    for _ in range(min(n, 300)):
        fresh = AgentWorldEnv(env_id)
        t0 = time.perf_counter()
        fresh.reset(options={"task_id": found[0]} if found else None)
        if found:
            fresh.step(found[1])
        t_cold.append(time.perf_counter() - t0)
        fresh.close()
    out["cold_episode_first_step"] = _ms(t_cold)

    for label, writes in (("read_step", False), ("write_step", True)):
        found = _first_call(env, writes)
        if found is None:
            continue
        task_id, action = found
        samples = []
        for _ in range(n if not writes else n // 2):
            env.reset(options={"task_id": task_id})
            if writes:
                # replay the steps before the write so its preconditions hold
                for a in env.solution_actions():
                    if a == action:
                        break
                    env.step(a)
            t0 = time.perf_counter()
            _, _, _, _, info = env.step(action)
            samples.append(time.perf_counter() - t0)
        out[label] = {**_ms(samples), "tool": info.get("tool_name"), "error": info.get("error")}

    t_verify, episodes, t_replay = [], 0, 0.0
    for task in env.bundle.tasks:
        env.reset(options={"task_id": task["id"]})
        actions = env.solution_actions()
        t0 = time.perf_counter()
        env.reset(options={"task_id": task["id"]})
        for a in actions[:-1]:
            env.step(a)
        t1 = time.perf_counter()
        env.verify(task["solution"][-1]["arguments"].get("answer"))
        t2 = time.perf_counter()
        env.step(actions[-1])
        t_replay += time.perf_counter() - t0
        t_verify.append(t2 - t1)
        episodes += 1
    out["verify"] = _ms(t_verify)
    out["solution_replay_episodes_per_s"] = round(episodes / t_replay, 1) if t_replay else None

    out["rss_live_episodes"] = _rss_live(env_id, live)
    out["vector"] = {mode: _vector_throughput(env_id, mode, vec_envs, vec_steps) for mode in ("sync", "async")}
    env.close()
    return out


def _rss_live(env_id: str, live: int) -> dict[str, Any]:
    import psutil

    proc = psutil.Process(os.getpid())
    gc.collect()
    before = proc.memory_info().rss
    envs = [AgentWorldEnv(env_id) for _ in range(live)]
    found = _first_call(envs[0], writes=False)
    for i, e in enumerate(envs):
        e.reset(seed=i)
        # A step makes the episode's private database (reset alone does not): a live episode has one.
        e.step(found[1] if found else format_call("no_such_tool", {}))
    gc.collect()
    after = proc.memory_info().rss
    for e in envs:
        e.close()
    return {"episodes": live, "rss_delta_mib": round((after - before) / 2**20, 1),
            "rss_total_mib": round(after / 2**20, 1)}


def _vector_throughput(env_id: str, mode: str, num_envs: int, steps: int) -> dict[str, Any]:
    probe = AgentWorldEnv(env_id)
    probe.reset(seed=0)
    found = _first_call(probe, writes=False)
    probe.close()
    action = found[1] if found else format_call("submit", {})
    vec = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
    vec.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(steps):
        obs, *_ = vec.step([action] * num_envs)
    elapsed = time.perf_counter() - t0
    vec.close()
    return {"num_envs": num_envs, "env_steps_per_s": round(steps * num_envs / elapsed, 1),
            "obs_sample": obs[0][:60]}


def summary_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"{result['env_id']}  golden DB {result['golden_bytes'] / 1024:.0f} KiB"]
    for key in ("reset", "cold_episode_first_step", "read_step", "write_step", "verify"):
        if key in result:
            lines.append(f"  {key:<12} p50 {result[key]['p50_ms']:.4f} ms   p95 {result[key]['p95_ms']:.4f} ms")
    lines.append(f"  scripted solution replays: {result['solution_replay_episodes_per_s']} episodes/s")
    live = result["rss_live_episodes"]
    lines.append(f"  {live['episodes']} live episodes: +{live['rss_delta_mib']} MiB RSS (total {live['rss_total_mib']} MiB)")
    for mode, v in result["vector"].items():
        lines.append(f"  {mode:<5} vector x{v['num_envs']}: {v['env_steps_per_s']} env-steps/s")
    return lines


if __name__ == "__main__":
    import json
    import sys

    import agentworld_envs  # noqa: F401  (registers ids)

    res = bench_env(sys.argv[1] if len(sys.argv) > 1 else "agentworld/retail-v0")
    print(json.dumps(res, indent=1))
