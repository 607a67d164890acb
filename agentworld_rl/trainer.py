"""The multi-turn GRPO training loop (CleanRL style: one function, top to bottom).

    setup  -> model (+ optional SFT warm start) -> LoRA -> accelerate.prepare
    eval   -> greedy success on held-out envs ("before")
    loop   -> rollout groups -> shape rewards -> group advantages
              -> inner epochs x micro-batches of the clipped GRPO loss -> optimizer step
              -> metrics JSONL / tensorboard -> checkpoint
    finish -> eval "after", report.md, curves.png

The same script runs on CPU, one GPU, or many GPUs/nodes under
``accelerate launch``: every process rolls out its own slice of prompts,
groups never straddle processes (advantages stay local) and DDP averages
gradients.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import shutil
import time
from pathlib import Path

import torch

from .checkpoint import CheckpointError, apply_checkpoint, read_checkpoint, resume_candidates, save_checkpoint
from .config import TrainConfig, to_yaml
from .errors import TrainError
from .evaluate import evaluate, report_markdown
from .suites import add_suite_rows
from .grpo import group_advantages, grpo_loss, shared_prefix_cut, shared_prefix_logprobs, token_logprobs
from .metrics import MetricsLogger, episode_metrics, plot_curves
from .rollout import DEFAULT_SYSTEM_PROMPT, RolloutEngine, shape_rewards
from .sft import collate, reference_episodes, sft_warm_start
from .tasks import TaskSampler, import_env_modules, select_env_ids, task_pairs
from .threads import ThreadPicker


def load_model_and_tokenizer(model_ref: str, corpus_hint: list[str] | None = None):
    """Load a causal LM + tokenizer: "tiny", a packaged name (smollm2-135m), a .gguf file or a local HF dir."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    from .models import resolve_model

    if model_ref == "tiny":
        from .tiny_model import build_tiny_chat_model
        model_ref = str(build_tiny_chat_model(extra_corpus=corpus_hint or ()))
    else:
        model_ref = resolve_model(model_ref)
    path = Path(model_ref)
    try:
        if (path / "agentworld_tiny.json").exists():
            # Locally trained `tokenizers` tokenizers have no tokenizer class AutoTokenizer can resolve.
            tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
        else:
            tokenizer = AutoTokenizer.from_pretrained(model_ref)
        model = AutoModelForCausalLM.from_pretrained(model_ref, dtype=torch.float32)
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


def _lora(model, cfg: TrainConfig):
    from peft import LoraConfig, get_peft_model
    targets = cfg.lora_target_modules
    targets = "all-linear" if targets == ["all-linear"] else list(targets)
    return get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
                                            lora_dropout=cfg.lora_dropout, target_modules=targets))


def _mean_across_processes(accelerator, metrics: dict) -> dict:
    if accelerator.num_processes == 1:
        return metrics
    from accelerate.utils import gather_object
    rows = gather_object([metrics])
    keys = set().union(*rows)
    return {k: sum(r.get(k, 0.0) for r in rows) / len(rows) for k in keys}


