"""What users and kills do to the trainer: bad configs, damaged run directories, reused output dirs.

Every user error must be one line and a non-zero exit (never a traceback); resume must
survive what a kill leaves behind by falling back to the previous complete checkpoint.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch
import yaml

from agentworld_rl.config import TrainConfig, make_config
from agentworld_rl.errors import TrainError
from agentworld_rl.metrics import read_jsonl
from agentworld_rl.trainer import train

torch.set_num_threads(1)


# Tiny models and runs built here go to a throwaway cache, not the user's.
pytestmark = pytest.mark.usefixtures("private_cache")


def _app():
    import typer

    from agentworld_rl.cli import register

    app = typer.Typer()
    register(app)

    @app.callback()
    def _root():
        pass

    return app


def _invoke(args):
    from typer.testing import CliRunner
    return CliRunner().invoke(_app(), ["train", *args])


BAD_VALUES = [
    ({"use_lora": "maybe"}, "use_lora"),
    ({"steps": -5}, "steps"),
    ({"batch_size": 0}, "batch_size"),
    ({"group_size": 0}, "group_size"),
    ({"learning_rate": -1}, "learning_rate"),
    ({"mixed_precision": "fp8"}, "mixed_precision"),
    ({"loss_type": "ppo"}, "loss_type"),
    ({"lr_scheduler": "sometimes"}, "lr_scheduler"),
    ({"max_new_tokens": "many"}, "max_new_tokens"),
    ({"env_ids": [1, 2]}, "env_ids"),
    ({"lora_dropout": 1.5}, "lora_dropout"),
    ({"temperature": 0}, "temperature"),
    ({"output_dir": 5}, "output_dir"),
    ({"nope": 1}, "nope"),
]


@pytest.mark.parametrize("data,field", BAD_VALUES, ids=[f for _, f in BAD_VALUES])
def test_bad_config_values_are_one_line_errors(tmp_path, data, field):
    cfg_file = tmp_path / "bad.yaml"
    cfg_file.write_text(yaml.safe_dump(data))
    r = _invoke(["--config", str(cfg_file), "--print-config"])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and field in lines[0], r.output
    assert "Traceback" not in r.output
    with pytest.raises(TrainError):
        make_config(config_file=cfg_file)


@pytest.mark.parametrize("text,needle", [("- a\n- b\n", "mapping"), ("steps: [1,\n", "YAML"), ("42\n", "mapping")])
def test_config_file_that_is_not_a_mapping(tmp_path, text, needle):
    cfg_file = tmp_path / "bad.yaml"
    cfg_file.write_text(text)
    r = _invoke(["--config", str(cfg_file), "--print-config"])
    assert r.exit_code == 2 and needle in r.output and "unknown" not in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_missing_config_file_and_unknown_preset():
    r = _invoke(["--config", "/nonexistent/x.yaml", "--print-config"])
    assert r.exit_code == 2 and "cannot read config file" in r.output
    r = _invoke(["--preset", "huge-tpu", "--print-config"])
    assert r.exit_code == 2 and "unknown preset" in r.output


def test_valid_spellings_are_accepted(tmp_path):
    cfg_file = tmp_path / "ok.yaml"
    # YAML 1.1 reads 1e-4 as a string; numeric strings and word booleans are fine.
    cfg_file.write_text("learning_rate: 1e-4\nuse_lora: 'no'\nsteps: 3.0\nenv_ids: a,b\n")
    cfg = make_config(config_file=cfg_file)
    assert cfg.learning_rate == 1e-4 and cfg.use_lora is False and cfg.steps == 3 and cfg.env_ids == ["a", "b"]
    with pytest.raises(TrainError, match="steps"):
        TrainConfig(steps=2.5)  # direct construction is validated too


def test_cli_error_has_no_traceback_end_to_end(tmp_path):
    """Through the real entry point (`python -m agentworld_envs.cli train`), not just the typer app."""
    cfg_file = tmp_path / "bad.yaml"
    cfg_file.write_text("use_lora: maybe\n")
    r = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "train", "--config", str(cfg_file)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and r.stderr.strip().splitlines() == [
        "error: config use_lora: expected true or false, got 'maybe'"], r.stderr


# ---------------------------------------------------------------------------- damaged run directories

def _cfg(out, **kw):
    base = dict(model="tiny", torch_threads=1, env_ids=["agentworld_rl/toy-lookup-v0"], eval_split="",
                batch_size=2, group_size=2, max_turns=2, max_new_tokens=8, steps=3, save_every=1,
                use_lora=True, lora_r=4, learning_rate=5e-3, output_dir=str(out), progress=False)
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A 3-step run with a checkpoint after every step (copied by each test before damaging it)."""
    out = tmp_path_factory.mktemp("run") / "base"
    train(_cfg(out))
    return out


@pytest.fixture
def run_dir(finished_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    return out


def _steps(out):
    return [r["step"] for r in read_jsonl(out / "metrics.jsonl")]


def test_partial_last_metrics_line_is_dropped_on_resume(run_dir):
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write('{"step": 4, "loss": 0.1')  # a kill in the middle of a write
    train(_cfg(run_dir, steps=4, resume_from="latest"))
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3, 4]  # every line parses


