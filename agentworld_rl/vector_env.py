"""Vectorised stepping of many *different* agentworld envs at once.

Gymnasium vector envs want one env constructor per sub-env, fixed at creation,
and reset every sub-env with the *same* options dict. A rollout batch instead
mixes many env ids and task ids, and changes them every step of training. So
each sub-env here is an :class:`EpisodeSlot`: a thin ``gym.Env`` that can host
any registered env id. On ``reset(options={"slots": [...]})`` slot *i* reads
its own entry ``slots[i]`` (env id + task id), makes (and caches) that env and
resets it on the task. All hosted envs share Text observation/action spaces,
so the slots do too, and Sync/AsyncVectorEnv accept them.

Finished episodes must drop out. Gymnasium 1.x uses ``NEXT_STEP`` autoreset:
the step after an episode ends calls ``reset()`` *without options* on that
sub-env instead of stepping it. A slot treats that option-less reset as "go
idle": nothing is reset in the hosted env (which may be expensive, e.g. a
SQLite-backed world), and further steps on an idle slot are cheap no-ops that
the rollout engine ignores. (``DISABLED`` autoreset is not usable because it
asserts that finished sub-envs are never stepped, and vector step always
steps every sub-env.)
"""

from __future__ import annotations

import functools
import importlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

TEXT_SPACE_MAX = 1 << 20
IDLE_INFO = {"slot_active": False}


class EpisodeSlot(gym.Env):
    """A sub-env that hosts one episode of any env id at a time (see module doc)."""

    metadata = {"render_modes": []}

    def __init__(self, index: int, env_kwargs: dict | None = None, import_modules: Sequence[str] = (),
                 max_cached_envs: int = 8):
        # Spawned workers start blank: import the modules that register env ids.
        for mod in import_modules:
            importlib.import_module(mod)
        self.index = index
        self.env_kwargs = dict(env_kwargs or {})
        self.max_cached_envs = max_cached_envs
        self.observation_space = spaces.Text(TEXT_SPACE_MAX)
        self.action_space = spaces.Text(TEXT_SPACE_MAX)
        self._envs: OrderedDict[str, gym.Env] = OrderedDict()
        self._active: gym.Env | None = None

    def _get_env(self, env_id: str) -> gym.Env:
        # Reuse made envs: constructing a world can cost far more than resetting it.
        if env_id in self._envs:
            self._envs.move_to_end(env_id)
            return self._envs[env_id]
        env = gym.make(env_id, **self.env_kwargs)
        self._envs[env_id] = env
        if len(self._envs) > self.max_cached_envs:
            _, old = self._envs.popitem(last=False)
            old.close()
        return env

    def reset(self, *, seed=None, options=None):
        spec = None
        if options is not None and "slots" in options:
            spec = options["slots"][self.index]
        if spec is None:  # autoreset after an episode ended, or slot unused this batch
            self._active = None
            return "", dict(IDLE_INFO)
        env = self._get_env(spec["env_id"])
        obs, info = env.reset(seed=seed, options={"task_id": spec["task_id"]} if spec.get("task_id") else None)
        self._active = env
        info = dict(info)
        info["slot_active"] = True
        return obs, info

    def step(self, action):
        if self._active is None:
            return "", 0.0, False, False, dict(IDLE_INFO)
        obs, reward, terminated, truncated, info = self._active.step(action)
        info = dict(info)
        info["slot_active"] = True
        if terminated or truncated:
            self._active = None
        return obs, float(reward), bool(terminated), bool(truncated), info

    def close(self):
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def _make_slot(index: int, env_kwargs: dict, import_modules: tuple[str, ...]) -> EpisodeSlot:
    return EpisodeSlot(index, env_kwargs, import_modules)


