"""Nothing of the user's is lost: commands that write a directory own only what they wrote.

A directory of the user's files (``results.csv``, ``my_notes/``, ``report.md``, ``config.yaml``)
must survive ``export``, ``eval --out``, ``diagnose`` and ``train --output-dir``, with and
without ``--overwrite``; a copied marker, an edited manifest or a planted link must never make
the program delete or replace a file it did not write.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_envs.util.outputs import MANIFEST, OutputDir, OutputError, read_manifest


def _user_files(d: Path) -> dict[str, bytes]:
    """The user's work placed in ``d``; returns {relative path: bytes} to compare with later."""
    d.mkdir(parents=True, exist_ok=True)
    files = {"results.csv": b"model,score\nmine,0.93\n", "my_notes/idea.txt": b"keep me\n",
             "report.md": b"# my own report\n", "config.yaml": b"lr: 3.0e-4\n"}
    for rel, data in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    return files


def _intact(d: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        assert (d / rel).read_bytes() == data, f"{rel} was changed or removed"


def _snapshot(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` but agentworld's own manifest (which a refused command may rewrite)."""
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    return {**os.environ, "AGENTWORLD_CACHE": os.environ.get("AGENTWORLD_CACHE") or str(tmp_path_factory.mktemp("c"))}


def _cli(args, env, cwd=None, timeout=300):
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", *map(str, args)], capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=timeout)
    text = out.stdout + out.stderr
    assert "Traceback" not in text, text
    return out.returncode, text


# ----------------------------------------------------------------------------------- the module itself

def test_claim_new_and_empty_directories(tmp_path):
    out = OutputDir.claim(tmp_path / "new", "tasks")
    out.write_text("a.txt", "A")
    body, _ = read_manifest(tmp_path / "new")
    assert body["kind"] == "tasks" and set(body["files"]) == {"a.txt"}
    (tmp_path / "empty").mkdir()
    OutputDir.claim(tmp_path / "empty", "tasks")


def test_foreign_directory_refused_and_untouched(tmp_path):
    files = _user_files(tmp_path / "d")
    for overwrite in (False, True):
        with pytest.raises(OutputError, match="did not write"):
            OutputDir.claim(tmp_path / "d", "tasks", overwrite=overwrite)
    assert _snapshot(tmp_path / "d") == files


def test_overwrite_removes_only_unchanged_files_it_wrote(tmp_path):
    d = tmp_path / "d"
    out = OutputDir.claim(d, "eval")
    out.write_text("records.jsonl", "1\n")
    out.write_text("sub/x.bin", "x")
    out.write_text("edited.txt", "ours")
    files = _user_files(d)
    (d / "edited.txt").write_text("the user's edit")   # no longer what we wrote: kept
    with pytest.raises(OutputError, match="--overwrite"):
        OutputDir.claim(d, "eval")
    again = OutputDir.claim(d, "eval", overwrite=True)
    again.clear()
    assert not (d / "records.jsonl").exists() and not (d / "sub").exists()
    assert (d / "edited.txt").read_text() == "the user's edit"
    _intact(d, files)


def test_a_write_never_replaces_a_file_that_is_not_ours(tmp_path):
    d = tmp_path / "d"
    out = OutputDir.claim(d, "eval")
    out.write_text("summary.json", "{}")
    (d / "report.md").write_text("mine")
    with pytest.raises(OutputError, match="did not write"):
        out.write_text("report.md", "ours")
    assert (d / "report.md").read_text() == "mine"
    with pytest.raises(OutputError, match="in the way"):
        OutputDir.claim(d, "eval", overwrite=True, reserved=["report.md"])


def test_kind_mismatch_is_refused(tmp_path):
    OutputDir.claim(tmp_path / "d", "tasks").write_text("x", "1")
    with pytest.raises(OutputError, match="'tasks' output"):
        OutputDir.claim(tmp_path / "d", "sft", overwrite=True)


def test_copied_export_marker_does_not_make_a_directory_ours(tmp_path):
    d = tmp_path / "work"
    files = _user_files(d)
    marker = d / "agentworld-export.json"
    marker.write_text('{"kind": "tasks", "rows": 1000}')
    assert len(marker.read_bytes()) == 31
    files["agentworld-export.json"] = marker.read_bytes()
    with pytest.raises(OutputError):
        OutputDir.claim(d, "tasks", overwrite=True)
    assert _snapshot(d) == files


def test_a_manifest_the_user_edited_is_not_trusted(tmp_path):
    d = tmp_path / "d"
    OutputDir.claim(d, "tasks").write_text("data.arrow", "ours")
    files = _user_files(d)
    manifest = json.loads((d / MANIFEST).read_text())
    # List the user's file with its correct hash: a forged record must not make it deletable.
    manifest["files"]["results.csv"] = {"sha256": hashlib.sha256(files["results.csv"]).hexdigest(),
                                        "size": len(files["results.csv"])}
    (d / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(OutputError, match="edited or copied"):
        OutputDir.claim(d, "tasks", overwrite=True)
    _intact(d, files)
    (d / MANIFEST).write_text("{not json")
    with pytest.raises(OutputError, match="not valid JSON"):
        OutputDir.claim(d, "tasks", overwrite=True)
    _intact(d, files)


def test_links_are_never_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    victim_dir = tmp_path / "victim_dir"
    victim_dir.mkdir()
    (victim_dir / "keep.txt").write_text("precious too")
    d = tmp_path / "d"
    out = OutputDir.claim(d, "tasks")
    out.write_text("data.arrow", "ours")
    out.write_text("sub/state.json", "ours")
    # Replace our files by links to the user's: neither removal nor a later write may reach them.
    (d / "data.arrow").unlink()
    (d / "data.arrow").symlink_to(victim)
    import shutil

    shutil.rmtree(d / "sub")
    (d / "sub").symlink_to(victim_dir, target_is_directory=True)
    again = OutputDir.claim(d, "tasks", overwrite=True)
    again.clear()
    assert victim.read_text() == "precious" and (victim_dir / "keep.txt").read_text() == "precious too"
    with pytest.raises(OutputError):
        again.write_text("data.arrow", "new")
    with pytest.raises(OutputError):
        again.write_text("sub/state.json", "new")
    assert victim.read_text() == "precious" and sorted(p.name for p in victim_dir.iterdir()) == ["keep.txt"]


def test_manifest_that_is_a_fifo_or_a_link_does_not_hang(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    os.mkfifo(d / MANIFEST)
    with pytest.raises(OutputError, match="not a manifest"):
        OutputDir.claim(d, "tasks")
    (d / MANIFEST).unlink()
    (d / MANIFEST).symlink_to("/dev/zero")
    with pytest.raises(OutputError):
        OutputDir.claim(d, "tasks")


@pytest.mark.parametrize("bad", [".", "~", "/", "file"])
def test_cwd_home_root_and_files_are_refused(tmp_path, monkeypatch, bad):
    home = tmp_path / "home"
    files = _user_files(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    path = {"file": "results.csv"}.get(bad, bad)
    with pytest.raises(OutputError):
        OutputDir.claim(path, "tasks", overwrite=True)
    _intact(home, files)


# ----------------------------------------------------------------------------------- export

def test_export_keeps_the_users_files_with_and_without_overwrite(tmp_path, cli_env):
    d = tmp_path / "ds"
    code, text = _cli(["export", "tasks", "--out", d, "--ids", "retail", "--limit", "1"], cli_env)
    assert code == 0, text
    earlier = _snapshot(d)
    files = _user_files(d)
    code, text = _cli(["export", "tasks", "--out", d, "--ids", "retail"], cli_env)
    assert code == 2 and "--overwrite" in text and len(text.strip().splitlines()) == 1, text
    assert _snapshot(d) == {**earlier, **files}
    code, text = _cli(["export", "tasks", "--out", d, "--ids", "retail", "--overwrite"], cli_env)
    assert code == 0, text
    _intact(d, files)
    from datasets import load_from_disk

    assert load_from_disk(str(d))[0]["env_id"] == "agentworld/retail-v0"
    # A different kind never replaces it, and the files stay.
    code, text = _cli(["export", "sft", "--out", d, "--ids", "retail", "--overwrite"], cli_env)
    assert code == 2 and "'tasks'" in text, text
    _intact(d, files)


def test_export_over_a_copied_marker_is_refused(tmp_path, cli_env):
    d = tmp_path / "work"
    files = _user_files(d)
    (d / "agentworld-export.json").write_text('{"kind": "tasks", "rows": 1000}')
    files["agentworld-export.json"] = b'{"kind": "tasks", "rows": 1000}'
    code, text = _cli(["export", "tasks", "--out", d, "--ids", "retail", "--overwrite"], cli_env)
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert _snapshot(d) == files


def test_export_that_would_replace_a_users_file_changes_nothing(tmp_path, monkeypatch):
    from agentworld_envs.serving import export

    monkeypatch.setattr(export, "task_rows", lambda entries: [{"env_id": "e", "task_id": "t"}])
    d = tmp_path / "ds"
    export.export_tasks(d, [])
    (d / "state.json").unlink()
    (d / "state.json").write_text("the user's state.json")   # where datasets writes its own
    before = _snapshot(d)
    with pytest.raises(OutputError, match="state.json"):
        export.export_tasks(d, [], overwrite=True)
    assert _snapshot(d) == before


def test_a_failed_export_keeps_the_previous_one(tmp_path, monkeypatch):
    from agentworld_envs.serving import export

    monkeypatch.setattr(export, "task_rows", lambda entries: [{"env_id": "e", "task_id": "t"}])
    d = tmp_path / "ds"
    export.export_tasks(d, [])
    before = _snapshot(d)

    def boom(entries):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(export, "task_rows", boom)
    with pytest.raises(RuntimeError):
        export.export_tasks(d, [], overwrite=True)
    assert _snapshot(d) == before


# ----------------------------------------------------------------------------------- eval and diagnose

def test_eval_out_refuses_an_earlier_run_and_keeps_the_users_files(tmp_path, cli_env):
    d = tmp_path / "run"
    args = ["eval", "retail", "--policy", "noop", "--tasks-per-env", "1", "--out", d]
    code, text = _cli(args, cli_env)
    assert code == 0, text
    earlier = _snapshot(d)
    files = _user_files(d)
    code, text = _cli(args, cli_env)
    assert code == 2 and "--overwrite" in text and len(text.strip().splitlines()) == 1, text
    assert _snapshot(d) == {**earlier, **files}
    code, text = _cli(args + ["--overwrite"], cli_env)
    assert code == 0, text
    _intact(d, files)
    assert (d / "records.jsonl").is_file()
    # diagnose adds its files, and replaces only its own.
    code, text = _cli(["diagnose", d], cli_env)
    assert code == 0 and (d / "diagnosis.html").is_file(), text
    code, text = _cli(["diagnose", d], cli_env)
    assert code == 0, text
    code, text = _cli(["diagnose", d, "--html", d / "report.md"], cli_env)
    assert code == 2 and "did not write" in text, text
    other = tmp_path / "elsewhere.html"
    other.write_text("mine")
    code, text = _cli(["diagnose", d, "--html", other], cli_env)
    assert code == 2 and other.read_text() == "mine", text
    _intact(d, files)


def test_eval_into_a_directory_of_the_users_files_is_refused(tmp_path, cli_env):
    d = tmp_path / "mine"
    files = _user_files(d)
    for extra in ([], ["--overwrite"]):
        code, text = _cli(["eval", "retail", "--policy", "noop", "--tasks-per-env", "1", "--out", d, *extra], cli_env)
        assert code == 2 and len(text.strip().splitlines()) == 1, text
        assert _snapshot(d) == files


# ----------------------------------------------------------------------------------- train

def _train_cfg(out, **kw):
    from agentworld_rl.config import TrainConfig

    base = dict(model="tiny", torch_threads=1, env_ids=["agentworld_rl/toy-lookup-v0"], eval_split="",
                batch_size=2, group_size=2, max_turns=2, max_new_tokens=8, steps=1, save_every=1,
                use_lora=True, lora_r=4, output_dir=str(out), progress=False)
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.usefixtures("private_cache")
def test_train_output_dir_keeps_the_users_files(tmp_path):
    from agentworld_rl.errors import TrainError
    from agentworld_rl.trainer import train

    mine = tmp_path / "mine"
    files = _user_files(mine)
    for overwrite in (False, True):
        with pytest.raises(TrainError, match="did not write"):
            train(_train_cfg(mine, overwrite=overwrite))
        assert _snapshot(mine) == files

    run = tmp_path / "run"
    train(_train_cfg(run))
    assert (run / "report.md").is_file() and (run / "checkpoints").is_dir()
    body, _ = read_manifest(run)
    assert "report.md" in body["files"] and any(f.startswith("checkpoints/") for f in body["files"])
    notes = {"my_notes/idea.txt": b"keep me\n", "results.csv": b"a,b\n"}
    for rel, data in notes.items():
        (run / rel).parent.mkdir(exist_ok=True)
        (run / rel).write_bytes(data)
    with pytest.raises(TrainError, match="already holds a run"):
        train(_train_cfg(run))
    train(_train_cfg(run, overwrite=True))
    _intact(run, notes)
    # The user's own report.md in the run directory is in the way of the next run: refused, kept.
    (run / "report.md").write_text("my edits")
    with pytest.raises(TrainError, match="report.md"):
        train(_train_cfg(run, overwrite=True))
    assert (run / "report.md").read_text() == "my edits"
    _intact(run, notes)


def test_train_output_dir_that_is_a_file_is_one_line(tmp_path, cli_env):
    f = tmp_path / "afile"
    f.write_text("x")
    code, text = _cli(["train", "--model", "tiny", "--env-ids", "agentworld_rl/toy-lookup-v0", "--eval-split", "",
                       "--steps", "1", "--output-dir", f], cli_env)
    assert code == 2 and len(text.strip().splitlines()) == 1 and "not a directory" in text, text
    assert f.read_text() == "x"
