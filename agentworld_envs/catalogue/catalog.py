"""From a registered name to everything an episode needs: spec, golden state, tools, tasks.

:func:`load_bundle` is cached per process, so a thousand env instances of one id share
one spec, one golden byte string and one set of compiled tools.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import marshal
import os
import re
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import env_registry

from ..util import cachefile
from ..engine import datagen, state, tools, verifiers
from .. import domains
from ..util.errors import CacheError
from ..util.registry import Registry
from ..engine.spec import SpecError, content_hash, validate_spec
from ..engine.tools import Tool, compile_tool

SpecBuilder = Callable[[dict[str, Any]], dict[str, Any]]
TaskSource = Callable[["EnvBundle"], Sequence[dict[str, Any]]]

#: How manifest entries with ``"source": name`` become (validated) specs. Each source is named by
#: a ``"module:attr"`` string, imported on first use: the catalogue imports no synthesis or task
#: code of its own accord, and a source that is not listed here (or added with
#: ``SPEC_BUILDERS.add`` / ``spec_builder``) is an error, never a fallback.
SPEC_BUILDERS: Registry[SpecBuilder] = Registry("spec builder", targets={
    "handbuilt": "agentworld_envs.catalogue.catalog:handbuilt_spec",
    "inline": "agentworld_envs.catalogue.catalog:inline_spec",
    "synth": "agentworld_envs.synthesis.builder:theme_spec",
})
#: Where the (sealed) tasks of entries with ``"source": name`` come from; every source names one.
TASK_SOURCES: Registry[TaskSource] = Registry("task source", targets={
    "handbuilt": "agentworld_envs.catalogue.catalog:spec_tasks",
    "inline": "agentworld_envs.catalogue.catalog:spec_tasks",
    "synth": "agentworld_envs.tasks.store:synth_task_source",
})
spec_builder = SPEC_BUILDERS.register
task_source = TASK_SOURCES.register

# A hand-built domain's Python hooks (``retail.cancel_pending_order``, the ``retail`` data
# generator) are registered when its module is imported; a bundle loaded from the cache names
# them before anything imported the domain, so the hook registries load it on first use.
for _hooks in (tools.PYTHON_TOOLS, verifiers.PYTHON_VERIFIERS, datagen.DATA_GENERATORS):
    _hooks.loader = domains.load_owner


def handbuilt_spec(entry: dict[str, Any]) -> dict[str, Any]:
    """Spec builder of ``handbuilt`` entries: the hand-built domain module of that name."""
    return validate_spec(domains.load(entry["name"]).build_spec())


def inline_spec(entry: dict[str, Any]) -> dict[str, Any]:
    """Spec builder of ``inline`` entries: the spec given to :func:`register_spec` (validated there)."""
    return _INLINE[entry["name"]][1]


def spec_tasks(bundle: EnvBundle) -> list[dict[str, Any]]:
    """Task source of hand-built and inline specs: the spec's own tasks, sealed.

    Sealing gives each task its exact intended state change and answer candidates; synthesised
    tasks are sealed when generated (``tasks.store``).
    """
    from ..tasks.seal import seal_all

    return seal_all(bundle.spec, bundle.golden, list(bundle.spec.get("tasks", [])), bundle.tools)


@dataclass
class EnvBundle:
    """Shared, read-only per-process data of one environment.

    A bundle loaded from its cached artefact starts with only what a ``make`` + ``reset`` reads:
    ``head`` (the spec's small fields: clock, policy, turn limit...), the tools' OpenAI schemas, and
    tools that are parsed and compiled one by one when first called (:class:`LazyTools`). The full
    ``spec`` (tables, data rules, every tool's definition) is parsed from the verified bundle bytes
    the first time something asks for it.
    """

    name: str
    env_id: str
    split: str
    spec: dict[str, Any]
    golden: bytes
    tools: Mapping[str, Tool]
    tasks: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.set_tasks(self.tasks, getattr(self.tasks, "ids", None))
        #: Where a loaded bundle's golden database lives and the integrity record the bundle keeps
        #: for it. Such a bundle holds no golden bytes until something asks for ``golden``:
        #: :meth:`connect` copies the verified file straight into SQLite (see :meth:`connect`).
        self.golden_file: str | None = None
        self.golden_record: cachefile.CacheRecord | None = None
        #: Spec fields a make, reset and step read (the whole spec unless the bundle is lazy).
        self.head: dict[str, Any] = self.__dict__["spec"] if self.__dict__["spec"] is not None else {}
        self._complete_spec: Callable[[], dict[str, Any]] | None = None
        self._schemas: list[dict[str, Any]] | None = None
        self._initial: sqlite3.Connection | None = None
        self._table_hashes: Mapping[str, str] | None = None
        #: Competing-value sets the verifiers read from the golden state, shared by this env's episodes.
        self.verifier_memo: dict[Any, Any] = {}
        self._value_pool: dict[str, dict[str, list[Any]]] | None = None
        self._shown: dict[bool, list[dict[str, Any]]] = {}
        self._names: dict[bool, tuple[dict[str, str], dict[str, str]]] = {}
        #: Size of the spec and tasks as JSON text, for the bundle cache's memory estimate.
        self.json_bytes = 0

    def set_tasks(self, tasks: Sequence[dict[str, Any]], ids: Sequence[str] | None = None) -> None:
        """Install the sealed task list; ``ids`` (when known) spares parsing every lazy task for the index."""
        self.tasks = tasks
        self.task_index = {t: i for i, t in enumerate(ids)} if ids is not None \
            else {t["id"]: i for i, t in enumerate(tasks)}

    @property
    def golden_size(self) -> int:
        """Size of the golden database in bytes (without reading it)."""
        data = self.__dict__["golden"]
        return len(data) if data is not None else self.golden_record.size  # type: ignore[union-attr]

    def connect(self) -> sqlite3.Connection:
        """A private, writable in-memory copy of the golden state: one episode's database.

        A loaded bundle copies its golden file into SQLite through a memory map of the verified
        file (:func:`cachefile.mapped_if_matches`, checked against the bundle's record each
        time), not through a ``bytes`` copy first: the copy would be a sizeable share of a first
        ``make`` + ``reset``, and a bundle that never needs the bytes never holds them. A file
        that is gone or no longer matches falls back to :attr:`golden`, which rebuilds it.
        """
        if self.__dict__["golden"] is None and self.golden_file is not None:
            with cachefile.mapped_if_matches(self.golden_file, self.golden_record) as view:  # type: ignore[arg-type]
                if view is not None:
                    return state.episode_connection(view)
        return state.episode_connection(self.golden)

    @property
    def initial(self) -> sqlite3.Connection:
        """A read-only connection to the golden state (for verifiers and diffs)."""
        if self._initial is None:
            conn = self.connect()
            conn.execute("PRAGMA query_only = ON")
            self._initial = conn
        return self._initial

    def value_pool(self) -> dict[str, dict[str, list[Any]]]:
        """Real values for column-bound tool parameters (what scripted random trajectories draw from)."""
        if self._value_pool is None:
            from ..engine.trajectories import value_pool

            self._value_pool = value_pool(self.spec, self.initial)
        return self._value_pool

    @property
    def initial_table_hashes(self) -> Mapping[str, str]:
        """Content hash of each golden table, computed when a verifier first asks for that table.

        Hashing every table up front cost ~14 ms per env (the ``footprint`` check reads only the
        few tables an episode touched), which dominated one-episode-per-env sweeps of the registry.
        """
        if self._table_hashes is None:
            self._table_hashes = _LazyTableHashes(self.initial)  # the connection, not self: no reference cycle
        return self._table_hashes

    def display_names(self, obscure: bool) -> tuple[dict[str, str], dict[str, str]]:
        """Spec name -> the name an env shows (``tool_01``… when ``obscure``), and its inverse.

        Built once per bundle and shared by its env instances (which must not edit them)."""
        maps = self._names.get(obscure)
        if maps is None:
            shown = {n: (f"tool_{i + 1:02d}" if obscure else n) for i, n in enumerate(self.tools)}
            maps = self._names[obscure] = (shown, {d: n for n, d in shown.items()})
        return maps

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.openai_schema() for t in self.tools.values()]

    def shown_schemas(self, obscure: bool) -> list[dict[str, Any]]:
        """OpenAI schemas of every tool as an env shows them (``tool_01``… when ``obscure``).

        Built once per bundle and shared by its env instances, like the bundle's spec (a new list
        each call; the schema dicts are shared and must not be edited). A loaded bundle has them
        from its artefact, so showing the tools compiles none of them."""
        schemas = self._shown.get(obscure)
        if schemas is None:
            if self._schemas is not None:
                plain = self._schemas
                schemas = [{**s, "function": {**s["function"], "name": f"tool_{i + 1:02d}"}} for i, s in enumerate(plain)] \
                    if obscure else plain
            else:
                schemas = [t.openai_schema(f"tool_{i + 1:02d}" if obscure else n)
                           for i, (n, t) in enumerate(self.tools.items())]
            self._shown[obscure] = schemas
        return list(schemas)


def _spec_get(self: EnvBundle) -> dict[str, Any]:
    spec = self.__dict__["spec"]
    if spec is None:  # a lazily loaded bundle: parse the rest of the spec once, from the verified bytes
        spec = self.__dict__["spec"] = self._complete_spec()  # type: ignore[misc]
        self._complete_spec = None
    return spec


def _spec_set(self: EnvBundle, value: dict[str, Any]) -> None:
    self.__dict__["spec"] = value
    if "head" in self.__dict__ and value is not None:
        self.head = value


def _golden_get(self: EnvBundle) -> bytes:
    data = self.__dict__["golden"]
    if data is None:  # a loaded bundle: read its golden file, checked against the bundle's record
        path, record = self.golden_file, self.golden_record
        data = cachefile.load_if_matches(path, record)  # type: ignore[arg-type]
        if data is None:
            # Deleted, corrupted or replaced since the bundle was loaded: rebuild it from the spec
            # (warned, and stored again). The build is deterministic, so the bytes must match the
            # record that the bundle's sealed tasks were made against; anything else is refused.
            data = state.golden_bytes(self.spec)
            if len(data) != record.size or not record.matches(data):  # type: ignore[union-attr]
                raise CacheError(path, "was rebuilt with other content than its bundle recorded",  # type: ignore[arg-type]
                                 "delete the cache directory (AGENTWORLD_CACHE) to rebuild everything")
        self.__dict__["golden"] = data
    return data


def _golden_set(self: EnvBundle, value: bytes | None) -> None:
    self.__dict__["golden"] = value


# Properties installed after the dataclass is built, so ``EnvBundle(spec=..., golden=...)`` keeps its signature.
EnvBundle.spec = property(_spec_get, _spec_set)  # type: ignore[assignment]
EnvBundle.golden = property(_golden_get, _golden_set)  # type: ignore[assignment]


class _LazyTableHashes(Mapping):
    """``{table: state.table_hash(golden, table)}`` for the golden user tables, filled on first access."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self._hashes: dict[str, str] = {}
        self._tables: list[str] | None = None

    def _names(self) -> list[str]:
        if self._tables is None:
            self._tables = state.user_tables(self._conn)
        return self._tables

    def __getitem__(self, table: str) -> str:
        value = self._hashes.get(table)
        if value is None:
            if table not in self._names():
                raise KeyError(table)
            value = self._hashes[table] = state.table_hash(self._conn, table)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


class LazyTasks(Sequence):
    """A bundle's sealed tasks, each kept as its JSON text and parsed on first access.

    A first ``make`` + ``reset`` plays one task, so a loaded bundle parses the one it needs
    instead of all of them (retail: 68 tasks, 94 KB of JSON, ~1 ms). Compares equal to the list
    of the same tasks and pickles as a plain list. Parsed tasks are shared by the bundle's envs,
    like its spec, and must not be edited.
    """

    __slots__ = ("ids", "_texts", "_parsed", "_where")

    def __init__(self, ids: Sequence[str], texts: Sequence[str | bytes | memoryview], where: str = "bundle"):
        self.ids = list(ids)
        self._texts = texts
        self._parsed: list[dict[str, Any] | None] = [None] * len(texts)
        self._where = where

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        task = self._parsed[index]
        if task is None:
            task = cachefile.loads(self._texts[index])
            if not isinstance(task, dict) or task.get("id") != self.ids[index] \
                    or not all(f in task for f in ("id", "instruction", "solution", "checks")):
                # The artefact's hash matched, so only a format bug can get here: say where.
                raise cachefile.CorruptCacheFile(f"{self._where}: task {index} is not the complete task "
                                                 f"{self.ids[index]!r}; delete the file to rebuild it")
            self._parsed[index] = task
        return task

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyTasks, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return list, (list(self),)

    def __repr__(self) -> str:
        return f"LazyTasks({len(self)} tasks)"


_INLINE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def add_inline_spec(spec: dict[str, Any], split: str = "train", replace: bool = False) -> str:
    """Add a spec you wrote yourself to the catalogue as ``agentworld/<spec id>-v0``; returns that id.

    This is the catalogue's half of ``agentworld_envs.register_spec``
    (:func:`agentworld_envs.plugins.register_spec`), which also resolves the spec's Python hooks
    and registers the id with Gymnasium; call that one. The spec is validated first (schema and
    safety rules); its golden state is built into the cache on first ``make``. An id that is
    already taken (a catalogue env, or another spec registered under it) raises
    :class:`SpecError` unless ``replace=True``; adding the very same spec again is a no-op. The
    spec is copied, so editing the dict afterwards does not change the environment.
    """
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
    # Builders return validated specs: the synthesiser validates once, before caching, so loading
    # a cached spec does not pay jsonschema's ~0.7 s over 60 tools again in every process.
    return SPEC_BUILDERS.get(entry["source"])(entry)


#: Sources whose bundle is cached as one artefact: their inputs are the manifest entry, the
#: catalogue data and this package's code, all covered by :func:`code_fingerprint`. Inline specs
#: live in memory, and third-party sources run code this fingerprint does not see.
BUNDLED_SOURCES = frozenset({"synth", "handbuilt"})
BUNDLE_KIND = "env bundle"
#: Default bound of the in-process bundle cache (``AGENTWORLD_BUNDLE_CACHE_MB`` overrides it).
DEFAULT_BUNDLE_CACHE_MB = 256


def _load_bundle(name: str) -> EnvBundle:
    """Spec, golden bytes, compiled tools and tasks of ``name``; built into the cache on first use.

    A built catalogue env is one cached artefact (``bundles/<name>-<key>.bundle``: its validated
    spec, its sealed tasks, each parsed when first used (:class:`LazyTasks`), and the record of
    its golden file; see :func:`_bundle_bytes`), so loading it reads one integrity-checked file,
    instead of rebuilding the spec in Python, re-validating it, recomputing content keys and
    re-sealing tasks. Trust comes from the artefact's hash record, its first line
    (:func:`cachefile.store_sealed`); its key covers everything that built it (:func:`bundle_key`).

    ``bundle.spec`` never holds ``"tasks"``: a spec's own tasks are unsealed drafts (retail's
    are 70 KB), and the sealed ones are ``bundle.tasks``.
    """
    entry = _entry(name)
    cached = _cached_bundle(entry)
    if cached is not None:
        return cached
    spec = build_spec(name)
    golden = state.golden_bytes(spec)
    bundle = EnvBundle(
        name=entry["name"], env_id=entry["id"], split=entry["split"], spec=spec, golden=golden,
        tools={t["name"]: compile_tool(t) for t in spec["tools"]},
    )
    tasks = TASK_SOURCES.get(entry["source"])(bundle)
    bundle.set_tasks(tasks)
    bundle.spec = spec = _without_tasks(spec)
    if entry["source"] in BUNDLED_SOURCES:
        _, golden_key = state.golden_path(spec)
        path, key = bundle_path(entry)
        data = _bundle_bytes(spec, cachefile.make_record(state.GOLDEN_KIND, golden_key, golden), tasks, bundle.tools)
        try:
            cachefile.store_sealed(path, key, BUNDLE_KIND, data)
        except CacheError:
            pass  # a read-only or full cache still serves its artefacts: the bundle only saves time
        else:
            _prune_bundles(path, entry["name"])
        bundle.json_bytes = len(data)
    else:
        bundle.json_bytes = len(json.dumps({"spec": spec, "tasks": tasks}, ensure_ascii=False, default=str))
    return bundle


def _without_tasks(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k != "tasks"} if "tasks" in spec else spec


def _prune_bundles(current: Path, name: str) -> None:
    """Delete this env's bundles built by other code versions.

    Every edit of the package gives every env a new bundle key, so without this a developer's
    cache would keep one stale ~100 KB bundle per env per edit. Bundles are cheap to rebuild from
    the content-keyed spec, golden and task artefacts, which are never pruned here. (Two
    checkouts sharing one cache therefore rebuild each other's bundles, costing ~20-50 ms per env.)
    """
    # ``.jsonl`` (+ ``.meta``) and ``.json``: bundles of earlier formats, which no current key names.
    pattern = re.compile(re.escape(name) + r"-[0-9a-f]{24}\.(?:bundle|jsonl?)(?:\.meta)?")
    try:
        names = os.listdir(current.parent)
    except OSError:
        return
    for other in names:
        if pattern.fullmatch(other) and not other.startswith(current.name):
            try:
                os.unlink(current.parent / other)
            except OSError:
                pass  # another process pruned it, or the cache is read-only: harmless


def bundle_key(entry: dict[str, Any]) -> str:
    """Cache key of a built bundle: its manifest entry, the code and data that build it, the LLM switch."""
    # The switch of agentworld_envs.tasks.llm.enabled(), read here directly: importing that module
    # would import the whole task package (networkx) on every env's first use.
    llm = bool(os.environ.get("AGENTWORLD_LLM_BASE_URL"))
    fingerprint = code_fingerprint()
    memo = (tuple(entry.items()), fingerprint, llm)
    key = _BUNDLE_KEYS.get(memo)
    if key is None:
        # repr of the sorted items, not canonical JSON: entries hold only strings. The Python
        # and marshal versions: a bundle's schemas line is marshalled (see _bundle_bytes).
        text = f"{sorted(entry.items())!r}|{fingerprint}|{llm}|{sys.version_info[:2]}|{marshal.version}"
        key = _BUNDLE_KEYS[memo] = hashlib.sha256(text.encode()).hexdigest()[:24]
    return key


#: (entry items, code fingerprint, LLM switch) -> bundle key: computed once per entry and process, not per make.
_BUNDLE_KEYS: dict[tuple[Any, ...], str] = {}


def bundle_path(entry: dict[str, Any]) -> tuple[Path, str]:
    """Where the bundle of ``entry`` lives, and its cache key."""
    path, key = _bundle_file(entry)
    return Path(path), key


def _bundle_file(entry: dict[str, Any]) -> tuple[str, str]:
    # A str, not a Path: every first make builds this path, and Path objects cost more than the join.
    key = f"{entry['name']}-{bundle_key(entry)}"
    return os.path.join(state.cache_dir(), "bundles", f"{key}.bundle"), key


@functools.cache
def code_fingerprint() -> str:
    """Identity of everything that builds a catalogue env: this package's and the catalogue's files, and Faker.

    Files are identified by path, size and modification time (what Python's own bytecode cache
    trusts), so this costs one ``stat`` per file, not a read: editing any engine, domain or
    catalogue file, or upgrading Faker, gives new bundle keys and so a rebuild through the
    content-keyed spec, golden and task artefacts.
    """
    import importlib.util

    roots = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.path.abspath(env_registry.__file__))]
    parts: list[str] = []
    for root in roots:
        _stat_files(root, parts)
    faker = importlib.util.find_spec("faker")
    if faker is not None and faker.origin:
        st = os.stat(faker.origin)
        parts.append(f"faker:{faker.origin}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()


def _stat_files(root: str, out: list[str]) -> None:
    with os.scandir(root) as entries:
        for item in entries:
            if item.is_dir(follow_symlinks=False):
                if item.name != "__pycache__" and not item.name.startswith("."):
                    _stat_files(item.path, out)
            elif item.name.endswith((".py", ".json", ".sql")):
                st = item.stat()
                out.append(f"{item.path}:{st.st_size}:{st.st_mtime_ns}")


#: Spec fields no make, reset or step reads: a loaded bundle keeps them as JSON text until ``bundle.spec``.
LAZY_SPEC_FIELDS = ("tools", "tables", "data", "rules")
#: Layout of the bundle artefact (in its header, so another layout is rebuilt, never misread).
BUNDLE_FORMAT = 4


def _bundle_bytes(spec: dict[str, Any], golden: cachefile.CacheRecord, tasks: Sequence[dict[str, Any]],
                  tools: Mapping[str, Tool]) -> bytes:
    """A bundle artefact: lines, each parsed only when something needs it.

    Line 1 is the header ``{"format", "spec", "order", "golden", "tool_names", "task_ids",
    "line_bytes"}`` (JSON) whose ``spec`` holds the small fields (everything but
    :data:`LAZY_SPEC_FIELDS`); line 2 the tools' OpenAI schemas, which ``reset`` shows; line 3
    the other lazy spec fields (JSON); then one JSON line per tool definition and one per sealed
    task. A load parses the header and the schemas; a tool's line is parsed when the tool is
    first called, a task's when it is first played, and line 3 when something asks for the full
    spec. Before this split, parsing every tool definition and compiling every tool was over
    half of a first ``make`` (retail: 37 tools, a synthesised env ~60, of which an episode calls
    a handful). ``line_bytes`` (the byte length of every line after the header) locates any
    line without scanning the file for newlines, so line 2 may hold any bytes: it is
    ``marshal`` data: a fresh process loads it faster than orjson parses the same schemas as
    JSON, because marshal shares repeated strings and so touches fewer fresh pages (README,
    Measured). The bundle key names the Python and marshal versions. ``golden``
    is the golden file's integrity record, so the verified bundle vouches for the golden bytes
    too and loading skips reading and parsing that file's sidecar.
    """
    head = {k: v for k, v in spec.items() if k not in LAZY_SPEC_FIELDS}
    rest = {k: spec[k] for k in LAZY_SPEC_FIELDS if k in spec and k != "tools"}
    schemas = [tools[t["name"]].openai_schema() for t in spec["tools"]]
    body = [marshal.dumps(schemas),
            *(json.dumps(x, ensure_ascii=False).encode() for x in (rest, *spec["tools"], *tasks))]
    header = {"format": BUNDLE_FORMAT, "spec": head, "order": list(spec), "golden": json.loads(golden.to_json()),
              "tool_names": [t["name"] for t in spec["tools"]], "task_ids": [t["id"] for t in tasks],
              "line_bytes": [len(b) for b in body]}
    return b"\n".join([json.dumps(header, ensure_ascii=False).encode(), *body])


@dataclass
class _BundleParts:
    head: dict[str, Any]
    order: list[str]
    golden: cachefile.CacheRecord
    schemas: list[dict[str, Any]]
    rest: memoryview
    tool_names: list[str]
    tool_texts: list[memoryview]
    task_ids: list[str]
    task_texts: list[memoryview]


def _parse_bundle(data: bytes, start: int = 0) -> _BundleParts:
    """Shape check of a cached bundle, ``data[start:]`` (the hash already vouches for its content;
    the lazy lines are checked when parsed)."""
    view = memoryview(data)[start:]
    header_end = data.find(b"\n", start)  # -1 for a one-line file, which the line sizes below then reject
    header = cachefile.loads(view[:header_end - start] if header_end >= 0 else view)
    if not isinstance(header, dict) or header.get("format") != BUNDLE_FORMAT:
        raise cachefile.CorruptCacheFile(f"not a format-{BUNDLE_FORMAT} bundle header")
    head, order, names, ids = header.get("spec"), header.get("order"), header.get("tool_names"), header.get("task_ids")
    if not isinstance(head, dict) or not isinstance(order, list) or not isinstance(names, list) \
            or not isinstance(ids, list) or not isinstance(header.get("golden"), dict):
        raise cachefile.CorruptCacheFile("expected a header {'spec', 'order', 'golden', 'tool_names', 'task_ids'}")
    for name in ("id", "now", "policy"):
        if name not in head:
            raise cachefile.CorruptCacheFile(f"spec has no {name!r}")
    golden = cachefile.CacheRecord.from_obj(header["golden"])
    sizes = header.get("line_bytes")
    if not isinstance(sizes, list) or len(sizes) != 2 + len(names) + len(ids) \
            or not {str}.issuperset(map(type, ids)) or not {str}.issuperset(map(type, names)):
        raise cachefile.CorruptCacheFile(f"{len(names)} tools and {len(ids)} tasks do not match the header's line sizes")
    lines = cachefile.Lines(view, [header_end - start, *sizes])
    schemas = marshal.loads(lines[1])
    if not isinstance(schemas, list) or [s["function"]["name"] for s in schemas] != names:
        raise cachefile.CorruptCacheFile("the tool schemas do not match the tool names")
    tools_end = 3 + len(names)
    return _BundleParts(head=head, order=order, golden=golden, schemas=schemas, rest=lines[2], tool_names=names,
                        tool_texts=lines[3:tools_end], task_ids=ids, task_texts=lines[tools_end:])


def _parse_tool(text: memoryview, name: str, where: str) -> dict[str, Any]:
    tool = cachefile.loads(text)
    if not isinstance(tool, dict) or tool.get("name") != name or "impl" not in tool or "parameters" not in tool:
        # The artefact's hash matched, so only a format bug can get here: say where.
        raise cachefile.CorruptCacheFile(f"{where}: the line of tool {name!r} is not its definition; delete the file to rebuild it")
    return tool


class LazyTools(Mapping):
    """A loaded bundle's tools by name, each parsed and compiled on first access.

    Iterates in the spec's order without compiling anything; ``tools[name]`` compiles that one
    tool (from the verified bundle bytes) and keeps it, shared by the bundle's envs. Pickles as
    a plain dict.
    """

    __slots__ = ("_index", "_texts", "_compiled", "_where")

    def __init__(self, names: Sequence[str], texts: Sequence[memoryview], where: str = "bundle"):
        self._index = {n: i for i, n in enumerate(names)}
        self._texts = texts
        self._compiled: dict[str, Tool] = {}
        self._where = where

    def __getitem__(self, name: str) -> Tool:
        tool = self._compiled.get(name)
        if tool is None:
            text = self._texts[self._index[name]]  # KeyError for an unknown name, as a dict
            # setdefault: two threads compiling one tool at once still share one Tool.
            tool = self._compiled.setdefault(name, compile_tool(_parse_tool(text, name, self._where)))
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __reduce__(self):
        return dict, (dict(self.items()),)

    def __repr__(self) -> str:
        return f"LazyTools({len(self)} tools, {len(self._compiled)} compiled)"


def _complete_spec(parts: _BundleParts, where: str) -> Callable[[], dict[str, Any]]:
    def complete() -> dict[str, Any]:
        rest = cachefile.loads(parts.rest)
        if not isinstance(rest, dict):
            raise cachefile.CorruptCacheFile(f"{where}: the spec's tables and data line is not an object")
        fields = {**parts.head, **rest,
                  "tools": [_parse_tool(t, n, where) for n, t in zip(parts.tool_names, parts.tool_texts)]}
        return {k: fields[k] for k in parts.order}  # the spec's own key order

    return complete


def _cached_bundle(entry: dict[str, Any]) -> EnvBundle | None:
    if entry["source"] not in BUNDLED_SOURCES:
        return None
    path, key = _bundle_file(entry)
    cached = cachefile.load_sealed(path, key, BUNDLE_KIND, _parse_bundle)
    if cached is None:
        return None
    parts, size = cached
    bundle = EnvBundle(name=entry["name"], env_id=entry["id"], split=entry["split"], spec=None,  # type: ignore[arg-type]
                       golden=None, tools=LazyTools(parts.tool_names, parts.tool_texts, path),  # type: ignore[arg-type]
                       tasks=LazyTasks(parts.task_ids, parts.task_texts, path))
    # The golden file is checked against this record when first copied or read (EnvBundle.connect).
    bundle.golden_file = state.golden_file(parts.golden.key)
    bundle.golden_record = parts.golden
    bundle.head = parts.head
    bundle._complete_spec = _complete_spec(parts, path)
    bundle._schemas = parts.schemas
    bundle.json_bytes = size
    return bundle


class BundleCache:
    """The per-process bundle cache, bounded by (estimated) memory rather than by a count.

    A thousand instances of one env share its bundle; the least recently used bundles are
    dropped once the estimated total passes the budget (``AGENTWORLD_BUNDLE_CACHE_MB``, default
    256). The newest bundle always stays, however large. Envs that still hold a dropped bundle
    keep using it; the next ``make`` of that id loads it again (from the bundle artefact).
    """

    def __init__(self, load: Callable[[str], EnvBundle]):
        self._load = load
        self._items: OrderedDict[str, tuple[EnvBundle, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        functools.update_wrapper(self, load)

    @staticmethod
    def budget() -> int:
        raw = os.environ.get("AGENTWORLD_BUNDLE_CACHE_MB")
        try:
            mb = float(raw) if raw else DEFAULT_BUNDLE_CACHE_MB
        except ValueError:
            mb = DEFAULT_BUNDLE_CACHE_MB
        return int(max(mb, 0) * 2**20)

    def __call__(self, name: str) -> EnvBundle:
        key = _entry(name)["id"]  # "retail", "retail-v0" and the full id share one bundle
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return item[0]
            self.misses += 1
        bundle = self._load(name)
        size = bundle_size(bundle)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:  # another thread built it meanwhile: keep theirs, shared by every caller
                self._items[key] = old
                return old[0]
            self._items[key] = (bundle, size)
            self._bytes += size
            budget = self.budget()
            while self._bytes > budget and len(self._items) > 1:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
        return bundle

    def cache_clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def cache_info(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "currsize": len(self._items), "bytes": self._bytes,
                    "budget": self.budget()}


def bundle_size(bundle: EnvBundle) -> int:
    """Estimated bytes a cached bundle keeps alive (an estimate, not an exact count).

    The read-only golden copy verifiers open (:attr:`EnvBundle.initial`), the golden bytes too
    when the bundle holds them (a bundle loaded from its artefact reads them only when asked),
    plus the parsed spec, tasks and compiled tools at :data:`JSON_OBJECT_FACTOR` times their JSON size.
    """
    copies = 1 if bundle.__dict__["golden"] is None else 2
    return copies * bundle.golden_size + JSON_OBJECT_FACTOR * bundle.json_bytes


#: Python objects parsed from JSON take several times the text's size: tracemalloc measured 4.8-5.9x
#: for loaded bundles (retail and synthesised envs); 8 also covers what use adds (tool schemas,
#: argument checks, verifier memos).
JSON_OBJECT_FACTOR = 8


#: ``load_bundle(name)`` → the shared :class:`EnvBundle` (``cache_clear()`` / ``cache_info()`` as before).
load_bundle = BundleCache(_load_bundle)


def _warm_process() -> None:
    """Per-process work that every first ``make`` needs, done once while the engine is imported.

    The code fingerprint stats every package file (~105 files, ~1 ms here) and the manifest's
    name index takes ~0.3 ms to build. SQLite initialises itself on its first connection
    (~0.13 ms), NumPy's first seeded generator and draw cost ~0.15 ms more than later ones, the
    first JSON parse, record check and key hash ~0.15 ms, and resolving the cache directory
    checks it with a ``mkdir`` (~0.1 ms). All are per-process, not per-env:
    paying them inside the first ``make`` + ``reset`` made the first env of a process ~1.5 ms
    slower than the next one. The engine import they join takes tens of milliseconds, so they
    cost it a few percent.
    """
    code_fingerprint()
    for first in env_registry.manifest()[:1]:
        bundle_key(env_registry.entry(first["name"]))  # builds the name index lookups use; hashes a key
    sqlite3.connect(":memory:").close()
    from gymnasium.utils import seeding

    seeding.np_random(0)[0].integers(2)
    # The code a first make runs on any env, run once on throwaway input: the first call of
    # orjson, of the record parser and of each hash is slower than later ones, once per process.
    sample = cachefile.make_record(BUNDLE_KIND, "warm", b"{}")
    cachefile.CacheRecord.parse(sample.to_json()).matches(b"{}")
    cachefile.loads(memoryview(b'{"warm": [1, "a", null]}'))
    # Only an existing cache: importing must not create (or fail on) a directory; a first make does.
    if os.path.isdir(os.environ.get("AGENTWORLD_CACHE") or "\0"):
        try:
            state.cache_dir()
        except CacheError:
            pass


_warm_process()
