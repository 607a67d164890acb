"""The fast paths never change a verdict or a byte: compiled argument checks agree with jsonschema,
orjson observations equal json's, registration and bundles behave like the slow paths they replace."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import gymnasium as gym
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import env_registry
from agentworld_envs.engine import argcheck, episode, state
from agentworld_envs.util import cachefile
from agentworld_envs.catalogue import catalog
from agentworld_envs.util.errors import CacheError

# ------------------------------------------------------------------ argument checks

SCHEMAS = [
    {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"],
     "additionalProperties": False},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-c]+$"},
                                      "e": {"type": "string", "enum": ["x", "y"]},
                                      "n": {"type": ["number", "null"], "maximum": 10, "exclusiveMinimum": -1},
                                      "b": {"type": "boolean"},
                                      "ids": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                              "minItems": 1, "maxItems": 3}},
     "additionalProperties": False},
    {"type": "object", "properties": {"k": {"enum": [1, True, "1", None, 2.5]}}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {"type": "string"}}},
]
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 20), st.floats(allow_nan=True), st.sampled_from(
        ["", "a", "ab", "abc", "abcdef", "x", "y", "1", "zz"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["id", "s", "e", "n", "b", "ids", "k", "a", "x1", "other"]), inner, max_size=5)),
    max_leaves=10)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=300, deadline=None)
@given(instance=values)
def test_accept_check_never_accepts_what_jsonschema_rejects(schema, instance):
    accept = argcheck.compile_accept(schema)
    valid = jsonschema.Draft202012Validator(schema).is_valid(instance)
    if accept is not None and accept(instance):
        assert valid, (schema, instance)


def test_accept_check_decides_common_calls_itself():
    accept = argcheck.compile_accept(SCHEMAS[1])
    assert accept is not None
    assert accept({"s": "abc", "e": "x", "n": 3.5, "b": True, "ids": [0, 2]})
    assert not accept({"s": "abc", "zzz": 1})      # unknown argument
    assert not accept({"ids": []})                 # too few items
    assert argcheck.compile_accept(SCHEMAS[3]) is None   # patternProperties: jsonschema alone


def test_tool_errors_still_come_from_jsonschema(toy_env_id):
    env = gym.make(toy_env_id).unwrapped
    env.reset(seed=0)
    tool = next(iter(env.bundle.tools.values()))
    args = {"no_such_argument": 1}
    obs, *_, info = env.step(json.dumps({"name": tool.name, "arguments": args}))
    best = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(tool.parameters).iter_errors(args))
    assert info["error"] == "invalid_arguments" and json.loads(obs)["error"]["message"].endswith(best.message)


# ------------------------------------------------------------------ observations

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=12))
json_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=6), st.integers(0, 3)), inner, max_size=4)),
    max_leaves=15)


def _json_value(obj):
    """What an observation of ``obj`` must decode to: JSON's keys, lists for tuples, null for NaN/inf."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {json.dumps(k) if not isinstance(k, str) else k: _json_value(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_value(v) for v in obj]
    return obj


def _strict(token):
    raise AssertionError(f"observation holds {token}, which is not JSON")


@settings(max_examples=500, deadline=None)
@given(obj=json_like)
def test_observation_text_is_strict_compact_json_of_the_value(obj):
    text = episode.dumps(obj)
    if len(text) < episode.MAX_TEXT_LENGTH - 40:
        assert json.loads(text, parse_constant=_strict) == _json_value(obj)
        # compact, and json's very text whenever no float needs an exponent or is not finite
        plain = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if not any(c in plain for c in ("e+", "e-", "NaN", "Infinity")):
            assert text == plain


def test_observation_of_other_types_goes_through_str_like_json_default():
    import datetime as dt

    obj = {"when": dt.date(2026, 3, 1), "at": dt.datetime(2026, 3, 1, 12, 30), "big": 1e20, "small": 1e-7,
           "nan": float("nan"), "inf": float("-inf"), "t": (1, 2), "s": {3}}
    assert json.loads(episode.dumps(obj), parse_constant=_strict) == {
        "when": "2026-03-01", "at": "2026-03-01 12:30:00", "big": 1e20, "small": 1e-7, "nan": None, "inf": None,
        "t": [1, 2], "s": "{3}"}
    # what orjson cannot encode (non-string keys, integers beyond 64 bits) goes to json, still strict
    assert episode.dumps({1: float("nan"), "n": 2**70}) == '{"1":null,"n":1180591620717411303424}'


