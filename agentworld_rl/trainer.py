"""The multi-turn GRPO training loop, as named phases read top to bottom in :func:`train`.

    setup       accelerator, output dir, resume point, tasks, suites, model, vector env, rollout engine
    warm start  held-out evaluation of the base model, SFT on reference replays (sharded across processes)
    learner     LoRA, optimizer, scheduler, accelerate.prepare, checkpoint restore
    evaluate    greedy success on each evaluation suite, sharded across processes ("before")
    loop        rollout (this process's prompts, G episodes each; dynamic sampling refills groups
                whose rewards are all equal) -> update (inner epochs x micro-batches of the clipped,
                importance-weighted GRPO loss; one gradient sync) -> record (metrics, samples, checkpoint)
    evaluate    "after"
    report      report.md with each suite's success and 95 % intervals, curves.png, summary.json

The same script runs on CPU, one GPU, or many GPUs/nodes under ``torchrun`` / ``accelerate
launch``: every process rolls out its own slice of prompts with its own sampling stream (seeded
from the run seed, the step and its rank), groups never straddle processes (advantages stay
local), loss normalisers count the whole batch across processes, and gradients are averaged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .checkpoint import CheckpointError, apply_checkpoint, read_checkpoint, resume_candidates, save_checkpoint
from .config import TrainConfig, to_yaml
from .distributed import Dist, full_params_for_generation, replica_digest
from .errors import TrainError
from .evaluate import describe, evaluate, gain, report_markdown, suites_markdown
from .grpo import group_advantages, grpo_loss, importance_weights, shared_prefix_cut, shared_prefix_logprobs, \
    token_logprobs
from .metrics import MetricsLogger, episode_metrics, plot_curves
from .rollout import DEFAULT_SYSTEM_PROMPT, Episode, RolloutEngine, shape_rewards
from .sft import collate, reference_episodes, sft_warm_start
from .suites import EvalSuite, build_suites
from .tasks import TaskSampler, import_env_modules, select_env_ids, task_pairs
from .threads import ThreadPicker

SKIP_ZERO_ADVANTAGE = True  # module switch so a test can compare against the unskipped update
SHARE_PROMPTS = True  # likewise for the shared-prompt forward


# ====================================================================== the loop
def train(cfg: TrainConfig, reward_fn=None) -> dict:
    """Run GRPO as configured. ``reward_fn(episode) -> float`` is an optional extra shaping hook."""
    run = setup(cfg)
    try:
        summary: dict[str, Any] = {"config": dataclasses.asdict(cfg), "model_path": run.model_path}
        evals: dict[str, dict[str, dict]] = {}
        model = warm_start(run, evals, summary)
        learner = make_learner(run, model)
        evals["before"] = evaluate_phase(run, "before", "after SFT" if cfg.sft_steps else "before GRPO")
        t_grpo = time.time()
        logger = MetricsLogger(run.out_dir, cfg.tensorboard, resume_step=learner.start_step
                               if run.resume is not None else None) if run.dist.main else None
        if run.dist.main:  # a resumed run rewrites later steps; a fresh start (no usable checkpoint) all of them
            _trim_jsonl(run.out_dir / "samples.jsonl", learner.start_step)
        with _progress(cfg.progress and run.dist.main) as progress:
            bar = progress.add_task("GRPO", total=cfg.steps, completed=learner.start_step)
            for step in range(learner.start_step + 1, cfg.steps + 1):
                batch = rollout_phase(run, step, reward_fn)
                stats = update_phase(run, learner, batch)
                metrics = record_phase(run, learner, step, batch, stats, logger)
                summary["final_metrics"] = metrics
                progress.update(bar, advance=1, description=(
                    f"GRPO reward={metrics['reward_mean']:.2f} succ={metrics['success_rate']:.2f} "
                    f"loss={metrics['loss']:+.3f}"))
        summary["grpo_seconds"] = time.time() - t_grpo
        evals["after"] = evaluate_phase(run, "after", "after GRPO")
        report_phase(run, learner, summary, evals, logger)
    finally:
        run.close()
    summary["output_dir"] = str(run.out_dir)
    return summary


# ====================================================================== setup
@dataclass
class Run:
    """What every phase reads: the config, the process group, the tasks and the rollout engine."""

    cfg: TrainConfig
    accelerator: Any
    dist: Dist
    out_dir: Path
    run_dir: Any                        # agentworld_envs.util.outputs.OutputDir: the manifest of what this run wrote
    resume: Path | None                 # the checkpoint this run resumes from
    resume_state: dict | None
    threads: ThreadPicker
    train_pairs: list[dict]
    sampler: TaskSampler
    suites: list[EvalSuite]
    import_modules: list[str]
    tokenizer: Any
    model_path: str
    engine: RolloutEngine
    base_model: Any                     # the loaded model, before any training
    model: Any = None                   # the model the engine generates with, once prepared (for sharded params)
    closers: list = field(default_factory=list)
    skipped_suites: dict[str, str] = field(default_factory=dict)  # suites that cannot run here: name -> why

    def generation(self):
        """Context for a rollout: full parameters on every process under FSDP / ZeRO-3."""
        return full_params_for_generation(self.accelerator, self.model) if self.model is not None \
            else contextlib.nullcontext()

    def close(self) -> None:
        for close in reversed(self.closers):
            close()  # also when a step failed: Ray actors, a local Ray session, a vLLM engine are released


def setup(cfg: TrainConfig) -> Run:
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    threads = ThreadPicker(cfg.torch_threads)  # on small or busy CPUs extra threads make torch slower
    threads.now()
    try:
        accelerator = Accelerator(mixed_precision=cfg.mixed_precision)
    except ValueError as e:  # e.g. fp16 requested on a CPU-only machine
        raise TrainError(f"mixed_precision={cfg.mixed_precision!r}: {str(e).splitlines()[0]}") from e
    dist = Dist.of(accelerator)
    out_dir = Path(cfg.output_dir)
    # The other processes check the directory as it stands (reading only); then the main process
    # claims it (and with --overwrite clears the earlier run's files). So every process decides on
    # the same state, never on a half-made directory or on the manifest the main process re-records.
    if not dist.main:
        run_dir = _claim_output_dir(cfg, out_dir, main=False)
    accelerator.wait_for_everyone()
    if dist.main:
        run_dir = _claim_output_dir(cfg, out_dir, main=True)
    resume, resume_state = choose_resume(cfg, out_dir, dist.rank, dist.main)
    accelerator.wait_for_everyone()
    out_dir.mkdir(parents=True, exist_ok=True)
    # Python/NumPy/torch global streams for whatever else draws from them; rollout sampling, LoRA
    # init and SFT batches are seeded on their own, so no phase depends on what ran before it.
    set_seed(cfg.seed)

    # The main process builds what the cache lacks (envs, task sets, the model) first; the others then load it.
    with accelerator.main_process_first():
        model, tokenizer, model_path, import_modules, train_pairs, suites, skipped = _load_tasks_and_model(cfg)
    for name, why in skipped.items():
        accelerator.print(f"evaluation suite {name} skipped: {why}")
    if cfg.gradient_checkpointing:
        # Non-reentrant: works with frozen base weights (LoRA) without enable_input_require_grads.
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model = model.to(accelerator.device)

    from .vector_env import make_slot_vector_env
    largest_eval = max((len(dist.shard(s.pairs)) for s in suites), default=0)
    slots = max(cfg.batch_size * cfg.group_size, min(largest_eval, cfg.eval_batch_size))
    vec_env = make_slot_vector_env(cfg.env_backend(), slots, cfg.env_kwargs(), import_modules,
                                   ray_address=cfg.ray_address, ray_workers=cfg.ray_workers)
    closers = [vec_env.close]
    try:
        generator = make_generator(cfg, model, tokenizer, model_path, accelerator)
        closers.append(getattr(generator, "close", lambda: None))
    except BaseException:
        vec_env.close()
        raise
    engine = RolloutEngine(model, tokenizer, vec_env, max_new_tokens=cfg.max_new_tokens,
                           max_context_tokens=cfg.max_context_tokens, temperature=cfg.temperature,
                           system_prompt=cfg.system_prompt or DEFAULT_SYSTEM_PROMPT,
                           tool_descriptions=cfg.tool_descriptions, on_turn=threads.maybe, generator=generator,
                           rank=dist.rank)
    if dist.main:
        closers.insert(0, run_dir.record_all)  # runs last: the manifest lists what this run wrote
    return Run(cfg, accelerator, dist, out_dir, run_dir, resume, resume_state, threads, train_pairs,
               TaskSampler(train_pairs, seed=cfg.seed), suites, import_modules, tokenizer, model_path, engine,
               model, closers=closers, skipped_suites=skipped)


def _load_tasks_and_model(cfg: TrainConfig):
    from .models import start_conversion
    converting = start_conversion(cfg.model)  # a GGUF dequantises in a child while envs build here
    import_modules = import_env_modules(cfg.env_import_modules)
    train_ids = select_env_ids(cfg.env_ids, cfg.l1, cfg.split, cfg.max_envs, cfg.seed)
    train_pairs = task_pairs(train_ids, cfg.max_turns, cfg.max_tasks_per_env, cfg.max_envs, cfg.max_solution_steps,
                             cfg.env_kwargs(), jobs=cfg.build_jobs, import_modules=import_modules)
    if not train_pairs:
        raise TrainError(f"no training tasks left after filtering ({len(train_ids)} envs, "
                         f"max_solution_steps={cfg.max_solution_steps}, max_turns={cfg.max_turns})")
    skipped: dict[str, str] = {}
    suites = build_suites(cfg, skipped)
    hint = _corpus_hint(train_pairs, cfg.env_kwargs()) if cfg.model == "tiny" else None
    if converting is not None:
        converting.join()
    model, tokenizer, model_path = load_model_and_tokenizer(cfg.model, hint)
    return model, tokenizer, model_path, import_modules, train_pairs, suites, skipped


def make_generator(cfg: TrainConfig, model, tokenizer, model_path: str, accelerator):
    """The rollout backend ``cfg.rollout_engine`` names."""
    from .generation import HFGenerator

    if cfg.rollout_engine == "vllm":
        from .vllm_backend import VLLMGenerator
        return VLLMGenerator.from_config(cfg, model_path, tokenizer, accelerator)
    return HFGenerator(model, tokenizer, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                       autocast=accelerator.autocast, reuse_cache=cfg.reuse_kv_cache, prefill=cfg.prefill)


def load_model_and_tokenizer(model_ref: str, corpus_hint: list[str] | None = None):
    """Load a causal LM + tokenizer: "tiny", a packaged name (smollm2-135m), a .gguf file or a local HF dir."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    from .models import resolve_model

    def load(ref: str):
        if (Path(ref) / "agentworld_tiny.json").exists():
            # Locally trained `tokenizers` tokenizers have no tokenizer class AutoTokenizer can resolve.
            tokenizer = PreTrainedTokenizerFast.from_pretrained(ref)
        else:
            tokenizer = AutoTokenizer.from_pretrained(ref)
        return AutoModelForCausalLM.from_pretrained(ref, dtype=torch.float32), tokenizer

    if model_ref == "tiny":
        from .tiny_model import build_tiny_chat_model
        model_ref = str(build_tiny_chat_model(extra_corpus=corpus_hint or ()))
        try:
            model, tokenizer = load(model_ref)
        except (OSError, ValueError):  # a damaged cached build: it is ours to rebuild
            model_ref = str(build_tiny_chat_model(extra_corpus=corpus_hint or (), overwrite=True))
            model, tokenizer = load(model_ref)
    else:
        model_ref = resolve_model(model_ref)
        try:
            model, tokenizer = load(model_ref)
        except (OSError, ValueError) as e:  # unreadable/partial directory: one line, not a traceback
            raise TrainError(f"cannot load model from {model_ref}: {str(e).splitlines()[0]}") from e
    if not tokenizer.chat_template:
        raise TrainError(f"model {model_ref} has no chat template; the trainer needs one that renders tools")
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, model_ref


