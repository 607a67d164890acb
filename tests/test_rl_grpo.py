"""GRPO maths against hand-computed numbers."""

import math

import pytest
import torch

from agentworld_rl.grpo import group_advantages, grpo_loss


def test_advantages_hand_computed():
    # group 0: rewards 1,0,0,1 -> mean .5, unbiased std sqrt(1/3); group 1: all equal.
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.3, 0.3, 0.3, 0.3])
    adv, zero_var = group_advantages(r, group_size=4, scale_rewards=False)
    assert adv.tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0], abs=1e-6)
    assert zero_var.tolist() == [False, True]
    adv, _ = group_advantages(r, group_size=4, scale_rewards=True, eps=0.0)
    s = math.sqrt(1 / 3)
    assert adv[:4].tolist() == pytest.approx([0.5 / s, -0.5 / s, -0.5 / s, 0.5 / s], rel=1e-5)
    assert adv[4:].abs().max().item() == 0.0  # zero-variance group: no signal, no NaN


def _example():
    # two sequences, three token slots; seq 0 trains tokens 0,1; seq 1 trains token 2 only.
    new = torch.tensor([[math.log(0.5), math.log(0.3), 0.0], [0.0, 0.0, math.log(0.9)]])
    old = torch.tensor([[math.log(0.4), math.log(0.3), 0.0], [0.0, 0.0, math.log(0.6)]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    adv = torch.tensor([2.0, -1.0])
    return new, old, mask, adv


def test_loss_sequence_token_drgrpo_hand_computed():
    new, old, mask, adv = _example()
    # ratios: seq0 1.25 (clipped to 1.2 for A>0 -> min(2.5, 2.4)=2.4), 1.0 -> 2.0; seq1 1.5, A<0:
    # min(-1.5, -1.2) = -1.5. Per-token losses: seq0 [-2.4, -2.0], seq1 [1.5].
    loss, st = grpo_loss(new, old, adv, mask, loss_type="sequence")
    assert loss.item() == pytest.approx(((-2.4 - 2.0) / 2 + 1.5) / 2, rel=1e-5)
    loss, _ = grpo_loss(new, old, adv, mask, loss_type="token")
    assert loss.item() == pytest.approx((-2.4 - 2.0 + 1.5) / 3, rel=1e-5)
    loss, _ = grpo_loss(new, old, adv, mask, loss_type="dr_grpo", max_tokens=10)
    assert loss.item() == pytest.approx((-2.4 - 2.0 + 1.5) / (2 * 10), rel=1e-5)
    assert st["clip_sum"] == 1.0  # only seq0 token0 is clipped (seq1's ratio 1.5 with A<0 is not)


def test_masked_tokens_get_no_gradient():
    new, old, mask, adv = _example()
    new = new.clone().requires_grad_(True)
    grpo_loss(new, old, adv, mask, loss_type="token")[0].backward()
    assert (new.grad[mask == 0] == 0).all()
    assert new.grad[0, 0] == 0  # clipped token: gradient stops
    assert new.grad[0, 1] != 0 and new.grad[1, 2] != 0


def test_kl_k3_penalty():
    new, old, mask, adv = _example()
    ref = new - 0.1  # d = ref - new = -0.1 everywhere
    k3 = math.exp(-0.1) + 0.1 - 1
    base, _ = grpo_loss(new, old, adv, mask, loss_type="token")
    with_kl, st = grpo_loss(new, old, adv, mask, ref_lp=ref, beta=0.5, loss_type="token")
    assert (with_kl - base).item() == pytest.approx(0.5 * k3, rel=1e-4)
    assert st["kl_sum"] == pytest.approx(3 * k3, rel=1e-4)


@pytest.mark.parametrize("loss_type", ["sequence", "token", "dr_grpo"])
def test_micro_batches_sum_to_full_batch(loss_type):
    torch.manual_seed(0)
    new = torch.randn(6, 5).log_softmax(-1)
    old = new + 0.05 * torch.randn(6, 5)
    mask = (torch.rand(6, 5) > 0.3).float()
    mask[:, 0] = 1
    adv = torch.randn(6)
    kw = dict(loss_type=loss_type, num_sequences=6, num_tokens=mask.sum(), max_tokens=5)
    full, _ = grpo_loss(new, old, adv, mask, **kw)
    parts = sum(grpo_loss(new[s], old[s], adv[s], mask[s], **kw)[0] for s in (slice(0, 2), slice(2, 6)))
    assert parts.item() == pytest.approx(full.item(), rel=1e-6, abs=1e-7)


def test_unknown_loss_type():
    new, old, mask, adv = _example()
    with pytest.raises(ValueError):
        grpo_loss(new, old, adv, mask, loss_type="nope")
