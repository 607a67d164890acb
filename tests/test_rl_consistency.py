"""Rollout log-probs equal a fresh forward pass, turn by turn, on each prefill path.

The rollout backend keeps its KV cache across turns and prefills only what is new; a context
it builds wrongly (a token dropped or replaced, positions shifted, padding attended) shows up as
sampler log-probs that differ from the trainer's forward over the recorded tokens. A model that
ends its turns at different lengths (a short SFT on the lookup env's reference calls) is used so
rows finish with EOS at different columns, others are cut at max_new_tokens, and tool results
of different lengths follow: the layouts that broke turn >= 2 before.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
import torch

import agentworld_rl.toy_envs  # noqa: F401  (registers the toy env ids)
from agentworld_rl.grpo import token_logprobs
from agentworld_rl.rollout import RolloutEngine
from agentworld_rl.sft import collate, reference_episodes, sft_warm_start
from agentworld_rl.tiny_model import build_tiny_chat_model
from agentworld_rl.vector_env import SlotVectorEnv

LOOKUP = "agentworld_rl/toy-lookup-v0"
BANDIT = "agentworld_rl/toy-bandit-v0"
ECHO = "agentworld_test/echo-v0"
TASKS = [{"env_id": LOOKUP, "task_id": t} for t in ("find-alpha", "find-beta", "find-gamma", "find-delta")]


class EchoEnv(gym.Env):
    """Never ends before its turn limit; each observation's length depends on the action, so rows of
    a batch get tool results of different lengths (the new tokens of a turn are left padded)."""

    task_ids = ["echo"]

    def __init__(self, max_turns: int = 4):
        self.observation_space = self.action_space = gym.spaces.Text(1 << 16)
        self.max_turns, self.turn = max_turns, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
            "type": "object", "properties": {"key": {"type": "string"}}}}}]
        return "Look up the key alpha.", {"tools": tools, "task_id": "echo"}

    def step(self, action):
        self.turn += 1
        words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
        obs = json.dumps({"echo": words[: sum(map(ord, action)) % len(words)]})
        return obs, 0.0, False, self.turn >= self.max_turns, {"tool_name": "lookup"}


if ECHO not in gym.registry:
    gym.register(ECHO, entry_point=EchoEnv)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    path = build_tiny_chat_model(tmp_path_factory.mktemp("tiny") / "m")
    model, tok = AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)
    engine = RolloutEngine(model, tok, vec_env=None)
    demos = reference_episodes(engine, TASKS, {"max_turns": 4})
    sft_warm_start(model, tok, demos, steps=25, lr=3e-3, batch_size=4, seed=0)
    return model, tok


def turn_spans(mask: list[int]) -> list[range]:
    spans, start = [], None
    for j, m in enumerate(mask + [0]):
        if m and start is None:
            start = j
        elif not m and start is not None:
            spans.append(range(start, j))
            start = None
    return spans


def per_turn_error(model, tok, episodes) -> list[list[float]]:
    """Largest |sampler log-prob - fresh forward log-prob| of each turn of each episode."""
    ids, att, mask, old = collate(episodes, tok.pad_token_id)
    with torch.no_grad():
        new = token_logprobs(model, ids, att, chunk_size=0)
    return [[float((new[i, list(s)] - old[i, list(s)]).abs().max()) for s in turn_spans(ep.mask)]
            for i, ep in enumerate(episodes)]


@pytest.mark.parametrize("prefill", ["rows", "batched"])
@pytest.mark.parametrize("greedy", [False, True], ids=["sampled", "greedy"])
def test_every_turn_matches_a_fresh_forward(tuned, prefill, greedy):
    model, tok = tuned
    vec = SlotVectorEnv(12, {"max_turns": 4}, import_modules=["agentworld_rl.toy_envs", __name__])
    try:
        engine = RolloutEngine(model, tok, vec, max_new_tokens=20, prefill=prefill)
        # Bandit rows leave the batch after turn 1; echo rows get tool results of many lengths.
        tasks = TASKS[:2] + [{"env_id": ECHO, "task_id": "echo"}, {"env_id": BANDIT, "task_id": "t1"}]
        eps = engine.collect(tasks, group_size=3, seed=11, greedy=greedy)
        errors = per_turn_error(model, tok, eps)
    finally:
        vec.close()
    assert max(ep.turns for ep in eps) >= 3, [ep.turns for ep in eps]  # really multi-turn
    ends = {tok.eos_token_id == ep.token_ids[s[-1]] for ep in eps for s in turn_spans(ep.mask)}
    if not greedy:
        assert ends == {True, False}  # some turns ended with EOS, some were cut at max_new_tokens
    echoes = {m["content"] for ep in eps for m in ep.messages if m["role"] == "tool"}
    assert len({len(e) for e in echoes}) >= 2  # observations of different lengths
    worst = max(e for row in errors for e in row)
    assert worst < 1e-4, errors


def test_sampling_depends_on_the_seed_only(tuned):
    """The same collect seed gives the same samples whatever the global RNG holds; another seed differs."""
    model, tok = tuned
    vec = SlotVectorEnv(6, {"max_turns": 3})
    try:
        engine = RolloutEngine(model, tok, vec, max_new_tokens=12)
        torch.manual_seed(1)
        a = engine.collect(TASKS[:2], group_size=3, seed=5)
        torch.manual_seed(999)
        torch.rand(17)
        b = engine.collect(TASKS[:2], group_size=3, seed=5)
        c = engine.collect(TASKS[:2], group_size=3, seed=6)
        state = torch.get_rng_state()
        engine.collect(TASKS[:2], group_size=3, seed=7)
        assert torch.equal(state, torch.get_rng_state())  # the caller's stream is left untouched
    finally:
        vec.close()
    assert [e.token_ids for e in a] == [e.token_ids for e in b]
    assert [e.token_ids for e in a] != [e.token_ids for e in c]
    assert len({tuple(e.token_ids) for e in a}) > 1  # group members sample differently