def _corpus_hint(pairs: list[dict], env_kwargs: dict) -> list[str]:
    """Instruction + tool texts of a few tasks, so the tiny tokenizer compresses env text well."""
    import gymnasium as gym
    texts = []
    for pair in pairs[:40]:
        env = gym.make(pair["env_id"], **env_kwargs)
        try:
            obs, info = env.reset(seed=0, options={"task_id": pair["task_id"]})
            texts += [obs, json.dumps(info.get("tools", []))]
            texts += list(env.unwrapped.solution_actions())
        finally:
            env.close()
    return texts


# ====================================================================== output dir and resume
_RUN_FILES = ("metrics.jsonl", "samples.jsonl", "eval_base.json", "eval_before.json", "eval_after.json",
              "summary.json", "report.md", "curves.png", "config.yaml")
_RUN_DIRS = ("checkpoints", "sft-model", "tensorboard", "final-model")


def _claim_output_dir(cfg: TrainConfig, out_dir: Path, main: bool):
    """Take ``out_dir`` through :class:`agentworld_envs.util.outputs.OutputDir`: a new or empty directory,
    or agentworld's earlier run there (refused unless resumed or ``overwrite``, which removes only
    the files that run wrote and that are unchanged); a directory of other files is refused."""
    from agentworld_envs.util.outputs import OutputDir, OutputError

    try:
        run_dir = OutputDir.claim(out_dir, "train", overwrite=cfg.overwrite, resume=bool(cfg.resume_from),
                                  reserved=_RUN_FILES + _RUN_DIRS, flag="--output-dir", what="a run",
                                  again="pass --resume-from latest to continue it, --overwrite to replace it, "
                                        "or another --output-dir", check_only=not main)
        if main and cfg.overwrite and not cfg.resume_from:
            run_dir.clear()
    except OutputError as e:
        raise TrainError(str(e)) from None
    return run_dir


