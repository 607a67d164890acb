"""τ²-bench envs: parity with τ²'s own evaluate_simulation, the episode protocol, splits and isolation."""

from __future__ import annotations

import json
import random
import sys
import uuid

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine.actions import format_call

pytest.importorskip("tau2", reason="needs the tau2 extra (see README: Real benchmarks)")

from agentworld_envs.external.tau2bench import tau2  # noqa: E402

SUBMIT = format_call("submit", {})


def make(domain: str, **kwargs):
    return gym.make(f"agentworld/tau2-{domain}-v0", **kwargs)


def play(env, task_id: str, calls: list[tuple[str, dict]], answer: str | None) -> float:
    env.reset(options={"task_id": task_id})
    for name, args in calls:
        _, reward, term, trunc, _ = env.step(format_call(name, args))
        if term:
            return reward
        assert not trunc
    _, reward, term, trunc, _ = env.step(format_call("submit", {"answer": answer} if answer else {}))
    assert term and not trunc
    return reward


def tau2_reward(domain: str, task, calls: list[tuple[str, dict]], answer: str | None) -> float:
    """τ²'s own path: its registered domain (databases loaded from its files), get_response per call, then
    evaluate_simulation over all checks."""
    t = tau2()
    m, sim = t["message"], t["simulation"]
    solo = domain == "telecom"
    env = t["registry"].get_env_constructor(domain)(solo_mode=solo)
    init = task.initial_state
    env.set_state(initialization_data=init.initialization_data if init else None,
                  initialization_actions=init.initialization_actions if init else None, message_history=[])
    messages = []
    reason = sim.TerminationReason.AGENT_STOP
    for i, (name, args) in enumerate(calls):
        call = m.ToolCall(id=f"c{i}", name=name, arguments=args, requestor="assistant")
        messages.append(m.AssistantMessage(role="assistant", tool_calls=[call]))
        response = env.get_response(call)
        messages.append(response)
        if name == "transfer_to_human_agents" and not response.error:
            reason = sim.TerminationReason.USER_STOP
            break
    else:
        if answer:
            messages.append(m.AssistantMessage(role="assistant", content=answer))
    run = sim.SimulationRun(id=uuid.uuid4().hex, task_id=task.id, start_time="0", end_time="0", duration=0.0,
                            termination_reason=reason, messages=messages)
    return float(t["evaluate"](simulation=run, task=task, evaluation_type=t["ALL"], solo_mode=solo, domain=domain).reward)


def stray_write(domain: str, core, gold) -> tuple[str, dict]:
    user = next((a.arguments["user_id"] for a in gold if "user_id" in a.arguments), None)
    if domain == "retail":
        user = user or next(iter(core.environment.tools.db.users))
        return "modify_user_address", {"user_id": user, "address1": "1 Stray Street", "address2": "", "city": "Nowhere",
                                       "state": "CA", "country": "USA", "zip": "00000"}
    if domain == "airline":
        user = user or next(iter(core.environment.tools.db.users))
        return "send_certificate", {"user_id": user, "amount": 100}
    return "toggle_airplane_mode", {}


def trajectories(domain: str, core, rng: random.Random) -> dict[str, tuple[list, str | None]]:
    gold = core.gold_actions()
    calls = [(a.name, dict(a.arguments)) for a in gold]
    info = core.task.evaluation_criteria.communicate_info or []
    answer = " ".join(info) or None
    env = core.environment
    out = {"gold": (calls, answer), "noop": ([], None), "gold_without_answer": (calls, None)}
    if calls:
        i = rng.randrange(len(calls))
        out["dropped"] = (calls[:i] + calls[i + 1:], answer)
        changed = list(calls)
        for j in rng.sample(range(len(calls)), len(calls)):
            name, args = changed[j]
            keys = [k for k, v in args.items() if isinstance(v, (str, int)) and not isinstance(v, bool)]
            if keys:
                v = args[keys[0]]
                changed[j] = (name, {**args, keys[0]: v + "X" if isinstance(v, str) else v + 1})
                break
        out["changed_argument"] = (changed, answer)

        def is_read(name: str) -> bool:
            for kit in (env.tools, env.user_tools):
                if kit is not None and kit.has_tool(name):
                    return str(getattr(kit.tool_type(name), "value", "")) == "read"
            return False

        out["reads_only"] = ([c for c in calls if is_read(c[0])], answer)
    # First, so that it runs even when the gold trajectory ends with a transfer (which ends the episode).
    out["stray_write"] = ([stray_write(domain, core, gold)] + calls, answer)
    return out


