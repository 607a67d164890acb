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
* :mod:`agentworld_envs.audit.task_summary` — one env's task counts for ``agentworld build`` / ``stats``;
* :mod:`agentworld_envs.serving.export` — Hugging Face datasets of tasks and SFT trajectories.
"""

from __future__ import annotations

from .build import GEN_VERSION, generate_tasks
from .graph import describe_graph, graph_json, tool_graph
from .store import cached_tasks, merge_task_stats


__all__ = ["GEN_VERSION", "cached_tasks", "describe_graph", "generate_tasks", "graph_json", "merge_task_stats",
           "tool_graph"]
