"""Optional SFT warm start on reference trajectories.

A random or weak model rarely produces a parseable tool call, so GRPO sees no
reward variance. Replaying each task's ``solution_actions()`` through gym gives
chats rendered exactly as in rollouts (same system prompt, tools, template);
we train cross-entropy on the assistant tokens only.
"""

from __future__ import annotations

import random
from typing import Sequence

import gymnasium as gym
import torch
import torch.nn.functional as F

from .rollout import Episode, RolloutEngine


def reference_episodes(engine: RolloutEngine, pairs: Sequence[dict], env_kwargs: dict | None = None) -> list[Episode]:
    """Replay ``solution_actions()`` of each (env, task) and record token ids + assistant mask."""
    episodes = []
    eos = engine.tokenizer.eos_token_id
    for pair in pairs:
        env = gym.make(pair["env_id"], **(env_kwargs or {}))
        try:
            obs, info = env.reset(seed=0, options={"task_id": pair["task_id"]})
            ep = Episode(env_id=pair["env_id"], task_id=pair["task_id"], group=len(episodes))
            engine._begin(ep, obs, info)
            for action in env.unwrapped.solution_actions():
                ids = engine.tokenizer(action, add_special_tokens=False)["input_ids"] + [eos]
                engine._append_generation(ep, ids, [0.0] * len(ids))
                obs, reward, terminated, truncated, step_info = env.step(action)
                if terminated or truncated:
                    ep.reward, ep.done = float(reward), True
                    ep.success = bool(step_info.get("success", reward >= 1.0))
                    break
                engine._append_tool_result(ep, ids, obs)
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


def sft_warm_start(model, tokenizer, episodes: Sequence[Episode], steps: int, lr: float, batch_size: int,
                   seed: int = 0, device=None, log=None) -> list[float]:
    """Full-weight SFT on the assistant tokens of ``episodes``. Returns per-step losses."""
    if not episodes:
        raise ValueError("no successful reference trajectories to warm-start from")
    device = device or next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    rng = random.Random(seed)
    pad = tokenizer.pad_token_id
    losses = []
    model.train()
    for step in range(steps):
        batch = [episodes[rng.randrange(len(episodes))] for _ in range(batch_size)]
        ids, att, mask, _ = collate(batch, pad)
        ids, att, mask = ids.to(device), att.to(device), mask.to(device)
        logits = model(input_ids=ids, attention_mask=att).logits[:, :-1].float()
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none")
        m = mask[:, 1:].reshape(-1)
        loss = (nll * m).sum() / m.sum().clamp(min=1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if log is not None:
            log(step, loss.item())
    model.eval()
    return losses
