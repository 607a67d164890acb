"""Fresh verified tasks for a catalogued environment (``agentworld synth-tasks``, the arena's tasks of a round).

Apart from :mod:`agentworld_envs.tasks`, because it loads the env's catalogue bundle: the
catalogue names the task store as a plug-in, so the task package must not import the catalogue.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..tasks.build import generate_tasks


def synthesize_tasks(env_id: str, n: int = 10, seed: int = 1, focus_tools: Iterable[str] | None = None,
                     min_difficulty: float | None = None, max_steps: int | None = None,
                     families: Iterable[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Fresh verified tasks for ``env_id`` (ids ``fresh<seed>-…``, never the cached set's).

    ``focus_tools``: keep tasks whose reference calls at least one of these tools;
    ``min_difficulty``: keep tasks at least this hard; ``max_steps``: keep tasks whose reference has at
    most this many calls, submit included; ``families``: generate only these task families.
    Returns (tasks, report)."""
    from .catalog import load_bundle

    bundle = load_bundle(env_id)
    focus = set(focus_tools or [])
    unknown = focus - set(bundle.tools)
    if unknown:
        from ..util.errors import UnknownToolError

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