def choose_resume(cfg: TrainConfig, out_dir: Path, rank: int, main: bool) -> tuple[Path | None, dict | None]:
    """The checkpoint to resume from and its contents, or (None, None) for a fresh start.

    * ``resume_from: latest``: the newest checkpoint that reads back completely and matches its
      recorded hashes; damaged ones are skipped with one line each. None at all: start afresh
      (the previous run died before its first checkpoint).
    * an explicit path: that checkpoint, or a one-line error.
    """
    if cfg.resume_from and cfg.resume_from != "latest":
        try:
            return Path(cfg.resume_from), read_checkpoint(cfg.resume_from, rank)
        except CheckpointError as e:
            raise TrainError(f"cannot resume: {e}") from e
    if cfg.resume_from == "latest":
        for cand in resume_candidates(out_dir):
            try:
                return cand, read_checkpoint(cand, rank)
            except CheckpointError as e:
                if main:
                    print(f"resume: skipping checkpoint {e}; falling back to an older one")
        if main:
            print(f"resume: no usable checkpoint in {out_dir / 'checkpoints'}; starting from scratch")
    return None, None


# ====================================================================== warm start
def warm_start(run: Run, evals: dict, summary: dict):
    """The model GRPO starts from: the base model, or after SFT on reference trajectories.

    Runs the base model's evaluation first (when SFT will change it). On resume, a saved
    SFT model and saved evaluations are reused instead of recomputed.
    """
    cfg, dist, model = run.cfg, run.dist, run.base_model
    if not cfg.sft_steps:
        return model
    sft_dir = run.out_dir / "sft-model"
    if run.resume is not None and (sft_dir / "config.json").exists():
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained(sft_dir, dtype=torch.float32).to(run.accelerator.device)
        if cfg.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        evals["base"] = _load_eval(run, "base") or {}
        return model
    evals["base"] = evaluate_phase(run, "base", "base model")
    demos = dist.unshard(dist.gather(reference_episodes(run.engine.recorder, dist.shard(run.train_pairs),
                                                        cfg.env_kwargs())))
    if not demos:
        raise TrainError("sft_steps > 0 but no reference trajectory solves its task; set sft_steps 0")
    t0 = time.time()
    losses = sft_warm_start(model, run.tokenizer, demos, cfg.sft_steps, cfg.sft_learning_rate, cfg.sft_batch_size,
                            seed=cfg.seed, micro_batch_size=cfg.sft_micro_batch_size,
                            autocast=run.accelerator.autocast, chunk_size=cfg.logprob_chunk_size,
                            context_grad=cfg.sft_context_grad, on_step=run.threads.maybe, dist=dist)
    summary["sft"] = {"demos": len(demos), "loss_first": losses[0], "loss_last": losses[-1],
                      "seconds": time.time() - t0}
    run.accelerator.print(f"SFT warm start: {len(demos)} reference trajectories, {cfg.sft_steps} steps, "
                          f"loss {losses[0]:.3f} -> {losses[-1]:.3f} ({summary['sft']['seconds']:.0f} s)")
    if dist.main:
        _save_model_atomically(model, run.tokenizer, sft_dir)
    run.engine.model = model  # a backend with its own copy of the weights (vLLM) gets the new ones
    return model


