"""Output paths at the edges: forged or signed-but-wrong manifests, another user's key, links,
a full disk, two commands at once, single output files (``agentworld db --out``, ``diagnose --html``).

Each test plants the user's file where a command would write and checks it is byte-for-byte
intact afterwards, and that the command said so in one line with exit status 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_envs.util import outputs
from agentworld_envs.util.outputs import MANIFEST, OutputDir, OutputError, read_manifest


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    return {**os.environ, "AGENTWORLD_CACHE": os.environ.get("AGENTWORLD_CACHE") or str(tmp_path_factory.mktemp("c"))}


def _cli(args, env, cwd=None, limit_bytes: int | None = None, timeout=300):
    def limit():   # a disk that fills: writes past limit_bytes fail with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", *map(str, args)], capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=timeout, preexec_fn=limit if limit_bytes else None)
    assert "Traceback" not in out.stderr, out.stderr
    return out.returncode, out.stderr


def _one_line_error(code: int, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and "Saving the dataset" not in ln]
    assert code == 2 and len(lines) == 1, err
    return lines[0]


def _signed(body: dict) -> str:
    return json.dumps({**body, "mac": outputs._sign(body)})


def _entry(path: Path) -> dict:
    data = path.read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "mtime_ns": None}


# ----------------------------------------------------------------------------------- manifests

@pytest.mark.parametrize("name", ["../victim.txt", "sub/../../victim.txt", "ABS", "./x/../../victim.txt", MANIFEST,
                                  "a//b", "x\x00y"])
def test_a_signed_manifest_naming_paths_outside_is_not_trusted(tmp_path, name):
    """Even with a valid signature (an older version, a bug, a leaked key), a manifest that lists a path
    outside its directory never makes --overwrite remove that file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    d = tmp_path / "out"
    d.mkdir()
    rel = str(victim) if name == "ABS" else name
    body = {"tag": outputs._TAG, "format": 1, "kind": "tasks", "created": "x", "files": {rel: _entry(victim)}}
    (d / MANIFEST).write_text(_signed(body))
    assert read_manifest(d)[0] is None
    with pytest.raises(OutputError, match="did not write"):
        OutputDir.claim(d, "tasks", overwrite=True).clear()
    assert victim.read_text() == "precious"


def test_a_manifest_signed_with_another_key_is_not_trusted(tmp_path, monkeypatch):
    victim = tmp_path / "out" / "tasks.jsonl"
    victim.parent.mkdir()
    victim.write_text("my own tasks")
    body = {"tag": outputs._TAG, "format": 1, "kind": "tasks", "created": "x", "files": {"tasks.jsonl": _entry(victim)}}
    mac = __import__("hmac").new(b"k" * 32, json.dumps(body, sort_keys=True, separators=(",", ":")).encode(),
                                 hashlib.sha256).hexdigest()
    (victim.parent / MANIFEST).write_text(json.dumps({**body, "mac": mac}))
    with pytest.raises(OutputError, match="did not write"):
        OutputDir.claim(victim.parent, "tasks", overwrite=True)
    assert victim.read_text() == "my own tasks"


@pytest.fixture
def fresh_key(tmp_path, monkeypatch):
    """The signing key looked up again, in a private data directory of this test."""
    import platformdirs

    data = tmp_path / "data"
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(data))
    monkeypatch.delenv("AGENTWORLD_CACHE", raising=False)
    for fn in (outputs._key, outputs._private_dir):
        fn.cache_clear()
    yield data
    for fn in (outputs._key, outputs._private_dir):
        fn.cache_clear()


def test_a_key_others_can_read_is_replaced(fresh_key):
    """A key file others may read (e.g. planted with known bytes) never signs: a new private key does."""
    fresh_key.mkdir(mode=0o700)
    planted = fresh_key / "output-key"
    planted.write_bytes(b"k" * 32)
    planted.chmod(0o644)
    key = outputs._key()
    assert key != b"k" * 32 and len(key) >= 32
    st = planted.stat()
    assert planted.read_bytes() == key and not st.st_mode & 0o077


def test_a_data_directory_others_may_write_is_not_used_for_the_key(fresh_key):
    fresh_key.mkdir()
    fresh_key.chmod(0o777)
    (fresh_key / "output-key").write_bytes(b"k" * 32)
    (fresh_key / "output-key").chmod(0o600)
    assert outputs._private_dir() is None
    assert outputs._key() != b"k" * 32


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_key_that_belongs_to_another_user_is_not_used(fresh_key):
    fresh_key.mkdir(mode=0o700)
    planted = fresh_key / "output-key"
    planted.write_bytes(b"k" * 32)
    planted.chmod(0o600)
    os.chown(planted, 12345, 12345)
    assert outputs._key() != b"k" * 32


def test_written_files_follow_the_umask_and_the_manifest_stays_private(tmp_path):
    out = OutputDir.claim(tmp_path / "d", "eval")
    path = out.write_text("summary.json", "{}")
    mask = outputs._umask()
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert not (tmp_path / "d" / MANIFEST).stat().st_mode & 0o077


# ----------------------------------------------------------------------------------- two at once

