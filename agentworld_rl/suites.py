"""Named evaluation suites: what the trainer evaluates before and after training, one report row each.

A suite is a name, the (env id, task id) pairs it plays (one greedy episode each) and, when its
envs need other ``gym.make`` arguments than training's, those. The trainer's ``eval_suites``
config lists suites by name; a name is looked up in :data:`SUITES`, whose values are
``"module:function"`` strings resolved only when used (so a suite's dependencies are imported
only by runs that ask for it), or is itself such a string. The function takes the run's
:class:`~agentworld_rl.config.TrainConfig` and returns an :class:`EvalSuite`.

Adding a row to the report is one entry here. The real benchmarks ``bfcl`` and ``tau2``
(:mod:`agentworld_envs.external`) are two such entries: their held-out tasks (``eval_suite_tasks``
per benchmark env, a seeded sample; 0 = all), played under the benchmark's own turn limits (or
``eval_suite_max_turns``) and scored by the benchmark's own scorer, evaluated and reported like
every other suite. A benchmark whose extra is not installed is skipped with one line (its
:attr:`EvalSuite.skipped` says why), not an error.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from typing import Any

from .errors import TrainError

SUITES: dict[str, str] = {
    "held-out": "agentworld_rl.suites:held_out",
    "bfcl": "agentworld_rl.suites:bfcl",
    "tau2": "agentworld_rl.suites:tau2",
}


@dataclass
class EvalSuite:
    name: str
    pairs: list[dict]                 # {"env_id", "task_id"}, played once each, greedily
    env_kwargs: dict[str, Any] | None = None   # None: the run's own (cfg.env_kwargs())
    description: str = ""
    import_modules: list[str] = field(default_factory=list)  # modules that register its env ids
    skipped: str = ""                 # why it cannot run here (e.g. a benchmark extra not installed)


def held_out(cfg) -> EvalSuite:
    """The run's held-out environments (``eval_env_ids``, or a seeded sample of ``eval_split``),
    at most ``max_eval_tasks`` tasks, filtered like the training tasks."""
    from .tasks import select_env_ids, task_pairs

    if not (cfg.eval_env_ids or cfg.eval_split) or not cfg.max_eval_tasks:
        return EvalSuite("held-out", [])
    ids = select_env_ids(cfg.eval_env_ids, cfg.l1, cfg.eval_split, cfg.max_envs, cfg.seed)
    # Sampled envs: as many as it takes for max_eval_tasks tasks (envs with fewer tasks than
    # max_tasks_per_env left after the filters are made up by more envs).
    pairs = task_pairs(ids, cfg.max_turns, cfg.max_tasks_per_env, 0, cfg.max_solution_steps, cfg.env_kwargs(),
                       task_split="test", max_pairs=0 if cfg.eval_env_ids else cfg.max_eval_tasks,
                       jobs=cfg.build_jobs, import_modules=cfg.env_import_modules)
    random.Random(cfg.seed).shuffle(pairs)
    pairs = sorted(pairs[: cfg.max_eval_tasks], key=lambda p: (p["env_id"], p["task_id"]))
    where = ", ".join(cfg.eval_env_ids) if cfg.eval_env_ids else f"split {cfg.eval_split!r}"
    return EvalSuite("held-out", pairs, description=f"{len(pairs)} tasks of {len({p['env_id'] for p in pairs})} "
                                                    f"envs ({where})")


def bfcl(cfg) -> EvalSuite:
    """BFCL v4 multi-turn (four categories), see :func:`benchmark`."""
    return benchmark(cfg, "bfcl")


def tau2(cfg) -> EvalSuite:
    """τ²-bench (telecom, retail, airline), see :func:`benchmark`."""
    return benchmark(cfg, "tau2")


def benchmark(cfg, name: str) -> EvalSuite:
    """A benchmark suite of :mod:`agentworld_envs.external`: ``cfg.eval_suite_tasks`` tasks per env of its
    held-out split (a seeded sample; 0 = all), with the benchmark's own turn limits unless
    ``cfg.eval_suite_max_turns`` caps them. Skipped (no pairs, ``skipped`` set) without its extra."""
    from agentworld_envs.arena.evaluation import SUITE_SPLITS, suite_tasks
    from agentworld_envs.external import MissingExtraError

    try:
        pairs = suite_tasks(name, "arena", cfg.eval_suite_tasks, cfg.seed)
    except MissingExtraError as e:
        return EvalSuite(name, [], skipped=str(e))
    env_kwargs: dict[str, Any] = {"split": SUITE_SPLITS["arena"]}
    if cfg.eval_suite_max_turns:
        env_kwargs["max_turns"] = cfg.eval_suite_max_turns
    return EvalSuite(name, [{"env_id": e, "task_id": t} for e, t in pairs], env_kwargs=env_kwargs,
                     description=f"{len(pairs)} held-out tasks of {len({e for e, _ in pairs})} {name} envs",
                     import_modules=["agentworld_envs"])


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a suite (None when it can): a SUITES key or "module:function"."""
    if name in SUITES:
        return None
    module, _, attr = name.partition(":")
    if module and attr and all(part.isidentifier() for part in module.split(".")) and attr.isidentifier():
        return None
    return f"unknown evaluation suite {name!r}; choose from {sorted(SUITES)} or give module:function"


def resolve(name: str):
    """The suite function a name stands for (a SUITES key or "module:function")."""
    problem = name_problem(name)
    if problem:
        raise TrainError(problem)
    target = SUITES.get(name, name)
    module, attr = target.split(":", 1)
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise TrainError(f"evaluation suite {name!r}: cannot load {target} ({e})") from e
    return fn


def build_suites(cfg, skipped: dict[str, str] | None = None) -> list[EvalSuite]:
    """The run's suites, in ``cfg.eval_suites`` order; suites with no tasks are left out (those that
    cannot run here, e.g. a benchmark without its extra, are added to ``skipped``: name -> why)."""
    suites = []
    for name in cfg.eval_suites:
        suite = resolve(name)(cfg)
        if not isinstance(suite, EvalSuite):
            raise TrainError(f"evaluation suite {name!r} returned {type(suite).__name__}, not an EvalSuite")
        if suite.pairs:
            suites.append(suite)
        elif suite.skipped and skipped is not None:
            skipped[suite.name] = suite.skipped
    names = [s.name for s in suites]
    if len(set(names)) != len(names):
        raise TrainError(f"evaluation suites must have distinct names, got {names}")
    return suites