# ====================================================================== learner
@dataclass
class Learner:
    model: Any            # as prepared by accelerate (DDP / FSDP wrapped where distributed)
    policy: Any           # the unwrapped model (PEFT or plain)
    optimizer: Any
    scheduler: Any
    params: list
    ref_model: Any
    start_step: int


def make_learner(run: Run, model) -> Learner:
    """LoRA (seeded init), optimizer and scheduler, accelerate.prepare, and the checkpoint restored."""
    from transformers import get_scheduler

    cfg, accelerator = run.cfg, run.accelerator
    ref_model = None
    if cfg.use_lora:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)  # the adapters' init does not depend on what ran before
            model = _lora(model, cfg)
    elif cfg.beta:
        import copy
        ref_model = copy.deepcopy(model).eval().requires_grad_(False).to(accelerator.device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = get_scheduler(cfg.lr_scheduler, optimizer, num_warmup_steps=cfg.warmup_steps,
                              num_training_steps=cfg.steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    policy = accelerator.unwrap_model(model)
    params = [p for p in model.parameters() if p.requires_grad]
    start_step = 0
    if run.resume_state is not None:
        try:
            state = apply_checkpoint(accelerator, model, optimizer, scheduler, run.resume_state, run.resume.name)
            run.sampler.load_state_dict(state["sampler"])
        except (CheckpointError, ValueError, KeyError) as e:
            raise TrainError(f"cannot resume from {run.resume}: {e}") from e
        start_step = state["step"]
        run.resume_state = None
        accelerator.print(f"resumed from {run.resume} (step {start_step})")
    run.model = model
    run.engine.model = policy  # the rollout backend samples from (or is synced to) these weights
    if run.dist.main:
        (run.out_dir / "config.yaml").write_text(to_yaml(cfg))
    return Learner(model, policy, optimizer, scheduler, params, ref_model, start_step)


def _lora(model, cfg: TrainConfig):
    from peft import LoraConfig, get_peft_model
    targets = cfg.lora_target_modules
    targets = "all-linear" if targets == ["all-linear"] else list(targets)
    return get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
                                            lora_dropout=cfg.lora_dropout, target_modules=targets))


# ====================================================================== evaluate
def evaluate_phase(run: Run, stage: str, label: str) -> dict[str, dict]:
    """Every suite's greedy evaluation at ``stage`` ("base", "before", "after"); saved as eval_<stage>.json.

    On resume, an evaluation a previous run saved is read back instead of rerun.
    """
    if not run.suites:
        return {}
    if run.resume is not None and stage != "after":
        saved = _load_eval(run, stage)
        if saved is not None:
            return saved
    results = {}
    with _adapters_merged(run):
        for suite in run.suites:
            with _suite_envs(run, suite), run.generation():
                results[suite.name] = evaluate(run.engine, suite.pairs, seed=run.cfg.seed, dist=run.dist,
                                               batch_size=run.cfg.eval_batch_size)
            ev = results[suite.name]
            run.accelerator.print(f"{suite.name} eval, {label}: success {describe(ev)} ({ev['seconds']:.0f} s)")
    if run.dist.main:
        (run.out_dir / f"eval_{stage}.json").write_text(json.dumps(results, indent=1))
    return results


