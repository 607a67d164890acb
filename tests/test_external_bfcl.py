"""BFCL v4 multi-turn envs: parity with BFCL's own checker, the episode protocol, safety and isolation."""

from __future__ import annotations

import builtins
import json
import random
import sys
import uuid

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine.actions import format_call

pytest.importorskip("bfcl_eval", reason="needs the bfcl extra (see README: Real benchmarks)")

from agentworld_envs.external.bfcl import bfcl  # noqa: E402

CATEGORIES = {"base": "multi_turn_base", "miss-func": "multi_turn_miss_func", "miss-param": "multi_turn_miss_param",
              "long-context": "multi_turn_long_context"}
SUBMIT = format_call("submit", {})
#: A state-changing call per BFCL class, for "stray write" trajectories.
STRAY_WRITES = {
    "GorillaFileSystem": ("mkdir", {"dir_name": "stray_dir"}),
    "TwitterAPI": ("post_tweet", {"content": "stray tweet"}),
    "MessageAPI": ("add_contact", {"user_name": "Stray Person"}),
    "TicketAPI": ("create_ticket", {"title": "stray ticket"}),
    "TradingBot": ("add_to_watchlist", {"stock": "ZETA"}),
    "TravelAPI": ("set_budget_limit", {"access_token": "abc", "budget_limit": 1.0}),
    "VehicleControlAPI": ("lockDoors", {"unlock": False, "door": ["driver"]}),
}
READ_PREFIXES = ("get_", "list_", "ls", "cat", "pwd", "find", "grep", "wc", "tail", "diff", "du", "display_",
                 "check_", "search_", "view_", "mean", "estimate_", "retrieve_", "compute_", "verify_")


def make(slug: str):
    return gym.make(f"agentworld/bfcl-multi-turn-{slug}-v0")


def play(env, task_id: str, turns: list[list[list[tuple[str, dict]]]]) -> tuple[float, bool, list[dict]]:
    """Play ``turns`` (per user turn, per step, the calls) then submit each turn; returns the reward."""
    env.reset(options={"task_id": task_id})
    infos = []
    reward, term, trunc = 0.0, False, False
    for turn in turns:
        for step in turn:
            obs, reward, term, trunc, info = env.step("".join(format_call(n, a) for n, a in step))
            infos.append(info)
            assert not term
            if trunc:
                return reward, False, infos
        obs, reward, term, trunc, info = env.step(SUBMIT)
        infos.append(info)
    assert term and not trunc
    return reward, True, infos


def bfcl_verdict(category: str, task_id: str, turns) -> float:
    """BFCL's own decode (``convert_to_function_call``) and ``multi_turn_checker``, in a fresh model name."""
    from agentworld_envs.external.bfcl import category_data

    b = bfcl()
    entries, answers = category_data(category)
    decoded = [[[b["to_call"]({n: a})[0] for n, a in step] for step in turn] for turn in turns]
    model = f"probe_{uuid.uuid4().hex}"
    try:
        verdict = b["checker"](decoded, answers[task_id], json.loads(json.dumps(entries[task_id])), category, model)
    finally:
        for k in [k for k in b["globals"] if k.startswith(model)]:
            del b["globals"][k]
    return 1.0 if verdict["valid"] else 0.0


