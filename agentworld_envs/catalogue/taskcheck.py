"""Tasks from outside a spec (task overlays) get the same validation as a spec's own tasks.

:func:`check_tasks` checks a list of task records against an environment's spec: the spec
schema's task definition, the task-id grammar, unique ids, solution steps that name the
env's tools, check types from the one registry (:data:`agentworld_envs.engine.verifiers.CHECKS`),
Python verifiers that resolve, and ``sql`` checks compiled (never run) read-only against the
env's schema with :func:`agentworld_envs.engine.sqlcheck.read_only_problem` -- so ``PRAGMA``,
``ATTACH`` / ``DETACH``, DDL, writes and transactions are refused when the tasks are loaded,
not discovered inside ``step``. Every problem raises :class:`~agentworld_envs.engine.spec.SpecError`
naming the JSON path.
"""

from __future__ import annotations

import functools
from typing import Any

from ..engine.spec import LIMITS, TASK_ID, SpecError, spec_schema


@functools.cache
def _task_validator():
    import jsonschema

    schema = spec_schema()
    wrapper = {"$schema": schema.get("$schema"), "$defs": schema["$defs"], "$ref": "#/$defs/task"}
    return jsonschema.validators.validator_for(wrapper)(wrapper)


def check_tasks(spec: dict[str, Any], tasks: Any, base: str = "$.tasks") -> None:
    """Raise :class:`SpecError` (with the JSON path under ``base``) unless ``tasks`` are valid tasks of ``spec``."""
    import jsonschema

    from ..engine import state
    from ..engine.sqlcheck import read_only_problem
    from ..engine.verifiers import CHECKS, get_python_verifier

    if not isinstance(tasks, list):
        raise SpecError(base, "must be a list of task objects")
    if len(tasks) > LIMITS["tasks"]:
        raise SpecError(base, f"{len(tasks)} tasks; at most {LIMITS['tasks']} are allowed")
    tools = {t["name"] for t in spec["tools"]}
    seen: set[str] = set()
    conn = None
    try:
        for i, task in enumerate(tasks):
            path = f"{base}[{i}]"
            error = jsonschema.exceptions.best_match(_task_validator().iter_errors(task))
            if error is not None:
                where = error.json_path.replace("$", path, 1)
                raise SpecError(where, error.message[:300])
            if not TASK_ID.fullmatch(task["id"]):
                raise SpecError(f"{path}.id", f"task id {task['id'][:80]!r} must match {TASK_ID.pattern}")
            if task["id"] in seen:
                raise SpecError(f"{path}.id", f"duplicate task id {task['id']!r}")
            seen.add(task["id"])
            for j, step in enumerate(task["solution"]):
                if step["name"] not in tools and step["name"] != "submit":
                    raise SpecError(f"{path}.solution[{j}].name", f"unknown tool {step['name'][:80]!r}")
            if len(task["checks"]) > LIMITS["checks"]:
                raise SpecError(f"{path}.checks", f"at most {LIMITS['checks']} checks are allowed")
            for j, check in enumerate(task["checks"]):
                where = f"{path}.checks[{j}]"
                kind = check["type"]
                if not isinstance(kind, str) or kind not in CHECKS:
                    raise SpecError(f"{where}.type", f"unknown check type {str(kind)[:80]!r}")
                if kind == "python":
                    try:
                        get_python_verifier(check["function"])
                    except (KeyError, ImportError, ValueError) as exc:
                        raise SpecError(f"{where}.function", str(exc.args[0] if exc.args else exc)) from None
                if kind == "sql":
                    if conn is None:
                        conn = state.connect_memory()
                        for table in spec["tables"]:
                            for stmt in state.table_ddl(table):
                                conn.execute(stmt)
                    problem = read_only_problem(conn, check["query"], list(check.get("params", [])))
                    if problem:
                        raise SpecError(f"{where}.query", problem)
    finally:
        if conn is not None:
            conn.close()