@contextlib.contextmanager
def _adapters_merged(run: Run):
    """Evaluate a copy of the policy with its LoRA adapters merged into the weights: the same function
    without the adapters' extra matmuls per layer, which cost a quarter to a third of a CPU prefill
    (measured). Only where generation runs on the training model itself (the HF backend) and its
    parameters are whole on this process (no FSDP / ZeRO-3 shards); otherwise evaluation is unchanged."""
    from peft import PeftModel

    from .generation import HFGenerator

    policy = run.engine.model
    state = run.accelerator.state
    sharded = getattr(state, "fsdp_plugin", None) is not None or getattr(state, "deepspeed_plugin", None) is not None
    if not isinstance(policy, PeftModel) or not isinstance(run.engine.generator, HFGenerator) or sharded:
        yield
        return
    import copy
    merged = copy.deepcopy(policy).merge_and_unload().eval()
    run.engine.model = merged
    try:
        yield
    finally:
        run.engine.model = policy
        del merged


def _load_eval(run: Run, stage: str) -> dict | None:
    path = run.out_dir / f"eval_{stage}.json"
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or not all(isinstance(v, dict) and "tasks" in v for v in saved.values()):
        return None  # another format (an older run): evaluate again
    return saved


@contextlib.contextmanager
def _suite_envs(run: Run, suite: EvalSuite):
    """Swap in a vector env made with the suite's own ``gym.make`` arguments, when it has any."""
    if suite.env_kwargs is None:
        yield
        return
    from .vector_env import make_slot_vector_env
    vec = make_slot_vector_env(run.cfg.env_backend(), max(1, min(len(run.dist.shard(suite.pairs)),
                                                                 run.cfg.eval_batch_size)),
                               suite.env_kwargs, [*run.import_modules, *suite.import_modules],
                               ray_address=run.cfg.ray_address, ray_workers=run.cfg.ray_workers)
    saved, run.engine.vec_env = run.engine.vec_env, vec
    try:
        yield
    finally:
        run.engine.vec_env = saved
        vec.close()


# ====================================================================== rollout
@dataclass
class RolloutBatch:
    episodes: list[Episode]         # batch_size groups of group_size, group by group
    advantages: torch.Tensor
    zero_variance: torch.Tensor     # per group of the batch
    sampled_groups: int             # groups rolled out, refills included
    zero_variance_sampled: int      # of those, groups with no reward variance
    rounds: int                     # rollout rounds (1 + refills)
    seconds: float
    generated_tokens: int
    prefilled_tokens: int


def rollout_seed(seed: int, step: int, rank: int, world: int, round_: int = 0) -> int:
    """The seed of one process's rollouts at one step: distinct for every (step, refill round, rank)."""
    return ((seed * 1_000_003 + step) * 64 + round_) * world + rank


def rollout_phase(run: Run, step: int, reward_fn=None) -> RolloutBatch:
    """This process's ``batch_size`` groups of ``group_size`` episodes, with their advantages.

    Dynamic sampling (``dynamic_sampling_rounds``): a group whose shaped rewards are all equal has
    zero advantage everywhere and teaches nothing; up to that many extra rounds roll out fresh
    prompts for those slots. Every process takes its prompts from the same sampler stream (each
    round, all processes' needs are summed and taken at once), so the stream stays in step.
    """
    cfg, dist, engine = run.cfg, run.dist, run.engine
    t0 = time.time()
    gen0, pre0 = engine.generated_tokens, engine.prefilled_tokens
    kept: list[list[Episode]] = []
    spare: list[list[Episode]] = []
    sampled = zero_sampled = rounds = 0
    for round_ in range(1 + cfg.dynamic_sampling_rounds):
        need = cfg.batch_size - len(kept)
        needs = dist.gather(need)
        if sum(needs) == 0:
            break
        offered = run.sampler.take(sum(needs))
        mine = offered[sum(needs[:dist.rank]):sum(needs[:dist.rank + 1])]
        rounds += 1
        if not mine:
            continue
        with run.generation():
            episodes = engine.collect(mine, cfg.group_size, seed=rollout_seed(cfg.seed, step, dist.rank, dist.world,
                                                                               round_))
        shape_rewards(episodes, cfg.format_penalty, cfg.turn_cost, reward_fn, cfg.tool_error_penalty)
        for g in range(len(mine)):
            group = episodes[g * cfg.group_size:(g + 1) * cfg.group_size]
            rewards = {ep.shaped_reward for ep in group}
            sampled += 1
            if len(rewards) == 1:
                zero_sampled += 1
                if cfg.dynamic_sampling_rounds:
                    spare.append(group)
                    continue
            kept.append(group)
    kept += spare[:cfg.batch_size - len(kept)]  # refills ran out: zero-advantage groups fill the batch
    episodes = []
    for g, group in enumerate(kept):
        for ep in group:
            ep.group = g
            episodes.append(ep)
    rewards = torch.tensor([ep.shaped_reward for ep in episodes])
    advantages, zero_var = group_advantages(rewards, cfg.group_size, cfg.scale_rewards)
    return RolloutBatch(episodes, advantages, zero_var, sampled, zero_sampled, rounds, time.time() - t0,
                        engine.generated_tokens - gen0, engine.prefilled_tokens - pre0)


def truncation_masked(ep: Episode, mode: str) -> bool:
    """Whether ``truncation_mask`` leaves this episode out of the loss."""
    if mode == "none":
        return False
    overlong = ep.overlong_turns > 0 or ep.context_overflow
    return overlong or (mode == "all" and ep.truncated)


