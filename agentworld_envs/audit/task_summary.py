"""One environment's task counts for ``agentworld build`` and ``agentworld stats``.

Apart from :mod:`agentworld_envs.tasks.store` because it loads catalogue bundles: the catalogue names
``store.synth_task_source`` as a plug-in, so the store must not import the catalogue back.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..engine import state
from ..tasks.store import cached_tasks, task_row


def task_summary(name: str) -> dict[str, Any]:
    """Per-env task counts for ``build_all.env_summary`` (builds the task set if needed)."""
    import env_registry

    from ..catalogue import catalog

    entry = env_registry.entry(name)
    try:
        if entry["source"] == "synth":
            from ..synthesis.builder import cached_spec

            spec, _ = cached_spec(entry["name"])
            tasks, report = cached_tasks(spec, state.golden_bytes(spec), entry["split"])
        else:   # hand-built tasks are not gated at build time: probe them here
            from ..tasks.probes import add_counts, attack
            from ..tasks.runner import Runner

            from ..tasks.baselines import play

            bundle = catalog.load_bundle(entry["name"])
            tasks = bundle.tasks
            runner = Runner(bundle.spec, bundle.golden, bundle.tools)
            try:
                reports = [attack(runner, t, stop_early=False) for t in tasks]
                tasks = [{**t, "knobs": {**(t.get("knobs") or {}), "baselines_failed": play(runner, t)}} for t in tasks]
            finally:
                runner.close()
            counts: dict[str, dict[str, int]] = {}
            for r in reports:
                add_counts(counts, r.counts())
            report = {"rejected": {}, "seconds": 0.0, "hack_fail": sum(r.hack_fail for r in reports),
                      "paraphrase_pass": sum(r.paraphrase_pass for r in reports), "probes": counts}
    except Exception as exc:  # noqa: BLE001 - a summary must not break the build of other envs
        return {"tasks": 0, "tasks_graph": 0, "tasks_programmatic": 0, "task_difficulties": [],
                "tasks_rejected": {"error": 1}, "task_error": f"{type(exc).__name__}: {exc}"[:300]}
    kinds = Counter(t.get("kind", "handcrafted") for t in tasks)
    shapes = Counter((t.get("knobs") or {}).get("shape", "handcrafted") for t in tasks)
    return {"tasks": len(tasks), "tasks_graph": kinds["graph"], "tasks_programmatic": kinds["programmatic"],
            "task_shapes": dict(shapes), "task_rows": [task_row(t) for t in tasks],
            "task_difficulties": [t.get("difficulty") for t in tasks if t.get("difficulty") is not None],
            "tasks_rejected": report.get("rejected", {}), "task_seconds": report.get("seconds", 0.0),
            "tasks_hack_fail": report.get("hack_fail", 0), "tasks_paraphrase_pass": report.get("paraphrase_pass", 0),
            "task_probes": report.get("probes", {})}
