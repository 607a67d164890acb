"""Evaluation suites, their intervals and sharding."""

from __future__ import annotations

import json

import pytest

import agentworld_rl.toy_envs  # noqa: F401  (registers the toy env ids)
from agentworld_rl.config import TrainConfig
from agentworld_rl.distributed import Dist
from agentworld_rl.errors import TrainError
from agentworld_rl.evaluate import evaluate, gain
from agentworld_rl.stats import paired_gain, wilson
from agentworld_rl.suites import EvalSuite, build_suites

pytestmark = pytest.mark.usefixtures("private_cache")

LOOKUP = "agentworld_rl/toy-lookup-v0"


def test_wilson_interval_values():
    assert wilson(0, 48) == pytest.approx((0.0, 0.0741), abs=1e-4)
    assert wilson(3, 48) == pytest.approx((0.0215, 0.1684), abs=1e-4)
    assert wilson(48, 48)[1] == pytest.approx(1.0) and wilson(48, 48)[0] == pytest.approx(0.9259, abs=1e-4)
    lo, hi = wilson(10, 20)
    assert lo < 0.5 < hi and hi - lo == pytest.approx(2 * (0.5 - lo))


def test_paired_gain():
    g, lo, hi = paired_gain([0] * 40 + [1] * 8, [0] * 30 + [1] * 18)
    assert g == pytest.approx(10 / 48) and lo > 0  # ten tasks gained, none lost: outside zero
    g, lo, hi = paired_gain([1, 0, 1, 0], [0, 1, 1, 0])
    assert g == 0 and lo < 0 < hi
    g, lo, hi = paired_gain([0] * 10, [0] * 10)  # nothing moved: still an interval, not a point
    assert g == 0 and lo < 0 < hi
    with pytest.raises(ValueError):
        paired_gain([0], [0, 1])


def lookup_suite(cfg) -> EvalSuite:
    """A second suite, with its own gym.make arguments (a test stand-in for an external benchmark)."""
    pairs = [{"env_id": LOOKUP, "task_id": t} for t in ("find-gamma", "find-delta")]
    return EvalSuite("lookup-3-turns", pairs, env_kwargs={"max_turns": 3})


def test_suites_by_name_and_by_module_function():
    cfg = TrainConfig(eval_env_ids=[LOOKUP], eval_split="", eval_suites=["held-out", f"{__name__}:lookup_suite"])
    suites = build_suites(cfg)
    assert [s.name for s in suites] == ["held-out", "lookup-3-turns"]
    assert len(suites[0].pairs) == 4 and suites[1].env_kwargs == {"max_turns": 3}
    with pytest.raises(TrainError, match="unknown evaluation suite 'nope'"):
        build_suites(TrainConfig(eval_suites=["nope"]))
    with pytest.raises(TrainError, match="cannot load"):
        build_suites(TrainConfig(eval_suites=["no.such.module:fn"]))
    assert build_suites(TrainConfig(eval_split="", eval_suites=["held-out"])) == []  # nothing to evaluate


class _ShardDist(Dist):
    """Rank ``rank`` of a fake two-process group whose other rank's records are given."""

    def __init__(self, rank: int, other=None):
        super().__init__(rank=rank, world=2)
        self.other, self.mine = other, None

    def gather(self, obj):
        self.mine = obj
        return [obj, self.other] if self.rank == 0 else [self.other, obj]


def test_sharded_evaluation_equals_one_process(tmp_path):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from agentworld_rl.rollout import RolloutEngine
    from agentworld_rl.tiny_model import build_tiny_chat_model
    from agentworld_rl.vector_env import SlotVectorEnv
    path = build_tiny_chat_model(tmp_path / "m")
    model, tok = AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)
    pairs = [{"env_id": LOOKUP, "task_id": t} for t in ("find-alpha", "find-beta", "find-gamma", "find-delta")] * 2
    vec = SlotVectorEnv(8, {"max_turns": 2})
    try:
        engine = RolloutEngine(model, tok, vec, max_new_tokens=6)
        whole = evaluate(engine, pairs, seed=3)
        r1 = _ShardDist(1, other=[])
        evaluate(engine, pairs, seed=3, dist=r1)
        sharded = evaluate(engine, pairs, seed=3, dist=_ShardDist(0, other=r1.mine))
    finally:
        vec.close()
    assert whole["episodes"] == sharded["episodes"] == 8
    assert json.dumps(whole["tasks"]) == json.dumps(sharded["tasks"])
    assert whole["per_env"] == sharded["per_env"] and whole["ci95"] == sharded["ci95"]
    assert gain(whole, sharded)[0] == 0.0


