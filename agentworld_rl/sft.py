"""Optional SFT warm start on reference trajectories.

A random or weak model rarely produces a parseable tool call, so GRPO sees no
reward variance. Replaying each task's ``solution_actions()`` through gym gives
chats rendered exactly as in rollouts (same system prompt, tools, template);
we train cross-entropy on the assistant tokens only.
"""

from __future__ import annotations

import contextlib
import random
from typing import Sequence

import gymnasium as gym
import torch
from transformers.cache_utils import DynamicCache

from .rollout import ChatRecorder, Episode


def reference_episodes(recorder: ChatRecorder, pairs: Sequence[dict], env_kwargs: dict | None = None) -> list[Episode]:
    """Replay ``solution_actions()`` of each (env, task) and record token ids + assistant mask
    (rendered by ``recorder``, as rollouts are; a RolloutEngine's ``.recorder``)."""
    recorder = getattr(recorder, "recorder", recorder)  # a RolloutEngine is accepted too
    episodes = []
    tokenizer = recorder.tokenizer
    eos = tokenizer.eos_token_id
    for pair in pairs:
        env = gym.make(pair["env_id"], **(env_kwargs or {}))
        try:
            obs, info = env.reset(seed=0, options={"task_id": pair["task_id"]})
            ep = Episode(env_id=pair["env_id"], task_id=pair["task_id"], group=len(episodes))
            recorder.begin(ep, obs, info)
            for action in env.unwrapped.solution_actions():
                ids = tokenizer(action, add_special_tokens=False)["input_ids"] + [eos]
                recorder.append_generation(ep, ids, [0.0] * len(ids))
                obs, reward, terminated, truncated, step_info = env.step(action)
                if terminated or truncated:
                    ep.reward, ep.done = float(reward), True
                    ep.success = bool(step_info.get("success", reward >= 1.0))
                    break
                recorder.append_observation(ep, ids, obs, step_info)
            if ep.success:  # only learn from demonstrations that actually solve the task
                episodes.append(ep)
        finally:
            env.close()
    return episodes


def collate(episodes: Sequence[Episode], pad_id: int):
    """Right-padded ``input_ids``, ``attention_mask``, ``mask`` and behaviour ``logprobs``, all [B, T]."""
    width = max(len(ep.token_ids) for ep in episodes)
    B = len(episodes)
    ids = torch.full((B, width), pad_id, dtype=torch.long)
    att = torch.zeros((B, width), dtype=torch.long)
    mask = torch.zeros((B, width), dtype=torch.float32)
    lps = torch.zeros((B, width), dtype=torch.float32)
    for i, ep in enumerate(episodes):
        n = len(ep.token_ids)
        ids[i, :n] = torch.tensor(ep.token_ids)
        att[i, :n] = 1
        mask[i, :n] = torch.tensor(ep.mask, dtype=torch.float32)
        lps[i, :n] = torch.tensor(ep.logprobs, dtype=torch.float32)
    return ids, att, mask, lps


def _segments(mask: Sequence[int]) -> list[tuple[int, int, bool]]:
    """Split an episode into context runs (no gradient) and trained runs, each trained run taking
    the context token just before it: ``[(lo, hi, trained)]`` in order, up to the last trained token."""
    out, start, n = [], 0, len(mask)
    i = 0
    while i < n:
        if mask[i]:
            j = i
            while j < n and mask[j]:
                j += 1
            lo = max(i - 1, 1)  # position 0 has no prefix to predict it
            out += [(start, lo, False), (lo, j, True)]
            start = i = j
        else:
            i += 1
    return out  # context after the last trained run predicts nothing trained: never run


