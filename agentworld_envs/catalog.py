"""From a registered name to everything an episode needs: spec, golden state, tools, tasks.

:func:`load_bundle` is cached per process, so a thousand env instances of one id share
one spec, one golden byte string and one set of compiled tools.
"""

from __future__ import annotations

import copy
import functools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import env_registry

from . import state
from .registry import Registry
from .spec import SpecError, content_hash, validate_spec
from .tools import Tool, compile_tool

SpecBuilder = Callable[[dict[str, Any]], dict[str, Any]]
TaskSource = Callable[["EnvBundle"], list[dict[str, Any]]]


def _load_source(source: str) -> None:
    # Synthesised sources register themselves when their package is imported.
    import importlib

    importlib.import_module("agentworld_envs.synthesis")


#: How manifest entries with ``"source": name`` become (validated) specs.
SPEC_BUILDERS: Registry[SpecBuilder] = Registry("spec builder", _load_source)
#: Where the tasks of entries with ``"source": name`` come from (default: the spec's own ``tasks``).
TASK_SOURCES: Registry[TaskSource] = Registry("task source")
spec_builder = SPEC_BUILDERS.register
task_source = TASK_SOURCES.register


@spec_builder("handbuilt")
def _handbuilt_spec(entry: dict[str, Any]) -> dict[str, Any]:
    from . import domains

    return validate_spec(domains.load(entry["name"]).build_spec())


@dataclass
class EnvBundle:
    """Shared, read-only per-process data of one environment."""

    name: str
    env_id: str
    split: str
    spec: dict[str, Any]
    golden: bytes
    tools: dict[str, Tool]
    tasks: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.set_tasks(self.tasks)
        self._initial: sqlite3.Connection | None = None
        self._table_hashes: dict[str, str] | None = None
        #: Competing-value sets the verifiers read from the golden state, shared by this env's episodes.
        self.verifier_memo: dict[Any, Any] = {}
        self._value_pool: dict[str, dict[str, list[Any]]] | None = None

    def set_tasks(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = tasks
        self.task_index = {t["id"]: i for i, t in enumerate(tasks)}

    @property
    def initial(self) -> sqlite3.Connection:
        """A read-only connection to the golden state (for verifiers and diffs)."""
        if self._initial is None:
            conn = state.episode_connection(self.golden)
            conn.execute("PRAGMA query_only = ON")
            self._initial = conn
        return self._initial

    def value_pool(self) -> dict[str, dict[str, list[Any]]]:
        """Real values for column-bound tool parameters (what scripted random trajectories draw from)."""
        if self._value_pool is None:
            from .trajectories import value_pool

            self._value_pool = value_pool(self.spec, self.initial)
        return self._value_pool

    @property
    def initial_table_hashes(self) -> dict[str, str]:
        if self._table_hashes is None:
            self._table_hashes = {t: state.table_hash(self.initial, t) for t in state.user_tables(self.initial)}
        return self._table_hashes

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.openai_schema() for t in self.tools.values()]


_INLINE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def register_spec(spec: dict[str, Any], split: str = "train", replace: bool = False) -> str:
    """Register a spec you wrote yourself as ``agentworld/<spec id>-v0``; returns the gym id.

    Prefer ``agentworld_envs.register_spec`` (:func:`agentworld_envs.plugins.register_spec`), which
    also resolves the spec's Python hooks first; this module cannot import the verifiers without
    an import cycle. The spec is validated first (schema and safety rules); its golden state
    is built into the cache on first ``make``. An id that is already taken (a catalogue env, or
    another spec registered under it) raises :class:`SpecError` unless ``replace=True``;
    registering the very same spec again is a no-op. The spec is copied, so editing the dict
    afterwards does not change the registered environment.
    """
    import gymnasium as gym

    validate_spec(spec)
    spec = copy.deepcopy(spec)
    env_id = f"agentworld/{spec['id']}-v0"
    if not replace:
        _check_id_free(spec, split, env_id)
    tax = spec["taxonomy"]
    entry = {"name": spec["id"], "id": env_id, "split": split, "l1": tax["l1"], "l2": tax["l2"], "l3": tax["l3"],
             "source": "inline"}
    _INLINE[spec["id"]] = (entry, spec)
    load_bundle.cache_clear()
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point="agentworld_envs.env:AgentWorldEnv", kwargs={"env_name": spec["id"]})
    return env_id


def _check_id_free(spec: dict[str, Any], split: str, env_id: str) -> None:
    import gymnasium as gym

    taken = _INLINE.get(spec["id"])
    if taken is not None:
        if content_hash(taken[1]) == content_hash(spec) and taken[0]["split"] == split:
            return  # the same spec again: nothing would change
        raise SpecError("$.id", f"{env_id} is already registered with a different spec; pass replace=True to replace it")
    try:
        env_registry.entry(spec["id"])
    except KeyError:
        pass
    else:
        raise SpecError("$.id", f"{env_id} is a catalogue environment; choose another id or pass replace=True")
    if env_id in gym.registry:
        raise SpecError("$.id", f"{env_id} is already registered with Gymnasium by other code; pass replace=True")


def _entry(name: str) -> dict[str, Any]:
    key = name.removeprefix("agentworld/").removesuffix("-v0")
    if key in _INLINE:
        return _INLINE[key][0]
    return env_registry.entry(name)


def build_spec(name: str) -> dict[str, Any]:
    """The validated spec of a registered environment."""
    entry = _entry(name)
    if entry["source"] == "inline":
        return _INLINE[entry["name"]][1]
    # Builders return validated specs: the synthesiser validates once, before caching, so loading
    # a cached spec does not pay jsonschema's ~0.7 s over 60 tools again in every process.
    return SPEC_BUILDERS.get(entry["source"])(entry)


@functools.lru_cache(maxsize=64)
def load_bundle(name: str) -> EnvBundle:
    """Spec, golden bytes, compiled tools and tasks of ``name``; built into the cache on first use."""
    entry = _entry(name)
    spec = build_spec(name)
    bundle = EnvBundle(
        name=entry["name"], env_id=entry["id"], split=entry["split"], spec=spec,
        golden=state.golden_bytes(spec),
        tools={t["name"]: compile_tool(t) for t in spec["tools"]},
    )
    source = TASK_SOURCES.get(entry["source"]) if entry["source"] in TASK_SOURCES else None
    if source:
        tasks = source(bundle)
    else:
        # Hand-written and inline tasks get their exact state check and answer candidates here;
        # synthesised ones are sealed when generated.
        from .tasks.seal import seal_all

        tasks = seal_all(spec, bundle.golden, list(spec.get("tasks", [])), bundle.tools)
    bundle.set_tasks(tasks)
    return bundle
