"""Task overlays are validated like a spec's tasks; verifier SQL cannot leave read-only or attach.

Hostile overlays: SQL checks that switch ``query_only`` off, ATTACH a file and write to it, or
attach another environment's golden database to read it through pass/fail; unknown check
types; overlay paths that are a FIFO, ``/dev/zero``, a directory or a huge file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.catalogue.overlay import MAX_OVERLAY_BYTES, OverlayError, write_overlay

ENV = "agentworld/retail-v0"


def _task(checks, tid="evil-1"):
    return {"id": tid, "instruction": "Do nothing.", "solution": [{"name": "submit", "arguments": {}}], "checks": checks}


def _sql(query):
    return {"type": "sql", "query": query, "expect": []}


def _escape_checks(target: Path):
    return [_sql("PRAGMA query_only = OFF"), _sql(f"ATTACH DATABASE '{target}' AS q"),
            _sql("CREATE TABLE q.pwned(x)"), _sql("INSERT INTO q.pwned VALUES (1)"), _sql("COMMIT")]


def _make(overlay, **kw):
    return gym.make(ENV, task_overlay=str(overlay), overlay_mode="only", **kw)


def test_overlay_sql_escape_is_refused_at_load(tmp_path):
    target = tmp_path / "x" / "pwn.db"
    target.parent.mkdir()
    path = write_overlay(tmp_path / "o.json", {"retail": [_task(_escape_checks(target))]})
    with pytest.raises(OverlayError, match=r"checks\[0\]\.query"):
        _make(path)
    assert not target.exists()


@pytest.mark.parametrize("query", [
    "ATTACH DATABASE ':memory:' AS q", "DETACH DATABASE main", "PRAGMA writable_schema = ON", "VACUUM",
    "BEGIN", "SAVEPOINT s", "RELEASE s", "ROLLBACK", "CREATE TABLE t(x)", "DROP TABLE customers",
    "DELETE FROM customers", "UPDATE customers SET first_name = 'x'", "SELECT 1; DROP TABLE customers",
    "SELECT load_extension('x')", "SELECT randomblob(1000000000)", "REINDEX", "ANALYZE",
])
def test_every_non_read_statement_is_refused(tmp_path, query):
    path = write_overlay(tmp_path / "o.json", {"retail": [_task([_sql(query)])]})
    with pytest.raises(OverlayError):
        _make(path)


def test_the_verifier_connection_cannot_leave_read_only(tmp_path):
    """Even a check that reached run time (no load validation) cannot switch read-only off or attach."""
    from agentworld_envs.engine.verifiers import VerifierContext, run_checks

    env = gym.make(ENV)
    env.reset(seed=0)
    inner = env.unwrapped
    target = tmp_path / "pwn.db"
    bundle = inner.bundle
    from agentworld_envs.engine.state import golden_path

    golden, _ = golden_path(bundle.spec)
    assert golden.exists()
    checks = _escape_checks(target) + [_sql(f"ATTACH DATABASE '{golden}' AS g"),
                                       _sql(f"VACUUM INTO '{tmp_path / 'copy.db'}'")]
    checks.append(_sql("SELECT 1 FROM customers WHERE 0"))   # an honest query still runs
    task = _task(checks)
    ctx = VerifierContext(final=inner.conn, initial=bundle.initial, initial_table_hashes=bundle.initial_table_hashes)
    score, results = run_checks(task, None, ctx)
    assert score == 0.0 and not target.exists() and not (tmp_path / "copy.db").exists()
    results = [r for r in results if r["type"] != "outcome"]   # the outcome check every task gets comes first
    assert [r["passed"] for r in results][:-1] == [False] * 7 and results[-1]["passed"]
    assert inner.conn.execute("PRAGMA query_only").fetchone() == (0,)   # the episode can write again
    assert inner.conn.execute("PRAGMA database_list").fetchall()[0][1] == "main"
    assert len(inner.conn.execute("PRAGMA database_list").fetchall()) == 1
    # and the episode goes on normally afterwards
    obs, *_ = env.step(json.dumps({"name": "get_customer_details", "arguments": {"customer_id": 1}}))
    assert '"error"' not in obs[:20]


def test_a_runaway_check_query_ends_as_a_failed_check():
    from agentworld_envs.engine import sqlcheck
    from agentworld_envs.engine.verifiers import VerifierContext, run_checks

    env = gym.make(ENV)
    env.reset(seed=0)
    inner = env.unwrapped
    loop = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    ctx = VerifierContext(final=inner.conn, initial=inner.bundle.initial,
                          initial_table_hashes=inner.bundle.initial_table_hashes)
    old = sqlcheck.CHECK_BUDGET
    try:
        sqlcheck.CHECK_BUDGET = 2_000_000
        score, results = run_checks({"id": "t", "checks": [{"type": "sql", "query": loop, "expect": [[1]]}]}, None, ctx)
    finally:
        sqlcheck.CHECK_BUDGET = old
    sql = next(r for r in results if r["type"] == "sql")
    assert score == 0.0 and "interrupted" in sql["detail"]


def test_attaching_another_envs_golden_database_is_refused(tmp_path):
    from agentworld_envs.catalogue.catalog import load_bundle
    from agentworld_envs.engine.state import golden_path

    other = load_bundle("agentworld/retail-v0")
    golden, _ = golden_path(other.spec)
    q = f"SELECT 1 FROM pragma_database_list WHERE 0 UNION SELECT 1 WHERE (SELECT 1 FROM (ATTACH '{golden}' AS g))"
    for query in (f"ATTACH DATABASE '{golden}' AS g", q, "SELECT * FROM g.customers"):
        path = write_overlay(tmp_path / "o.json", {"retail": [_task([_sql(query)])]})
        with pytest.raises(OverlayError):
            _make(path)


@pytest.mark.parametrize("bad", [
    {"type": "telepathy"},
    {"type": "python", "function": "nobody.nothing"},
    {"type": "sql", "query": "SELECT 1"},                      # no expect
    {"type": "answer", "mode": "exact", "expected": "x", "evil": 1},
])
def test_unknown_or_malformed_checks_are_refused_at_load(tmp_path, bad):
    path = write_overlay(tmp_path / "o.json", {"retail": [_task([bad])]})
    with pytest.raises(OverlayError):
        _make(path)


@pytest.mark.parametrize("task", [
    {"id": "../../etc", "instruction": "x", "solution": [{"name": "submit", "arguments": {}}], "checks": []},
    {"id": "t1", "instruction": "x", "solution": [{"name": "launch_missiles", "arguments": {}}], "checks": []},
    {"id": "t1", "instruction": "", "solution": [{"name": "submit", "arguments": {}}], "checks": []},
    {"id": "t1", "instruction": "x", "solution": "submit", "checks": []},
])
def test_malformed_overlay_tasks_are_refused(tmp_path, task):
    path = write_overlay(tmp_path / "o.json", {"retail": [task]})
    with pytest.raises(OverlayError):
        _make(path)


def test_duplicate_overlay_task_ids_are_refused(tmp_path):
    t = _task([_sql("SELECT 1 WHERE 0")], tid="dup")
    path = write_overlay(tmp_path / "o.json", {"retail": [t, t]})
    with pytest.raises(OverlayError, match="duplicate"):
        _make(path)


def test_a_valid_overlay_still_works(tmp_path):
    path = write_overlay(tmp_path / "o.json", {"retail": [_task([_sql("SELECT 1 FROM customers WHERE 0")], tid="ok-1")]})
    env = _make(path)
    obs, info = env.reset(seed=0)
    assert info["task_id"] == "ok-1"
    _, reward, terminated, _, _ = env.step('{"name": "submit", "arguments": {}}')
    assert terminated and reward == 1.0


def _fails_fast(fn, seconds=30.0):
    """Run ``fn`` in a thread; it must raise OverlayError within ``seconds`` (never hang)."""
    box: dict = {}

    def run():
        try:
            fn()
            box["result"] = "returned"
        except BaseException as exc:  # noqa: BLE001
            box["result"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "hung"
    assert isinstance(box["result"], OverlayError), box["result"]
    return box["result"]


def test_fifo_overlay_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    _fails_fast(lambda: _make(fifo))


@pytest.mark.parametrize("where", ["/dev/zero", "dir", "missing", "huge", "empty", "garbage", "link-to-zero"])
def test_overlay_paths_that_are_not_files(tmp_path, where):
    path = {"/dev/zero": Path("/dev/zero"), "dir": tmp_path, "missing": tmp_path / "nope.json"}.get(where)
    if where == "huge":
        path = tmp_path / "huge.json"
        with open(path, "wb") as fh:
            fh.truncate(MAX_OVERLAY_BYTES + 1)   # sparse: large without using the disk
    elif where == "empty":
        path = tmp_path / "empty.json"
        path.write_text("")
    elif where == "garbage":
        path = tmp_path / "garbage.json"
        path.write_bytes(b"\xff\xfe{{{")
    elif where == "link-to-zero":
        path = tmp_path / "zero.json"
        path.symlink_to("/dev/zero")
    err = _fails_fast(lambda: _make(path))
    assert len(str(err).splitlines()) == 1


def test_missing_overlay_in_train_is_one_line(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "train", "--model", "tiny", "--env-ids", "retail",
                          "--eval-split", "", "--steps", "1", "--task-overlay", str(tmp_path / "nope.json"),
                          "--output-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=600,
                         env={**os.environ})
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2 and "Traceback" not in text, text
    assert len(text.splitlines()) == 1 and "nope.json" in text, text