def sft_accumulate(model, batch: Sequence[Episode], pad_id: int, micro_batch_size: int = 0, autocast=None,
                   chunk_size: int = 256, device=None, context_grad: bool = True,
                   num_tokens: float | None = None) -> float:
    """Forward/backward one SFT batch ``micro_batch_size`` episodes at a time (0 = all at once).

    The loss is normalised by the whole batch's trained-token count (``num_tokens``, when the batch
    is one process's share of a larger one), so the gradients
    accumulated in ``.grad`` equal those of a single full-batch pass. Returns the loss.

    ``context_grad=False`` (an approximation, for long prompts on small machines): each
    episode runs segment by segment on one KV cache; its context segments (the prompt and
    every tool result) run once without gradient and only their keys/values are kept, its
    assistant turns run with gradient on top. The loss is the same; the gradient misses the
    path through the context's keys/values, and forward+backward covers only the assistant
    tokens (with ~270-token prompts and ~200-token tool results, about 40 % of the cost).
    """
    from .grpo import token_logprobs

    device = device or next(model.parameters()).device
    autocast = autocast or contextlib.nullcontext
    micro = micro_batch_size if micro_batch_size > 0 else len(batch)
    n_tok = num_tokens or float(sum(ep.num_policy_tokens for ep in batch)) or 1.0
    total = 0.0
    if not context_grad:
        for ep in batch:
            ids = torch.tensor([ep.token_ids], device=device)
            mask = torch.tensor([ep.mask], dtype=torch.float32, device=device)
            cache, loss = DynamicCache(), None
            for lo, hi, trained in _segments(ep.mask):
                # A trained run [lo, hi) starts one token early: that token's hidden state predicts its first token.
                if trained:
                    with autocast():
                        lp = token_logprobs(model, ids[:, lo:hi], torch.ones_like(ids[:, :hi]), mask=mask[:, lo:hi],
                                            chunk_size=chunk_size, past_key_values=cache)
                    part = -(lp.float() * mask[:, lo:hi]).sum() / n_tok
                    loss = part if loss is None else loss + part
                elif hi > lo:
                    with torch.no_grad(), autocast():
                        model(input_ids=ids[:, lo:hi], past_key_values=cache, use_cache=True, logits_to_keep=1)
            if loss is not None:
                loss.backward()
                total += loss.item()
        return total
    for start in range(0, len(batch), micro):
        ids, att, mask, _ = collate(batch[start:start + micro], pad_id)
        ids, att, mask = ids.to(device), att.to(device), mask.to(device)
        with autocast():
            lp = token_logprobs(model, ids, att, mask=mask, chunk_size=chunk_size)
        loss = -(lp.float() * mask).sum() / n_tok
        loss.backward()
        total += loss.item()
    return total


def sft_warm_start(model, tokenizer, episodes: Sequence[Episode], steps: int, lr: float, batch_size: int,
                   seed: int = 0, device=None, log=None, micro_batch_size: int = 0, autocast=None,
                   chunk_size: int = 256, context_grad: bool = True, on_step=None, dist=None) -> list[float]:
    """Full-weight SFT on the assistant tokens of ``episodes``. Returns per-step losses.

    Each step draws ``batch_size`` episodes and runs them ``micro_batch_size`` at a time
    (0 = all at once), accumulating gradients (see :func:`sft_accumulate`). Sorting a batch
    by length keeps padding inside each micro-batch small. ``on_step()`` runs before each step.

    With several processes (``dist``, a :class:`~agentworld_rl.distributed.Dist`), every process
    draws the same batch and trains on its share of it; the loss is normalised by the whole
    batch's token count and the gradients are averaged, so the update is the single-process one.
    """
    from .distributed import Dist

    dist = dist or Dist()
    if not episodes:
        raise ValueError("no successful reference trajectories to warm-start from")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr)
    rng = random.Random(seed)
    losses = []
    model.train()
    for step in range(steps):
        if on_step is not None:
            on_step()
        batch = sorted((episodes[rng.randrange(len(episodes))] for _ in range(batch_size)),
                       key=lambda ep: len(ep.token_ids))
        opt.zero_grad(set_to_none=True)
        mine = dist.shard(batch)
        n_tok = float(sum(ep.num_policy_tokens for ep in batch)) or 1.0
        loss = sft_accumulate(model, mine, tokenizer.pad_token_id, micro_batch_size, autocast, chunk_size, device,
                              context_grad, num_tokens=n_tok) if mine else 0.0
        if dist.world > 1:
            dist.sum_gradients(params)  # each share was normalised by the whole batch's tokens
            loss = dist.sum(loss)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss)
        if log is not None:
            log(step, loss)
    opt.zero_grad(set_to_none=True)
    del opt  # free the Adam moments before GRPO builds its own optimizer
    model.eval()
    return losses