def perturbations(gold: list[list[tuple[str, dict]]], classes: list[str], rng: random.Random) -> dict[str, list]:
    """Gold and perturbed trajectories, one call per step: dropped call, changed argument, stray write, reads only, none."""
    one = [[[c] for c in turn] for turn in gold]
    flat = [(t, i) for t, turn in enumerate(gold) for i in range(len(turn))]
    out = {"gold": one, "noop": [[] for _ in gold]}
    t, i = rng.choice(flat)
    out["dropped"] = [[[c] for j, c in enumerate(turn) if (u, j) != (t, i)] for u, turn in enumerate(gold)]
    changed = [list(turn) for turn in gold]
    for t, i in rng.sample(flat, len(flat)):
        name, args = changed[t][i]
        keys = [k for k, v in args.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        if keys:
            k = keys[0]
            v = args[k]
            changed[t][i] = (name, {**args, k: v + "_x" if isinstance(v, str) else v + 1})
            break
    out["changed_argument"] = [[[c] for c in turn] for turn in changed]
    stray = next((STRAY_WRITES[c] for c in classes if c in STRAY_WRITES), None)
    if stray is not None:
        out["stray_write"] = [[[c] for c in turn] + ([[stray]] if u == len(gold) - 1 else []) for u, turn in enumerate(gold)]
    out["reads_only"] = [[[c] for c in turn if c[0].startswith(READ_PREFIXES)] for turn in gold]
    return out


@pytest.mark.parametrize("slug", list(CATEGORIES))
def test_parity_with_bfcl_checker_on_gold_and_perturbed_trajectories(slug):
    env = make(slug)
    core = env.unwrapped
    category = CATEGORIES[slug]
    rng = random.Random(slug)
    ids = rng.sample(core.task_ids, 6)
    seen = {0.0: 0, 1.0: 0}
    for task_id in ids:
        env.reset(options={"task_id": task_id})
        gold, classes = core.gold_steps(), list(core.entry["involved_classes"])
        for name, turns in perturbations(gold, classes, rng).items():
            ours, complete, _ = play(env, task_id, turns)
            theirs = bfcl_verdict(category, task_id, turns) if complete else 0.0
            assert ours == theirs, (task_id, name, ours, theirs, core.verdict)
            seen[ours] += 1
            if name == "gold":
                assert ours == 1.0
            if name == "noop":
                assert ours == 0.0
    assert seen[0.0] > len(ids) and seen[1.0] >= len(ids)   # perturbations do fail, not only noop
    env.close()


@pytest.mark.parametrize("slug", list(CATEGORIES))
def test_reference_solves_and_noop_fails_every_sampled_entry(slug):
    env = make(slug)
    for task_id in random.Random(1).sample(env.unwrapped.task_ids, 10):
        env.reset(options={"task_id": task_id})
        for action in env.unwrapped.solution_actions():
            _, reward, term, trunc, _ = env.step(action)
        assert term and reward == 1.0, task_id
        env.reset(options={"task_id": task_id})
        term = False
        while not term:
            _, reward, term, trunc, _ = env.step("I cannot help with that.")   # text-only ends each turn
        assert reward == 0.0


def test_episode_protocol_user_turns_steps_and_terminal_verdict():
    env = make("base")
    obs, info = env.reset(options={"task_id": "multi_turn_base_0"})
    core = env.unwrapped
    question = core.entry["question"]
    assert obs == question[0][0]["content"] and info["observation_role"] == "user"
    assert info["user_turns"] == len(question) and info["tools"][-1]["function"]["name"] == "submit"
    # Two calls in one action: one BFCL step, recorded as BFCL call strings of the arguments as sent.
    obs, reward, term, trunc, info = env.step(format_call("pwd", {}) + format_call("cd", {"folder": "nowhere"}))
    assert (reward, term, trunc) == (0.0, False, False) and info["observation_role"] == "tool"
    assert core.results[0] == [["pwd()", "cd(folder='nowhere')"]]
    results = json.loads(obs)
    assert [r["tool"] for r in results] == ["pwd", "cd"] and info["calls"][1]["error"] == "tool_error"
    # Text ends the user turn: the next user message, in the user role, reward 0, not terminal.
    obs, reward, term, trunc, info = env.step("Done with that.")
    assert obs == question[1][0]["content"] and info["observation_role"] == "user" and info["user_turn"] == 1
    assert (reward, term, trunc) == (0.0, False, False)
    for _ in range(len(question) - 2):
        obs, reward, term, trunc, info = env.step(SUBMIT)
        assert not term and info["observation_role"] == "user"
    obs, reward, term, trunc, info = env.step(SUBMIT)
    assert term and not trunc and reward == 0.0 and info["checks"][0]["passed"] is False
    assert info["bfcl"]["valid"] is False and info["bfcl"]["error_type"].startswith("multi_turn:")
    assert env.step(SUBMIT)[4]["error"] == "episode_over"


def test_the_21st_step_of_a_turn_truncates_with_zero():
    env = make("base")
    env.reset(options={"task_id": "multi_turn_base_1"})
    limit = bfcl()["step_limit"]
    for i in range(limit):
        _, reward, term, trunc, _ = env.step(format_call("pwd", {}))
        assert not (term or trunc), i
    _, reward, term, trunc, info = env.step(format_call("pwd", {}))
    assert trunc and not term and reward == 0.0 and info["truncation"] == "bfcl_step_limit"
    # Text after 20 steps still ends the turn normally (only the 21st *step* truncates).
    env.reset(options={"task_id": "multi_turn_base_1"})
    for _ in range(limit):
        env.step(format_call("pwd", {}))
    _, _, term, trunc, info = env.step(SUBMIT)
    assert not (term or trunc) and info["observation_role"] == "user"


def test_miss_func_adds_tools_mid_episode():
    env = make("miss-func")
    core = env.unwrapped
    found = 0
    for task_id in core.task_ids[:20]:
        obs, info = env.reset(options={"task_id": task_id})
        held = {int(k): [f["name"] for f in v] for k, v in core.entry["missed_function"].items()}
        shown = {t["function"]["name"] for t in info["tools"]}
        assert not any(n in shown for names in held.values() for n in names)
        for turn in range(1, len(core.entry["question"])):
            obs, _, term, _, info = env.step(SUBMIT)
            if turn in held:
                assert "tools" in info and info["observation_role"] == "user"
                assert obs == bfcl()["added_functions_prompt"]
                now = {t["function"]["name"] for t in info["tools"]}
                assert set(held[turn]) <= now and shown <= now
                assert {t["function"]["name"] for t in core.tools} == now
                found += 1
            else:
                assert "tools" not in info
    assert found >= 20


def test_gold_call_of_a_method_offered_later_is_accepted():
    """All public methods of the entry's classes may be called, offered or not (as in BFCL)."""
    env = make("miss-func")
    core = env.unwrapped
    for task_id in core.task_ids:
        _, info = env.reset(options={"task_id": task_id})
        held = [f["name"] for v in core.entry["missed_function"].values() for f in v]
        if held:
            break
    _, _, _, _, info = env.step(format_call(held[0], {}))
    assert info["error"] != "invalid_arguments"


INJECTIONS = [
    ("ls", {"a=globals().__setitem__('PWNED',1) or 0,b": 1}),
    ("ls", {"a": 1, "b=__import__('os').system('true')": 2}),
    ("pow", {"base": 2, "exp": 3}),
    ("__import__", {"name": "os"}),
    ("eval", {"source": "1"}),
    ("exec", {}),
    ("ls", {"__class__": 1}),
    ("ls", {"class": 1}),
    ("ls", {"a b": 1}),
    ("ls", {"ａ": 1}),                      # not ASCII (NFKC would turn it into "a")
    ("ls(); globals().__setitem__('PWNED', 1); ls", {}),
    ("_load_scenario", {"scenario": {}}),    # private method
    ("__init__", {}),
]


def test_injection_through_names_and_keys_is_refused_before_bfcl():
    env = make("base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    core = env.unwrapped
    g = bfcl()["globals"]
    for name, args in INJECTIONS:
        obs, reward, term, trunc, info = env.step(format_call(name, args))
        assert info["error"] == "invalid_arguments", (name, args, obs)
        assert json.loads(obs)["error"]["code"] == "invalid_arguments"
        assert not (term or trunc)
    # A value is a literal, whatever it contains.
    env.step(format_call("ls", {"a": "x'); globals().__setitem__('PWNED',1); ('"}))
    assert core.results[0] == [["ls(a=\"x'); globals().__setitem__('PWNED',1); ('\")"]]
    assert "PWNED" not in g and not hasattr(builtins, "PWNED") and "PWNED" not in sys.modules
    # Refused calls were never sent: only the literal-valued ls was recorded.
    _, _, _, _, info = env.step(format_call("pwd", {}))
    assert info["error"] is None


def test_episodes_are_isolated_and_release_bfcl_globals():
    g = bfcl()["globals"]
    baseline = len(g)
    a, b = make("base"), make("base")
    a.reset(options={"task_id": "multi_turn_base_0"})
    b.reset(options={"task_id": "multi_turn_base_0"})
    a.step(format_call("mkdir", {"dir_name": "only_in_a"}))
    listing = json.loads(b.step(format_call("ls", {}))[0])
    assert "only_in_a" not in listing["current_directory_content"]
    assert "only_in_a" in json.loads(a.step(format_call("ls", {}))[0])["current_directory_content"]
    a.reset(options={"task_id": "multi_turn_base_0"})   # fresh state on reset
    assert "only_in_a" not in json.loads(a.step(format_call("ls", {}))[0])["current_directory_content"]
    for _ in range(30):
        a.reset(options={"task_id": "multi_turn_base_0"})
        for action in a.unwrapped.solution_actions():
            a.step(action)
    a.close()
    b.close()
    assert len(g) == baseline


def test_vector_workers_are_isolated():
    envs = gym.make_vec("agentworld/bfcl-multi-turn-base-v0", num_envs=2, vectorization_mode="async")
    try:
        envs.reset(seed=0, options={"task_id": "multi_turn_base_0"})
        obs, *_ = envs.step([format_call("mkdir", {"dir_name": "w0"}), format_call("mkdir", {"dir_name": "w1"})])
        obs, *_ = envs.step([format_call("ls", {}), format_call("ls", {})])
        first, second = (json.loads(o)["current_directory_content"] for o in obs)
        assert "w0" in first and "w1" not in first and "w1" in second and "w0" not in second
    finally:
        envs.close()


def test_check_env_and_determinism():
    from gymnasium.utils.env_checker import check_env

    env = make("miss-param")
    check_env(env.unwrapped, skip_render_check=False)
    runs = []
    for _ in range(2):
        obs, info = env.reset(seed=123)
        trace = [obs, info["task_id"]]
        for action in env.unwrapped.solution_actions()[:6] + ["text", SUBMIT]:
            obs, reward, term, trunc, info = env.step(action)
            trace.append((obs, reward, term, trunc, info.get("observation_role")))
            if term or trunc:
                break
        runs.append(trace)
    assert runs[0] == runs[1]


def test_bfcl_writes_only_into_its_own_directory(tmp_path, monkeypatch):
    """BFCL_PROJECT_ROOT points at the agentworld cache, never the working directory."""
    import subprocess

    cache = tmp_path / "cache"
    work = tmp_path / "work"
    work.mkdir()
    env = {**__import__("os").environ, "AGENTWORLD_CACHE": str(cache)}
    env.pop("BFCL_PROJECT_ROOT", None)
    code = ("import os, gymnasium as gym, agentworld_envs\n"
            "e = gym.make('agentworld/bfcl-multi-turn-base-v0'); e.reset(seed=0)\n"
            "import bfcl_eval.constants.eval_config as c; print(c.PROJECT_ROOT)\n"
            "assert 'BFCL_PROJECT_ROOT' not in os.environ\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(cache / "bfcl")
    assert list(work.iterdir()) == []


def test_a_whole_gold_turn_in_one_action_is_one_step():
    """BFCL puts no limit on the calls of one step: long_context gold turns of 34 calls go in one action."""
    env = make("long-context")
    core = env.unwrapped
    for task_id in core.task_ids:
        env.reset(options={"task_id": task_id})
        if max(len(t) for t in core.gold_calls()) > 8:
            break
    turns = [[turn] if turn else [] for turn in core.gold_steps()]   # one step per turn, all its calls
    reward, complete, infos = play(env, task_id, turns)
    assert complete and reward == 1.0 == bfcl_verdict("multi_turn_long_context", task_id, turns)
    assert max(len(step) for turn in core.results for step in turn) > 8
