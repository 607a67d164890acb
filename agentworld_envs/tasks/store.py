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

from ..util import cachefile
from ..engine import state
from ..engine.spec import content_hash
from . import llm
from .baselines import BASELINES
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


#: Per-task figures ``agentworld stats`` relates: difficulty, reference calls, hard tier, and whether each
#: scripted baseline (:mod:`.baselines`) fails it (None: not played).
ROW_FIELDS = ("difficulty", "calls", "hard", *(f"{b}_failed" for b in BASELINES))


def task_row(task: dict[str, Any]) -> list[Any]:
    knobs = task.get("knobs") or {}
    failed = knobs.get("baselines_failed") or {}
    return [float(task.get("difficulty") or 0.0), sum(1 for s in task["solution"] if s["name"] != "submit"),
            int("hard" in (task.get("tags") or ()) or knobs.get("tier") == "hard"), *(failed.get(b) for b in BASELINES)]


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sx = sum((x - mx) ** 2 for x in xs) ** 0.5
    sy = sum((y - my) ** 2 for y in ys) ** 0.5
    return round(sxy / (sx * sy), 3) if sx and sy else None


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    if not xs:
        return 0.0
    mid = len(xs) // 2
    return float(xs[mid]) if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def headroom_stats(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """How difficulty relates to reference length and to the scripted baselines' failures, the hard tier,
    and the task-level lint classes (``lint_tasks.py``) across ``summaries``."""
    from .lint import TASK_RULES

    rows = [dict(zip(ROW_FIELDS, r)) for s in summaries for r in s.get("task_rows", [])]
    hard = [r for r in rows if r["hard"]]
    by_diff = sorted(rows, key=lambda r: r["difficulty"])
    top = by_diff[len(by_diff) - len(by_diff) // 3:] if len(by_diff) >= 3 else by_diff
    out: dict[str, Any] = {
        "difficulty_vs_calls_pearson": _pearson([r["difficulty"] for r in rows], [r["calls"] for r in rows]),
        "reference_calls_median": _median([r["calls"] for r in rows]),
        "top_third_reference_calls_median": _median([r["calls"] for r in top]),
        "hard_tasks": len(hard),
        "envs_without_hard_tasks": sum(1 for s in summaries if s.get("task_rows") and not any(r[2] for r in s["task_rows"])),
        "hard_reference_calls_median": _median([r["calls"] for r in hard]),
        "hard_reference_calls_min": min((r["calls"] for r in hard), default=0),
    }
    failure: dict[str, Any] = {}
    for b in BASELINES:
        played = [r for r in rows if r[f"{b}_failed"] is not None]
        if not played:
            continue
        played_by_diff = sorted(played, key=lambda r: r["difficulty"])
        thirds = [played_by_diff[i * len(played) // 3:(i + 1) * len(played) // 3] for i in range(3)]
        def rate(rs: list[dict[str, Any]], b: str = b) -> float | None:
            return round(sum(bool(r[f"{b}_failed"]) for r in rs) / len(rs), 3) if rs else None

        failure[b] = {"rate": rate(played), "hard": rate([r for r in played if r["hard"]]),
                      "standard": rate([r for r in played if not r["hard"]]),
                      "by_difficulty_third": [rate(t) for t in thirds],
                      "difficulty_pearson": _pearson([r["difficulty"] for r in played],
                                                     [float(bool(r[f"{b}_failed"])) for r in played])}
    out["baseline_failure"] = failure
    lint = Counter()
    for s in summaries:
        lint.update({k: v for k, v in (s.get("lint") or {}).get("by_rule", {}).items() if k in TASK_RULES})
    out["task_lint"] = {r: lint[r] for r in TASK_RULES}
    return out


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
        **headroom_stats(ok),
    }
