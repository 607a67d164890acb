"""Fault injection on the artefact cache: corrupt files are rebuilt (warned once), unusable caches fail clearly."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from agentworld_envs.util import cachefile
from agentworld_envs.engine import state
from agentworld_envs.util.cachefile import CacheWarning
from agentworld_envs.util.errors import CacheError

SYNTH = "wine-club-subscriptions"


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def toy():
    from toy_spec import _TOY

    import copy

    return copy.deepcopy(_TOY)


@pytest.fixture(scope="module")
def other_spec(toy):
    spec = json.loads(json.dumps(toy))
    spec["id"] = "toy-other"
    spec["data"]["seed"] = 99
    return spec


def _warned(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [w for w in caught if issubclass(w.category, CacheWarning)]


def _flip(data: bytes) -> bytes:
    mid = len(data) // 2
    return data[:mid] + bytes([data[mid] ^ 0x01]) + data[mid + 1:]


def _edited_db(data: bytes) -> bytes:
    conn = state.episode_connection(data)
    conn.execute("UPDATE books SET title = 'edited' WHERE id = 1")
    out = conn.serialize()
    conn.close()
    return out


CORRUPTIONS = {
    "truncated": lambda path, other: path.write_bytes(path.read_bytes()[:1000]),
    "bit-flipped": lambda path, other: path.write_bytes(_flip(path.read_bytes())),
    "zero-length": lambda path, other: path.write_bytes(b""),
    "edited-data": lambda path, other: path.write_bytes(_edited_db(path.read_bytes())),
    "record-deleted": lambda path, other: cachefile.meta_path(path).unlink(),
    "record-garbage": lambda path, other: cachefile.meta_path(path).write_text("{not json"),
    "record-wrong-shape": lambda path, other: cachefile.meta_path(path).write_text('["key", "sha256"]'),
    "another-envs-file": lambda path, other: shutil.copyfile(other, path),
    "another-envs-file-and-record": lambda path, other: (
        shutil.copyfile(other, path), shutil.copyfile(cachefile.meta_path(other), cachefile.meta_path(path))),
}


@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_corrupt_golden_is_rebuilt_with_one_warning(cache, toy, other_spec, how):
    fresh = state.build_database(toy)
    assert state.golden_bytes(toy) == fresh
    other = state.golden_path(other_spec)[0]
    state.golden_bytes(other_spec)
    path, _ = state.golden_path(toy)
    CORRUPTIONS[how](path, other)
    data, warned = _warned(lambda: state.golden_bytes(toy))
    assert data == fresh
    assert len(warned) == 1 and str(path) in str(warned[0].message) and "rebuilding" in str(warned[0].message)
    # the rebuilt file is whole again: the next load is silent and identical
    again, warned = _warned(lambda: state.golden_bytes(toy))
    assert again == fresh and not warned
    assert path.read_bytes() == fresh


def test_another_envs_record_is_named_in_the_warning(cache, toy, other_spec):
    state.golden_bytes(toy)
    state.golden_bytes(other_spec)
    path = state.golden_path(toy)[0]
    other = state.golden_path(other_spec)[0]
    CORRUPTIONS["another-envs-file-and-record"](path, other)
    _, warned = _warned(lambda: state.golden_bytes(toy))
    assert "toy-other" in str(warned[0].message) and "was built for" in str(warned[0].message)


def _spec_file(cache: Path) -> Path:
    (path,) = (cache / "specs").glob(f"{SYNTH}-*.json")
    return path


def _tasks_file(cache: Path) -> Path:
    (path,) = (cache / "tasks").glob(f"{SYNTH}-*.json")
    return path


def _rewrite_json(path: Path, edit) -> None:
    """Edit the JSON payload but keep a *valid* record for the old bytes: only the hash can catch it."""
    payload = json.loads(path.read_bytes())
    path.write_text(json.dumps(edit(payload)))


def _with_record(path: Path, payload) -> None:
    """Store a payload with a correct record (the shape check, not the hash, must catch it)."""
    key = json.loads(cachefile.meta_path(path).read_text())["key"]
    kind = json.loads(cachefile.meta_path(path).read_text())["kind"]
    cachefile.store_json(path, key, kind, payload)


SPEC_FAULTS = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:200]),
    "zero-length": lambda p: p.write_bytes(b""),
    "edited-tool": lambda p: _rewrite_json(p, lambda d: {**d, "spec": {**d["spec"], "tools": d["spec"]["tools"][:1]}}),
    "valid-json-wrong-shape": lambda p: _with_record(p, ["spec", "report"]),
    "spec-missing-field": lambda p: _with_record(p, {"spec": {"id": SYNTH}, "report": {"name": SYNTH}}),
    "report-unknown-field": lambda p: _with_record(p, {**json.loads(p.read_bytes()), "report": {"bogus": 1}}),
}


@pytest.mark.parametrize("how", sorted(SPEC_FAULTS))
def test_corrupt_cached_spec_is_resynthesised(cache, how, monkeypatch):
    from agentworld_envs.synthesis import builder

    spec, _ = builder.cached_spec(SYNTH)
    SPEC_FAULTS[how](_spec_file(cache))
    calls = []
    real = builder.synthesize
    monkeypatch.setattr(builder, "synthesize", lambda theme: calls.append(theme) or real(theme))
    (again, _), warned = _warned(lambda: builder.cached_spec(SYNTH))
    assert again == spec and len(calls) == 1
    assert len(warned) == 1 and str(_spec_file(cache)) in str(warned[0].message)
    (third, _), warned = _warned(lambda: builder.cached_spec(SYNTH))
    assert third == spec and len(calls) == 1 and not warned


def _drop_check(payload):
    payload["tasks"][0]["checks"] = payload["tasks"][0]["checks"][1:]
    return payload


def _drop_field(payload):
    del payload["tasks"][0]["solution"]
    return payload


TASK_FAULTS = {
    "bit-flipped": lambda p: p.write_bytes(_flip(p.read_bytes())),
    "zero-length": lambda p: p.write_bytes(b""),
    "edited-checks": lambda p: _rewrite_json(p, _drop_check),
    "valid-json-wrong-shape": lambda p: _with_record(p, {"tasks": {"a": 1}, "report": {}}),
    "task-missing-field": lambda p: _with_record(p, _drop_field(json.loads(p.read_bytes()))),
}


@pytest.mark.parametrize("how", sorted(TASK_FAULTS))
def test_corrupt_task_set_is_regenerated(cache, how, monkeypatch):
    from agentworld_envs.synthesis import builder
    from agentworld_envs.tasks import store

    spec, _ = builder.cached_spec(SYNTH)
    golden = state.golden_bytes(spec)
    tasks, _ = store.cached_tasks(spec, golden)
    TASK_FAULTS[how](_tasks_file(cache))
    calls = []
    real = store.generate_tasks
    monkeypatch.setattr(store, "generate_tasks", lambda *a, **k: calls.append(1) or real(*a, **k))
    (again, _), warned = _warned(lambda: store.cached_tasks(spec, golden))
    assert again == tasks and calls == [1]
    assert len(warned) == 1 and str(_tasks_file(cache)) in str(warned[0].message)


def _raise(err: int):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    return fail


def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("err, words", [(errno.ENOSPC, "no space left"), (errno.EROFS, "writable"),
                                        (errno.EACCES, "writable")])
@pytest.mark.parametrize("where", ["replace", "write"])
def test_unwritable_cache_fails_clearly_and_leaves_no_temp_file(cache, toy, monkeypatch, err, words, where):
    if where == "replace":
        monkeypatch.setattr(cachefile.os, "replace", _raise(err))
    else:  # the disk fills up half way through the payload
        real_fdopen = os.fdopen

        class Full:
            def __init__(self, fh):
                self.fh = fh

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

            def write(self, data):
                self.fh.write(data[: len(data) // 2])
                raise OSError(err, os.strerror(err))

        monkeypatch.setattr(cachefile.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(CacheError) as info:
        state.golden_bytes(toy)
    message = str(info.value)
    path = state.golden_path(toy)[0]
    assert str(path) in message and words in message and "AGENTWORLD_CACHE" in message and "\n" not in message
    assert not _leftovers(cache)
    assert not path.exists()


def test_read_only_cache_directory_fails_clearly(cache, toy, monkeypatch):
    monkeypatch.setattr(cachefile.tempfile, "mkstemp", _raise(errno.EROFS))
    with pytest.raises(CacheError, match="writable"):
        state.golden_bytes(toy)
    assert not _leftovers(cache)


def test_a_valid_cache_is_read_without_writing(cache, toy, monkeypatch):
    """A read-only cache that already holds good files works: loading never writes."""
    data = state.golden_bytes(toy)
    monkeypatch.setattr(cachefile.tempfile, "mkstemp", _raise(errno.EROFS))
    assert state.golden_bytes(toy) == data


def test_cli_reports_an_unusable_cache_as_one_line(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = {**os.environ, "AGENTWORLD_CACHE": str(blocker / "cache")}
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "show", "retail"], capture_output=True,
                         text=True, env=env, timeout=120)
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2 and "Traceback" not in text and len(text.splitlines()) == 1
    assert str(blocker / "cache") in text and "AGENTWORLD_CACHE" in text


def test_golden_files_stay_plain_sqlite(cache, toy):
    data = state.golden_bytes(toy)
    path = state.golden_path(toy)[0]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM books").fetchone()[0] == 30
    conn.close()
    assert path.read_bytes() == data


def test_cache_and_spec_errors_survive_pickling():
    """They cross process pools (build --jobs): unpickling must rebuild them, not raise TypeError."""
    import pickle

    from agentworld_envs.engine.spec import SpecError

    err = pickle.loads(pickle.dumps(CacheError("/x/y.sqlite", "no space left on the device", "free space")))
    assert isinstance(err, CacheError) and str(err.path) == "/x/y.sqlite" and "free space" in str(err)
    spec_err = pickle.loads(pickle.dumps(SpecError("$.tables[0].name", "bad")))
    assert spec_err.path == "$.tables[0].name" and str(spec_err) == "$.tables[0].name: bad"


def test_parallel_build_stops_on_an_unusable_cache(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = {**os.environ, "AGENTWORLD_CACHE": str(blocker / "cache")}
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "build", "retail",
                          "wine-club-subscriptions", "--jobs", "2"], capture_output=True, text=True,
                         env=env, timeout=180)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("agentworld: error: cache file")


def test_disk_full_while_writing_the_record_leaves_nothing_behind(cache, toy, monkeypatch):
    """The payload is written, then the disk fills on the record: no half artefact, no temp file."""
    real_fdopen = os.fdopen
    calls = []

    def second_write_fails(fd, mode):
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fdopen(fd, mode)

    monkeypatch.setattr(cachefile.os, "fdopen", second_write_fails)
    with pytest.raises(CacheError, match="no space left"):
        state.golden_bytes(toy)
    path = state.golden_path(toy)[0]
    assert len(calls) == 2 and not _leftovers(cache)
    assert not path.exists() and not cachefile.meta_path(path).exists()
