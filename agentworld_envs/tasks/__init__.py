"""Verified tasks for every synthesised environment.

* :mod:`.graph` — the tool dependency graph (networkx) derived from spec schemas;
* :mod:`.generate` / :mod:`.build` — graph-walk and programmatic candidates executed on the golden state;
* :mod:`.shapes` / :mod:`.hard` — rule and state shapes, and the hard tier (>= 8 dependent calls);
* :mod:`.factors` / :mod:`.baselines` — difficulty from measured factors, scripted greedy / no-lookup agents;
* :mod:`.runner` — one savepointed connection per env and the self-verification gate;
* :mod:`.seal` — a task's exact intended change and answer candidates, from its reference;
* :mod:`.probes` — the hack and fairness probes the gate runs on every task;
* :mod:`.store` — cached task sets, the ``synth`` task source (named by the catalogue as
  ``"agentworld_envs.tasks.store:synth_task_source"``), registry statistics;
* :mod:`.summary` — one env's task counts for ``agentworld build`` / ``stats``;
* :mod:`.export` — Hugging Face datasets of tasks and SFT trajectories.
"""

from __future__ import annotations

from typing import Any, Iterable

from .build import GEN_VERSION, generate_tasks
from .graph import describe_graph, graph_json, tool_graph
from .store import cached_tasks, merge_task_stats
from .summary import task_summary


def synthesize_tasks(env_id: str, n: int = 10, seed: int = 1, focus_tools: Iterable[str] | None = None,
                     min_difficulty: float | None = None, max_steps: int | None = None,
                     families: Iterable[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Fresh verified tasks for ``env_id`` (ids ``fresh<seed>-…``, never the cached set's).

    ``focus_tools``: keep tasks whose reference calls at least one of these tools;
    ``min_difficulty``: keep tasks at least this hard; ``max_steps``: keep tasks whose reference has at
    most this many calls, submit included; ``families``: generate only these task families.
    Returns (tasks, report)."""
    from ..catalog import load_bundle

    bundle = load_bundle(env_id)
    focus = set(focus_tools or [])
    unknown = focus - set(bundle.tools)
    if unknown:
        from ..errors import UnknownToolError

        raise UnknownToolError(f"unknown tools for {bundle.env_id}: {sorted(unknown)}")

    def accept(task: dict[str, Any]) -> bool:
        if focus and not focus & {s["name"] for s in task["solution"]}:
            return False
        if max_steps is not None and len(task["solution"]) > max_steps:
            return False
        return min_difficulty is None or task["difficulty"] >= min_difficulty

    attempts = 6 * n + 20 if (focus or min_difficulty or max_steps) else 3 * n + 12
    return generate_tasks(bundle.spec, bundle.golden, seed=f"fresh:{bundle.name}:{seed}", prefix=f"fresh{seed}",
                          target=n, tools=bundle.tools, accept=accept, max_attempts=attempts, families=families)


__all__ = ["GEN_VERSION", "cached_tasks", "describe_graph", "generate_tasks", "graph_json", "merge_task_stats",
           "synthesize_tasks", "task_summary", "tool_graph"]
