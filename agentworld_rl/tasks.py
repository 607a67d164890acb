"""Which (env id, task id) pairs to train and evaluate on, and in what order.

The env catalogue comes from ``env_registry.select`` when it exists; toy env
ids (``agentworld_rl/...``) are always available. Task ids come from each
env's ``env.unwrapped.task_ids``. :class:`TaskSampler` walks a seeded
permutation of the pairs, epoch after epoch; its position is part of every
checkpoint so a resumed run sees exactly the prompts it would have seen.
"""

from __future__ import annotations

import importlib
import random
from typing import Sequence

import gymnasium as gym

from .errors import TrainError


def import_env_modules(modules: Sequence[str]) -> list[str]:
    """Import env-registering modules; ``agentworld_envs`` is tried too. Returns those imported."""
    done = []
    for mod in list(modules) + ["agentworld_envs"]:
        if mod in done:
            continue
        try:
            importlib.import_module(mod)
            done.append(mod)
        except ImportError:
            if mod != "agentworld_envs":
                raise
    return done


def _full_id(name: str) -> str:
    if "/" in name:
        return name
    return f"agentworld/{name}" + ("" if name.endswith("-v0") else "-v0")


def select_env_ids(env_ids: Sequence[str] = (), l1: Sequence[str] = (), split: str = "train",
                   max_envs: int = 0, seed: int = 0) -> list[str]:
    """Gym ids to use: explicit ``env_ids`` win; otherwise the registry filtered by l1/split,
    then (``max_envs``) a seeded sample of that many, in catalogue order."""
    if env_ids:
        ids = [_full_id(e) for e in env_ids]
        unknown = [e for e in ids if e not in gym.registry]
        if unknown:
            raise TrainError(f"unknown env ids {unknown[:5]}" + (f" (+{len(unknown) - 5} more)" if len(unknown) > 5 else ""))
        return ids
    try:
        import env_registry
        rows = env_registry.select(ids=None, l1=list(l1) or None, split=split or None)
    except (ImportError, AttributeError):
        rows = []
    ids = [r["id"] for r in rows if r["id"] in gym.registry]
    if max_envs and len(ids) > max_envs:
        # Seeded order; task_pairs() keeps the first max_envs envs that actually have tasks.
        random.Random(seed).shuffle(ids)
    if not ids:
        raise TrainError(f"no envs selected (l1={list(l1)}, split={split!r}); pass env_ids or install agentworld_envs")
    return ids


def env_tasks(env_id: str, max_turns: int | None = None, max_tasks: int = 0, max_solution_steps: int = 0,
              env_kwargs: dict | None = None, task_split: str = "train") -> list[str]:
    """Task ids of ``env_id`` (made with ``env_kwargs``, e.g. a task overlay); with ``max_solution_steps``,
    only tasks whose reference trajectory (``solution_actions()``, submit included) is at most that long;
    with ``show_policy=False`` in ``env_kwargs``, no trap tasks (``info["needs_policy"]``). An env with
    its own task splits (a benchmark: ``split_task_ids``) gives those of ``task_split`` ("train" or "test")."""
    kwargs = dict(env_kwargs or {})
    if max_turns:
        kwargs["max_turns"] = max_turns
    env = gym.make(env_id, **kwargs)
    # Without the policy in the prompt, traps (the right outcome is a refusal citing a rule) are unsolvable.
    hidden_policy = kwargs.get("show_policy") is False
    try:
        core = env.unwrapped
        try:
            ids = list(core.split_task_ids(task_split) if hasattr(core, "split_task_ids") else core.task_ids)
        except ValueError as e:  # e.g. BFCL: no train split
            raise TrainError(str(e)) from None
        if max_solution_steps or hidden_policy:
            kept = []
            for task_id in ids:
                _, info = env.reset(options={"task_id": task_id})
                if max_solution_steps and len(env.unwrapped.solution_actions()) > max_solution_steps:
                    continue
                if hidden_policy and info.get("needs_policy"):
                    continue
                kept.append(task_id)
            ids = kept
    finally:
        env.close()
    return ids[:max_tasks] if max_tasks else ids


def task_pairs(env_ids: Sequence[str], max_turns: int | None = None, max_tasks_per_env: int = 0,
               max_envs: int = 0, max_solution_steps: int = 0, env_kwargs: dict | None = None,
               task_split: str = "train", *, max_pairs: int = 0, jobs: int = 1,
               import_modules: Sequence[str] = ()) -> list[dict]:
    """(env, task) pairs of the first ``max_envs`` envs (0 = all) that have at least one task, or of
    as many envs as it takes to reach ``max_pairs`` pairs (0 = no such target).

    ``jobs`` > 1 builds and filters envs in that many worker processes (which import
    ``import_modules`` to register the ids): an env the cache lacks takes seconds to build, its
    filter milliseconds. Workers run ahead of the envs kept by at most ``jobs``; the result is the
    same as with one process."""
    pairs: list[dict] = []
    used = 0
    filtered = _filtered_tasks(env_ids, jobs, list(import_modules), max_turns, max_tasks_per_env,
                               max_solution_steps, env_kwargs, task_split)
    try:
        for e, tasks in filtered:
            if not tasks:  # envs without tasks contribute nothing
                continue
            pairs += [{"env_id": e, "task_id": t} for t in tasks]
            used += 1
            if (max_envs and used >= max_envs) or (max_pairs and len(pairs) >= max_pairs):
                break
    finally:
        filtered.close()  # stops the workers still building envs nobody will use
    return pairs


def _filtered_tasks(env_ids: Sequence[str], jobs: int, import_modules: list[str], *args):
    if jobs <= 1 or len(env_ids) <= 1:
        for e in env_ids:
            yield e, env_tasks(e, *args)
        return
    from functools import partial

    from agentworld_envs.util.procs import ordered_map
    yield from zip(env_ids, ordered_map(partial(_env_tasks_in_worker, import_modules, args), env_ids, jobs))


def _env_tasks_in_worker(import_modules: list[str], args: tuple, env_id: str) -> list[str]:
    import_env_modules(import_modules)  # a worker process registers the ids itself
    return env_tasks(env_id, *args)


class TaskSampler:
    """Deterministic stream of task pairs: seeded permutation per epoch, resumable by position."""

    def __init__(self, pairs: Sequence[dict], seed: int = 0):
        if not pairs:
            raise ValueError("no tasks to sample")
        self.pairs = list(pairs)
        self.seed = seed
        self.position = 0  # number of pairs handed out so far

    def _order(self, epoch: int) -> list[int]:
        idx = list(range(len(self.pairs)))
        random.Random(self.seed * 7919 + epoch).shuffle(idx)
        return idx

    def take(self, n: int) -> list[dict]:
        out = []
        for _ in range(n):
            epoch, k = divmod(self.position, len(self.pairs))
            out.append(self.pairs[self._order(epoch)[k]])
            self.position += 1
        return out

    def state_dict(self) -> dict:
        return {"position": self.position, "seed": self.seed, "num_pairs": len(self.pairs)}

    def load_state_dict(self, state: dict) -> None:
        if state["num_pairs"] != len(self.pairs):
            raise TrainError("the task set changed since the checkpoint was written (different env/task filters?)")
        self.position, self.seed = state["position"], state["seed"]