def _parity(domain: str, n: int, seed: int):
    env = make(domain)
    core = env.unwrapped
    rng = random.Random(f"{domain}:{seed}")
    rewards = []
    for task_id in rng.sample(core.task_ids, n):
        env.reset(options={"task_id": task_id})
        for name, (calls, answer) in trajectories(domain, core, rng).items():
            ours = play(env, task_id, calls, answer)
            theirs = tau2_reward(domain, core.task, calls, answer)
            assert ours == theirs, (domain, task_id, name, ours, theirs)
            rewards.append((name, ours))
            if name == "gold":
                assert ours == 1.0, task_id
    assert any(r == 0.0 for name, r in rewards if name != "noop")   # the perturbations are not vacuous
    env.close()


@pytest.mark.parametrize("domain", ["telecom", "retail"])
def test_parity_with_tau2_evaluate_simulation(domain):
    _parity(domain, 2 if domain == "telecom" else 1, 0)


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["telecom", "retail", "airline"])
def test_parity_with_tau2_evaluate_simulation_more_tasks(domain):
    # Each trajectory is scored twice (here and by τ²'s own path): ~2 s per airline score on a quiet 2-core box.
    _parity(domain, 3 if domain == "telecom" else 2, 1)


def test_episode_protocol_calls_text_errors_and_submit():
    env = make("retail")
    obs, info = env.reset(options={"task_id": "0"})
    core = env.unwrapped
    assert "<policy>" in obs and "Yusuf Rossi" in obs and info["observation_role"] == "user"
    names = [t["function"]["name"] for t in info["tools"]]
    assert "find_user_id_by_name_zip" in names and names[-1] == "submit"
    # a tool error is an observation; the call is recorded with its result
    obs, reward, term, trunc, info = env.step(format_call("get_order_details", {"order_id": "#nope"}))
    assert (reward, term, trunc) == (0.0, False, False) and info["error"] == "tool_error" and obs.startswith("Error")
    obs, reward, term, trunc, info = env.step(format_call("no_such_tool", {}))
    assert info["error"] == "unknown_tool" and not term
    # text is a message to the customer: recorded, answered by a note in the user role
    obs, _, term, _, info = env.step("Let me look into that for you.")
    assert info["observation_role"] == "user" and not term and "No customer" in obs
    kinds = [(type(m).__name__, m.content if m.content else None) for m in core.messages]
    assert ("AssistantMessage", "Let me look into that for you.") in kinds
    assert sum(k == "ToolMessage" for k, _ in kinds) == 2
    obs, reward, term, trunc, info = env.step(format_call("submit", {"answer": "Goodbye"}))
    assert term and not trunc and core.messages[-1].content == "Goodbye"
    assert {c["type"] for c in info["checks"]} <= {"state", "answer"} and info["score"] == reward
    assert json.loads(obs)["submitted"] is True


def test_transfer_to_human_agents_ends_the_episode():
    env = make("airline")
    env.reset(options={"task_id": env.unwrapped.task_ids[0]})
    _, reward, term, trunc, info = env.step(format_call("transfer_to_human_agents", {"summary": "needs a human"}))
    assert term and not trunc and "checks" in info


