"""Seconds per GRPO step: agentworld_rl (rollout vs update) and, for context, TRL's GRPOTrainer.

Both run on the same tiny offline model (after our SFT warm start on the toy lookup env, so
the policy emits real tool calls), the same prompts, group size, batch, LoRA config and turn limit.
TRL drives the env through ``environment_factory`` (its multi-turn tool loop).

    python benchmarks/bench_trainer.py --steps 6
    python benchmarks/bench_trainer.py --steps 6 --env-ids agentworld/retail-v0   # real envs (ours only)

Uses 1 torch thread (faster than 2 on a busy 2-core box). Prints a table; first step is
excluded from the means (warm-up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch


def bench_ours(out: Path, args) -> dict:
    from agentworld_rl.config import make_config
    from agentworld_rl.metrics import read_jsonl
    from agentworld_rl.trainer import train

    cfg = make_config("tiny-cpu", overrides=dict(
        env_ids=args.env_ids, eval_split="", eval_env_ids=[], steps=args.steps, output_dir=str(out),
        progress=False, batch_size=args.batch_size, group_size=args.group_size, max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens, sft_steps=args.sft_steps,
        # toy envs have a handful of tools and no registry curriculum knobs
        max_tools=0, max_solution_steps=0))
    train(cfg)
    rows = read_jsonl(out / "metrics.jsonl")[1:]
    return {"rollout": statistics.mean(r["seconds_rollout"] for r in rows),
            "update": statistics.mean(r["seconds_update"] for r in rows),
            "turns": statistics.mean(r["turns_mean"] for r in rows),
            "policy_tokens": statistics.mean(r["policy_tokens_mean"] for r in rows),
            "generated_tok_s": statistics.mean(r["generated_tokens_per_s"] for r in rows),
            "trained_tok_s": statistics.mean(r["trained_tokens_per_s"] for r in rows),
            "peak_rss_gb": max(r["peak_rss_gb"] for r in rows)}


class LookupToolEnv:
    """TRL environment_factory wrapper around the toy lookup env (methods are the tools)."""

    def __init__(self):
        import gymnasium as gym
        import agentworld_rl.toy_envs  # noqa: F401  (registers ids)
        self.env = gym.make("agentworld_rl/toy-lookup-v0", max_turns=100)
        self.reward = 0.0

    def reset(self, **kwargs) -> str | None:
        self.env.reset(seed=0, options={"task_id": kwargs.get("task_id")})
        self.reward = 0.0
        return None

    def lookup(self, key: str) -> str:
        """Return the value stored under a key.

        Args:
            key: the key to look up.

        Returns:
            The JSON result.
        """
        return self.env.step(json.dumps({"name": "lookup", "arguments": {"key": key}}))[0]

    def submit(self, answer: str) -> str:
        """Finish the task with a final answer.

        Args:
            answer: the final answer.

        Returns:
            The JSON score.
        """
        obs, reward, *_ = self.env.step(json.dumps({"name": "submit", "arguments": {"answer": answer}}))
        self.reward = reward
        return obs

    def get_reward(self) -> float:
        return float(self.reward)


def bench_trl(model_dir: Path, out: Path, args) -> dict:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    import agentworld_rl.toy_envs as toy

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tok = PreTrainedTokenizerFast.from_pretrained(model_dir)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    env = toy.ToyLookupEnv()
    rows = []
    for task in env.task_ids:
        env.task_id = task
        rows.append({"prompt": [{"role": "system", "content": "You are an agent that completes tasks by calling "
                                 "tools. Call one tool per turn. When the task is done, call the submit tool."},
                                {"role": "user", "content": env.instruction()}], "task_id": task})
    ds = Dataset.from_list(rows * 50)
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t = time.time()

        def on_step_end(self, *a, **k):
            times.append(time.time() - self.t)

    cfg = GRPOConfig(output_dir=str(out), max_steps=args.steps, per_device_train_batch_size=args.batch_size * args.group_size,
                     num_generations=args.group_size, max_completion_length=args.max_new_tokens * args.max_turns,
                     max_tool_calling_iterations=args.max_turns, learning_rate=2e-3, logging_steps=1, report_to=[],
                     save_strategy="no", use_cpu=True, temperature=1.0, seed=0, dataloader_num_workers=0)
    peft = LoraConfig(task_type="CAUSAL_LM", r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj",
                      "gate_proj", "up_proj", "down_proj"])
    trainer = GRPOTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok, peft_config=peft,
                          environment_factory=LookupToolEnv, callbacks=[Timer()])
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    step = statistics.mean(times[1:]) if len(times) > 1 else times[0]
    # TRL logs the mean completion length per step; x sequences per step = generated tokens.
    gen = [h.get("completions/mean_length", float("nan")) * args.batch_size * args.group_size for h in logs[1:] or logs]
    import resource
    return {"step": step, "reward": statistics.mean(h["reward"] for h in logs) if logs else float("nan"),
            "generated_tok_s": statistics.mean(gen) / step if gen else float("nan"),
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--sft-steps", type=int, default=60)
    p.add_argument("--env-ids", nargs="*", default=["agentworld_rl/toy-lookup-v0"])
    p.add_argument("--skip-trl", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    out = Path(tempfile.mkdtemp(prefix="bench-trainer-"))
    ours = bench_ours(out / "ours", args)
    print(f"agentworld_rl: {ours['rollout'] + ours['update']:.2f} s/step "
          f"(rollout {ours['rollout']:.2f} s, update {ours['update']:.2f} s; "
          f"{ours['turns']:.2f} turns and {ours['policy_tokens']:.1f} policy tokens per episode); "
          f"generated {ours['generated_tok_s']:.1f} tok/s, trained {ours['trained_tok_s']:.1f} tok/s, "
          f"peak RSS {ours['peak_rss_gb']:.2f} GB")
    if args.skip_trl or args.env_ids != ["agentworld_rl/toy-lookup-v0"]:
        return
    trl = bench_trl(out / "ours" / "sft-model", out / "trl", args)
    ratio = (ours["rollout"] + ours["update"]) / trl["step"]
    print(f"TRL GRPOTrainer: {trl['step']:.2f} s/step (mean reward {trl['reward']:.3f}); "
          f"generated {trl['generated_tok_s']:.1f} tok/s; peak RSS (process, after ours) {trl['peak_rss_gb']:.2f} GB")
    print(f"ratio ours/TRL: {ratio:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
