"""Targeted synthesis: a diagnosis becomes a task-generation plan, and the plan becomes gated tasks.

The arena is held out, so training never sees its environments. Weakness found there is
served through the *train* environments of the same categories: more of them where the
arena's categories are weakest, task families (task shapes) the agent fails most, tools of
the kinds it fails (write workflows, lookups, aggregates) and a difficulty floor just above
where success drops. Every targeted task comes from the same generator and passes the same
self-verification gate (hack and fairness probes included); the result is a task overlay
(:mod:`agentworld_envs.catalogue.overlay`) that training reads in every process.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import env_registry

from ..catalogue.overlay import write_overlay


@dataclass
class TargetPlan:
    """How many targeted tasks to make in which train env, of which families, how hard."""

    env_id: str
    n: int
    families: list[str] = field(default_factory=list)
    min_difficulty: float | None = None
    max_steps: int | None = None      # reference calls, submit included (a curriculum limit of the trainer)
    reason: str = ""


def _weak(groups: dict[str, dict[str, Any]], min_support: int = 2) -> list[tuple[str, float]]:
    rows = [(k, v["success_rate"]) for k, v in groups.items() if v["episodes"] >= min_support and k]
    return sorted(rows, key=lambda kv: (kv[1], kv[0]))


def plan_targets(diag: dict[str, Any], *, round_: int, total: int = 48, envs: int = 8, per_env_max: int = 12,
                 train_pool: list[str] | None = None, max_steps: int | None = None) -> list[TargetPlan]:
    """Spread ``total`` targeted tasks over up to ``envs`` train envs, weakest categories first."""
    rng = random.Random(f"targets:{round_}")
    weak_l1 = [k for k, rate in _weak(diag.get("by_l1", {})) if rate < 1.0] or list(diag.get("by_l1", {}))
    weak_families = [k for k, rate in _weak(diag.get("by_family", {})) if rate < 1.0][:3]
    drop = diag.get("success_drop")
    by_diff = diag.get("by_difficulty", {})
    # the difficulty just above where success drops: the lowest bucket below half the best rate
    floor = None
    if by_diff:
        best = max(v["success_rate"] for v in by_diff.values())
        low = sorted(float(k.split("-")[0].rstrip("+")) for k, v in by_diff.items() if v["success_rate"] < best / 2)
        floor = low[0] if low else None
    pool = train_pool or [e["id"] for e in env_registry.select(split="train")]
    by_l1: dict[str, list[str]] = {}
    for e in env_registry.select(ids=pool):
        by_l1.setdefault(e["l1"], []).append(e["id"])
    chosen: list[tuple[str, str]] = []
    for l1 in weak_l1:
        candidates = sorted(by_l1.get(l1, []))
        rng.shuffle(candidates)
        chosen += [(env_id, l1) for env_id in candidates[:max(1, envs // max(1, len(weak_l1)))]]
        if len(chosen) >= envs:
            break
    if not chosen:
        chosen = [(env_id, "") for env_id in sorted(pool)[:envs]]
    chosen = chosen[:envs]
    per = max(1, min(per_env_max, total // len(chosen)))
    reason = f"weak categories {weak_l1[:3]}, families {weak_families}, chain drop at {drop}"
    return [TargetPlan(env_id, per, weak_families, floor, max_steps, reason + (f"; {l1}" if l1 else ""))
            for env_id, l1 in chosen]


def synthesize_targeted(plans: list[TargetPlan], *, round_: int, out: Path) -> tuple[Path, dict[str, Any]]:
    """Make the planned tasks (each gated) and write them as an overlay; returns (path, report)."""
    from ..catalogue.catalog import load_bundle
    from ..tasks.build import FAMILIES, generate_tasks

    by_env: dict[str, list[dict[str, Any]]] = {}
    report: dict[str, Any] = {"round": round_, "plans": [asdict(p) for p in plans], "kept": 0, "rejected": {}}
    for plan in plans:
        bundle = load_bundle(plan.env_id)
        families = [f for f in FAMILIES if not plan.families or f in plan.families] or FAMILIES
        floor = plan.min_difficulty

        def fits(task: dict[str, Any], max_steps=plan.max_steps) -> bool:
            return max_steps is None or len(task["solution"]) <= max_steps

        def accept(task: dict[str, Any], floor=floor) -> bool:
            return fits(task) and (floor is None or task["difficulty"] >= floor)

        tasks, rep = generate_tasks(bundle.spec, bundle.golden, seed=f"target:{round_}:{bundle.name}",
                                    prefix=f"t{round_}", target=plan.n, tools=bundle.tools, accept=accept,
                                    families=families, max_attempts=6 * plan.n + 20)
        if len(tasks) < plan.n and floor is not None:   # the floor was too high for this env: relax it
            more, rep2 = generate_tasks(bundle.spec, bundle.golden, seed=f"target:{round_}:{bundle.name}:relaxed",
                                        prefix=f"t{round_}r", target=plan.n - len(tasks), tools=bundle.tools,
                                        families=families, accept=fits, max_attempts=6 * plan.n + 20)
            tasks += more
            for k, v in rep2["rejected"].items():
                rep["rejected"][k] = rep["rejected"].get(k, 0) + v
        by_env[bundle.name] = tasks
        report["kept"] += len(tasks)
        for k, v in rep["rejected"].items():
            report["rejected"][k] = report["rejected"].get(k, 0) + v
    return write_overlay(out, by_env), report