# ====================================================================== update
def update_phase(run: Run, learner: Learner, batch: RolloutBatch) -> dict:
    """``inner_epochs`` optimizer steps on the batch; returns loss statistics.

    Gradients accumulate over micro-batches to exactly the whole batch's gradient (whole-batch,
    cross-process normalisers). A sequence with zero advantage and no KL term has exactly zero loss
    and gradient, and one with no trained token none either, so neither is forwarded. With several
    processes every micro-batch runs without gradient sync and one final one-token pass with a zero
    loss syncs the accumulated gradients: every process syncs exactly once per optimizer step, however
    many micro-batches (none included) it had.
    """
    cfg, dist, accelerator = run.cfg, run.dist, run.accelerator
    model, policy = learner.model, learner.policy
    t0 = time.time()
    episodes = batch.episodes
    ids, att, mask, sampler_lp = collate(episodes, run.tokenizer.pad_token_id)
    masked = [i for i, ep in enumerate(episodes) if truncation_masked(ep, cfg.truncation_mask)]
    mask[masked] = 0.0
    advantages = batch.advantages
    n_seq = dist.sum(len(episodes))
    n_tok = max(dist.sum(float(mask.sum())), 1.0)
    max_tokens = cfg.max_turns * cfg.max_new_tokens  # Dr. GRPO's constant normaliser
    dev = accelerator.device

    ref_lp = None
    if cfg.beta:
        ref_lp = torch.zeros_like(sampler_lp)
        with torch.no_grad():
            for sl in _micro_slices(len(episodes), cfg.micro_batch_size):
                w = int(att[sl].sum(1).max())
                ctx = policy.disable_adapter() if cfg.use_lora else contextlib.nullcontext()
                with ctx, accelerator.autocast():
                    ref = token_logprobs(policy if cfg.use_lora else learner.ref_model, ids[sl, :w].to(dev),
                                         att[sl, :w].to(dev), cfg.temperature, mask=mask[sl, :w].to(dev),
                                         chunk_size=cfg.logprob_chunk_size)
                ref_lp[sl, :w] = ref.float().cpu()

    run.threads.maybe()
    model.train()
    rows = torch.arange(len(episodes))
    rows = rows[mask.sum(1) > 0]
    if cfg.beta == 0 and SKIP_ZERO_ADVANTAGE:
        rows = rows[advantages[rows] != 0]
    chunks = _update_chunks(rows, cfg.group_size, cfg.micro_batch_size)
    # A chunk's rows belong to one group: its shared prompt runs once (grpo.shared_prefix_logprobs);
    # not under gradient checkpointing, which re-runs layers (and their cache writes) in backward.
    share = SHARE_PROMPTS and not cfg.gradient_checkpointing
    trainer_lp = torch.zeros_like(sampler_lp)  # the trainer's log-probs before this update (first epoch)
    agg = {"loss": 0.0, "kl_sum": 0.0, "clip_sum": 0.0, "ratio_sum": 0.0, "mask_tokens": 0.0, "is_weight_sum": 0.0,
           "mismatch_sum": 0.0, "mismatch_tokens": 0.0}
    grad_norm = torch.tensor(0.0)
    for epoch in range(cfg.inner_epochs):
        learner.optimizer.zero_grad(set_to_none=True)
        for k, sl in enumerate(chunks):
            w = int(att[sl].sum(1).max())  # right padded: trim the micro-batch to its width
            cut = shared_prefix_cut(ids[sl, :w], att[sl, :w], mask[sl, :w]) if share else 0

            def cols(t, sl=sl, cut=cut, w=w):
                return t[sl, cut:w].to(dev)  # the columns whose log-probs are computed
            last = k == len(chunks) - 1 and dist.world == 1
            with (contextlib.nullcontext() if last else accelerator.no_sync(model)):
                with accelerator.autocast():
                    chunk_ids, chunk_att = ids[sl, :w].to(dev), att[sl, :w].to(dev)
                    if cut:
                        new_lp = shared_prefix_logprobs(model, chunk_ids, chunk_att, cut, cfg.temperature,
                                                        mask=mask[sl, :w].to(dev), chunk_size=cfg.logprob_chunk_size)
                    else:
                        new_lp = token_logprobs(model, chunk_ids, chunk_att, cfg.temperature, mask=cols(mask),
                                                chunk_size=cfg.logprob_chunk_size)
                new_lp = new_lp.float()
                if epoch == 0:
                    trainer_lp[sl, cut:w] = new_lp.detach().cpu()
                    m = mask[sl, cut:w]
                    agg["mismatch_sum"] += float(((trainer_lp[sl, cut:w] - sampler_lp[sl, cut:w]).abs() * m).sum())
                    agg["mismatch_tokens"] += float(m.sum())
                old = cols(trainer_lp)
                is_w = importance_weights(old, cols(sampler_lp), cols(mask), cfg.importance_sampling,
                                          cfg.importance_sampling_cap)
                loss, st = grpo_loss(new_lp, old, advantages[sl].to(dev), cols(mask),
                                     ref_lp=cols(ref_lp) if ref_lp is not None else None, beta=cfg.beta,
                                     clip_eps_low=cfg.clip_eps_low, clip_eps_high=cfg.clip_eps_high,
                                     loss_type=cfg.loss_type, num_sequences=n_seq, num_tokens=n_tok,
                                     max_tokens=max_tokens, is_weights=is_w, scale=dist.world)
                accelerator.backward(loss)
            agg["loss"] += loss.item() / cfg.inner_epochs  # averaged over processes: the whole batch's loss
            for key in ("kl_sum", "clip_sum", "ratio_sum", "mask_tokens", "is_weight_sum"):
                agg[key] += st[key]
        if dist.world > 1:
            _sync_gradients(model, accelerator, run.tokenizer.pad_token_id)
        elif not chunks:  # all-zero gradient: step the optimizer exactly as if it had been computed
            for p in learner.params:
                p.grad = torch.zeros_like(p)
        if cfg.max_grad_norm:
            grad_norm = accelerator.clip_grad_norm_(learner.params, cfg.max_grad_norm)
        learner.optimizer.step()
    learner.scheduler.step()
    run.engine.model = policy  # the rollout backend generates with the new weights (vLLM: synced now)
    tokens = max(agg["mask_tokens"], 1.0)
    return {"loss": agg["loss"], "kl": agg["kl_sum"] / tokens, "clip_frac": agg["clip_sum"] / tokens,
            "ratio_mean": agg["ratio_sum"] / tokens, "is_weight_mean": agg["is_weight_sum"] / tokens,
            "sampler_logprob_error": agg["mismatch_sum"] / max(agg["mismatch_tokens"], 1.0),
            "grad_norm": float(grad_norm), "updated_sequences": float(len(rows)),
            "updated_tokens": float(mask[rows].sum()), "trained_tokens": float(mask.sum()),
            "masked_episodes": float(len(masked)), "seconds_update": time.time() - t0}