def _unbatch_info(infos: dict, i: int) -> dict:
    """Pull sub-env ``i``'s info out of gymnasium's batched info dict."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        present = infos.get("_" + key)
        if present is not None and not present[i]:
            continue
        if isinstance(value, dict):
            out[key] = _unbatch_info(value, i)
        else:
            v = value[i]
            out[key] = v.item() if isinstance(v, np.generic) else v
    return out


@dataclass
class StepResult:
    obs: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict


class SlotVectorEnv:
    """Steps a batch of heterogeneous (env id, task id) episodes through a gymnasium vector env.

    Args:
        num_slots: maximum episodes per batch (batch size x group size).
        env_kwargs: passed to every ``gym.make`` (e.g. ``max_turns``).
        asynchronous: use ``AsyncVectorEnv`` (one process per slot) instead of ``SyncVectorEnv``.
        import_modules: modules that register env ids (needed in spawned workers).
    """

    def __init__(self, num_slots: int, env_kwargs: dict | None = None, asynchronous: bool = False,
                 import_modules: Sequence[str] = ("agentworld_rl.toy_envs",), context: str | None = "spawn"):
        fns = [functools.partial(_make_slot, i, dict(env_kwargs or {}), tuple(import_modules)) for i in range(num_slots)]
        self.num_slots = num_slots
        if asynchronous:
            # Text spaces cannot live in shared memory.
            self.env = AsyncVectorEnv(fns, shared_memory=False, context=context,
                                      autoreset_mode=AutoresetMode.NEXT_STEP)
        else:
            self.env = SyncVectorEnv(fns, autoreset_mode=AutoresetMode.NEXT_STEP)
        self.active = np.zeros(num_slots, dtype=bool)

    def start(self, episodes: Sequence[dict], seeds: Sequence[int]) -> list[tuple[str, dict]]:
        """Reset slot i on ``episodes[i]`` (``{"env_id", "task_id"}``); extra slots go idle."""
        if len(episodes) > self.num_slots:
            raise ValueError(f"{len(episodes)} episodes > {self.num_slots} slots")
        slots = list(episodes) + [None] * (self.num_slots - len(episodes))
        seed_list = list(seeds) + [0] * (self.num_slots - len(episodes))
        obs, infos = self.env.reset(seed=[int(s) for s in seed_list], options={"slots": slots})
        self.active[:] = [s is not None for s in slots]
        return [(obs[i], _unbatch_info(infos, i)) for i in range(len(episodes))]

    def step(self, actions: dict[int, str]) -> dict[int, StepResult]:
        """Step the given live slots (others receive an ignored empty action)."""
        batch = tuple(actions.get(i, "") for i in range(self.num_slots))
        obs, rewards, terms, truncs, infos = self.env.step(batch)
        out = {}
        for i in actions:
            out[i] = StepResult(obs[i], float(rewards[i]), bool(terms[i]), bool(truncs[i]), _unbatch_info(infos, i))
            if terms[i] or truncs[i]:
                self.active[i] = False
        return out

    def close(self):
        self.env.close()


class WorkerSlotVectorEnv:
    """:class:`SlotVectorEnv`'s interface over :mod:`agentworld_envs.serving.workers` env workers (e.g. Ray actors).

    Slot *i* of a batch is slot *i* of the workers, so a Ray backend spreads a batch over its
    actors (``i % num_workers``) and steps each actor's share in one remote call. A worker that
    dies mid-rollout raises :class:`~agentworld_envs.util.errors.EnvWorkerError` from :meth:`step` /
    :meth:`start` (the worker is restarted); its episodes are never scored as zero.
    """

    def __init__(self, num_slots: int, workers):
        self.num_slots = num_slots
        self.workers = workers
        self.active = np.zeros(num_slots, dtype=bool)

    def start(self, episodes: Sequence[dict], seeds: Sequence[int]) -> list[tuple[str, dict]]:
        if len(episodes) > self.num_slots:
            raise ValueError(f"{len(episodes)} episodes > {self.num_slots} slots")
        opened = self.workers.open([{"slot": i, "env_id": ep["env_id"], "task_id": ep.get("task_id"), "seed": int(s)}
                                    for i, (ep, s) in enumerate(zip(episodes, seeds))])
        self.active[:] = False
        self.active[:len(episodes)] = True
        return [(item["obs"], {**item["info"], "slot_active": True}) for item in opened]

    def step(self, actions: dict[int, str]) -> dict[int, StepResult]:
        out = {}
        for i, (obs, reward, terminated, truncated, info) in self.workers.step(dict(actions)).items():
            out[int(i)] = StepResult(obs, float(reward), bool(terminated), bool(truncated),
                                     {**info, "slot_active": bool(self.active[int(i)])})
            if terminated or truncated:
                self.active[int(i)] = False
        return out

    def close(self):
        self.workers.close()


ENV_WORKERS = ("local", "async", "ray")


def make_slot_vector_env(kind: str, num_slots: int, env_kwargs: dict | None = None,
                         import_modules: Sequence[str] = ("agentworld_rl.toy_envs",), *, ray_address: str = "",
                         ray_workers: int = 2):
    """The trainer's slot vector env: ``local`` (in-process), ``async`` (a process per slot) or ``ray`` actors."""
    if kind == "ray":
        from agentworld_envs.serving.workers import RayEnvWorkers

        return WorkerSlotVectorEnv(num_slots, RayEnvWorkers(ray_workers, env_kwargs, import_modules,
                                                            address=ray_address or None))
    if kind not in ENV_WORKERS:
        raise ValueError(f"env workers must be one of {list(ENV_WORKERS)}, not {kind!r}")
    return SlotVectorEnv(num_slots, env_kwargs, asynchronous=kind == "async", import_modules=import_modules)