# ------------------------------------------------------------------ registration and bundles


def test_every_manifest_id_is_registered_like_gymnasium_register():
    import agentworld_envs  # noqa: F401

    for e in env_registry.manifest():
        spec = gym.spec(e["id"])
        assert spec.entry_point == "agentworld_envs.env:AgentWorldEnv" and spec.kwargs == {"env_name": e["name"]}
        assert (spec.namespace, spec.name, spec.version) == ("agentworld", e["name"], 0)


def test_package_import_loads_no_heavy_module():
    code = ("import sys, agentworld_envs; heavy = [m for m in ('jsonschema', 'networkx', 'faker', 'sqlite3', "
            "'agentworld_envs.env', 'agentworld_envs.catalogue.catalog') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_package_attributes_resolve():
    import agentworld_envs

    assert agentworld_envs.SpecError.__name__ == "SpecError" and callable(agentworld_envs.register_spec)
    with pytest.raises(AttributeError):
        agentworld_envs.no_such_thing  # noqa: B018


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path))
    catalog.load_bundle.cache_clear()
    yield tmp_path
    catalog.load_bundle.cache_clear()


def test_bundle_artefact_round_trip_gives_the_same_env(private_cache):
    built = catalog.load_bundle("retail")
    (path,) = (private_cache / "bundles").glob("retail-*.bundle")
    assert not list((private_cache / "bundles").glob("*.meta"))   # its record is its first line
    record = cachefile.CacheRecord.parse(path.read_bytes().split(b"\n", 1)[0].decode())
    assert record.kind == catalog.BUNDLE_KIND and record.size == len(path.read_bytes().split(b"\n", 1)[1])
    catalog.load_bundle.cache_clear()
    loaded = catalog.load_bundle("retail")
    assert loaded is not built
    assert loaded.spec == built.spec and loaded.tasks == built.tasks and loaded.golden == built.golden
    assert list(loaded.tools) == list(built.tools)
    # An episode on the loaded bundle solves its task exactly as before.
    env = gym.make("agentworld/retail-v0").unwrapped
    env.reset(options={"task_index": 0})
    for action in env.solution_actions():
        _, reward, terminated, _, info = env.step(action)
    assert terminated and reward == 1.0, info


def test_corrupt_bundle_is_rebuilt_with_a_warning(private_cache):
    catalog.load_bundle("retail")
    catalog.load_bundle.cache_clear()
    path = next((private_cache / "bundles").glob("retail-*.bundle"))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.warns(cachefile.CacheWarning, match="retail"):
        bundle = catalog.load_bundle("retail")
    assert bundle.tasks
    catalog.load_bundle.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cachefile.CacheWarning)   # repaired: loads cleanly now
        assert catalog.load_bundle("retail").tasks == bundle.tasks


def test_bundle_key_covers_code_and_llm_switch(monkeypatch):
    entry = env_registry.entry("retail")
    key = catalog.bundle_key(entry)
    monkeypatch.setenv("AGENTWORLD_LLM_BASE_URL", "http://127.0.0.1:9")
    assert catalog.bundle_key(entry) != key
    monkeypatch.delenv("AGENTWORLD_LLM_BASE_URL")
    monkeypatch.setattr(catalog, "code_fingerprint", lambda: "edited")
    assert catalog.bundle_key(entry) != key


