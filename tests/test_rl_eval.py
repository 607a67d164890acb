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
