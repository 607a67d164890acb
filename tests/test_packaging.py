"""Packaging: ``pip install agentworld`` is the environment suite alone; the trainer, MCP and Ray are extras.

Checked three ways: pyproject's dependency lists, the suite run with the extras' modules hidden
(every env command; the ones that need an extra say which, one line, exit status 2), and, as a
slow test, a real fresh venv with ``pip install -e .`` and no extras.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentworld_envs.util.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
#: What the suite must never need (the trainer's stack, MCP, Ray).
HEAVY = {"torch", "transformers", "trl", "accelerate", "peft", "datasets", "matplotlib", "gguf", "mcp", "ray"}
#: A synthesised env the bare-install checks build from nothing (hand-built: retail).
SYNTH_ENV = "wine-club-subscriptions"


def _project() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_core_dependencies_are_the_suite_only():
    core = {_name(r) for r in _project()["dependencies"]}
    assert core.isdisjoint(HEAVY), core & HEAVY
    assert {"gymnasium", "jsonschema", "networkx", "faker", "orjson", "xxhash", "typer"} <= core


def test_extras_table_matches_pyproject():
    """Each extra that agentworld_envs.util.extras names exists, and each of its packages provides a module it lists."""
    from importlib.metadata import packages_distributions

    extras = _project()["optional-dependencies"]
    provides: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            provides.setdefault(dist.lower().replace("_", "-"), set()).add(module)
    for extra, modules in EXTRAS.items():
        assert extra in extras, f"pyproject has no extra {extra!r}"
        for req in extras[extra]:
            dist = _name(req)
            assert provides.get(dist, set()) & set(modules), f"[{extra}] {dist} provides none of {modules}"


def test_dev_installs_every_extra_the_tests_use():
    dev = _project()["optional-dependencies"]["dev"]
    selves = [r for r in dev if _name(r) == "agentworld"]
    assert selves, "dev must pull the extras through agentworld[...]"
    pulled = set(re.search(r"\[(.*)\]", selves[0]).group(1).replace(" ", "").split(","))
    assert {"train", "mcp", "ray", "bfcl", "tau2"} <= pulled
    assert {"pytest", "hypothesis", "ruff", "mypy"} <= {_name(r) for r in dev}


def _hidden(code: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``code`` with the extras' modules hidden (tests/hide_extras.py)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", "import hide_extras\n" + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return _hidden(f"import sys\nsys.argv = ['agentworld', *{list(args)!r}]\n"
                   "from agentworld_envs.cli import main\nmain()")


def test_the_suite_plays_without_the_extras():
    out = _hidden(f"""
        import json, sys
        import gymnasium as gym
        import agentworld_envs
        from agentworld_envs import trl_adapter  # the TRL adapter itself needs no TRL
        rewards = {{}}
        for env_id in ("agentworld/retail-v0", "agentworld/{SYNTH_ENV}-v0"):
            env = gym.make(env_id)
            env.reset(seed=0)
            for step in env.unwrapped.task["solution"]:
                action = json.dumps({{"name": env.unwrapped.shown_name(step["name"]), "arguments": step["arguments"]}})
                obs, reward, terminated, truncated, info = env.step(action)
            rewards[env_id] = reward
            env.close()
        print(json.dumps(rewards))
        print(json.dumps(sorted({{m.partition(".")[0] for m in sys.modules}} & set({sorted(HEAVY)!r}))))
    """)
    assert out.returncode == 0, out.stderr[-3000:]
    rewards, heavy = (line for line in out.stdout.strip().splitlines()[-2:])
    assert set(json.loads(rewards).values()) == {1.0}
    assert heavy == "[]"


@pytest.mark.parametrize("args, extra", [
    (["train", "--preset", "tiny-cpu"], "train"),
    (["evolve", "--rounds", "1"], "train"),
    (["eval", "--policy", "model", "--model", "smollm2-135m", "--envs", "1"], "train"),
    (["serve-mcp", "agentworld/retail-v0"], "mcp"),
    (["eval", "--policy", "reference", "--env-workers", "ray", "--envs", "1", "--tasks-per-env", "1"], "ray"),
])
def test_a_command_that_needs_an_extra_says_which_in_one_line(args, extra, tmp_path):
    if "eval" in args:
        args = [*args, "--out", str(tmp_path / "run")]
    out = _cli(*args)
    assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"agentworld[{extra}]" in lines[0] and "Traceback" not in out.stderr


def test_env_commands_work_without_the_extras(tmp_path):
    import agentworld_envs  # noqa: F401
    from agentworld_envs.catalogue.catalog import load_bundle

    n = len(load_bundle("retail").tasks)
    for args, expect in [(["list", "--split", "arena"], "200 environments"),
                         (["show", "retail"], f"{n} tasks"),
                         (["play", "retail", "--solution"], "reward 1.0"),
                         (["validate", "retail"], "retail"),
                         (["lint", "retail"], "linted 1"),
                         (["build", SYNTH_ENV], "built 1"),
                         (["bench", "retail", "--n", "20", "--live", "4"], "reset"),
                         (["export", "tasks", "--out", str(tmp_path / "tasks"), "--ids", "retail"], f"wrote {n} tasks"),
                         (["eval", "retail", "--split", "train", "--policy", "noop", "--out", str(tmp_path / "ev")],
                          f"{n} episodes"),
                         (["diagnose", str(tmp_path / "ev")], "report"),
                         (["train", "--preset", "tiny-cpu", "--print-config"], "group_size")]:
        out = _cli(*args)
        assert out.returncode == 0 and expect in out.stdout, (args, out.stdout[-2000:], out.stderr[-2000:])
        assert "Traceback" not in out.stderr and "skipping" not in out.stderr, out.stderr
    assert (tmp_path / "tasks" / "tasks.jsonl").read_text().count("\n") == n
    assert "<table" in (tmp_path / "ev" / "diagnosis.html").read_text()


@pytest.mark.slow
def test_a_fresh_venv_with_the_bare_install(tmp_path):
    """What a new user gets from ``pip install -e .``: the suite plays, the trainer's command names its extra."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    started = time.perf_counter()
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "-e", str(ROOT)], capture_output=True, text=True,
                             timeout=1200)
    seconds = time.perf_counter() - started
    assert install.returncode == 0, install.stderr[-3000:]
    print(f"bare install: {seconds:.0f} s")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["AGENTWORLD_CACHE"] = str(tmp_path / "cache")   # nothing prebuilt: every env builds from scratch
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def run(*cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)

    absent = run(str(py), "-c", "import importlib.util as u; print([m for m in ('torch', 'trl', 'mcp', 'transformers', "
                                "'ray', 'datasets') if u.find_spec(m)])")
    assert absent.returncode == 0 and absent.stdout.strip() == "[]", (absent.stdout, absent.stderr)
    where = run(str(py), "-c", "import agentworld_envs; print(agentworld_envs.__file__)")
    assert where.stdout.strip().startswith(str(ROOT)), where
    for name in ("retail", SYNTH_ENV):
        played = run("agentworld", "play", name, "--solution")
        assert played.returncode == 0 and "reward 1.0" in played.stdout, (name, played.stdout[-2000:], played.stderr[-3000:])
    train = run("agentworld", "train", "--preset", "tiny-cpu")
    assert train.returncode == 2, (train.stdout, train.stderr)
    assert train.stderr.strip().splitlines() == [
        "agentworld: error: agentworld train needs the 'train' extra (torch is not installed): "
        "pip install 'agentworld[train]'"]