def test_bundle_cache_is_bounded_by_memory(private_cache, monkeypatch, toy_env_id):
    monkeypatch.setenv("AGENTWORLD_BUNDLE_CACHE_MB", "0")   # every new bundle evicts the others
    first = catalog.load_bundle(toy_env_id)
    assert catalog.load_bundle(toy_env_id) is first
    catalog.load_bundle("retail")
    info = catalog.load_bundle.cache_info()
    assert info["currsize"] == 1 and info["bytes"] > 0
    assert catalog.load_bundle(toy_env_id) is not first    # evicted, then loaded again
    monkeypatch.setenv("AGENTWORLD_BUNDLE_CACHE_MB", "512")
    a = catalog.load_bundle("retail")
    assert catalog.load_bundle("agentworld/retail-v0") is a   # names and ids share one entry
    assert catalog.load_bundle.cache_info()["currsize"] == 2


def test_rebuilding_a_bundle_prunes_only_that_envs_stale_bundles(private_cache):
    folder = private_cache / "bundles"
    folder.mkdir(parents=True)
    stale = folder / ("retail-" + "0" * 24 + ".bundle")
    stale_jsonl = folder / ("retail-" + "2" * 24 + ".jsonl")        # the JSON Lines bundles of before
    stale_old_format = folder / ("retail-" + "1" * 24 + ".json")   # the single-JSON bundles before those
    neighbour = folder / ("retail-pharmacy-prescription-fills-" + "0" * 24 + ".bundle")
    for path in (stale, stale_jsonl, stale_old_format, neighbour):
        path.write_text("{}")
    for path in (stale_jsonl, stale_old_format):
        path.with_name(path.name + ".meta").write_text("{}")
    catalog.load_bundle("retail")
    names = sorted(p.name for p in folder.iterdir())
    for gone in (stale, stale_jsonl, stale_old_format):
        assert gone.name not in names and gone.name + ".meta" not in names
    assert neighbour.name in names
    assert sum(n.startswith("retail-") and n.endswith(".bundle") and "pharmacy" not in n for n in names) == 1


def test_an_unwritable_cache_still_loads_when_only_the_bundle_is_missing(private_cache, monkeypatch):
    first = catalog.load_bundle("retail")
    for path in (private_cache / "bundles").iterdir():
        path.unlink()
    catalog.load_bundle.cache_clear()

    def refuse(path, *args, **kwargs):
        raise CacheError(path, "cannot write (read-only)", "make it writable")

    monkeypatch.setattr(cachefile, "store_json", refuse)
    assert catalog.load_bundle("retail").tasks == first.tasks


def test_a_loaded_bundle_parses_tasks_lazily_yet_acts_as_their_list(private_cache):
    import pickle

    built = catalog.load_bundle("retail")
    catalog.load_bundle.cache_clear()
    loaded = catalog.load_bundle("retail")
    assert not isinstance(loaded.tasks, list) and loaded.tasks == built.tasks
    assert loaded.task_index == built.task_index and len(loaded.tasks) == len(built.tasks)
    assert loaded.tasks[1:3] == built.tasks[1:3] and loaded.tasks[-1] == built.tasks[-1]
    assert pickle.loads(pickle.dumps(loaded.tasks)) == list(built.tasks)
    assert "tasks" not in loaded.spec and "tasks" not in built.spec   # the sealed ones are bundle.tasks
    env = gym.make("agentworld/retail-v0").unwrapped
    assert env.task_ids == [t["id"] for t in built.tasks]


def test_a_loaded_bundle_compiles_tools_and_parses_the_spec_only_when_asked(private_cache):
    import pickle

    built = catalog.load_bundle("retail")
    catalog.load_bundle.cache_clear()
    loaded = catalog.load_bundle("retail")
    env = gym.make("agentworld/retail-v0", obscure_tools=True).unwrapped
    _, info = env.reset(seed=0)
    # make + reset showed every tool without compiling one or parsing the full spec
    assert repr(loaded.tools) == f"LazyTools({len(built.tools)} tools, 0 compiled)"
    assert loaded.__dict__["spec"] is None and loaded.head["now"] == built.spec["now"]
    assert info["tools"][:-1] == [t.openai_schema(f"tool_{i + 1:02d}") for i, t in enumerate(built.tools.values())]
    assert loaded.shown_schemas(False) == built.shown_schemas(False)
    assert "get_order_details" in loaded.tools and "no_such_tool" not in loaded.tools
    with pytest.raises(KeyError):
        loaded.tools["no_such_tool"]
    assert loaded.tools["get_order_details"] == built.tools["get_order_details"]
    assert repr(loaded.tools).endswith("1 compiled)")
    assert dict(loaded.tools) == dict(built.tools) and pickle.loads(pickle.dumps(loaded.tools)) == dict(built.tools)
    assert loaded.spec == built.spec and list(loaded.spec) == list(built.spec)   # same fields, same order