def test_truncated_trainable_falls_back_to_previous_checkpoint(run_dir, capsys):
    data = (run_dir / "checkpoints" / "step-3" / "trainable.pt").read_bytes()
    (run_dir / "checkpoints" / "step-3" / "trainable.pt").write_bytes(data[: len(data) // 2])
    train(_cfg(run_dir, steps=4, resume_from="latest"))
    out = capsys.readouterr().out
    assert "skipping checkpoint step-3/trainable.pt does not match the hash recorded" in out
    assert "resumed from" in out and "step-2" in out
    assert _steps(run_dir) == [1, 2, 3, 4]  # steps 3 and 4 were re-run after the fallback
    assert (run_dir / "checkpoints" / "step-4" / "state.json").exists()


@pytest.mark.parametrize("victim", ["trainable.pt", "optimizer.pt", "scheduler.pt", "state.json", "rng-0.pt"])
def test_bit_flipped_checkpoint_file_is_skipped_with_one_line(run_dir, capsys, victim):
    """A file that still loads but is not what was written (one flipped bit) is refused by its hash."""
    path = run_dir / "checkpoints" / "step-3" / victim
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    train(_cfg(run_dir, steps=3, resume_from="latest"))
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "skipping checkpoint" in line]
    assert lines == [f"resume: skipping checkpoint step-3/{victim} does not match the hash recorded when it was "
                     "written (damaged or edited); falling back to an older one"], out
    assert "resumed from" in out and "step-2 (step 2)" in out
    assert _steps(run_dir) == [1, 2, 3]


def test_checkpoint_without_its_hashes_is_not_trusted(run_dir, capsys):
    (run_dir / "checkpoints" / "step-3" / "hashes.json").unlink()
    (run_dir / "checkpoints" / "step-2" / "hashes.json").write_text('{"state.json": "00"}')
    train(_cfg(run_dir, steps=3, resume_from="latest"))
    out = capsys.readouterr().out
    assert "step-3 is incomplete (missing hashes.json)" in out
    assert "step-2/state.json does not match the hash" in out and "step-1 (step 1)" in out


def test_missing_optimizer_falls_back(run_dir, capsys):
    (run_dir / "checkpoints" / "step-3" / "optimizer.pt").unlink()
    train(_cfg(run_dir, steps=3, resume_from="latest"))
    out = capsys.readouterr().out
    assert "step-3 is incomplete (missing optimizer.pt)" in out and "step-2" in out
    assert _steps(run_dir) == [1, 2, 3]
    assert (run_dir / "checkpoints" / "step-3" / "optimizer.pt").exists()  # rewritten


def test_odd_checkpoint_names_are_ignored(run_dir, capsys):
    (run_dir / "checkpoints" / "step-").mkdir()
    (run_dir / "checkpoints" / "step-99.tmp").mkdir()  # a save killed before its rename
    (run_dir / "checkpoints" / "step-abc").mkdir()
    train(_cfg(run_dir, steps=4, resume_from="latest"))
    assert "step-3 (step 3)" in capsys.readouterr().out
    assert _steps(run_dir) == [1, 2, 3, 4]


def test_every_checkpoint_damaged_starts_afresh_with_message(run_dir, capsys):
    for ckpt in (run_dir / "checkpoints").iterdir():
        (ckpt / "state.json").write_text("{not json")
    train(_cfg(run_dir, steps=1, save_every=0, resume_from="latest"))
    assert "no usable checkpoint" in capsys.readouterr().out
    assert _steps(run_dir) == [1]


def test_explicit_broken_checkpoint_is_a_one_line_error(run_dir):
    (run_dir / "checkpoints" / "step-2" / "scheduler.pt").unlink()
    with pytest.raises(TrainError, match="missing scheduler.pt"):
        train(_cfg(tmp := run_dir.parent / "other", resume_from=str(run_dir / "checkpoints" / "step-2")))
    assert not (tmp / "metrics.jsonl").exists()


def test_rerun_into_existing_output_dir_refuses_without_overwrite(run_dir):
    before = (run_dir / "metrics.jsonl").read_text()
    r = _invoke(["--model", "tiny", "--env-ids", "agentworld_rl/toy-lookup-v0", "--eval-split", "",
                 "--steps", "1", "--torch-threads", "1", "--output-dir", str(run_dir), "--no-progress"])
    assert r.exit_code == 2 and "already holds a run" in r.output and "--overwrite" in r.output, r.output
    assert (run_dir / "metrics.jsonl").read_text() == before  # nothing deleted
    train(_cfg(run_dir, steps=1, save_every=0, overwrite=True))
    assert _steps(run_dir) == [1]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["step-1"]  # old checkpoints gone


def test_overwrite_and_resume_are_exclusive():
    with pytest.raises(TrainError, match="overwrite"):
        TrainConfig(overwrite=True, resume_from="latest")


def test_every_preset_passes_validation():
    from agentworld_rl.config import PRESETS
    for name in PRESETS:
        cfg = make_config(name)
        assert cfg.output_dir.startswith("runs/"), name
    smol = make_config("smol-gpu")
    assert smol.batch_size * smol.group_size >= 16 * 8 and smol.steps >= 50 and smol.max_envs >= 64
    assert smol.max_eval_tasks >= 200 and make_config("smol-cpu").max_eval_tasks >= 48
