"""Memory features: chunked/masked token logprobs, SFT micro-batching, autocast, gradient checkpointing."""

from __future__ import annotations

import copy

import pytest
import torch

import agentworld_rl.toy_envs  # noqa: F401  (registers the toy env ids)
from agentworld_rl.grpo import _full_token_logprobs, token_logprobs
from agentworld_rl.metrics import read_jsonl
from agentworld_rl.tiny_model import build_tiny_chat_model

torch.set_num_threads(1)

LOOKUP = "agentworld_rl/toy-lookup-v0"


# Tiny models and runs built here go to a throwaway cache, not the user's.
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    path = build_tiny_chat_model(tmp_path_factory.mktemp("tiny") / "m")
    return AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)


def _batch(vocab, B=3, T=37, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (B, T), generator=g)
    att = torch.ones_like(ids)
    att[1, 30:] = 0  # right padding
    att[2, 21:] = 0
    return ids, att


@pytest.mark.parametrize("chunk", [1, 5, 16, 1000])
def test_chunked_logprobs_equal_full_logprobs_and_grads(tiny, chunk):
    model, _ = tiny
    ids, att = _batch(model.config.vocab_size)
    model.zero_grad()
    full = _full_token_logprobs(model, ids, att, temperature=0.7)
    (full * att).sum().backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    chunked = token_logprobs(model, ids, att, temperature=0.7, chunk_size=chunk)
    (chunked * att).sum().backward()
    assert chunked.shape == full.shape and chunked.dtype == torch.float32
    assert torch.allclose(chunked, full, atol=1e-5)
    for n, p in model.named_parameters():
        assert torch.allclose(p.grad, ref_grads[n], atol=1e-5, rtol=1e-4), n
    model.zero_grad()


def test_shared_prefix_logprobs_equal_unshared_logprobs_and_grads(tiny):
    """A group's common prompt runs once; values and gradients match running every row whole."""
    from agentworld_rl.grpo import shared_prefix_cut, shared_prefix_logprobs
    model, _ = tiny
    g = torch.Generator().manual_seed(3)
    prompt = torch.randint(0, model.config.vocab_size, (1, 25), generator=g)
    tails = torch.randint(0, model.config.vocab_size, (3, 12), generator=g)
    ids = torch.cat([prompt.expand(3, -1), tails], 1)
    att = torch.ones_like(ids)
    att[1, 31:] = 0  # right padding
    mask = torch.zeros_like(ids, dtype=torch.float32)
    mask[:, 25:] = att[:, 25:].float()
    mask[2, 25:28] = 0  # row 2's first trained token comes later: the cut follows the earliest one
    cut = shared_prefix_cut(ids, att, mask)
    assert cut == 24
    model.zero_grad()
    full = token_logprobs(model, ids, att, temperature=0.7, mask=mask, chunk_size=7)
    (full * mask).sum().backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    shared = shared_prefix_logprobs(model, ids, att, cut, temperature=0.7, mask=mask, chunk_size=7)
    (shared * mask[:, cut:]).sum().backward()
    assert shared.shape == (3, ids.shape[1] - cut)
    assert torch.allclose(shared * mask[:, cut:], full[:, cut:] * mask[:, cut:], atol=1e-5)
    for n, p in model.named_parameters():
        assert torch.allclose(p.grad, ref_grads[n], atol=1e-5, rtol=1e-4), n
    model.zero_grad()
    # Rows whose prompts differ, or a lone row, share nothing.
    other = ids.clone()
    other[1, 3] = (other[1, 3] + 1) % model.config.vocab_size
    assert shared_prefix_cut(other, att, mask) == 0
    assert shared_prefix_cut(ids[:1], att[:1], mask[:1]) == 0


def test_masked_logprobs_skip_untrained_chunks(tiny):
    model, _ = tiny
    ids, att = _batch(model.config.vocab_size, T=40)
    mask = torch.zeros_like(att)
    mask[0, 33:36] = 1
    mask[1, 5] = 1
    with torch.no_grad():
        full = _full_token_logprobs(model, ids, att)
        masked = token_logprobs(model, ids, att, mask=mask, chunk_size=8)
    assert torch.allclose(masked * mask, full * mask, atol=1e-5)
    # Chunks with no trained token are never computed (left at 0).
    assert (masked[:, 9:33] == 0).all() and (masked[:, 5] != 0).any()


def test_chunked_logprobs_through_peft_lora(tiny):
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(copy.deepcopy(tiny[0]), LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                               init_lora_weights=False))
    ids, att = _batch(model.config.vocab_size)
    full = _full_token_logprobs(model, ids, att)
    (full * att).sum().backward()
    ref = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    model.zero_grad()
    chunked = token_logprobs(model, ids, att, chunk_size=7)
    (chunked * att).sum().backward()
    assert torch.allclose(chunked, full, atol=1e-5)
    assert ref and all(torch.allclose(p.grad, ref[n], atol=1e-5, rtol=1e-4)
                       for n, p in model.named_parameters() if p.requires_grad)