def test_a_golden_file_changed_under_its_bundle_is_caught_and_rebuilt(private_cache):
    golden = catalog.load_bundle("retail").golden
    catalog.load_bundle.cache_clear()
    (path,) = (private_cache / "golden").glob("retail-*.sqlite")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.warns(cachefile.CacheWarning, match="retail"):
        assert catalog.load_bundle("retail").golden == golden
    catalog.load_bundle.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cachefile.CacheWarning)   # repaired: loads cleanly now
        assert catalog.load_bundle("retail").golden == golden


def test_cache_records_check_the_fast_hash_and_still_read_sha256_only_records(tmp_path):
    path = tmp_path / "artefact.bin"
    cachefile.store(path, "k", "thing", b"payload")
    assert cachefile.load(path, "k", "thing") == b"payload"
    record = cachefile.CacheRecord.parse(cachefile.meta_path(path).read_text())
    # A record written without xxhash installed has only the SHA-256, and still verifies.
    sha_only = cachefile.CacheRecord(kind="thing", key="k", size=7, sha256=record.sha256)
    cachefile.meta_path(path).write_text(sha_only.to_json())
    assert "xxh3_128" not in json.loads(cachefile.meta_path(path).read_text())
    assert cachefile.load(path, "k", "thing") == b"payload"
    if record.xxh3_128 is not None:   # xxhash installed: its digest is the one checked
        forged = cachefile.CacheRecord(kind="thing", key="k", size=7, sha256=record.sha256, xxh3_128="0" * 32)
        cachefile.meta_path(path).write_text(forged.to_json())
        with pytest.warns(cachefile.CacheWarning, match="recorded hash"):
            assert cachefile.load(path, "k", "thing") is None


def test_bundle_lines_are_located_by_their_recorded_sizes():
    lines = cachefile.Lines(b'{"a":1}\n[2]\n"x"', [7, 3, 3])
    assert [bytes(x) for x in lines] == [b'{"a":1}', b"[2]", b'"x"'] and bytes(lines[1:][1]) == b'"x"'
    with pytest.raises(cachefile.CorruptCacheFile):
        cachefile.Lines(b"ab\ncd", [2, 3])          # sizes longer than the data
    with pytest.raises(cachefile.CorruptCacheFile):
        cachefile.Lines(b"ab\ncd", [2, -1, 4])      # a negative size
    misplaced = cachefile.Lines(b"ab\ncd", [3, 1])  # adds up, but line 0 would swallow the newline
    with pytest.raises(cachefile.CorruptCacheFile):
        misplaced[0]


def test_a_bundle_whose_line_sizes_disagree_is_rebuilt(private_cache):
    import agentworld_envs  # noqa: F401

    gym.make("agentworld/retail-v0").close()
    path, key = catalog.bundle_path(catalog._entry("retail"))
    _record, header, rest = path.read_bytes().split(b"\n", 2)
    head = json.loads(header)
    head["line_bytes"][0] += 1
    cachefile.store_sealed(path, key, catalog.BUNDLE_KIND, json.dumps(head).encode() + b"\n" + rest)
    bad = path.read_bytes()   # a valid record: only the layout is wrong
    catalog.load_bundle.cache_clear()
    with pytest.warns(cachefile.CacheWarning, match="wrong shape"):
        env = gym.make("agentworld/retail-v0")
    env.reset(seed=0)
    assert path.read_bytes() != bad



# ------------------------------------------------------------------ lazy golden bytes and episode copies