def test_a_plugin_command_whose_extra_is_missing_still_exists_and_says_which(monkeypatch, capsys):
    """An ``agentworld.cli`` entry point ``name = "module:register [extra]"`` that cannot be imported."""
    import typer
    from importlib.metadata import EntryPoint

    from agentworld_envs import cli
    from agentworld_envs.util.errors import run_cli

    import agentworld_envs.util.extras as extras

    monkeypatch.setitem(extras.EXTRAS, "train", ("agentworld_no_such_module",))   # as without the extra
    broken = EntryPoint(name="fit", value="agentworld_no_such_module:register [train]", group="agentworld.cli")
    untagged = EntryPoint(name="other", value="agentworld_no_such_module:register", group="agentworld.cli")
    monkeypatch.setattr(cli, "entry_points", lambda group: [broken, untagged])
    app = typer.Typer(add_completion=False)
    monkeypatch.setattr(cli, "app", app)

    @app.callback()
    def _root() -> None:
        """test app"""

    cli._load_plugins()
    assert "skipping command 'other'" in capsys.readouterr().err   # no extra named: reported, not registered
    with pytest.raises(SystemExit) as exit_:
        run_cli(app, args=["fit", "--preset", "x", "extra-arg"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["agentworld: error: agentworld fit needs the 'train' extra (agentworld_no_such_module is not "
                   "installed): pip install 'agentworld[train]'"]
