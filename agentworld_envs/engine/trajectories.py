"""Scripted trajectories over a tool set: no-op, random and near-miss variants of a reference.

Shared by ``agentworld validate`` (through the env) and the task gate (through the runner), so
both play exactly the same trajectories for a task. Pure functions of tool schemas, a value
pool read from the golden state, and a seeded ``random.Random``.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from .actions import format_call

NOOP = format_call("submit", {})


def _random_value(schema: dict[str, Any], rng: random.Random) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "integer":
        return rng.randint(schema.get("minimum", 1), min(schema.get("maximum", 50), schema.get("minimum", 1) + 50))
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(schema.get("items", {}), rng) for _ in range(rng.randint(1, 2))]
    if kind == "object":
        return {}
    return rng.choice(["test", "pending", "A1", "x", "2026-01-01", "cancel"])


def value_pool(spec: dict[str, Any], conn: Any, per_param: int = 12) -> dict[str, dict[str, list[Any]]]:
    """Real values for tool parameters bound to a column (keys, filters, values, set): ``{tool: {param: [...]}}``.

    Random trajectories draw from it half of the time, so they hit real ids and codes and
    do not fail trivially with ``not_found``. Deterministic for a given golden state."""
    pool: dict[str, dict[str, list[Any]]] = {}
    cache: dict[tuple[str, str], list[Any]] = {}
    for tool in spec["tools"]:
        impl, props = tool["impl"], tool["parameters"].get("properties", {})
        table = impl.get("table")
        if not table:
            continue
        binds = []
        if impl.get("key"):
            binds.append((impl["key"]["param"], impl["key"]["column"]))
        binds += [(f["param"], f["column"]) for f in impl.get("filters", []) if f.get("op", "eq") in ("eq", "in")]
        for fld in ("values", "set"):
            binds += [(e.split(":", 1)[1], c) for c, e in impl.get(fld, {}).items()
                      if isinstance(e, str) and e.startswith("$param:")]
        for param, column in binds:
            if param not in props or props[param].get("type") == "array":
                continue
            if (table, column) not in cache:
                try:
                    rows = conn.execute(f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL GROUP BY 1 '
                                        f"ORDER BY MIN(rowid) LIMIT ?", (per_param,)).fetchall()
                except Exception:  # noqa: BLE001 - a pool is a nicety, never a failure
                    rows = []
                cache[(table, column)] = [r[0] for r in rows]
            values = cache[(table, column)]
            if props[param].get("type") == "boolean":
                values = [bool(v) for v in values]
            if values:
                pool.setdefault(tool["name"], {})[param] = values
    return pool


def random_arguments(fn: dict[str, Any], known: dict[str, list[Any]], rng: random.Random) -> dict[str, Any]:
    """Schema-shaped arguments for an OpenAI function schema ``fn``: required ones always, optional ones
    30% of the time; half of the column-bound ones drawn from ``known`` (real values)."""
    props = fn["parameters"].get("properties", {})
    required = set(fn["parameters"].get("required", []))
    args = {}
    for k, v in props.items():
        if k in required or rng.random() < 0.3:
            args[k] = rng.choice(known[k]) if known.get(k) and rng.random() < 0.5 else _random_value(v, rng)
    return args


def random_actions(tools: list[dict[str, Any]], pool: dict[str, dict[str, list[Any]]], rng: random.Random,
                   real: dict[str, str] | None = None, n_calls: int = 6) -> list[str]:
    """A plausible but aimless trajectory: random tools with schema-shaped arguments, random answer.

    ``tools`` are OpenAI schemas (``submit`` among them is skipped), ``real`` maps their shown names
    to spec names for the ``pool``. Half of the arguments that name a column come from the golden
    state (real ids, codes, statuses), so the trajectory gets past lookups and may write to real records."""
    fns = [t["function"] for t in tools if t["function"]["name"] != "submit"]
    real = real or {}
    actions = []
    for _ in range(n_calls):
        fn = rng.choice(fns)
        args = random_arguments(fn, pool.get(real.get(fn["name"], fn["name"]), {}), rng)
        actions.append(format_call(fn["name"], args))
    actions.append(format_call("submit", {"answer": rng.choice(["done", "42", "yes", ""])}))
    return actions


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return (value[:-1] + ("X" if not value.endswith("X") else "Y")) if value else "X"
    return None


def _wrong_answers(answer: Any) -> list[Any]:
    """An answer with its last digit changed (a wrong number, id or code), and a confident non-answer."""
    out: list[Any] = []
    text = answer if isinstance(answer, str) else json.dumps(answer)
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    if digits:
        i = digits[-1]
        out.append(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:])
    elif isinstance(answer, str) and answer:
        out.append(_perturb(answer))
    out.append("Done.")
    return out


def near_misses(solution: list[dict[str, Any]], limit: int = 12) -> list[list[dict[str, Any]]]:
    """Variants of a reference solution: the answer perturbed, one step dropped, or one argument perturbed.

    Ordered so the most telling variants come first: a wrong answer, then missing steps
    (latest first: the writes usually come last), then changed arguments.
    """
    variants: list[list[dict[str, Any]]] = []
    last = solution[-1] if solution else None
    if last and last["name"] == "submit" and "answer" in last["arguments"]:
        for wrong in _wrong_answers(last["arguments"]["answer"]):
            changed = copy.deepcopy(solution)
            changed[-1]["arguments"]["answer"] = wrong
            variants.append(changed)
    body = len(solution) - 1 if last and last["name"] == "submit" else len(solution)
    for i in reversed(range(body)):
        variants.append(solution[:i] + solution[i + 1:])
    for i, step in enumerate(solution[:body]):
        for key, value in step["arguments"].items():
            new = _perturb(value)
            if new is None:
                continue
            changed = copy.deepcopy(solution)
            changed[i]["arguments"][key] = new
            variants.append(changed)
    return variants[:limit] if limit else variants