def _solve(env) -> tuple[float, dict]:
    reward, info = 0.0, {}
    for action in env.solution_actions():
        _, reward, _, _, info = env.step(action)
    return reward, info


def test_a_loaded_bundle_copies_its_golden_file_without_holding_its_bytes(private_cache):
    built = catalog.load_bundle("retail").golden
    catalog.load_bundle.cache_clear()
    env = gym.make("agentworld/retail-v0").unwrapped
    env.reset(options={"task_index": 0})
    reward, info = _solve(env)
    assert reward == 1.0, info
    assert env.bundle.__dict__["golden"] is None      # the episode and the verifier copied the mapped file
    assert env.bundle.golden_size == len(built)
    assert env.bundle.golden == built                  # read (and checked) only when asked for
    assert env.bundle.__dict__["golden"] is not None


def test_reset_copies_the_golden_state_only_when_the_episode_first_needs_it(private_cache, monkeypatch):
    env = gym.make("agentworld/retail-v0").unwrapped
    golden_hash = state.state_hash(env.bundle.initial)
    copies = []
    connect = env.bundle.connect
    monkeypatch.setattr(env.bundle, "connect", lambda: copies.append(1) or connect())
    for index in range(3):   # collecting prompts and tools: no database is copied
        _, info = env.reset(options={"task_index": index})
        assert info["tools"]
    assert copies == []
    env.reset(options={"task_index": 0})
    reward, info = _solve(env)
    assert reward == 1.0 and copies == [1], info
    env.reset(options={"task_index": 1})                  # later episodes roll back: no new copy
    assert env.state_hash() == golden_hash and copies == [1]
    env.close()
    obs, *_ = env.step(env.solution_actions()[0])         # closed before its episode touched the database
    assert "episode_over" in obs and copies == [1]


def test_threads_asking_for_a_new_episodes_database_share_one_copy(private_cache, monkeypatch):
    import threading

    env = gym.make("agentworld/retail-v0").unwrapped
    env.reset(seed=0)
    copies = []
    connect = env.bundle.connect
    monkeypatch.setattr(env.bundle, "connect", lambda: copies.append(1) or connect())
    barrier = threading.Barrier(4)
    seen = []

    def ask():
        barrier.wait()
        seen.append(env.conn)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(copies) == 1 and len({id(c) for c in seen}) == 1 and seen[0] is not None