def test_a_second_command_on_the_same_directory_is_refused_while_the_first_runs(tmp_path):
    d = tmp_path / "d"
    first = OutputDir.claim(d, "tasks")
    first.write_text("tasks.jsonl", "{}\n")
    other = subprocess.run([sys.executable, "-c", "import sys\nfrom agentworld_envs.util.outputs import OutputDir, OutputError\n"
                            "try:\n    OutputDir.claim(sys.argv[1], 'tasks', overwrite=True).clear()\n"
                            "except OutputError as e:\n    print(e); sys.exit(2)", str(d)],
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 2 and "another agentworld command" in other.stdout, other
    assert (d / "tasks.jsonl").read_text() == "{}\n"
    # The same process may claim again (a command that checks, then writes), and after the first is gone, anyone.
    again = OutputDir.claim(d, "tasks", overwrite=True)
    del first, again
    import gc

    gc.collect()
    other = subprocess.run([sys.executable, "-c", "import sys\nfrom agentworld_envs.util.outputs import OutputDir\n"
                            "OutputDir.claim(sys.argv[1], 'tasks', overwrite=True).clear()", str(d)],
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert not (d / "tasks.jsonl").exists()


# ----------------------------------------------------------------------------------- a disk that fills

@pytest.fixture(scope="module")
def warm_env(cli_env, tmp_path_factory):
    """retail-v0's cached databases built without a size limit: the limit is meant for the command's
    outputs, and a cold cache (a fresh clone, a builder change) would fail on the cache first."""
    assert _cli(["export", "tasks", "--ids", "retail-v0", "--out", tmp_path_factory.mktemp("warm") / "x"], cli_env)[0] == 0
    return cli_env


@pytest.mark.parametrize("argv", [
    ["export", "tasks", "--ids", "retail-v0", "--out", "{d}"],
    ["eval", "retail-v0", "--policy", "reference", "--tasks-per-env", "3", "--out", "{d}"],
])
def test_a_disk_that_fills_is_one_line_and_leaves_no_directory(tmp_path, warm_env, argv):
    d = tmp_path / "out"
    code, err = _cli([a.format(d=d) for a in argv], warm_env, limit_bytes=1024)
    assert "cannot write" in _one_line_error(code, err)
    assert not d.exists()


def test_a_disk_that_fills_keeps_the_earlier_export(tmp_path, cli_env):
    d = tmp_path / "out"
    assert _cli(["export", "tasks", "--ids", "retail-v0", "--out", d], cli_env)[0] == 0
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    code, err = _cli(["export", "tasks", "--ids", "retail-v0", "--out", d, "--overwrite"], cli_env, limit_bytes=1024)
    _one_line_error(code, err)
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.name != MANIFEST} == \
        {k: v for k, v in before.items() if k != MANIFEST}


# ----------------------------------------------------------------------------------- single output files

def test_db_overwrite_replaces_only_an_unchanged_database_it_wrote_there(tmp_path, cli_env):
    db = tmp_path / "retail.db"
    assert _cli(["db", "retail-v0", "--out", db], cli_env)[0] == 0
    assert _cli(["db", "retail-v0", "--out", db, "--overwrite"], cli_env)[0] == 0   # ours, unchanged: replaced
    # The user adds a table of their own notes: the file is theirs now.
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE my_notes(x)")
    conn.execute("INSERT INTO my_notes VALUES ('important')")
    conn.commit()
    conn.close()
    edited = db.read_bytes()
    code, err = _cli(["db", "retail-v0", "--out", db, "--overwrite"], cli_env)
    assert "changed since" in _one_line_error(code, err)
    assert db.read_bytes() == edited
    # A copy of an unchanged database at another path is not ours there either.
    fresh = tmp_path / "fresh.db"
    assert _cli(["db", "retail-v0", "--out", fresh], cli_env)[0] == 0
    copy = tmp_path / "copy.db"
    copy.write_bytes(fresh.read_bytes())
    code, err = _cli(["db", "retail-v0", "--out", copy, "--overwrite", "--task", "retail-001", "--after-solution"], cli_env)
    _one_line_error(code, err)
    assert copy.read_bytes() == fresh.read_bytes()


def test_diagnose_html_outside_the_run_replaces_only_its_own_unchanged_report(tmp_path, cli_env):
    run = tmp_path / "run"
    assert _cli(["eval", "retail-v0", "--policy", "reference", "--tasks-per-env", "1", "--out", run], cli_env)[0] == 0
    page = tmp_path / "reports" / "d.html"
    assert _cli(["diagnose", run, "--html", page], cli_env)[0] == 0
    assert page.is_file()
    assert _cli(["diagnose", run, "--html", page], cli_env)[0] == 0   # its own report, unchanged: replaced
    page.write_text("my annotated copy")
    code, err = _cli(["diagnose", run, "--html", page], cli_env)
    assert "did not write" in _one_line_error(code, err)
    assert page.read_text() == "my annotated copy"
    link = tmp_path / "link.html"
    link.symlink_to(page)
    code, err = _cli(["diagnose", run, "--html", link], cli_env)
    _one_line_error(code, err)
    assert page.read_text() == "my annotated copy"


@pytest.mark.parametrize("round_args", [[], ["--round", "1"]])
def test_an_eval_run_that_fails_half_written_leaves_no_directory(tmp_path, monkeypatch, round_args):
    """records.jsonl written, then the disk fills at summary.json: a run directory the command made is
    removed again whole (the round's task file included), never left holding half a run."""
    from typer.testing import CliRunner

    from agentworld_envs.cli import app

    real = OutputDir.write_bytes

    def full_at_summary(self, rel, data):
        if str(rel) == "summary.json":
            assert (self.root / "records.jsonl").is_file()   # the first half really was written
            raise OutputError(f"--out {self.root}: cannot write summary.json (No space left on device)")
        return real(self, rel, data)

    monkeypatch.setattr(OutputDir, "write_bytes", full_at_summary)
    d = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "retail-v0", "--policy", "reference", "--tasks-per-env", "1",
                                      *round_args, "--out", str(d)])
    assert isinstance(result.exception, OutputError), result.output
    assert not d.exists(), sorted(p.name for p in d.iterdir())
