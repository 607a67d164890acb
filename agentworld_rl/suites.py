"""Named evaluation suites: what the trainer evaluates before and after training, one report row each.

A suite is a name, the (env id, task id) pairs it plays (one greedy episode each) and, when its
envs need other ``gym.make`` arguments than training's, those. The trainer's ``eval_suites``
config lists suites by name; a name is looked up in :data:`SUITES`, whose values are
``"module:function"`` strings resolved only when used (so a suite's dependencies are imported
only by runs that ask for it), or is itself such a string. The function takes the run's
:class:`~agentworld_rl.config.TrainConfig` and returns an :class:`EvalSuite`.

Adding a row to the report is one entry here, e.g.
``SUITES["bfcl-multi-turn"] = "agentworld_envs.external.bfcl:trainer_suite"``.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from typing import Any

from .errors import TrainError

SUITES: dict[str, str] = {
    "held-out": "agentworld_rl.suites:held_out",
}


@dataclass
class EvalSuite:
    name: str
    pairs: list[dict]                 # {"env_id", "task_id"}, played once each, greedily
    env_kwargs: dict[str, Any] | None = None   # None: the run's own (cfg.env_kwargs())
    description: str = ""
    import_modules: list[str] = field(default_factory=list)  # modules that register its env ids


def held_out(cfg) -> EvalSuite:
    """The run's held-out environments (``eval_env_ids``, or a seeded sample of ``eval_split``),
    at most ``max_eval_tasks`` tasks, filtered like the training tasks."""
    from .tasks import select_env_ids, task_pairs

    if not (cfg.eval_env_ids or cfg.eval_split):
        return EvalSuite("held-out", [])
    ids = select_env_ids(cfg.eval_env_ids, cfg.l1, cfg.eval_split, cfg.max_envs, cfg.seed)
    pairs = task_pairs(ids, cfg.max_turns, cfg.max_tasks_per_env, 0 if cfg.eval_env_ids else _eval_envs(cfg),
                       cfg.max_solution_steps, cfg.env_kwargs())
    random.Random(cfg.seed).shuffle(pairs)
    pairs = sorted(pairs[: cfg.max_eval_tasks], key=lambda p: (p["env_id"], p["task_id"]))
    where = ", ".join(cfg.eval_env_ids) if cfg.eval_env_ids else f"split {cfg.eval_split!r}"
    return EvalSuite("held-out", pairs, description=f"{len(pairs)} tasks of {len({p['env_id'] for p in pairs})} "
                                                    f"envs ({where})")


def _eval_envs(cfg) -> int:
    """How many held-out envs to draw tasks from: enough for max_eval_tasks at max_tasks_per_env each."""
    if not cfg.max_tasks_per_env:
        return cfg.max_envs
    need = -(-cfg.max_eval_tasks // cfg.max_tasks_per_env)
    return max(cfg.max_envs, need + need // 4) if cfg.max_envs else 0  # slack: some envs have fewer tasks


def resolve(name: str):
    """The suite function a name stands for (a SUITES key or "module:function")."""
    target = SUITES.get(name, name)
    if ":" not in target:
        raise TrainError(f"unknown evaluation suite {name!r}; choose from {sorted(SUITES)} or give module:function")
    module, attr = target.split(":", 1)
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise TrainError(f"evaluation suite {name!r}: cannot load {target} ({e})") from e
    return fn


def build_suites(cfg) -> list[EvalSuite]:
    """The run's suites, in ``cfg.eval_suites`` order; suites with no tasks are left out."""
    suites = []
    for name in cfg.eval_suites:
        suite = resolve(name)(cfg)
        if not isinstance(suite, EvalSuite):
            raise TrainError(f"evaluation suite {name!r} returned {type(suite).__name__}, not an EvalSuite")
        if suite.pairs:
            suites.append(suite)
    names = [s.name for s in suites]
    if len(set(names)) != len(names):
        raise TrainError(f"evaluation suites must have distinct names, got {names}")
    return suites
