"""Checks that need the engine: Python hooks resolved, spec SQL compiled read-only; the public ``register_spec``.

A spec may name a registered data generator, Python tools and Python verifiers. Resolving them
when the spec is registered turns a typo into a :class:`~agentworld_envs.engine.spec.SpecError` with
its JSON path, instead of a ``KeyError`` at ``gym.make`` or, worse, in the middle of an episode.
Likewise the SQL a spec carries (``sql`` verifier queries, tool precondition expressions) is
compiled against the spec's schema and must be one read-only statement.
(This lives above :mod:`agentworld_envs.catalogue.catalog` and :mod:`agentworld_envs.registration`: the
catalogue records the spec, registration names the env class for Gymnasium, and the env class
imports the catalogue.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .catalogue import catalog
from . import registration
from .engine import state
from .engine.datagen import get_data_generator
from .engine.spec import SpecError, validate_spec
from .engine.sqlcheck import read_only_problem
from .engine.tools import get_python_tool, precondition_sql
from .engine.verifiers import get_python_verifier


def check_plugins(spec: dict[str, Any]) -> None:
    """Resolve every Python hook ``spec`` names; an unknown name raises :class:`SpecError` with its path."""

    def resolve(get: Callable[[str], Any], name: str, path: str) -> None:
        try:
            get(name)
        except (KeyError, ImportError, ValueError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise SpecError(path, str(message)) from None

    if "generator" in spec["data"]:
        resolve(get_data_generator, spec["data"]["generator"], "$.data.generator")
    for i, tool in enumerate(spec["tools"]):
        if tool["impl"]["kind"] == "python":
            resolve(get_python_tool, tool["impl"]["function"], f"$.tools[{i}].impl.function")
    for i, task in enumerate(spec.get("tasks", [])):
        for j, check in enumerate(task.get("checks", [])):
            if check.get("type") == "python":
                resolve(get_python_verifier, check["function"], f"$.tasks[{i}].checks[{j}].function")


def check_sql(spec: dict[str, Any]) -> None:
    """Compile (never run) every query and precondition of ``spec`` read-only against its empty schema."""
    conn = state.connect_memory()
    try:
        for table in spec["tables"]:
            for stmt in state.table_ddl(table):
                conn.execute(stmt)
        for i, tool in enumerate(spec["tools"]):
            impl = tool["impl"]
            for j, pre in enumerate(impl.get("preconditions", [])):
                if "expr" not in pre:
                    continue
                # The same statement tools.py runs, with the tool's named parameters bound as NULL here.
                sql = precondition_sql(impl, pre["expr"])
                problem = read_only_problem(conn, sql)
                if problem:
                    raise SpecError(f"$.tools[{i}].impl.preconditions[{j}].expr", problem)
        for i, task in enumerate(spec.get("tasks", [])):
            for j, check in enumerate(task.get("checks", [])):
                if check.get("type") == "sql":
                    problem = read_only_problem(conn, check["query"], list(check.get("params", [])))
                    if problem:
                        raise SpecError(f"$.tasks[{i}].checks[{j}].query", problem)
    finally:
        conn.close()


def register_spec(spec: dict[str, Any], split: str = "train", replace: bool = False) -> str:
    """Validate ``spec``, resolve its Python hooks and register it as ``agentworld/<spec id>-v0``.

    See :func:`agentworld_envs.catalogue.catalog.add_inline_spec` for the id rules (``replace``).
    """
    validate_spec(spec)
    check_plugins(spec)
    check_sql(spec)
    env_id = catalog.add_inline_spec(spec, split=split, replace=replace)
    registration.register_inline(env_id, spec["id"])
    return env_id