def train(cfg: TrainConfig, reward_fn=None) -> dict:
    """Run GRPO as configured. ``reward_fn(episode) -> float`` is an optional extra shaping hook."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from transformers import get_scheduler

    threads = ThreadPicker(cfg.torch_threads)  # on small or busy CPUs extra threads make torch slower
    threads.now()
    try:
        accelerator = Accelerator(mixed_precision=cfg.mixed_precision)
    except ValueError as e:  # e.g. fp16 requested on a CPU-only machine
        raise TrainError(f"mixed_precision={cfg.mixed_precision!r}: {str(e).splitlines()[0]}") from e
    rank, world = accelerator.process_index, accelerator.num_processes
    out_dir = Path(cfg.output_dir)
    run_dir = _claim_output_dir(cfg, out_dir, accelerator.is_main_process)
    resume_ckpt, resume = _choose_resume(cfg, out_dir, rank, accelerator.is_main_process)
    out_dir.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)

    # ---------------------------------------------------------------- tasks
    from .models import start_conversion
    converting = start_conversion(cfg.model)  # a GGUF dequantises in a child while envs build here
    import_modules = import_env_modules(cfg.env_import_modules)
    train_ids = select_env_ids(cfg.env_ids, cfg.l1, cfg.split, cfg.max_envs, cfg.seed)
    train_pairs = task_pairs(train_ids, cfg.max_turns, cfg.max_tasks_per_env, cfg.max_envs, cfg.max_solution_steps,
                             cfg.env_kwargs())
    if not train_pairs:
        raise TrainError(f"no training tasks left after filtering ({len(train_ids)} envs, "
                         f"max_solution_steps={cfg.max_solution_steps}, max_turns={cfg.max_turns})")
    eval_pairs: list[dict] = []
    if cfg.eval_env_ids or cfg.eval_split:
        eval_ids = select_env_ids(cfg.eval_env_ids, cfg.l1, cfg.eval_split, cfg.max_envs, cfg.seed)
        eval_pairs = task_pairs(eval_ids, cfg.max_turns, cfg.max_tasks_per_env, cfg.max_envs, cfg.max_solution_steps,
                                cfg.env_kwargs(), task_split="test")
        random.Random(cfg.seed).shuffle(eval_pairs)
        eval_pairs = sorted(eval_pairs[: cfg.max_eval_tasks], key=lambda p: (p["env_id"], p["task_id"]))
    sampler = TaskSampler(train_pairs, seed=cfg.seed)

    # ---------------------------------------------------------------- model
    hint = _corpus_hint(train_pairs, cfg.env_kwargs()) if cfg.model == "tiny" else None
    if converting is not None:
        converting.join()
    model, tokenizer, model_path = load_model_and_tokenizer(cfg.model, hint)
    if cfg.gradient_checkpointing:
        # Non-reentrant: works with frozen base weights (LoRA) without enable_input_require_grads.
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    from .vector_env import make_slot_vector_env
    # Enough slots for a GRPO batch, and for up to 32 eval episodes at once (fewer, wider decode steps).
    vec_env = make_slot_vector_env(cfg.env_backend(),
                                   max(cfg.batch_size * cfg.group_size, min(len(eval_pairs), 32)),
                                   cfg.env_kwargs(), import_modules, ray_address=cfg.ray_address,
                                   ray_workers=cfg.ray_workers)
    try:
        engine = RolloutEngine(model, tokenizer, vec_env, max_new_tokens=cfg.max_new_tokens,
                               max_context_tokens=cfg.max_context_tokens, temperature=cfg.temperature,
                               system_prompt=cfg.system_prompt or DEFAULT_SYSTEM_PROMPT,
                               tool_descriptions=cfg.tool_descriptions, autocast=accelerator.autocast,
                               reuse_cache=cfg.reuse_kv_cache, on_turn=threads.maybe)

        summary: dict = {"config": dataclasses.asdict(cfg), "model_path": model_path}
        if resume is not None and (out_dir / "eval_base.json").exists():
            summary["eval_base"] = json.loads((out_dir / "eval_base.json").read_text())
        if cfg.sft_steps:
            sft_dir = out_dir / "sft-model"
            if resume is not None and (sft_dir / "config.json").exists():
                from transformers import AutoModelForCausalLM
                model = AutoModelForCausalLM.from_pretrained(sft_dir, dtype=torch.float32)
                if cfg.gradient_checkpointing:
                    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            else:
                model = model.to(accelerator.device)
                engine.model = model
                if eval_pairs:  # the untrained model, for the report
                    summary["eval_base"] = evaluate(engine, eval_pairs, seed=cfg.seed)
                    add_suite_rows(summary["eval_base"], model, tokenizer, cfg, accelerator.is_main_process)
                    _say(accelerator, "held-out eval, base model", summary["eval_base"])
                    if accelerator.is_main_process:
                        (out_dir / "eval_base.json").write_text(json.dumps(summary["eval_base"], indent=2))
                demos = reference_episodes(engine, train_pairs, cfg.env_kwargs())
                t0 = time.time()
                if not demos:
                    raise TrainError("sft_steps > 0 but no reference trajectory solves its task; set sft_steps 0")
                losses = sft_warm_start(model, tokenizer, demos, cfg.sft_steps, cfg.sft_learning_rate,
                                        cfg.sft_batch_size, seed=cfg.seed, micro_batch_size=cfg.sft_micro_batch_size,
                                        autocast=accelerator.autocast, chunk_size=cfg.logprob_chunk_size,
                                        context_grad=cfg.sft_context_grad, on_step=threads.maybe)
                summary["sft"] = {"demos": len(demos), "loss_first": losses[0], "loss_last": losses[-1],
                                  "seconds": time.time() - t0}
                accelerator.print(f"SFT warm start: {len(demos)} reference trajectories, {cfg.sft_steps} steps, "
                                  f"loss {losses[0]:.3f} -> {losses[-1]:.3f} ({summary['sft']['seconds']:.0f} s)")
                if accelerator.is_main_process:
                    _save_model_atomically(model, tokenizer, sft_dir)
                set_seed(cfg.seed)  # GRPO starts from the same RNG state with or without resume

        ref_model = None
        if cfg.use_lora:
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
        engine.model = policy

        start_step = 0
        if resume_ckpt is not None:
            try:
                state = apply_checkpoint(accelerator, model, optimizer, scheduler, resume_ckpt, resume.name)
                sampler.load_state_dict(state["sampler"])
            except (CheckpointError, ValueError, KeyError) as e:
                raise TrainError(f"cannot resume from {resume}: {e}") from e
            start_step = state["step"]
            del resume_ckpt
            accelerator.print(f"resumed from {resume} (step {start_step})")
        logger = MetricsLogger(out_dir, cfg.tensorboard and accelerator.is_main_process,
                               resume_step=start_step if resume is not None else None) if accelerator.is_main_process else None
        if accelerator.is_main_process:
            (out_dir / "config.yaml").write_text(to_yaml(cfg))

        # ---------------------------------------------------------------- eval before
        before = None
        before_path = out_dir / "eval_before.json"
        if eval_pairs:
            if resume is not None and before_path.exists():
                before = json.loads(before_path.read_text())
            else:
                before = evaluate(engine, eval_pairs, seed=cfg.seed)
                add_suite_rows(before, engine.model, tokenizer, cfg, accelerator.is_main_process)
                _say(accelerator, "held-out eval, after SFT" if cfg.sft_steps else "held-out eval, before GRPO", before)
                if accelerator.is_main_process:
                    before_path.write_text(json.dumps(before, indent=2))

        # ---------------------------------------------------------------- GRPO loop
        t_grpo = time.time()
        max_tokens = cfg.max_turns * cfg.max_new_tokens  # Dr. GRPO's constant normaliser
        progress = _progress(cfg.progress and accelerator.is_main_process)
        last_metrics: dict = {}
        with progress:
            task_bar = progress.add_task("GRPO", total=cfg.steps, completed=start_step)
            for step in range(start_step + 1, cfg.steps + 1):
                # 1. Rollouts: this process's slice of the step's prompts, G episodes each.
                t0 = time.time()
                gen0, pre0 = engine.generated_tokens, engine.prefilled_tokens
                tasks = sampler.take(cfg.batch_size * world)[rank * cfg.batch_size:(rank + 1) * cfg.batch_size]
                episodes = engine.collect(tasks, cfg.group_size, seed=(cfg.seed * 1_000_003 + step) * world + rank)
                t_rollout = time.time() - t0

                # 2. Rewards -> group-relative advantages.
                t0 = time.time()
                shape_rewards(episodes, cfg.format_penalty, cfg.turn_cost, reward_fn)
                rewards = torch.tensor([ep.shaped_reward for ep in episodes])
                advantages, zero_var = group_advantages(rewards, cfg.group_size, cfg.scale_rewards)
                ids, att, mask, old_lp = collate(episodes, tokenizer.pad_token_id)
                n_seq, n_tok = len(episodes), mask.sum().clamp(min=1.0)

                # 3. Reference logprobs for the KL term (LoRA: same weights, adapters off).
                ref_lp = None
                if cfg.beta:
                    ref_lp = torch.zeros_like(old_lp)
                    with torch.no_grad():
                        for sl in _micro_slices(n_seq, cfg.micro_batch_size):
                            w = int(att[sl].sum(1).max())
                            ctx = policy.disable_adapter() if cfg.use_lora else contextlib.nullcontext()
                            with ctx, accelerator.autocast():
                                ref = token_logprobs(policy if cfg.use_lora else ref_model,
                                                     ids[sl, :w].to(accelerator.device), att[sl, :w].to(accelerator.device),
                                                     cfg.temperature, mask=mask[sl, :w].to(accelerator.device),
                                                     chunk_size=cfg.logprob_chunk_size)
                            ref_lp[sl, :w] = ref.float().cpu()

                # 4. Inner epochs over micro-batches; gradients accumulate to exactly the full-batch gradient.
                threads.maybe()
                model.train()
                agg = {"loss": 0.0, "kl_sum": 0.0, "clip_sum": 0.0, "ratio_sum": 0.0, "mask_tokens": 0.0}
                grad_norm = torch.tensor(0.0)
                # A sequence with zero advantage and no KL term has exactly zero loss and gradient, so its
                # forward/backward is skipped (the normalisers still count the whole batch, so the update is
                # unchanged; zero-variance groups are common early on). Single process only: under DDP every
                # rank must run the same number of backward passes.
                rows = torch.arange(n_seq)
                if cfg.beta == 0 and world == 1 and SKIP_ZERO_ADVANTAGE:
                    rows = rows[advantages != 0]
                chunks = _update_chunks(rows, cfg.group_size, cfg.micro_batch_size)
                # A chunk's rows belong to one group: its shared prompt runs once (see grpo.shared_prefix_logprobs).
                # Single process only: DDP allows one forward per parameter per backward.
                share = SHARE_PROMPTS and not cfg.gradient_checkpointing and world == 1
                for _epoch in range(cfg.inner_epochs):
                    optimizer.zero_grad(set_to_none=True)
                    if not chunks:  # all-zero gradient: step the optimizer exactly as if it had been computed
                        for p in params:
                            p.grad = torch.zeros_like(p)
                    for k, sl in enumerate(chunks):
                        w = int(att[sl].sum(1).max())  # right padded: trim the micro-batch to its width
                        cut = shared_prefix_cut(ids[sl, :w], att[sl, :w], mask[sl, :w]) if share else 0
                        def dev(t):
                            return t[sl, cut:w].to(accelerator.device)  # noqa: B023 (called in this iteration) columns whose logprobs are computed
                        sync = k == len(chunks) - 1
                        with (contextlib.nullcontext() if sync else accelerator.no_sync(model)):
                            with accelerator.autocast():
                                chunk_ids, chunk_att = ids[sl, :w].to(accelerator.device), att[sl, :w].to(accelerator.device)
                                if cut:
                                    new_lp = shared_prefix_logprobs(model, chunk_ids, chunk_att, cut, cfg.temperature,
                                                                    mask=mask[sl, :w].to(accelerator.device),
                                                                    chunk_size=cfg.logprob_chunk_size)
                                else:
                                    new_lp = token_logprobs(model, chunk_ids, chunk_att, cfg.temperature, mask=dev(mask),
                                                            chunk_size=cfg.logprob_chunk_size)
                            loss, st = grpo_loss(new_lp.float(), dev(old_lp), advantages[sl].to(accelerator.device),
                                                 dev(mask), ref_lp=dev(ref_lp) if ref_lp is not None else None,
                                                 beta=cfg.beta, clip_eps_low=cfg.clip_eps_low,
                                                 clip_eps_high=cfg.clip_eps_high, loss_type=cfg.loss_type,
                                                 num_sequences=n_seq, num_tokens=n_tok, max_tokens=max_tokens)
                            accelerator.backward(loss)
                        agg["loss"] += loss.item() / cfg.inner_epochs
                        for key in ("kl_sum", "clip_sum", "ratio_sum", "mask_tokens"):
                            agg[key] += st[key]
                    if cfg.max_grad_norm:
                        grad_norm = accelerator.clip_grad_norm_(params, cfg.max_grad_norm)
                    optimizer.step()
                scheduler.step()
                t_update = time.time() - t0

                # 5. Metrics, checkpoint.
                metrics = episode_metrics(episodes)
                metrics.update({
                    "loss": agg["loss"],
                    "kl": agg["kl_sum"] / max(agg["mask_tokens"], 1.0),
                    "clip_frac": agg["clip_sum"] / max(agg["mask_tokens"], 1.0),
                    "ratio_mean": agg["ratio_sum"] / max(agg["mask_tokens"], 1.0),
                    "grad_norm": float(grad_norm),
                    "lr": scheduler.get_last_lr()[0],
                    "advantage_abs_mean": float(advantages.abs().mean()),
                    "zero_variance_groups": float(zero_var.sum()),
                    "zero_variance_group_frac": float(zero_var.float().mean()),
                    "seconds_rollout": t_rollout,
                    "seconds_update": t_update,
                    "trained_tokens": float(mask.sum()),
                    "updated_sequences": float(len(rows)),
                    "generated_tokens": float(engine.generated_tokens - gen0),
                    "prefilled_tokens": float(engine.prefilled_tokens - pre0),  # prompt tokens run through the model
                    "generated_tokens_per_s": (engine.generated_tokens - gen0) / max(t_rollout, 1e-9),
                    "trained_tokens_per_s": float(mask[rows].sum()) / max(t_update, 1e-9),  # tokens actually updated
                    "peak_rss_gb": _peak_rss_gb(),
                })
                metrics = _mean_across_processes(accelerator, metrics)
                last_metrics = metrics
                if logger is not None:
                    logger.log(step, metrics)
                progress.update(task_bar, advance=1, description=(
                    f"GRPO reward={metrics['reward_mean']:.2f} succ={metrics['success_rate']:.2f} "
                    f"loss={metrics['loss']:+.3f}"))
                if (cfg.save_every and step % cfg.save_every == 0) or step == cfg.steps:
                    save_checkpoint(accelerator, model, optimizer, scheduler, step,
                                    {"sampler": sampler.state_dict(), "config": dataclasses.asdict(cfg)}, out_dir)
                    if accelerator.is_main_process:
                        run_dir.record_all()

        # ---------------------------------------------------------------- eval after, report
        summary["final_metrics"] = last_metrics
        summary["grpo_seconds"] = time.time() - t_grpo
        if eval_pairs:
            after = evaluate(engine, eval_pairs, seed=cfg.seed)
            add_suite_rows(after, engine.model, tokenizer, cfg, accelerator.is_main_process)
            _say(accelerator, "held-out eval, after GRPO", after)
            summary["eval_before"], summary["eval_after"] = before, after
            if accelerator.is_main_process:
                (out_dir / "eval_after.json").write_text(json.dumps(after, indent=2))
        if accelerator.is_main_process:
            if logger is not None:
                logger.close()
            if (out_dir / "metrics.jsonl").exists():
                plot_curves(out_dir / "metrics.jsonl", out_dir / "curves.png")
            (out_dir / "report.md").write_text(_report(cfg, summary))
            if cfg.save_final_model:
                # One loadable model directory (LoRA merged), so the next run (e.g. an evolve round) starts from it.
                final = policy.merge_and_unload() if cfg.use_lora else policy
                _save_model_atomically(final, tokenizer, out_dir / "final-model")
                summary["final_model"] = str(out_dir / "final-model")
            (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    finally:
        vec_env.close()  # also when a step fails: Ray actors and a local Ray session are released
        if accelerator.is_main_process:
            run_dir.record_all()   # the manifest lists what this run wrote (--overwrite removes only that)
    summary["output_dir"] = str(out_dir)
    return summary


SKIP_ZERO_ADVANTAGE = True  # module switch so a test can compare against the unskipped update
SHARE_PROMPTS = True  # likewise for the shared-prompt forward


def _update_chunks(rows: torch.Tensor, group_size: int, micro_batch_size: int) -> list[torch.Tensor]:
    """Micro-batches of the rows to update, never straddling a group (its members share a prompt)."""
    chunks = []
    for g in torch.unique(rows // group_size).tolist():
        members = rows[rows // group_size == g]
        chunks += [members[s:s + micro_batch_size] for s in range(0, len(members), micro_batch_size)]
    return chunks

_RUN_FILES = ("metrics.jsonl", "eval_base.json", "eval_before.json", "eval_after.json", "summary.json",
              "report.md", "curves.png", "config.yaml")
_RUN_DIRS = ("checkpoints", "sft-model", "tensorboard", "final-model")


def _choose_resume(cfg: TrainConfig, out_dir: Path, rank: int, main: bool) -> tuple[dict | None, Path | None]:
    """Decide how this run uses ``out_dir``: resume (from which checkpoint) or start afresh.

    * no resume_from: start afresh (:func:`_claim_output_dir` has refused a previous run without
      ``overwrite`` and removed its files with it).
    * ``resume_from: latest``: the newest checkpoint that reads back completely; damaged ones
      (truncated files, missing optimizer.pt, a killed save) are skipped with a message.
      None at all: start afresh (the previous run died before its first checkpoint).
    * an explicit path: that checkpoint, or a one-line error.
    """
    if cfg.resume_from and cfg.resume_from != "latest":
        try:
            return read_checkpoint(cfg.resume_from, rank), Path(cfg.resume_from)
        except CheckpointError as e:
            raise TrainError(f"cannot resume: {e}") from e
    if cfg.resume_from == "latest":
        for cand in resume_candidates(out_dir):
            try:
                return read_checkpoint(cand, rank), cand
            except CheckpointError as e:
                if main:
                    print(f"resume: skipping checkpoint {e}; falling back to an older one")
        if main:
            print(f"resume: no usable checkpoint in {out_dir / 'checkpoints'}; starting from scratch")
    return None, None


def _claim_output_dir(cfg: TrainConfig, out_dir: Path, main: bool):
    """Take ``out_dir`` through :class:`agentworld_envs.outputs.OutputDir`: a new or empty directory,
    or agentworld's earlier run there (refused unless resumed or ``overwrite``, which removes only
    the files that run wrote and that are unchanged); a directory of other files is refused."""
    from agentworld_envs.outputs import OutputDir, OutputError

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


def _save_model_atomically(model, tokenizer, path: Path) -> None:
    """save_pretrained into a temp dir, then rename: a kill never leaves a half-written model that resume loads."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)


