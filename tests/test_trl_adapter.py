"""agentworld envs as TRL GRPOTrainer(environment_factory=...) environments."""

from __future__ import annotations

import inspect
import json
import os

import gymnasium as gym
import pytest
import torch

from agentworld_envs.engine.actions import format_call, parse_action
from agentworld_envs.serving.trl_adapter import (AgentWorldTRLEnv, agentworld_env_class, agentworld_reward,
                                         environment_factories, task_rows, without_env_reward)

torch.set_num_threads(1)
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
RETAIL = "agentworld/retail-v0"


def _tool_methods(instance):
    """What TRL exposes: public functions of the class other than reset/get_reward."""
    return {name: getattr(instance, name) for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")}


def test_tool_methods_have_schemas_trl_can_build(toy_env_id):
    from transformers.utils import get_json_schema

    env = agentworld_env_class(toy_env_id)()
    methods = _tool_methods(env)
    gym_tools = {t["function"]["name"]: t["function"] for t in gym.make(toy_env_id).unwrapped.tools}
    assert set(methods) == set(gym_tools)
    for name, method in methods.items():
        schema = get_json_schema(method)["function"]
        params = gym_tools[name]["parameters"]
        assert schema["name"] == name and schema["description"] == gym_tools[name]["description"]
        assert set(schema["parameters"]["properties"]) == set(params.get("properties", {}))
        assert set(schema["parameters"].get("required", [])) == set(params.get("required", []))
    search = get_json_schema(methods["search_books"])["function"]["parameters"]["properties"]
    assert search["status"] == {"type": "string", "enum": ["available", "lent", "lost"], "description": "The status argument."}
    assert search["limit"]["type"] == "integer" and '"minimum":1' in search["limit"]["description"]


def test_reset_selects_task_and_calls_match_gym(toy_env_id):
    env = agentworld_env_class(toy_env_id)()
    row = task_rows([toy_env_id])[0]
    assert row["environment"] == toy_env_id and row["prompt"][-1] == {"role": "user", "content": ""}
    obs = env.reset(**row)
    assert env.task_id == row["task_id"] and "# Task" in obs
    ref = gym.make(toy_env_id).unwrapped
    assert ref.reset(options={"task_id": row["task_id"]})[0] == obs
    # identical observations, errors included
    for name, args in [("count_books", {"status": "lost"}), ("get_member", {"member_id": "one"}), ("get_member", {})]:
        assert getattr(env, name)(**args) == ref.step(format_call(name, args))[0]
    assert [c["error"] for c in env.calls] == [None, "invalid_arguments", "invalid_arguments"]
    assert env.get_reward() == 0.0  # not submitted yet
    for action in ref.solution_actions():
        call = parse_action(action)
        out = json.loads(getattr(env, call.name)(**call.arguments))
    assert out["submitted"] and env.get_reward() == 1.0 and agentworld_reward([env, object()]) == [1.0, None]
    # the prompt already holds the instruction -> nothing to append
    prompt = [{"role": "user", "content": "Lend book 2 to member 1."}]
    assert env.reset(task_id="lend-1", prompt=prompt) is None and env.get_reward() == 0.0
    with pytest.raises(ValueError, match="this environment is"):
        env.reset(env_id=RETAIL, task_id="lend-1")


def test_factories_and_reward_helpers(toy_env_id):
    factories = environment_factories([toy_env_id], tools={toy_env_id: ["get_member"]})
    env = factories[toy_env_id]()
    assert set(_tool_methods(env)) == {"get_member", "submit"}
    hidden = without_env_reward(factories)[toy_env_id]
    assert "get_reward" not in dict(inspect.getmembers(hidden, predicate=inspect.isfunction))
    with pytest.raises(KeyError):
        agentworld_env_class(toy_env_id, tools=("no_such_tool",))
    with pytest.raises(TypeError):
        AgentWorldTRLEnv()


# ---------------------------------------------------------------------------- a real GRPO run


def _solutions(env_id, task_ids):
    env = gym.make(env_id).unwrapped
    out = {}
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        out[env.task["instruction"]] = [parse_action(a) for a in env.solution_actions()]
    env.close()
    return out


@pytest.mark.slow
def test_grpo_trainer_runs_over_two_envs(toy_env_id, tmp_path):
    """Three GRPO steps with the tiny model over retail-v0 and the toy env.

    In each group, the first completion replays the reference solution (scripted token ids, so tool
    calls really flow through TRL's parser and tool loop into our env) and the second is sampled from
    the model; TRL scores both with the env's verifier.
    """
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    try:
        from agentworld_rl.tiny_model import build_tiny_chat_model
    except ImportError:  # pragma: no cover - the trainer package ships it
        pytest.skip("agentworld_rl.tiny_model is not available")

    retail = gym.make(RETAIL).unwrapped
    short = []  # retail tasks with 1-2 tool calls before submit keep prompts and completions small
    for task_id in retail.task_ids:
        retail.reset(options={"task_id": task_id})
        if len(retail.solution_actions()) <= 3:
            short.append(task_id)
        if len(short) == 2:
            break
    solutions = {**_solutions(RETAIL, short), **_solutions(toy_env_id, ["lend-1"])}
    retail_tools = sorted({c.name for i, calls in solutions.items() for c in calls if c.name != "submit"
                           and c.name in retail.bundle.tools})
    factories = environment_factories([RETAIL, toy_env_id], tools={RETAIL: retail_tools})

    instances = {env_id: [] for env_id in factories}
    episodes = []  # (env_id, task_id, tool calls, reward) of every finished rollout

    def factory(cls):
        class Recorded(cls):
            def reset(self, **row):
                obs = super().reset(**row)
                self._log = (self.env_id, self.task_id)
                return obs

            def get_reward(self):
                reward = super().get_reward()
                episodes.append((*self._log, self.calls, reward))
                return reward

        Recorded.__name__ = cls.__name__

        def make():
            instances[cls.env_id].append(Recorded())
            return instances[cls.env_id][-1]
        return make

    toy_row, = task_rows([toy_env_id], task_ids={toy_env_id: ["lend-1"]})
    retail_rows = task_rows([RETAIL], task_ids={RETAIL: short})
    # 3 steps x 2 prompts; each generation batch mixes both environments
    rows = [toy_row, retail_rows[0], toy_row, retail_rows[1], toy_row, retail_rows[0]]

    model_dir = build_tiny_chat_model(tmp_path / "tiny", max_position_embeddings=4096,
                                      extra_corpus=list(solutions))
    tokenizer = PreTrainedTokenizerFast.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)

    class ScriptedGRPOTrainer(GRPOTrainer):
        """Even-indexed first turns replay the reference solution; odd ones are sampled from the model."""

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            # the conversation after the system turn (tool results come back as user turns)
            texts = [tokenizer.decode(ids).split("<|im_start|>user", 1)[1] for ids in prompt_ids]
            first_turn = [t.count("<tool_response>") == 0 for t in texts]
            sampled = [i for i, ids in enumerate(prompt_ids) if first_turn[i] and i % 2 == 1]
            out: list = [None] * len(prompt_ids)
            if sampled:
                ids, _ = super()._generate_single_turn([prompt_ids[i] for i in sampled], images, multimodal_fields, 1)
                for i, c in zip(sampled, ids):
                    out[i] = c
            for i, text in enumerate(texts):
                if out[i] is not None:
                    continue
                calls = next(c for instruction, c in solutions.items() if instruction in text)
                k = text.count("<tool_response>")
                reply = ("Done." if k >= len(calls) else
                         "<tool_call>\n" + json.dumps({"name": calls[k].name, "arguments": calls[k].arguments}) + "\n</tool_call>")
                out[i] = tokenizer(reply + "<|im_end|>", add_special_tokens=False)["input_ids"]
            return out, None

    config = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=384, learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to=[],
        shuffle_dataset=False, use_cpu=True, seed=0, temperature=1.0, max_tool_calling_iterations=6,
        dataloader_num_workers=0,
    )
    trainer = ScriptedGRPOTrainer(
        model=model, processing_class=tokenizer, args=config, train_dataset=Dataset.from_list(rows),
        environment_factory={env_id: factory(cls) for env_id, cls in factories.items()},
    )
    trainer.train()

    assert trainer.state.global_step == 3
    # every row's task was reset in an instance of the right environment
    seen = {(e, t) for e, t, _, _ in episodes}
    assert seen == {(r["env_id"], r["task_id"]) for r in rows}
    assert all(isinstance(i, factories[env_id]) for env_id, lst in instances.items() for i in lst)
    # tool calls reached both envs, writes included; scripted rollouts solved their tasks
    calls = {env_id: sum(len(c) for e, _, c, _ in episodes if e == env_id) for env_id in factories}
    assert calls[RETAIL] >= 4 and calls[toy_env_id] >= 4, calls
    assert any(c["tool"] == "lend_book" and c["error"] is None for _, t, cs, _ in episodes if t == "lend-1" for c in cs)
    solved = [(e, t) for e, t, _, r in episodes if r == 1.0]
    assert {(e, t) for e, t in solved} == seen
    assert len(episodes) == 2 * len(rows)  # one reward per rollout
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 3 and all(h["reward"] > 0 for h in logged)
