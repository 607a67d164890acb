"""GRPO maths: group-relative advantages, token logprobs, the clipped loss.

Everything here is a pure function of tensors so tests can check it against
hand-computed numbers.

Loss normalisation (``loss_type``, TRL's names), for per-token loss ``l_it`` and mask ``m_it``:

* ``"grpo"`` (alias ``"sequence"``, original GRPO): mean over each sequence's tokens, then mean over
  sequences; a long sequence's tokens each weigh less (length bias).
* ``"dapo"`` (alias ``"token"``): sum over all tokens / number of trained tokens in the batch.
* ``"dr_grpo"`` (Dr. GRPO): sum over all tokens / (number of sequences x a constant max length).

Denominators are for the *whole* batch (across processes too) and passed in, so the sum of
micro-batch losses equals the full-batch loss exactly (gradient accumulation and data
parallelism do not change the update).

The ratio is taken against the trainer's own log-probs of the rollout tokens (``old_lp``: on
the first pass over a batch, the detached current ones). Tokens sampled by another kernel
(vLLM, a different batch shape, bf16) carry sampler log-probs that differ from the trainer's;
:func:`importance_weights` turns that mismatch into truncated importance weights (TIS) that
multiply each token's policy loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

LOSS_TYPES = ("dapo", "dr_grpo", "grpo", "sequence", "token")
_CANONICAL = {"sequence": "grpo", "token": "dapo"}
IS_MODES = ("none", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def importance_weights(trainer_lp: torch.Tensor, sampler_lp: torch.Tensor, mask: torch.Tensor, mode: str,
                       cap: float) -> torch.Tensor:
    """Per-token weights ``[B, T]`` correcting for tokens sampled from ``pi_sampler`` but trained as ``pi_trainer``.

    ``token_truncate``: ``min(pi_trainer / pi_sampler, cap)`` per token; ``token_mask``: 1 where that
    ratio is at most ``cap``, else 0; ``sequence_*``: the same with the ratio of whole sequences
    (product over its trained tokens), broadcast to its tokens; ``none``: all ones. Detached.
    """
    if mode not in IS_MODES:
        raise ValueError(f"importance sampling mode must be one of {IS_MODES}, got {mode!r}")
    mask = mask.float()
    if mode == "none":
        return torch.ones_like(mask)
    with torch.no_grad():
        log_ratio = (trainer_lp.float() - sampler_lp.float()) * mask
        if mode.startswith("sequence"):
            log_ratio = log_ratio.sum(dim=1, keepdim=True).expand_as(mask)
        ratio = torch.exp(log_ratio.clamp(max=50.0))
        if mode.endswith("truncate"):
            return ratio.clamp(max=cap)
        return (ratio <= cap).float()


def group_advantages(rewards: torch.Tensor, group_size: int, scale_rewards: bool = True,
                     eps: float = 1e-4) -> tuple[torch.Tensor, torch.Tensor]:
    """``A_i = r_i - mean(group)``, optionally ``/ (std(group) + eps)``.

    ``rewards`` is laid out group by group (``[g0s0, g0s1, ..., g1s0, ...]``).
    std is the unbiased sample std (as TRL). Returns (advantages, zero_variance_per_group).
    """
    r = rewards.float().view(-1, group_size)
    mean = r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(mean)
    adv = r - mean
    if scale_rewards:
        # Zero-variance groups have adv == 0 already; keep them 0 (not NaN) even with eps == 0.
        adv = torch.where(std > 0, adv / (std + eps), adv)
    zero_var = (r.max(dim=1).values - r.min(dim=1).values) == 0
    return adv.view(-1), zero_var


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float = 1.0, mask: torch.Tensor | None = None,
                   chunk_size: int = 256, **model_kwargs) -> torch.Tensor:
    """Logprob of each token given its prefix: shape ``[B, T]`` fp32, column 0 is 0 (no prefix).

    Sequences are right padded, so positions start at 0 like in generation.

    Memory: the full ``[B, T, V]`` logits (V ~ 50k-150k) in fp32, plus their log-softmax, are
    the largest tensors of an update by far. We run the model with ``logits_to_keep=1``,
    take the final hidden states from a hook on the backbone's last norm, and apply the LM
    head ``chunk_size`` positions at a time under activation checkpointing, so at most one
    ``[B, chunk, V]`` block exists at once (forward and backward). With ``mask`` (1 = the
    token's logprob is needed) chunks without any such token are skipped. Models without
    a findable norm/head, or ``chunk_size <= 0``, use the plain full-logits path.
    """
    inner = getattr(model, "module", model)  # DDP wrapper; hooks live on the real modules
    norm = head = None
    if chunk_size > 0 and hasattr(inner, "get_decoder") and hasattr(inner, "get_output_embeddings"):
        norm = getattr(inner.get_decoder(), "norm", None)
        head = inner.get_output_embeddings()
    if norm is None or head is None:
        return _full_token_logprobs(model, input_ids, attention_mask, temperature, **model_kwargs)

    captured: list[torch.Tensor] = []
    handle = norm.register_forward_hook(lambda _m, _i, out: captured.append(out))
    try:
        model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=1,
              use_cache="past_key_values" in model_kwargs, **model_kwargs)
    finally:
        handle.remove()
    hidden = captured[-1][:, :-1]     # position t predicts token t + 1
    targets = input_ids[:, 1:]
    needed = mask[:, 1:] if mask is not None else None
    B, T = targets.shape
    out = []
    for s in range(0, T, chunk_size):
        sl = slice(s, min(s + chunk_size, T))
        if needed is not None and not bool(needed[:, sl].any()):
            out.append(torch.zeros((B, sl.stop - sl.start), dtype=torch.float32, device=input_ids.device))
            continue
        h = hidden[:, sl]
        if torch.is_grad_enabled() and h.requires_grad:
            # Recompute the chunk's logits in backward instead of keeping [B, chunk, V] alive.
            lp = torch.utils.checkpoint.checkpoint(_chunk_logprobs, head, h, targets[:, sl], temperature,
                                                   use_reentrant=False)
        else:
            lp = _chunk_logprobs(head, h, targets[:, sl], temperature)
        out.append(lp)
    return F.pad(torch.cat(out, dim=1), (1, 0), value=0.0)


def shared_prefix_cut(input_ids: torch.Tensor, attention_mask: torch.Tensor, mask: torch.Tensor) -> int:
    """Length of the context every row shares before its first trained token (0: none to share).

    The rows of one GRPO group start with the same rendered prompt; the cut leaves the last
    prompt token to the tail, because its hidden state predicts the first trained token.
    """
    if input_ids.shape[0] < 2 or not bool(mask.any(dim=1).all()):
        return 0
    cut = int(mask.float().argmax(dim=1).min()) - 1
    if cut < 1 or not bool(attention_mask[:, :cut].all()) or not bool((input_ids[:, :cut] == input_ids[:1, :cut]).all()):
        return 0
    return cut


def shared_prefix_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, cut: int,
                           temperature: float = 1.0, mask: torch.Tensor | None = None,
                           chunk_size: int = 256) -> torch.Tensor:
    """:func:`token_logprobs` of columns ``cut..`` for rows whose first ``cut`` tokens are equal.

    The shared prefix runs once (one row, with gradient) and its keys/values are expanded to
    every row, so a group of G episodes costs one prompt plus G tails instead of G prompts;
    gradients flow back through the expansion into the prefix, so the result (and its
    gradient) equals the unshared computation. Needs a cache that records the prefix once:
    not under gradient checkpointing, which re-runs layers (and their cache writes) in backward.
    """
    from transformers.cache_utils import DynamicCache

    B = input_ids.shape[0]
    prefix = DynamicCache()
    model(input_ids=input_ids[:1, :cut], attention_mask=attention_mask[:1, :cut], past_key_values=prefix,
          use_cache=True, logits_to_keep=1)
    past = DynamicCache(ddp_cache_data=[(layer.keys.expand(B, -1, -1, -1), layer.values.expand(B, -1, -1, -1))
                                        for layer in prefix.layers])
    return token_logprobs(model, input_ids[:, cut:], attention_mask, temperature,
                          mask=mask[:, cut:] if mask is not None else None, chunk_size=chunk_size,
                          past_key_values=past)


def _chunk_logprobs(head, hidden: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    logits = head(hidden).float()
    if temperature != 1.0:
        logits = logits / temperature
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def _full_token_logprobs(model, input_ids, attention_mask, temperature: float = 1.0, **model_kwargs) -> torch.Tensor:
    """Reference implementation: materialises ``[B, T, V]`` fp32 logits (tests compare against it)."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask, **model_kwargs).logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    lp = torch.gather(F.log_softmax(logits, dim=-1), 2, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return F.pad(lp, (1, 0), value=0.0)


@dataclass
class LossStats:
    loss: float
    policy_loss: float
    kl: float
    clip_frac: float
    ratio_mean: float


def grpo_loss(new_lp: torch.Tensor, old_lp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
              ref_lp: torch.Tensor | None = None, beta: float = 0.0, clip_eps_low: float = 0.2,
              clip_eps_high: float | None = None, loss_type: str = "dapo",
              num_sequences: int | None = None, num_tokens: int | None = None,
              max_tokens: int | None = None, is_weights: torch.Tensor | None = None,
              scale: float = 1.0) -> tuple[torch.Tensor, dict]:
    """Clipped-ratio GRPO loss with optional k3 KL penalty to a reference.

    Args:
        new_lp, old_lp, ref_lp, mask: ``[B, T]`` per-token logprobs / 0-1 mask of trained tokens.
        advantages: ``[B]`` one advantage per sequence (broadcast over its tokens).
        num_sequences / num_tokens: whole-batch denominators (default: this micro-batch's).
        max_tokens: the Dr. GRPO constant (default: this micro-batch's width).
        is_weights: ``[B, T]`` importance weights of the policy term (:func:`importance_weights`).
        scale: multiplies the loss (the number of processes, whose gradients data parallelism averages).
    Returns:
        (loss, stats) where stats are detached sums for logging.
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    loss_type = _CANONICAL.get(loss_type, loss_type)
    mask = mask.float()
    clip_eps_high = clip_eps_low if clip_eps_high is None else clip_eps_high
    ratio = torch.exp(new_lp - old_lp)
    adv = advantages.float().unsqueeze(1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps_low, 1.0 + clip_eps_high) * adv
    per_token = -torch.min(unclipped, clipped)
    if is_weights is not None:
        per_token = per_token * is_weights
    kl = torch.zeros_like(per_token)
    if ref_lp is not None and beta != 0.0:
        # k3 estimator of KL(pi || ref): unbiased, always >= 0.
        d = ref_lp - new_lp
        kl = torch.exp(d) - d - 1.0
        per_token = per_token + beta * kl

    n_seq = num_sequences if num_sequences is not None else mask.shape[0]
    n_tok = num_tokens if num_tokens is not None else mask.sum().clamp(min=1.0)
    if loss_type == "grpo":
        per_seq = (per_token * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        loss = per_seq.sum() / n_seq
    elif loss_type == "dapo":
        loss = (per_token * mask).sum() / n_tok
    else:
        L = max_tokens if max_tokens is not None else mask.shape[1]
        loss = (per_token * mask).sum() / (n_seq * L)
    loss = loss * scale

    with torch.no_grad():
        is_clipped = ((ratio < 1 - clip_eps_low) & (adv < 0)) | ((ratio > 1 + clip_eps_high) & (adv > 0))
        stats = {
            "mask_tokens": mask.sum().item(),
            "kl_sum": (kl * mask).sum().item(),
            "clip_sum": (is_clipped.float() * mask).sum().item(),
            "ratio_sum": (ratio * mask).sum().item(),
            "is_weight_sum": ((is_weights if is_weights is not None else torch.ones_like(mask)) * mask).sum().item(),
        }
    return loss, stats
