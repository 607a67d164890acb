"""Environment specs: load, validate against the shipped JSON Schema, and hash.

A spec is plain JSON (see ``schemas/env_spec.json``). Validation errors name the
JSON path that is wrong, e.g. ``$.tools[3].parameters.type``, so a spec author can
find the mistake without reading the schema.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from typing import Any

import jsonschema

SPEC_VERSION = 1


class SpecError(ValueError):
    """A spec does not conform to the schema or is internally inconsistent."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}")


@functools.cache
def spec_schema() -> dict[str, Any]:
    """The JSON Schema every environment spec must satisfy."""
    return json.loads(resources.files("agentworld_envs").joinpath("schemas/env_spec.json").read_text())


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = spec_schema()
    # The schema itself is checked against its metaschema by the tests; doing it here cost ~0.7 s per process.
    return jsonschema.validators.validator_for(schema)(schema)


def _json_path(error: jsonschema.ValidationError) -> str:
    # best_match descends into oneOf branches; its absolute_path is the data location.
    return error.json_path


def validate_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Validate ``spec`` structurally and referentially; return it unchanged or raise :class:`SpecError`."""
    error = jsonschema.exceptions.best_match(_validator().iter_errors(spec))
    if error is not None:
        raise SpecError(_json_path(error), error.message)
    _check_references(spec)
    return spec


def _check_references(spec: dict[str, Any]) -> None:
    """Cross-field checks a JSON Schema cannot express (names that must exist)."""
    tables = {t["name"]: {c["name"] for c in t["columns"]} for t in spec["tables"]}
    seen: set[str] = set()
    for i, table in enumerate(spec["tables"]):
        if table["name"] in seen:
            raise SpecError(f"$.tables[{i}].name", f"duplicate table {table['name']!r}")
        seen.add(table["name"])
        if table["name"].startswith(("sqlite_", "_aw_")):
            raise SpecError(f"$.tables[{i}].name", "reserved table name prefix")
        for j, col in enumerate(table["columns"]):
            ref = col.get("references")
            if ref:
                rt, rc = ref.split(".")
                if rt not in tables or rc not in tables[rt]:
                    raise SpecError(f"$.tables[{i}].columns[{j}].references", f"unknown column {ref!r}")
    tool_names: set[str] = set()
    for i, tool in enumerate(spec["tools"]):
        if tool["name"] in tool_names or tool["name"] == "submit":
            raise SpecError(f"$.tools[{i}].name", f"duplicate or reserved tool name {tool['name']!r}")
        tool_names.add(tool["name"])
        impl = tool["impl"]
        table = impl.get("table")
        if table is not None and table not in tables:
            raise SpecError(f"$.tools[{i}].impl.table", f"unknown table {table!r}")
        params = tool["parameters"].get("properties", {})
        for key_name in ("key",):
            key = impl.get(key_name)
            if key and key["param"] not in params:
                raise SpecError(f"$.tools[{i}].impl.key.param", f"{key['param']!r} is not a parameter")
            if key and key["column"] not in tables[table]:
                raise SpecError(f"$.tools[{i}].impl.key.column", f"unknown column {key['column']!r}")
        for j, flt in enumerate(impl.get("filters", [])):
            if flt["param"] not in params:
                raise SpecError(f"$.tools[{i}].impl.filters[{j}].param", f"{flt['param']!r} is not a parameter")
            if flt["column"] not in tables[table]:
                raise SpecError(f"$.tools[{i}].impl.filters[{j}].column", f"unknown column {flt['column']!r}")
        for field in ("values", "set"):
            for col in impl.get(field, {}):
                if col not in tables[table]:
                    raise SpecError(f"$.tools[{i}].impl.{field}.{col}", f"unknown column {col!r} in {table!r}")
    task_ids: set[str] = set()
    for i, task in enumerate(spec.get("tasks", [])):
        if task["id"] in task_ids:
            raise SpecError(f"$.tasks[{i}].id", f"duplicate task id {task['id']!r}")
        task_ids.add(task["id"])
        for j, step in enumerate(task["solution"]):
            if step["name"] not in tool_names and step["name"] != "submit":
                raise SpecError(f"$.tasks[{i}].solution[{j}].name", f"unknown tool {step['name']!r}")


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, Unicode kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(obj: Any) -> str:
    """SHA-256 of :func:`canonical_json` (hex, 16 chars are plenty for cache keys)."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()
