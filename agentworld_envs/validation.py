"""Scripted checks of an environment: reference solutions, no-op, random and near-miss trajectories.

Used by ``agentworld validate``, by the task self-verification gate and by tests.
All functions drive the public Gymnasium API of :class:`~agentworld_envs.env.AgentWorldEnv`.
"""

from __future__ import annotations

import copy
import json
import random
import warnings
from typing import Any

from .actions import format_call
from .env import AgentWorldEnv

NOOP = format_call("submit", {})


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


def _random_value(schema: dict[str, Any], rng: random.Random) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "integer":
        return rng.randint(schema.get("minimum", 1), min(schema.get("maximum", 50), schema.get("minimum", 1) + 50))
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(schema.get("items", {}), rng) for _ in range(rng.randint(1, 2))]
    if kind == "object":
        return {}
    return rng.choice(["test", "pending", "A1", "x", "2026-01-01", "cancel"])


def value_pool(spec: dict[str, Any], conn: Any, per_param: int = 12) -> dict[str, dict[str, list[Any]]]:
    """Real values for tool parameters bound to a column (keys, filters, values, set): ``{tool: {param: [...]}}``.

    Random trajectories draw from it half of the time, so they hit real ids and codes and
    do not fail trivially with ``not_found``. Deterministic for a given golden state."""
    pool: dict[str, dict[str, list[Any]]] = {}
    cache: dict[tuple[str, str], list[Any]] = {}
    for tool in spec["tools"]:
        impl, props = tool["impl"], tool["parameters"].get("properties", {})
        table = impl.get("table")
        if not table:
            continue
        binds = []
        if impl.get("key"):
            binds.append((impl["key"]["param"], impl["key"]["column"]))
        binds += [(f["param"], f["column"]) for f in impl.get("filters", []) if f.get("op", "eq") in ("eq", "in")]
        for fld in ("values", "set"):
            binds += [(e.split(":", 1)[1], c) for c, e in impl.get(fld, {}).items()
                      if isinstance(e, str) and e.startswith("$param:")]
        for param, column in binds:
            if param not in props or props[param].get("type") == "array":
                continue
            if (table, column) not in cache:
                try:
                    rows = conn.execute(f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL GROUP BY 1 '
                                        f"ORDER BY MIN(rowid) LIMIT ?", (per_param,)).fetchall()
                except Exception:  # noqa: BLE001 - a pool is a nicety, never a failure
                    rows = []
                cache[(table, column)] = [r[0] for r in rows]
            values = cache[(table, column)]
            if props[param].get("type") == "boolean":
                values = [bool(v) for v in values]
            if values:
                pool.setdefault(tool["name"], {})[param] = values
    return pool


def _pool_of(env: Any) -> dict[str, dict[str, list[Any]]]:
    pool = getattr(env, "value_pool", None)
    if pool is not None:
        return pool
    bundle = getattr(env, "bundle", None)
    if bundle is None:
        return {}
    if getattr(bundle, "_value_pool", None) is None:
        bundle._value_pool = value_pool(bundle.spec, bundle.initial)
    return bundle._value_pool


def random_actions(env: AgentWorldEnv, rng: random.Random, n_calls: int = 6) -> list[str]:
    """A plausible but aimless trajectory: random tools with schema-shaped arguments, random answer.

    Half of the arguments that name a column come from the golden state (real ids, codes,
    statuses), so the trajectory gets past lookups and may write to real records."""
    tools = [t["function"] for t in env.tools if t["function"]["name"] != "submit"]
    pool = _pool_of(env)
    real = getattr(env, "_real", {})
    actions = []
    for _ in range(n_calls):
        fn = rng.choice(tools)
        props = fn["parameters"].get("properties", {})
        required = set(fn["parameters"].get("required", []))
        known = pool.get(real.get(fn["name"], fn["name"]), {})
        args = {}
        for k, v in props.items():
            if k in required or rng.random() < 0.3:
                args[k] = rng.choice(known[k]) if known.get(k) and rng.random() < 0.5 else _random_value(v, rng)
        actions.append(format_call(fn["name"], args))
    actions.append(format_call("submit", {"answer": rng.choice(["done", "42", "yes", ""])}))
    return actions


