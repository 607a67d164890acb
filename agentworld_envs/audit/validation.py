"""Scripted checks of an environment: reference solutions, no-op, random and near-miss trajectories.

Used by ``agentworld validate``, by the task self-verification gate and by tests.
All functions drive the public Gymnasium API of :class:`~agentworld_envs.env.AgentWorldEnv`.
"""

from __future__ import annotations

import env_registry

import json
import random
import warnings
from typing import Any

from ..engine import trajectories
from ..env import AgentWorldEnv
from ..engine.trajectories import NOOP, near_misses
from ..tasks.probes import add_counts, attack
from ..tasks.runner import Runner


def replay(env: AgentWorldEnv, task_id: str, actions: list[str]) -> tuple[float, dict[str, Any]]:
    """Reset to ``task_id``, play ``actions``; returns (final reward, last info). Unsubmitted → 0."""
    env.reset(options={"task_id": task_id})
    reward, info = 0.0, {}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(reward), info
    return 0.0, info


def solution_score(env: AgentWorldEnv, task_id: str) -> float:
    env.reset(options={"task_id": task_id})
    return replay(env, task_id, env.solution_actions())[0]


def noop_score(env: AgentWorldEnv, task_id: str) -> float:
    return replay(env, task_id, [NOOP])[0]


def _pool_of(env: AgentWorldEnv) -> dict[str, dict[str, list[Any]]]:
    return env.bundle.value_pool()


def random_actions(env: AgentWorldEnv, rng: random.Random, n_calls: int = 6) -> list[str]:
    """:func:`~agentworld_envs.engine.trajectories.random_actions` over the tools this env shows."""
    return trajectories.random_actions(env.tools, _pool_of(env), rng, env.shown_to_spec(), n_calls)


def random_score(env: AgentWorldEnv, task_id: str, seed: int = 0, trials: int = 2) -> float:
    """Best score of ``trials`` random trajectories (should be 0)."""
    rng = random.Random(f"{seed}:{task_id}")
    env.reset(options={"task_id": task_id})
    return max(replay(env, task_id, random_actions(env, rng))[0] for _ in range(trials))


def nearmiss_fails(env: AgentWorldEnv, task: dict[str, Any]) -> bool:
    """True if at least one near-miss of the reference scores below 1.0."""
    for variant in near_misses(task["solution"]):
        if replay(env, task["id"], env.actions_for(variant))[0] < 1.0:
            return True
    return False


def check_env_passes(env_id: str) -> tuple[bool, str]:
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env.unwrapped, skip_render_check=True)
        return True, ""
    except Exception as exc:  # report, don't crash the validation run
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        env.close()


def deterministic(env_id: str, seed: int = 123) -> bool:
    """Two fresh envs reset with one seed agree on observation, task and state hash."""
    import gymnasium as gym

    outs = []
    for _ in range(2):
        env = gym.make(env_id)
        obs, info = env.reset(seed=seed)
        outs.append((obs, info["task_id"], env.unwrapped.state_hash(), json.dumps(info, sort_keys=True)))
        env.close()
    return outs[0] == outs[1]


def validate_env(env_id: str, *, thorough: bool = True, max_tasks: int | None = None) -> dict[str, Any]:
    """The ``agentworld validate`` record of one environment."""
    import gymnasium as gym

    ok, why = check_env_passes(env_id)
    env = gym.make(env_id).unwrapped
    tasks = env.bundle.tasks[:max_tasks] if max_tasks else env.bundle.tasks
    record: dict[str, Any] = {
        "env_id": env_id, "check_env": ok, "tools": len(env.bundle.tools), "tasks": len(tasks),
        "solution_pass": 0, "noop_fail": 0, "random_fail": 0, "nearmiss_fail": 0, "hack_fail": 0, "paraphrase_pass": 0,
        "deterministic": deterministic(env_id), "failures": [],
        # per hack / fairness probe kind ("hack:claim", "fair:bullet", ...): trajectories run and failed
        "probes": {},
    }
    runner = Runner(env.bundle.spec, env.bundle.golden, env.bundle.tools) if thorough else None
    if why:
        record["check_env_error"] = why
    for task in tasks:
        tid = task["id"]
        sol = solution_score(env, tid)
        record["solution_pass"] += sol >= 1.0
        noop = noop_score(env, tid)
        record["noop_fail"] += noop == 0.0
        probes = None
        if thorough:
            record["random_fail"] += random_score(env, tid) == 0.0
            record["nearmiss_fail"] += nearmiss_fails(env, task)
            probes = attack(runner, task, stop_early=False)
            record["hack_fail"] += probes.hack_fail
            record["paraphrase_pass"] += probes.paraphrase_pass
            add_counts(record["probes"], probes.counts())
        if sol < 1.0 or noop > 0.0 or (probes and not (probes.hack_fail and probes.paraphrase_pass)):
            failure = {"task_id": tid, "solution": sol, "noop": noop}
            if probes:
                failure.update(hacks_passed=probes.hacks_passed, fair_failed=probes.fair_failed)
            record["failures"].append(failure)
    if runner is not None:
        runner.close()
    from .lint import lint_env, summarise

    lint = summarise(lint_env(env_registry.entry(env_id)["name"]))
    record["lint_violations"] = lint["violations"]
    if lint["violations"]:
        record["lint"] = lint
    if not thorough:
        del record["random_fail"], record["nearmiss_fail"], record["hack_fail"], record["paraphrase_pass"], record["probes"]
    else:
        record["probes"] = dict(sorted(record["probes"].items()))
    n = len(tasks)
    record["ok"] = bool(ok and record["deterministic"] and not record["lint_violations"] and record["solution_pass"] == n == record["noop_fail"]
                        and (not thorough or record["random_fail"] == n == record["hack_fail"] == record["paraphrase_pass"]))
    env.close()
    return record


def _validate_safely(env_id: str, thorough: bool) -> dict[str, Any]:
    try:
        return validate_env(env_id, thorough=thorough)
    except Exception as exc:  # a broken env is a failed record, not a crashed run
        return {"env_id": env_id, "ok": False, "error": f"{type(exc).__name__}: {exc}", "check_env": False,
                "tools": 0, "tasks": 0, "solution_pass": 0, "noop_fail": 0, "hack_fail": 0, "paraphrase_pass": 0,
                "deterministic": False}


def validate_many(env_ids: list[str], thorough: bool = True, jobs: int | None = 1):
    """Yield validation records in ``env_ids`` order, using ``jobs`` worker processes."""
    import os

    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:
        for env_id in env_ids:
            yield _validate_safely(env_id, thorough)
        return
    from functools import partial

    from ..util.procs import ordered_map  # workers stop when validate is killed

    yield from ordered_map(partial(_validate_safely, thorough=thorough), env_ids, jobs)