def test_a_second_suite_is_one_more_report_row(tmp_path):
    from agentworld_rl.trainer import train
    cfg = TrainConfig(model="tiny", torch_threads=1, env_ids=[LOOKUP], eval_env_ids=[LOOKUP], eval_split="",
                      eval_suites=["held-out", f"{__name__}:lookup_suite"], batch_size=1, group_size=2, max_turns=2,
                      max_new_tokens=6, steps=1, output_dir=str(tmp_path / "run"), progress=False)
    train(cfg)
    after = json.loads((tmp_path / "run" / "eval_after.json").read_text())
    assert sorted(after) == ["held-out", "lookup-3-turns"]
    assert after["lookup-3-turns"]["episodes"] == 2 and after["held-out"]["episodes"] == 4
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| held-out | 4 |" in report and "| lookup-3-turns | 2 |" in report and "95 % CI" in report


def test_task_pairs_built_in_workers_equal_one_process():
    import agentworld_envs  # noqa: F401  (registers the catalogue ids here; the workers import it themselves)
    from agentworld_rl.tasks import task_pairs
    ids = ["agentworld_rl/toy-bandit-v0", "agentworld/retail-v0", LOOKUP, "agentworld_rl/toy-letters-v0"]
    args = dict(max_turns=3, max_tasks_per_env=3, max_solution_steps=3, import_modules=["agentworld_rl.toy_envs"])
    one = task_pairs(ids, **args)
    assert task_pairs(ids, jobs=2, **args) == one
    assert {p["env_id"] for p in one} == set(ids)
    # max_pairs: envs are taken in order until there are enough pairs; max_envs still caps them
    first_two = [p for p in one if p["env_id"] in ids[:2]]
    assert task_pairs(ids, jobs=2, max_pairs=len(first_two) + 1, **args) == [p for p in one if p["env_id"] in ids[:3]]
    assert task_pairs(ids, jobs=2, max_pairs=len(first_two), **args) == first_two
    assert task_pairs(ids, jobs=2, max_envs=2, **args) == [p for p in one if p["env_id"] in ids[:2]]


def test_held_out_suite_fills_max_eval_tasks_from_more_envs(monkeypatch):
    from agentworld_rl import suites

    rows = {"e1": ["a"], "e2": ["a", "b"], "e3": ["a"], "e4": ["a", "b"], "e5": ["a", "b"]}
    monkeypatch.setattr("agentworld_rl.tasks.select_env_ids", lambda *a, **k: list(rows))
    monkeypatch.setattr("agentworld_rl.tasks.env_tasks", lambda e, *a, **k: rows[e])
    cfg = TrainConfig(model="tiny", eval_split="arena", max_envs=2, max_tasks_per_env=2, max_eval_tasks=5)
    pairs = suites.held_out(cfg).pairs
    assert len(pairs) == 5 and {p["env_id"] for p in pairs} <= {"e1", "e2", "e3", "e4"}
    assert suites.held_out(TrainConfig(model="tiny", eval_split="arena", max_eval_tasks=0)).pairs == []


class _Engine:
    def __init__(self, generator):
        self.generator = generator

    @property
    def model(self):
        return self.generator.model

    @model.setter
    def model(self, model):
        self.generator.sync_weights(model)


def test_evaluation_with_merged_adapters_is_the_same_policy(tmp_path):
    import types

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from agentworld_rl.generation import HFGenerator
    from agentworld_rl.tiny_model import build_tiny_chat_model
    from agentworld_rl.trainer import _adapters_merged
    model = AutoModelForCausalLM.from_pretrained(build_tiny_chat_model(tmp_path / "m"))
    policy = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)  # adapters that change the function, as after training
    engine = _Engine(HFGenerator(policy, tokenizer=types.SimpleNamespace(pad_token_id=0, eos_token_id=1)))
    run = types.SimpleNamespace(engine=engine, accelerator=types.SimpleNamespace(state=types.SimpleNamespace()))
    ids = torch.randint(3, 200, (2, 12))
    with torch.no_grad():
        expected = policy(ids).logits
        with policy.disable_adapter():
            base = policy(ids).logits
        with _adapters_merged(run):
            assert engine.model is not policy and not any("lora" in n for n, _ in engine.model.named_parameters())
            merged = engine.model(ids).logits
    assert engine.model is policy  # restored: training goes on with the adapters
    assert not torch.allclose(base, expected, atol=1e-3)
    assert torch.allclose(merged, expected, atol=1e-5)
