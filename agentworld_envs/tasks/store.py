"""Task sets in the cache, the ``synth`` task source, and registry statistics.

A task set is keyed by the spec's content hash, :data:`GEN_VERSION`, the seed stream and
whether the LLM paraphrase hook was on; it lives at
``state.cache_dir()/"tasks"/<name>-<key>.json`` with its generation report (kept and
rejected counts by reason, seconds). Train envs use the ``syn`` stream and id prefix;
held-out arena envs use a separate ``arena`` stream and prefix.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import cachefile, state
from ..spec import content_hash
from . import llm
from .build import GEN_VERSION, TARGET, generate_tasks

DEFAULT_SEED = 0


def stream(split: str) -> str:
    return "arena" if split == "arena" else "syn"


def _path(spec: dict[str, Any], split: str, seed: int):
    # The golden key covers data-generation code too: tasks name concrete rows, so new data means new tasks.
    key = content_hash({"spec": content_hash(spec), "golden": state.golden_key(spec), "gen": GEN_VERSION, "seed": seed,
                        "stream": stream(split), "llm": llm.enabled()})[:20]
    key = f"{spec['id']}-{key}"
    return state.cache_dir() / "tasks" / f"{key}.json", key


TASKS_KIND = "task set"
#: Fields every cached task must carry (the env, verifiers and exporters read them).
TASK_FIELDS = ("id", "instruction", "solution", "checks")


def _parse_cached(payload: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Shape check of a cached task file (the hash already vouches for its content)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("tasks"), list) \
            or not isinstance(payload.get("report"), dict):
        raise cachefile.CorruptCacheFile("expected {'tasks': [...], 'report': {...}}")
    for i, task in enumerate(payload["tasks"]):
        if not isinstance(task, dict):
            raise cachefile.CorruptCacheFile(f"tasks[{i}] is not an object")
        missing = [f for f in TASK_FIELDS if f not in task]
        if missing:
            raise cachefile.CorruptCacheFile(f"tasks[{i}] has no {missing[0]!r}")
    return payload["tasks"], payload["report"]


def cached_tasks(spec: dict[str, Any], golden: bytes, split: str = "train", seed: int = DEFAULT_SEED,
                 tools=None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The verified task set of an env (from the cache when its integrity record matches, or generated + gated now)."""
    path, key = _path(spec, split, seed)
    cached = cachefile.load_json(path, key, TASKS_KIND, _parse_cached)
    if cached is not None:
        return cached
    s = stream(split)
    tasks, report = generate_tasks(spec, golden, seed=f"{s}:{spec['id']}:{seed}", prefix=s, target=TARGET, tools=tools)
    cachefile.store_json(path, key, TASKS_KIND, {"tasks": tasks, "report": report})
    return tasks, report


def synth_task_source(bundle) -> list[dict[str, Any]]:
    """``catalog.task_source("synth")``: fills ``bundle.tasks`` for synthesised envs."""
    return cached_tasks(bundle.spec, bundle.golden, bundle.split, tools=bundle.tools)[0]


def task_summary(name: str) -> dict[str, Any]:
    """Per-env task counts for ``build_all.env_summary`` (builds the task set if needed)."""
    import env_registry

    from .. import catalog

    entry = env_registry.entry(name)
    try:
        if entry["source"] == "synth":
            from ..synthesis.builder import cached_spec

            spec, _ = cached_spec(entry["name"])
            tasks, report = cached_tasks(spec, state.golden_bytes(spec), entry["split"])
        else:   # hand-built tasks are not gated at build time: probe them here
            from .probes import add_counts, attack
            from .runner import Runner

            bundle = catalog.load_bundle(entry["name"])
            tasks = bundle.tasks
            runner = Runner(bundle.spec, bundle.golden, bundle.tools)
            try:
                reports = [attack(runner, t, stop_early=False) for t in tasks]
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
            "task_shapes": dict(shapes),
            "task_difficulties": [t.get("difficulty") for t in tasks if t.get("difficulty") is not None],
            "tasks_rejected": report.get("rejected", {}), "task_seconds": report.get("seconds", 0.0),
            "tasks_hack_fail": report.get("hack_fail", 0), "tasks_paraphrase_pass": report.get("paraphrase_pass", 0),
            "task_probes": report.get("probes", {})}


#: Shapes whose difficulty is reasoning about rules and state (``tasks/shapes.py``).
NEW_SHAPES = ("rule_threshold", "time_window", "multi_constraint", "compare_then_act", "create_record")


def _bucket(d: float) -> str:
    lo = min(int(d), 12)
    return f"{lo}+" if lo == 12 else f"{lo}-{lo + 1}"


def merge_task_stats(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Registry-wide task statistics for ``agentworld stats``."""
    ok = [s for s in summaries if not s.get("rejected") and "tasks" in s]
    counts = [s["tasks"] for s in ok]
    hist: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    by_l1: dict[str, set[str]] = {}
    shapes: Counter[str] = Counter()
    shapes_by_l1: dict[str, Counter[str]] = {}
    for s in ok:
        shapes.update(s.get("task_shapes", {}))
        shapes_by_l1.setdefault(s["l1"], Counter()).update(s.get("task_shapes", {}))
        for d in s.get("task_difficulties", []):
            hist[_bucket(d)] += 1
        rejected.update(s.get("tasks_rejected", {}))
        kinds = by_l1.setdefault(s["l1"], set())
        if s.get("tasks_graph"):
            kinds.add("graph")
        if s.get("tasks_programmatic"):
            kinds.add("programmatic")
    from .probes import add_counts

    probes: dict[str, dict[str, int]] = {}
    for s in ok:
        add_counts(probes, s.get("task_probes", {}))
    order = sorted(hist, key=lambda k: int(k.split("-")[0].rstrip("+")))
    secs = [s.get("task_seconds", 0.0) for s in ok if s.get("task_seconds")]
    return {
        "tasks_total": sum(counts),
        "tasks_min_per_env": min(counts) if counts else 0,
        "tasks_hack_fail": sum(s.get("tasks_hack_fail", 0) for s in ok),
        "tasks_paraphrase_pass": sum(s.get("tasks_paraphrase_pass", 0) for s in ok),
        # every hack and fairness probe kind: trajectories run over the kept tasks, and failures (0 when gated)
        "task_probes": dict(sorted(probes.items())),
        "tasks_graph": sum(s.get("tasks_graph", 0) for s in ok),
        "tasks_programmatic": sum(s.get("tasks_programmatic", 0) for s in ok),
        "difficulty_histogram": {k: hist[k] for k in order},
        "tasks_rejected": dict(sorted(rejected.items())),
        "l1_missing_task_kind": sorted(l1 for l1, k in by_l1.items() if k != {"graph", "programmatic"}),
        "tasks_by_shape": dict(sorted(shapes.items())),
        # Every new shape should occur in every first-level category: list the gaps.
        "l1_missing_shapes": {l1: sorted(set(NEW_SHAPES) - set(c)) for l1, c in sorted(shapes_by_l1.items())
                              if set(NEW_SHAPES) - set(c)},
        "task_seconds_mean": round(sum(secs) / len(secs), 3) if secs else 0.0,
    }