def _say(accelerator, what: str, ev: dict) -> None:
    n = ev["episodes"]
    accelerator.print(f"{what}: success {round(ev['success_rate'] * n)}/{n} ({ev.get('seconds', 0):.0f} s)")


def _peak_rss_gb() -> float:
    """Peak resident memory of this process so far (Linux ru_maxrss is KiB; macOS bytes)."""
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 30) if sys.platform == "darwin" else peak / (1 << 20)


def _micro_slices(n: int, size: int):
    for start in range(0, n, max(size, 1)):
        yield slice(start, min(start + size, n))


def _report(cfg: TrainConfig, summary: dict) -> str:
    lines = [f"# agentworld GRPO run: `{cfg.output_dir}`", "",
             f"model `{summary['model_path']}`, steps {cfg.steps}, batch {cfg.batch_size} x group {cfg.group_size}, "
             f"lr {cfg.learning_rate}, LoRA {'r=' + str(cfg.lora_r) if cfg.use_lora else 'off'}, seed {cfg.seed}", ""]
    if "sft" in summary:
        s = summary["sft"]
        lines += [f"SFT warm start: {s['demos']} reference trajectories, loss {s['loss_first']:.3f} -> "
                  f"{s['loss_last']:.3f} in {s['seconds']:.1f}s", ""]
    if "eval_after" in summary:
        start = "after SFT" if "eval_base" in summary else "before"
        lines.append(report_markdown([("base", summary.get("eval_base")), (start, summary.get("eval_before")),
                                      ("after GRPO", summary["eval_after"])]))
    evals = [(name, summary[key]) for name, key in (("base", "eval_base"), ("before", "eval_before"),
                                                     ("after", "eval_after")) if summary.get(key)]
    if evals:
        lines += ["Seconds: " + ", ".join(f"eval {name} {ev.get('seconds', 0):.0f}" for name, ev in evals)
                  + (f", SFT {summary['sft']['seconds']:.0f}" if "sft" in summary else "")
                  + f", GRPO {summary.get('grpo_seconds', 0):.0f}", ""]
    m = summary.get("final_metrics") or {}
    if m:
        lines += ["## Last training step", "", "| metric | value |", "|---|---:|"]
        lines += [f"| {k} | {v:.4g} |" for k, v in sorted(m.items()) if isinstance(v, float)]
    lines += ["", "Curves: `curves.png`; per-step metrics: `metrics.jsonl`."]
    return "\n".join(lines) + "\n"


def _progress(enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled, transient=False)