def random_score(env: AgentWorldEnv, task_id: str, seed: int = 0, trials: int = 2) -> float:
    """Best score of ``trials`` random trajectories (should be 0)."""
    rng = random.Random(f"{seed}:{task_id}")
    env.reset(options={"task_id": task_id})
    return max(replay(env, task_id, random_actions(env, rng))[0] for _ in range(trials))


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return (value[:-1] + ("X" if not value.endswith("X") else "Y")) if value else "X"
    return None


def _wrong_answers(answer: Any) -> list[Any]:
    """An answer with its last digit changed (a wrong number, id or code), and a confident non-answer."""
    out: list[Any] = []
    text = answer if isinstance(answer, str) else json.dumps(answer)
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    if digits:
        i = digits[-1]
        out.append(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:])
    elif isinstance(answer, str) and answer:
        out.append(_perturb(answer))
    out.append("Done.")
    return out


def near_misses(solution: list[dict[str, Any]], limit: int = 12) -> list[list[dict[str, Any]]]:
    """Variants of a reference solution: the answer perturbed, one step dropped, or one argument perturbed.

    Ordered so the most telling variants come first: a wrong answer, then missing steps
    (latest first: the writes usually come last), then changed arguments.
    """
    variants: list[list[dict[str, Any]]] = []
    last = solution[-1] if solution else None
    if last and last["name"] == "submit" and "answer" in last["arguments"]:
        for wrong in _wrong_answers(last["arguments"]["answer"]):
            changed = copy.deepcopy(solution)
            changed[-1]["arguments"]["answer"] = wrong
            variants.append(changed)
    body = len(solution) - 1 if last and last["name"] == "submit" else len(solution)
    for i in reversed(range(body)):
        variants.append(solution[:i] + solution[i + 1:])
    for i, step in enumerate(solution[:body]):
        for key, value in step["arguments"].items():
            new = _perturb(value)
            if new is None:
                continue
            changed = copy.deepcopy(solution)
            changed[i]["arguments"][key] = new
            variants.append(changed)
    return variants[:limit] if limit else variants


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
        "solution_pass": 0, "noop_fail": 0, "random_fail": 0, "nearmiss_fail": 0,
        "deterministic": deterministic(env_id), "failures": [],
    }
    if why:
        record["check_env_error"] = why
    for task in tasks:
        tid = task["id"]
        sol = solution_score(env, tid)
        record["solution_pass"] += sol >= 1.0
        noop = noop_score(env, tid)
        record["noop_fail"] += noop == 0.0
        if thorough:
            record["random_fail"] += random_score(env, tid) == 0.0
            record["nearmiss_fail"] += nearmiss_fails(env, task)
        if sol < 1.0 or noop > 0.0:
            record["failures"].append({"task_id": tid, "solution": sol, "noop": noop})
    if not thorough:
        del record["random_fail"], record["nearmiss_fail"]
    record["ok"] = bool(ok and record["deterministic"] and record["solution_pass"] == len(tasks) == record["noop_fail"]
                        and (not thorough or record["random_fail"] == len(tasks)))
    env.close()
    return record


def _validate_safely(env_id: str, thorough: bool) -> dict[str, Any]:
    try:
        return validate_env(env_id, thorough=thorough)
    except Exception as exc:  # a broken env is a failed record, not a crashed run
        return {"env_id": env_id, "ok": False, "error": f"{type(exc).__name__}: {exc}", "check_env": False,
                "tools": 0, "tasks": 0, "solution_pass": 0, "noop_fail": 0, "deterministic": False}


def validate_many(env_ids: list[str], thorough: bool = True, jobs: int | None = 1):
    """Yield validation records in ``env_ids`` order, using ``jobs`` worker processes."""
    import os

    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:
        for env_id in env_ids:
            yield _validate_safely(env_id, thorough)
        return
    from functools import partial

    from .procs import ordered_map  # workers stop when validate is killed

    yield from ordered_map(partial(_validate_safely, thorough=thorough), env_ids, jobs)
