"""Every user error of the CLI is one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer

from agentworld_envs.util.errors import UserInputError, run_cli

BAD_CALLS = [
    ["show", "nope"],
    ["play", "nope"],
    ["validate", "nope"],
    ["bench", "nope"],
    ["build", "nope"],
    ["tasks", "synth", "nope"],
    ["serve-mcp", "nope"],
    ["play", "retail", "--task", "nope"],
    ["serve-mcp", "retail", "--task", "nope"],
    ["tasks", "synth", "retail", "--focus-tools", "fly_to_moon"],
    ["validate", "retail", "--jobs", "-1"],
    ["build", "retail", "--jobs", "-1"],
    ["stats", "--jobs", "-1"],
    ["validate", "--sample", "-3"],
    ["bench", "--n", "0"],
    ["bench", "retail", "--live", "-5"],
    ["serve-mcp", "retail", "--port", "99999"],
    ["serve-mcp", "retail", "--max-sessions", "0"],
    ["serve-mcp", "retail", "--transport", "carrier-pigeon"],
    ["build", "--l1", "bogus"],
    ["validate", "--l1", "bogus"],
    ["export", "tasks", "--out", "/"],
    ["export", "sft", "--out", "/"],
    ["export", "tasks", "--out", "{tmp}/x", "--limit", "-1"],
    ["export", "tasks", "--out", "{tmp}/x", "--split", "bogus"],
    ["play", "retail", "--max-turns", "-1"],
    ["play", "retail", "--seed", "-1"],
    ["tasks", "synth", "retail", "--n", "0"],
    ["list", "--split", "bogus"],
    ["show"],
]


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cli-cache")
    return {**os.environ, "AGENTWORLD_CACHE": str(cache)}


@pytest.mark.parametrize("argv", BAD_CALLS, ids=lambda a: " ".join(a))
def test_bad_call_is_one_line_and_non_zero(argv, cli_env, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", *argv], capture_output=True, text=True,
                         env=cli_env, timeout=180)
    text = (out.stdout + out.stderr).strip()
    assert out.returncode != 0, text
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1 and text.startswith("agentworld: error: "), text
    assert not (tmp_path / "x").exists()  # a refused export writes nothing


def test_export_to_a_non_empty_directory_is_refused_and_untouched(cli_env, tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "export", "tasks", "--out", str(target),
                          "--ids", "retail", "--overwrite"], capture_output=True, text=True, env=cli_env, timeout=180)
    assert out.returncode == 2 and "agentworld did not write" in out.stderr
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


def test_exports_overwrite_only_their_own_kind(tmp_path, monkeypatch):
    from agentworld_envs.util.outputs import read_manifest
    from agentworld_envs.serving import export

    monkeypatch.setattr(export, "task_rows", lambda entries: [{"env_id": "e", "task_id": "t"}])
    monkeypatch.setattr(export, "sft_rows", lambda entries: [{"env_id": "e", "task_id": "t", "messages": []}])
    out = tmp_path / "ds"
    assert export.export_tasks(out, []) == 1
    assert read_manifest(out)[0]["kind"] == "tasks"
    with pytest.raises(UserInputError, match="--overwrite"):
        export.export_tasks(out, [])
    (out / "stale.txt").write_text("the user's")
    assert export.export_tasks(out, [], overwrite=True) == 1
    assert (out / "stale.txt").read_text() == "the user's"  # not ours: kept
    with pytest.raises(UserInputError, match="'tasks' output"):
        export.export_sft(out, [], overwrite=True)
    assert read_manifest(out)[0]["kind"] == "tasks"
    from datasets import load_from_disk

    assert load_from_disk(str(out))[0]["task_id"] == "t"


def _app(exc: BaseException) -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command()
    def go() -> None:
        raise exc

    @app.command()
    def other() -> None:
        pass

    return app


def test_run_cli_maps_user_errors_to_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        run_cli(_app(UserInputError("bad\nthing")), args=["go"])
    assert info.value.code == 2
    assert capsys.readouterr().err.strip() == "agentworld: error: bad thing"


def test_run_cli_keeps_tracebacks_for_bugs():
    with pytest.raises(ZeroDivisionError):
        run_cli(_app(ZeroDivisionError("a real bug")), args=["go"])


def test_run_cli_passes_exit_codes_through():
    with pytest.raises(SystemExit) as info:
        run_cli(_app(typer.Exit(1)), args=["go"])
    assert info.value.code == 1
    with pytest.raises(SystemExit) as info:
        run_cli(_app(typer.Exit(0)), args=["other"])
    assert info.value.code == 0


GOOD_RECORD = {"env_id": "agentworld/retail-v0", "task_id": "t", "success": False, "reward": 0.0,
               "outcome": "wrong_answer", "turns": 1}


@pytest.mark.parametrize("content", [
    b"[1, 2]\n", b"{}\n", b'"a string"\n', b"null\n", b"42\n",
    json.dumps({**GOOD_RECORD, "success": "yes"}).encode() + b"\n",
    json.dumps({**GOOD_RECORD, "calls": [1, 2]}).encode() + b"\n",
    json.dumps({**GOOD_RECORD, "checks": [{"type": "sql"}]}).encode() + b"\n",
    json.dumps({**GOOD_RECORD, "reward": None}).encode() + b"\n",
    b"not json\n" + json.dumps(GOOD_RECORD).encode() + b"\n",
    b"\xff\xfe\x00garbage\n",
    b"",
], ids=lambda c: c[:24].decode("utf-8", "replace"))
def test_diagnose_on_malformed_records_is_one_line(cli_env, tmp_path, content):
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_bytes(content)
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "diagnose", str(run)], capture_output=True,
                         text=True, env=cli_env, timeout=180)
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2 and "Traceback" not in text and len(text.splitlines()) == 1, text
    assert not (run / "diagnosis.json").exists()


@pytest.mark.parametrize("kind", ["dir", "fifo", "missing"])
def test_diagnose_records_that_are_not_files(cli_env, tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    if kind == "dir":
        (run / "records.jsonl").mkdir()
    elif kind == "fifo":
        os.mkfifo(run / "records.jsonl")
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "diagnose", str(run)], capture_output=True,
                         text=True, env=cli_env, timeout=180)
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2 and "Traceback" not in text and len(text.splitlines()) == 1, text