def _sync_gradients(model, accelerator, pad_id: int) -> None:
    """One synced backward of a zero loss on a one-token input: data parallelism all-reduces the
    gradients accumulated without sync (every parameter takes part in any forward)."""
    token = torch.tensor([[pad_id]], device=accelerator.device)
    with accelerator.autocast():
        out = model(input_ids=token, attention_mask=torch.ones_like(token), use_cache=False, logits_to_keep=1)
    accelerator.backward(out.logits.float().sum() * 0.0)


def _update_chunks(rows: torch.Tensor, group_size: int, micro_batch_size: int) -> list[torch.Tensor]:
    """Micro-batches of the rows to update, never straddling a group (its members share a prompt)."""
    chunks = []
    for g in torch.unique(rows // group_size).tolist():
        members = rows[rows // group_size == g]
        chunks += [members[s:s + micro_batch_size] for s in range(0, len(members), micro_batch_size)]
    return chunks


def _micro_slices(n: int, size: int):
    for start in range(0, n, max(size, 1)):
        yield slice(start, min(start + size, n))


# ====================================================================== record
def record_phase(run: Run, learner: Learner, step: int, batch: RolloutBatch, stats: dict, logger) -> dict:
    """Metrics (averaged over processes) to metrics.jsonl, episodes to samples.jsonl, the checkpoint."""
    cfg, dist = run.cfg, run.dist
    metrics = episode_metrics(batch.episodes)
    metrics.update(stats)
    metrics.update({
        "lr": learner.scheduler.get_last_lr()[0],
        "advantage_abs_mean": float(batch.advantages.abs().mean()),
        "zero_variance_groups": float(batch.zero_variance.sum()),
        "zero_variance_group_frac": float(batch.zero_variance.float().mean()),
        "sampled_groups": float(batch.sampled_groups),
        "zero_variance_sampled_groups": float(batch.zero_variance_sampled),
        "rollout_rounds": float(batch.rounds),
        "seconds_rollout": batch.seconds,
        "generated_tokens": float(batch.generated_tokens),
        "prefilled_tokens": float(batch.prefilled_tokens),  # context tokens run through the model
        "generated_tokens_per_s": batch.generated_tokens / max(batch.seconds, 1e-9),
        "trained_tokens_per_s": stats["updated_tokens"] / max(stats["seconds_update"], 1e-9),
        "peak_rss_gb": _peak_rss_gb(),
    })
    metrics = _mean_across_processes(dist, metrics)
    if dist.world > 1:
        # Replicas must hold identical weights after every step; recorded so a run (and its test) can show it.
        metrics["replica_digests"] = dist.gather(replica_digest(learner.policy))
    if cfg.log_samples:
        rows = dist.gather([_sample_row(step, ep, run.tokenizer) for ep in batch.episodes])
        if dist.main:
            with (run.out_dir / "samples.jsonl").open("a") as f:
                for part in rows:
                    for row in part:
                        f.write(json.dumps(row) + "\n")
    if logger is not None:
        logger.log(step, metrics)
    if (cfg.save_every and step % cfg.save_every == 0) or step == cfg.steps:
        save_checkpoint(run.accelerator, learner.model, learner.optimizer, learner.scheduler, step,
                        {"sampler": run.sampler.state_dict(), "config": dataclasses.asdict(cfg)}, run.out_dir)
        if dist.main:
            run.run_dir.record_all()
    return metrics


def _trim_jsonl(path: Path, step: int) -> None:
    """Drop rows of steps after ``step`` (and a partial last line) from a resumed run's JSONL file."""
    from .metrics import read_jsonl
    if path.exists():
        path.write_text("".join(json.dumps(r) + "\n" for r in read_jsonl(path) if r.get("step", 0) <= step))


def _sample_row(step: int, ep: Episode, tokenizer) -> dict:
    import hashlib
    policy = [t for t, m in zip(ep.token_ids, ep.mask) if m]
    return {"step": step, "rank": ep.rank, "env_id": ep.env_id, "task_id": ep.task_id, "group": ep.group,
            "reward": ep.reward, "shaped_reward": ep.shaped_reward, "success": ep.success, "turns": ep.turns,
            "actions": [m["content"] for m in ep.messages if m["role"] == "assistant"],
            "tokens_sha1": hashlib.sha1(json.dumps(policy).encode()).hexdigest()[:16]}


def _mean_across_processes(dist: Dist, metrics: dict) -> dict:
    if dist.world == 1:
        return metrics
    rows = dist.gather(metrics)
    keys = set().union(*rows)
    return {k: sum(r.get(k, 0.0) for r in rows) / len(rows) for k in keys}


# ====================================================================== report
def report_phase(run: Run, learner: Learner, summary: dict, evals: dict, logger) -> None:
    """report.md, curves.png, summary.json and (``save_final_model``) the merged final model; rank 0 writes."""
    summary["evals"] = evals
    if run.skipped_suites:
        summary["skipped_suites"] = dict(run.skipped_suites)
    for stage in ("base", "before", "after"):
        if evals.get(stage):
            summary[f"eval_{stage}"] = next(iter(evals[stage].values()))  # the first suite, as before
    if not run.dist.main:
        return
    out_dir, cfg = run.out_dir, run.cfg
    if logger is not None:
        logger.close()
    if (out_dir / "metrics.jsonl").exists():
        plot_curves(out_dir / "metrics.jsonl", out_dir / "curves.png")
    (out_dir / "report.md").write_text(_report(cfg, summary, evals))
    if cfg.save_final_model:
        # One loadable model directory (LoRA merged), so the next run (e.g. an evolve round) starts from it.
        final = learner.policy.merge_and_unload() if cfg.use_lora else learner.policy
        _save_model_atomically(final, run.tokenizer, out_dir / "final-model")
        summary["final_model"] = str(out_dir / "final-model")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))


