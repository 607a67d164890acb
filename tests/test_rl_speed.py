"""Speed features of the trainer that must not change results: the in-place KV cache and thread picking."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicCache

from agentworld_rl.kvcache import GrowingCache
from agentworld_rl.threads import ThreadPicker, pick_threads, usable_cores
from agentworld_rl.tiny_model import build_tiny_chat_model

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(build_tiny_chat_model(tmp_path_factory.mktemp("tiny") / "m")).eval()


def _run(model, cache_cls):
    """Prefill, decode, drop a row, append a ragged chunk with a padding hole, repeat a row: logits at each stage."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, model.config.vocab_size, (3, 20), generator=g)
    att = torch.ones_like(ids)
    att[0, :4] = 0  # left padding
    cache = cache_cls()
    outs = []
    with torch.no_grad():
        pos = (att.cumsum(1) - 1).clamp(min=0)
        outs.append(model(input_ids=ids, attention_mask=att, position_ids=pos, past_key_values=cache).logits[:, -1])
        for _ in range(3):  # decode appends one position at a time
            nxt = outs[-1].argmax(-1, keepdim=True)
            att = torch.cat([att, torch.ones_like(nxt)], 1)
            pos = att.sum(1, keepdim=True) - 1
            outs.append(model(input_ids=nxt, attention_mask=att, position_ids=pos, past_key_values=cache).logits[:, -1])
        cache.batch_select_indices(torch.tensor([0, 2]))
        att = att[[0, 2]]
        new = torch.randint(5, model.config.vocab_size, (2, 6), generator=g)
        new_att = torch.ones_like(new)
        new_att[1, :2] = 0  # a hole: row 1 has fewer new tokens
        att = torch.cat([att, new_att], 1)
        pos = (att.cumsum(1) - 1)[:, -6:].clamp(min=0)
        outs.append(model(input_ids=new, attention_mask=att, position_ids=pos, past_key_values=cache).logits[:, -1])
        cache.batch_repeat_interleave(2)
        att = att.repeat_interleave(2, 0)
        nxt = outs[-1].argmax(-1, keepdim=True).repeat_interleave(2, 0)
        att = torch.cat([att, torch.ones_like(nxt)], 1)
        outs.append(model(input_ids=nxt, attention_mask=att, position_ids=att.sum(1, keepdim=True) - 1,
                          past_key_values=cache).logits[:, -1])
    return outs, cache.get_seq_length()


def test_growing_cache_gives_the_dynamic_cache_results(model):
    grown, n_grown = _run(model, GrowingCache)
    plain, n_plain = _run(model, DynamicCache)
    assert n_grown == n_plain == 30
    for a, b in zip(grown, plain):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)


def test_growing_cache_appends_without_reallocating_every_token(model):
    cache = GrowingCache()
    k = torch.zeros(1, 2, 10, 4)
    cache.update(k, k, 0)
    buf = cache.layers[0]._kbuf
    for _ in range(50):
        cache.update(torch.ones(1, 2, 1, 4), torch.ones(1, 2, 1, 4), 0)
    assert cache.layers[0]._kbuf is buf  # 50 single-token appends fit the headroom
    assert cache.get_seq_length() == 60 and cache.layers[0].keys[0, 0, 10:].eq(1).all()


def test_pick_threads_fixed_and_auto():
    before = torch.get_num_threads()
    try:
        assert pick_threads(1) == 1
        assert pick_threads(-1) in {1, usable_cores()}
        assert pick_threads(0) == torch.get_num_threads()  # 0 leaves torch's setting alone
    finally:
        torch.set_num_threads(before)


def test_thread_picker_rechecks_at_most_every_interval(monkeypatch):
    import agentworld_rl.threads as threads_mod
    calls = []
    monkeypatch.setattr(threads_mod, "pick_threads", lambda setting: calls.append(setting) or 1)
    picker = ThreadPicker(-1, every_s=3600)
    picker.maybe()
    picker.maybe()  # within the interval: no second probe
    assert calls == [-1]
    picker.now()
    assert calls == [-1, -1]
    ThreadPicker(1).maybe()  # fixed settings never probe
    assert calls == [-1, -1]