def _demos(tiny):
    from agentworld_rl.rollout import RolloutEngine
    from agentworld_rl.sft import reference_episodes
    model, tok = tiny
    engine = RolloutEngine(model, tok, vec_env=None)
    pairs = [{"env_id": LOOKUP, "task_id": t} for t in ("find-alpha", "find-beta", "find-gamma", "find-delta")]
    eps = reference_episodes(engine, pairs, {"max_turns": 4})
    assert len(eps) == 4 and len({len(e.token_ids) for e in eps}) > 1  # different lengths: padding matters
    return eps


@pytest.mark.parametrize("micro", [1, 3])
def test_sft_micro_batching_gives_the_one_batch_gradient(tiny, micro):
    from agentworld_rl.sft import sft_accumulate
    demos = _demos(tiny)
    pad = tiny[1].pad_token_id
    one, split = copy.deepcopy(tiny[0]), copy.deepcopy(tiny[0])
    loss_one = sft_accumulate(one, demos, pad, micro_batch_size=0)
    loss_split = sft_accumulate(split, demos, pad, micro_batch_size=micro)
    assert loss_one == pytest.approx(loss_split, rel=1e-5) and loss_one > 0
    grads = [(n, p.grad, q.grad) for (n, p), q in zip(one.named_parameters(), split.parameters())]
    assert all(g1 is not None for _, g1, _ in grads)
    for n, g1, g2 in grads:
        assert torch.allclose(g1, g2, atol=1e-6, rtol=1e-4), n


def test_sft_without_context_grad_same_loss_approximate_gradient(tiny):
    """sft_context_grad=False: same loss value (the forward is the same computation, split at the
    first trained token); the gradient drops the path through the context's KV, so it is close to
    but not equal to the exact one."""
    from agentworld_rl.sft import sft_accumulate
    demos = _demos(tiny)
    exact, cheap = copy.deepcopy(tiny[0]), copy.deepcopy(tiny[0])
    l1 = sft_accumulate(exact, demos, tiny[1].pad_token_id, micro_batch_size=1)
    l2 = sft_accumulate(cheap, demos, tiny[1].pad_token_id, context_grad=False)
    assert l1 == pytest.approx(l2, rel=1e-5)
    g1 = torch.cat([p.grad.flatten() for p in exact.parameters()])
    g2 = torch.cat([p.grad.flatten() for p in cheap.parameters()])
    cos = torch.nn.functional.cosine_similarity(g1, g2, dim=0)
    assert 0.5 < cos < 0.9999, cos


def test_sft_micro_batching_same_params_after_steps(tiny):
    from agentworld_rl.sft import sft_warm_start
    demos = _demos(tiny)
    a, b = copy.deepcopy(tiny[0]), copy.deepcopy(tiny[0])
    la = sft_warm_start(a, tiny[1], demos, steps=2, lr=1e-3, batch_size=4, micro_batch_size=0)
    lb = sft_warm_start(b, tiny[1], demos, steps=2, lr=1e-3, batch_size=4, micro_batch_size=1)
    assert la == pytest.approx(lb, rel=1e-5)
    changed = 0
    for (n, p), q, p0 in zip(a.named_parameters(), b.parameters(), tiny[0].parameters()):
        assert torch.allclose(p, q, atol=1e-5), n
        changed += int(not torch.equal(p, p0))
    assert changed > 0


def test_bf16_autocast_logprobs_and_sft_run_on_cpu(tiny):
    from agentworld_rl.sft import sft_warm_start
    model = copy.deepcopy(tiny[0])
    ids, att = _batch(model.config.vocab_size)
    with torch.no_grad():
        full = _full_token_logprobs(model, ids, att)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lp = token_logprobs(model, ids, att, chunk_size=8)
    assert lp.dtype == torch.float32 and torch.isfinite(lp).all()
    assert (lp - full).abs().max() < 0.25 and not torch.equal(lp, full)  # bf16 really ran
    losses = sft_warm_start(model, tiny[1], _demos(tiny), steps=2, lr=1e-3, batch_size=2, micro_batch_size=1,
                            autocast=lambda: torch.autocast("cpu", dtype=torch.bfloat16))
    assert all(torch.isfinite(torch.tensor(losses)))


@pytest.mark.parametrize("opts", [dict(mixed_precision="bf16", sft_steps=2, sft_micro_batch_size=1),
                                  dict(gradient_checkpointing=True, beta=0.1, logprob_chunk_size=4)],
                         ids=["bf16-autocast", "grad-checkpointing"])
def test_train_with_memory_options(tmp_path, opts):
    from accelerate.state import AcceleratorState

    from agentworld_rl.config import TrainConfig
    from agentworld_rl.trainer import train
    cfg = TrainConfig(model="tiny", torch_threads=1, env_ids=[LOOKUP], eval_split="", batch_size=2, group_size=2,
                      max_turns=2, max_new_tokens=8, steps=2, lora_r=4, output_dir=str(tmp_path / "run"),
                      progress=False, **opts)
    # Accelerate keeps mixed_precision in a process-wide singleton: reset it around this run.
    AcceleratorState._reset_state()
    try:
        train(cfg)
    finally:
        AcceleratorState._reset_state()
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    assert all(torch.isfinite(torch.tensor([r["loss"], r["grad_norm"]])).all() for r in rows)