def _report(cfg: TrainConfig, summary: dict, evals: dict) -> str:
    lines = [f"# agentworld GRPO run: `{cfg.output_dir}`", "",
             f"model `{summary['model_path']}`, steps {cfg.steps}, batch {cfg.batch_size} x group {cfg.group_size}, "
             f"lr {cfg.learning_rate}, loss {cfg.loss_type}, LoRA {'r=' + str(cfg.lora_r) if cfg.use_lora else 'off'}, "
             f"rollouts {cfg.rollout_engine}, seed {cfg.seed}", ""]
    if "sft" in summary:
        s = summary["sft"]
        lines += [f"SFT warm start: {s['demos']} reference trajectories, loss {s['loss_first']:.3f} -> "
                  f"{s['loss_last']:.3f} in {s['seconds']:.1f}s", ""]
    start = "after SFT" if cfg.sft_steps else "before"
    stages = [(name, evals.get(key) or {}) for name, key in (("base", "base"), (start, "before"),
                                                             ("after GRPO", "after"))]
    table = suites_markdown(stages)
    if table:
        lines.append(table)
    for name, why in (summary.get("skipped_suites") or {}).items():
        lines += [f"Evaluation suite {name} skipped: {why}", ""]
    if table:
        first = next(iter(evals.get("after") or {}), None)
        if first:
            lines.append(report_markdown([(name, evs.get(first)) for name, evs in stages if evs.get(first)],
                                         title=f"{first}: per environment"))
            g = gain(evals["before"][first], evals["after"][first]) if evals.get("before") else None
            if g:
                verdict = "outside" if g[1] > 0 or g[2] < 0 else "inside"
                lines += [f"GRPO's gain on {first} over {start}: {g[0]:+.3f} (95 % CI {g[1]:+.3f} to {g[2]:+.3f}; "
                          f"zero is {'not ' if verdict == 'outside' else ''}inside the interval).", ""]
    timings = [f"{suite} eval {stage} {ev.get('seconds', 0):.0f}" for stage, evs in evals.items()
               for suite, ev in evs.items()]
    if timings:
        lines += ["Seconds: " + ", ".join(timings) + (f", SFT {summary['sft']['seconds']:.0f}" if "sft" in summary
                                                      else "") + f", GRPO {summary.get('grpo_seconds', 0):.0f}", ""]
    m = summary.get("final_metrics") or {}
    if m:
        lines += ["## Last training step", "", "| metric | value |", "|---|---:|"]
        lines += [f"| {k} | {v:.4g} |" for k, v in sorted(m.items()) if isinstance(v, float)]
    lines += ["", "Curves: `curves.png`; per-step metrics: `metrics.jsonl`."]
    return "\n".join(lines) + "\n"


def _save_model_atomically(model, tokenizer, path: Path) -> None:
    """save_pretrained into a temp dir, then rename: a kill never leaves a half-written model that resume loads."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)


def _peak_rss_gb() -> float:
    """Peak resident memory of this process so far (Linux ru_maxrss is KiB; macOS bytes)."""
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 30) if sys.platform == "darwin" else peak / (1 << 20)


def _progress(enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled, transient=False)
