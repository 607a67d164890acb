"""`agentworld db` / `agentworld show --table`: an environment's state as a standalone SQLite file for sqlite-utils."""

from __future__ import annotations

import os
import sqlite3

import pytest

sqlite_utils = pytest.importorskip("sqlite_utils")

from agentworld_envs.engine import state  # noqa: E402
from agentworld_envs.catalogue.catalog import load_bundle  # noqa: E402
from agentworld_envs.cli import app  # noqa: E402
from agentworld_envs.env import AgentWorldEnv  # noqa: E402
from agentworld_envs.util.errors import run_cli  # noqa: E402
from agentworld_envs.serving.integrations.statedb import APPLICATION_ID, StateSource, write  # noqa: E402

SYNTH = "agentworld/wine-club-subscriptions-v0"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        run_cli(app, args=list(argv))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def world_objects(path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT type, name FROM sqlite_master ORDER BY type, name").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("env_id", ["agentworld/retail-v0", SYNTH])
def test_golden_export_is_the_world_and_only_the_world(env_id, tmp_path, capsys):
    out = tmp_path / "x.db"
    code, stdout, _ = cli(capsys, "db", env_id, "--out", str(out))
    assert code == 0 and "wrote" in stdout
    bundle = load_bundle(env_id)
    golden = bundle.initial
    expected = state.user_tables(golden)
    db = sqlite_utils.Database(out)
    # `sqlite-utils tables --counts` lists every world table with its row count ...
    counts = {t.name: t.count for t in db.tables}
    assert sorted(counts) == expected
    for table in expected:
        assert counts[table] == golden.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    # ... the rows are the golden rows (same canonical state hash), and nothing of the engine leaks.
    assert state.state_hash(db.conn) == state.state_hash(golden)
    objects = world_objects(out)
    assert not [o for o in objects if "_aw_" in o[1] or o[0] == "trigger"], objects
    assert any(o[0] == "index" for o in objects)  # foreign-key indexes come along
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert os.stat(out).st_mode & 0o044  # an ordinary file, not mkstemp's private one


def test_sqlite_utils_cli_lists_every_table_with_counts(tmp_path, capsys):
    from click.testing import CliRunner
    from sqlite_utils.cli import cli as sqlite_utils_cli

    out = tmp_path / "retail.db"
    assert cli(capsys, "db", "retail-v0", "--out", str(out))[0] == 0
    result = CliRunner().invoke(sqlite_utils_cli, ["tables", str(out), "--counts", "--csv"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split(",") for line in result.output.strip().splitlines()[1:])
    golden = load_bundle("retail").initial
    assert {t: int(n) for t, n in rows.items()} == {
        t: golden.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in state.user_tables(golden)}


def test_after_solution_is_the_state_the_verifier_accepts(tmp_path):
    env = AgentWorldEnv("retail")
    # A write task: its reference solution changes the state.
    for task_id in env.task_ids:
        env.reset(options={"task_id": task_id})
        for action in env.solution_actions():
            _, reward, *_ = env.step(action)
        if state.changed_tables(env.conn) and reward == 1.0:
            break
    else:
        pytest.fail("retail has no write task")
    after = env.state_hash()
    written = write(StateSource("retail", task_id, after_solution=True), tmp_path / "after.db")
    db = sqlite_utils.Database(written.path)
    assert state.state_hash(db.conn) == after != state.state_hash(load_bundle("retail").initial)
    assert not [o for o in world_objects(written.path) if "_aw_" in o[1]]


def test_never_overwrites_a_file_it_did_not_write(tmp_path, capsys):
    mine = tmp_path / "mine.db"
    assert cli(capsys, "db", "retail", "--out", str(mine))[0] == 0
    # An existing file is refused without --overwrite, even one it wrote.
    code, _, err = cli(capsys, "db", "retail", "--out", str(mine))
    assert code == 2 and "--overwrite" in err and len(err.strip().splitlines()) == 1
    # With --overwrite it replaces its own database ...
    assert cli(capsys, "db", "retail", "--out", str(mine), "--overwrite", "--task", "retail-001")[0] == 0
    # ... but never anything else: a text file, another SQLite database, a directory, a symlink.
    other = tmp_path / "notes.db"
    other.write_text("my notes")
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.close()
    before = foreign.read_bytes()
    link = tmp_path / "link.db"
    link.symlink_to(mine)
    for target in (other, foreign, tmp_path, link):
        code, _, err = cli(capsys, "db", "retail", "--out", str(target), "--overwrite")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (target, err)
    assert other.read_text() == "my notes" and foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.db", "link.db", "mine.db", "notes.db"]


@pytest.mark.parametrize("argv", [
    ["db", "nope", "--out", "{tmp}/x.db"],
    ["db", "retail", "--out", "{tmp}/x.db", "--task", "nope"],
    ["db", "retail", "--out", "{tmp}/x.db", "--after-solution"],
    ["db", "retail", "--out", "{tmp}/missing/x.db"],
    ["db", "retail", "--out", "/proc/x.db"],  # a directory nothing can be written in
    ["show", "retail", "--table", "nope"],
    ["show", "retail", "--task", "retail-001"],
])
def test_bad_calls_are_one_line(argv, tmp_path, capsys):
    code, _, err = cli(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "x.db").exists()


def test_show_table_prints_rows_through_the_same_path(capsys):
    import json

    code, stdout, _ = cli(capsys, "show", "retail", "--table", "customers", "--limit", "3", "--json")
    rows = [json.loads(line) for line in stdout.splitlines()]
    golden = load_bundle("retail").initial
    golden.row_factory = sqlite3.Row
    try:
        expected = [dict(r) for r in golden.execute("SELECT * FROM customers ORDER BY rowid LIMIT 3")]
    finally:
        golden.row_factory = None
    assert code == 0 and rows == expected
    total = golden.execute("SELECT COUNT(*) FROM customers").fetchone()[0]
    code, stdout, _ = cli(capsys, "show", "retail", "--table", "customers", "--limit", "2")
    assert code == 0 and f"customers: {total} rows (first 2)" in stdout
    assert str(expected[0]["email"])[:10] in stdout and str(expected[2]["email"])[:10] not in stdout


@pytest.mark.slow
def test_docs_recipe_runs_as_written(tmp_path):
    """The `db` recipe of docs/integrations.md, run as a user would (the CLI, then sqlite-utils' CLI)."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if shutil.which("sqlite-utils") is None or shutil.which("agentworld") is None:
        pytest.skip("the sqlite-utils and agentworld commands are not on PATH")
    docs = (root / "docs" / "integrations.md").read_text(encoding="utf-8")
    recipe = re.search(r"<!-- recipe: db -->\s*```bash\n(.*?)```", docs, re.S).group(1)
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", recipe], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    golden = load_bundle("retail").initial
    for table in state.user_tables(golden):  # `sqlite-utils tables --counts` lists every table and its rows
        n = golden.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
        assert f'{{"table": "{table}", "count": {n}}}' in out.stdout, table
    assert '"status": "cancelled"' in out.stdout  # retail-021 cancels its order: the after-solution state
    assert sorted(p.name for p in tmp_path.iterdir()) == ["retail-021.db", "retail.db"]


def test_serve_openenv_errors_are_one_line(capsys):
    """Without OpenEnv the command names the extra; with it, a bad id is one line before anything listens."""
    import importlib.util

    if importlib.util.find_spec("openenv") is None:
        code, _, err = cli(capsys, "serve-openenv", "retail")
        assert code == 2 and "pip install 'agentworld[openenv]'" in err and len(err.strip().splitlines()) == 1
    for argv in (["serve-openenv", "nope"], ["serve-openenv", "retail", "--task", "nope"],
                 ["serve-openenv", "retail", "--port", "0"], ["serve-openenv"]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and "Traceback" not in err and err.strip(), (argv, err)