def test_telecom_runs_in_solo_mode_with_the_users_device_tools():
    env = make("telecom")
    obs, info = env.reset(seed=0)
    core = env.unwrapped
    assert core.solo_mode and "<ticket>" in obs and "submit" in obs
    names = {t["function"]["name"] for t in info["tools"]}
    assert {"toggle_airplane_mode", "check_status_bar"} <= names      # the customer's device
    assert {"get_customer_by_phone"} <= names                          # the agent's own tools
    assert len(core.task_ids) == 114


def test_splits_are_taus_own():
    t = tau2()
    for domain in ("retail", "airline", "telecom"):
        splits = t["domains"][domain]["env"].get_tasks_split()
        env = make(domain)
        assert env.unwrapped.split_task_ids("train") == [i for i in env.unwrapped.task_ids if i in set(splits["train"])]
        test = make(domain, split="test").unwrapped.task_ids
        assert set(test) == set(splits["test"]) and not set(test) & set(splits["train"])
    with pytest.raises(ValueError, match="no task split"):
        make("retail", split="nope")


def test_trainer_task_pairs_take_the_train_split_and_bfcl_has_none():
    from agentworld_rl.errors import TrainError
    from agentworld_rl.tasks import task_pairs

    pairs = task_pairs(["agentworld/tau2-airline-v0"], max_turns=60)
    train = set(tau2()["domains"]["airline"]["env"].get_tasks_split()["train"])
    assert pairs and {p["task_id"] for p in pairs} == train
    held = task_pairs(["agentworld/tau2-airline-v0"], max_turns=60, task_split="test")
    assert not {p["task_id"] for p in held} & train
    pytest.importorskip("bfcl_eval")
    with pytest.raises(TrainError, match="no 'train' split"):
        task_pairs(["agentworld/bfcl-multi-turn-base-v0"])


def test_databases_come_from_the_parsed_cache_and_episodes_are_isolated(monkeypatch):
    from agentworld_envs.external import tau2bench

    env = make("retail")
    env.reset(options={"task_id": "0"})
    from tau2.domains.retail.data_model import RetailDB

    def no_file_reads(*args, **kwargs):
        raise AssertionError("a database was read from its file")

    monkeypatch.setattr(RetailDB, "load", classmethod(no_file_reads))
    core = env.unwrapped
    before = core.environment.get_db_hash()
    user = next(iter(core.environment.tools.db.users))
    env.step(format_call("modify_user_address", {"user_id": user, "address1": "x", "address2": "", "city": "c",
                                                 "state": "s", "country": "USA", "zip": "1"}))
    assert core.environment.get_db_hash() != before
    other = make("retail")
    other.reset(options={"task_id": "0"})
    assert other.unwrapped.environment.get_db_hash() == before
    env.reset(options={"task_id": "0"})
    assert core.environment.get_db_hash() == before
    _, reward, *_ = env.step(SUBMIT)   # the evaluator's environments come from the cache too
    assert tau2bench.cached_domain("retail") == "agentworld_cached_retail"


def test_litellm_stand_in_does_not_leak():
    code = ("import sys, gymnasium as gym, agentworld_envs\n"
            "gym.make('agentworld/tau2-retail-v0')\n"
            "try:\n    import litellm\nexcept ImportError:\n    litellm = None\n"
            "print('real' if litellm is not None and hasattr(litellm, '__file__') else 'absent')\n")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    try:
        import importlib.util
        has_litellm = importlib.util.find_spec("litellm") is not None
    except ValueError:
        has_litellm = False
    assert out.stdout.strip() == ("real" if has_litellm else "absent")


def test_check_env_and_determinism():
    from gymnasium.utils.env_checker import check_env

    env = make("telecom")
    check_env(env.unwrapped, skip_render_check=False)
    runs = []
    for _ in range(2):
        obs, info = env.reset(seed=7)
        trace = [obs, info["task_id"]]
        for action in env.unwrapped.solution_actions():
            obs, reward, term, trunc, info = env.step(action)
            trace.append((obs, reward, term, trunc))
        runs.append(trace)
    assert runs[0] == runs[1] and runs[0][-1][1] == 1.0