@pytest.mark.parametrize("how", ["deleted", "corrupted"])
def test_a_golden_file_lost_after_its_bundle_loaded_is_rebuilt_when_first_copied(private_cache, how):
    golden = catalog.load_bundle("retail").golden
    catalog.load_bundle.cache_clear()
    env = gym.make("agentworld/retail-v0").unwrapped     # the bundle is loaded; its golden file is not read yet
    (path,) = (private_cache / "golden").glob("retail-*.sqlite")
    if how == "deleted":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        data[len(data) // 3] ^= 0x40
        path.write_bytes(bytes(data))
    env.reset(options={"task_index": 0})
    if how == "corrupted":
        with pytest.warns(cachefile.CacheWarning, match="retail"):
            assert env.conn is not None
    reward, info = _solve(env)
    assert reward == 1.0, info
    assert path.read_bytes() == golden                    # repaired in the cache too


def test_a_golden_file_that_rebuilds_to_other_bytes_is_refused(private_cache, monkeypatch):
    catalog.load_bundle("retail")
    catalog.load_bundle.cache_clear()
    env = gym.make("agentworld/retail-v0").unwrapped
    (path,) = (private_cache / "golden").glob("retail-*.sqlite")
    path.unlink()
    monkeypatch.setattr(state, "golden_bytes", lambda spec: b"SQLite format 3\x00 but not this world")
    env.reset(options={"task_index": 0})
    with pytest.raises(CacheError, match="other content than its bundle recorded"):
        env.step(env.solution_actions()[0])


def test_a_mapped_read_checks_size_and_hash(tmp_path):
    path = tmp_path / "artefact.bin"
    cachefile.store(path, "k", "thing", b"payload bytes")
    record = cachefile.CacheRecord.parse(cachefile.meta_path(path).read_text())
    with cachefile.mapped_if_matches(path, record) as view:
        assert view is not None and bytes(view) == b"payload bytes"
    path.write_bytes(b"payload bytez")                    # same size, other bytes
    with cachefile.mapped_if_matches(path, record) as view:
        assert view is None
    path.write_bytes(b"")                                 # empty: cannot be mapped, never matches
    with cachefile.mapped_if_matches(path, record) as view:
        assert view is None
    with cachefile.mapped_if_matches(tmp_path / "missing.bin", record) as view:
        assert view is None


def test_sealed_artefacts_check_the_record_on_their_first_line(tmp_path):
    path = tmp_path / "artefact.bin"
    cachefile.store_sealed(path, "k", "thing", b"pay\nload")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["artefact.bin"]   # no sidecar, no temporary file

    def payload(data, start):
        return bytes(memoryview(data)[start:])

    assert cachefile.load_sealed(path, "k", "thing", payload) == (b"pay\nload", 8)
    good = path.read_bytes()
    with pytest.warns(cachefile.CacheWarning, match="was built for 'k', not 'other'"):
        assert cachefile.load_sealed(path, "other", "thing", payload) is None
    with pytest.warns(cachefile.CacheWarning, match="another format or kind"):
        assert cachefile.load_sealed(path, "k", "other kind", payload) is None
    flipped = bytearray(good)
    flipped[-2] ^= 1
    for bad, why in ((good[:-1], "bytes, not the 8 recorded"), (bytes(flipped), "recorded hash"),
                     (b"pay\nload", "unreadable integrity record"), (b"", "unreadable integrity record")):
        path.write_bytes(bad)
        with pytest.warns(cachefile.CacheWarning, match=why):
            assert cachefile.load_sealed(path, "k", "thing", payload) is None
    path.write_bytes(good)

    def refuse(data, start):
        raise cachefile.CorruptCacheFile("not this layout")

    with pytest.warns(cachefile.CacheWarning, match="wrong shape"):
        assert cachefile.load_sealed(path, "k", "thing", refuse) is None
    assert cachefile.load_sealed(tmp_path / "missing.bin", "k", "thing", payload) is None


@settings(max_examples=300, deadline=None)
@given(obj=st.recursive(st.one_of(st.integers(-(2**80), 2**80), st.sampled_from([-(2**63) - 1, -(2**63), 2**64 - 1, 2**64]),
                                  st.text(alphabet="0123456789a", max_size=30),
                                  st.floats(allow_nan=False), st.none()),
                        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                        max_leaves=12))
def test_cached_json_reads_back_exactly_even_integers_beyond_64_bits(obj):
    text = json.dumps(obj)
    for data in (text.encode(), memoryview(text.encode()), text):
        back = cachefile.loads(data)
        assert back == obj and json.dumps(back) == text   # same types too: an int stays an int


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_resealed_garbled_bundle_is_rebuilt_never_a_crash(tmp_path_factory, data):
    """Bytes that pass the hash check but not the layout (a writer bug, say): the load warns and
    gives None (the caller rebuilds), or parses; no other exception escapes."""
    bundle = catalog.load_bundle("retail")
    built = catalog._bundle_bytes(bundle.spec, cachefile.make_record("golden database", "k", b"x"),
                                  list(bundle.tasks), bundle.tools)
    header_end = built.find(b"\n")
    eager = header_end + 1 + json.loads(built[:header_end])["line_bytes"][0]   # the header and the schemas
    garbled = bytearray(built)
    for _ in range(data.draw(st.integers(1, 4))):
        garbled[data.draw(st.integers(0, eager - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        garbled = garbled[:data.draw(st.integers(0, len(garbled)))]
    path = tmp_path_factory.mktemp("garbled") / "b.bundle"
    cachefile.store_sealed(path, "key", catalog.BUNDLE_KIND, bytes(garbled))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cachefile.load_sealed(path, "key", catalog.BUNDLE_KIND, catalog._parse_bundle)
    assert got is not None or any(issubclass(w.category, cachefile.CacheWarning) for w in caught)
