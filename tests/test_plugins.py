"""Plug-ins by name: sources, task sources and Python hooks are ``"module:attr"`` strings, resolved lazily.

An unknown name is an error, never a fallback; nothing is registered by importing a package for
its side effect.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

import agentworld_envs
from agentworld_envs.catalogue import catalog
from agentworld_envs.util.registry import Registry, resolve
from agentworld_envs.engine.spec import SpecError


TESTS = Path(__file__).resolve().parent


def _run(code: str) -> str:
    """Run ``code`` in a fresh interpreter (with tests/ importable); its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_resolve_names_module_and_attribute():
    assert resolve("agentworld_envs.catalogue.catalog:spec_tasks") is catalog.spec_tasks
    assert resolve("agentworld_envs.util.registry:Registry.get") is Registry.get
    with pytest.raises(ImportError, match="no_such_module"):
        resolve("no_such_module:fn")
    with pytest.raises(ImportError, match="has no attribute 'nope'"):
        resolve("agentworld_envs.catalogue.catalog:nope")
    with pytest.raises(ValueError, match="module:attr"):
        resolve("agentworld_envs.catalogue.catalog")


def test_a_string_binding_imports_nothing_until_used():
    out = _run("""
        import sys
        from agentworld_envs.util.registry import Registry
        reg = Registry("thing", targets={"hooks": "plugin_hooks:lost_books"})
        print("hooks" in reg, "plugin_hooks" in sys.modules)
        fn = reg.get("hooks")
        print(fn.__name__, "plugin_hooks" in sys.modules)
    """)
    assert out.split() == ["True", "False", "lost_books", "True"]


def test_registry_errors_name_the_registry_and_never_fall_back():
    reg: Registry = Registry("widget", targets={"a": "plugin_hooks:lost_books", "n": "plugin_hooks:NOT_CALLABLE"})
    with pytest.raises(KeyError, match="no widget registered as 'b'"):
        reg.get("b")
    with pytest.raises(ValueError, match="not callable"):
        reg.get("n")
    with pytest.raises(ValueError, match="already registered"):
        reg.add("a", "plugin_hooks:nothing_lent")
    with pytest.raises(ValueError, match="module:attr"):
        reg.add("c", "plugin_hooks.lost_books")
    import plugin_hooks

    reg.register("a")(plugin_hooks.lost_books)   # the function the string names: the same binding
    assert reg.get("a") is plugin_hooks.lost_books


def test_the_catalogue_names_its_sources_and_importing_synthesis_registers_nothing():
    out = _run("""
        import sys
        from agentworld_envs import catalog
        print(sorted(catalog.SPEC_BUILDERS.names()), sorted(catalog.TASK_SOURCES.names()))
        print("agentworld_envs.synthesis" in sys.modules, "agentworld_envs.tasks" in sys.modules)
        import agentworld_envs.synthesis, agentworld_envs.tasks
        print(sorted(catalog.SPEC_BUILDERS.names()), sorted(catalog.TASK_SOURCES.names()))
    """)
    lines = out.strip().splitlines()
    assert lines[0] == "['handbuilt', 'inline', 'synth'] ['handbuilt', 'inline', 'synth']"
    assert lines[1] == "False False"
    assert lines[2] == lines[0]


def test_an_unknown_source_is_an_error_not_a_fallback(monkeypatch):
    entry = {"name": "plugin-probe", "id": "agentworld/plugin-probe-v0", "split": "train", "l1": "x", "l2": "y",
             "l3": "z", "source": "custom"}
    monkeypatch.setattr(catalog, "_entry", lambda name: entry)
    with pytest.raises(KeyError, match="no spec builder registered as 'custom'"):
        catalog._load_bundle("plugin-probe")
    # A source with a spec builder but no task source: no silent "seal the spec's own tasks".
    from toy_spec import toy_spec

    spec = toy_spec()
    monkeypatch.setattr(catalog, "SPEC_BUILDERS", Registry("spec builder"))
    catalog.SPEC_BUILDERS.register("custom")(lambda e: spec)
    with pytest.raises(KeyError, match="no task source registered as 'custom'"):
        catalog._load_bundle("plugin-probe")


def _hooked_spec() -> dict:
    from toy_spec import toy_spec

    spec = toy_spec()
    spec = copy.deepcopy(spec)
    spec["id"] = "toy-hooks"
    spec["tools"].append({"name": "lost_books", "description": "How many books are lost.",
                          "parameters": {"type": "object", "properties": {}},
                          "impl": {"kind": "python", "function": "plugin_hooks:lost_books"}})
    count = next(t for t in spec["tasks"] if t["id"] == "count-1")
    count["solution"][0] = {"name": "lost_books", "arguments": {}}
    count["checks"].append({"type": "python", "function": "plugin_hooks:nothing_lent"})
    return spec


def test_a_spec_names_its_python_hooks_by_module_attr():
    spec = _hooked_spec()
    env_id = agentworld_envs.register_spec(spec, replace=True)
    env = gym.make(env_id)
    try:
        _, info = env.reset(options={"task_id": "count-1"})
        for step in env.unwrapped.task["solution"]:
            action = json.dumps({"name": env.unwrapped.shown_name(step["name"]), "arguments": step["arguments"]})
            obs, reward, terminated, _, info = env.step(action)
        assert terminated and reward == 1.0, obs
    finally:
        env.close()


@pytest.mark.parametrize("where, value, path", [
    ("tool", "plugin_hooks:no_such_function", "$.tools[7].impl.function"),
    ("tool", "no_such_module:lost_books", "$.tools[7].impl.function"),
    ("check", "plugin_hooks:NOT_CALLABLE", "$.tasks[1].checks[2].function"),
])
def test_a_hook_that_does_not_resolve_is_a_spec_error_at_registration(where, value, path):
    spec = _hooked_spec()
    spec["id"] = "toy-hooks-bad"
    if where == "tool":
        spec["tools"][7]["impl"]["function"] = value
    else:
        spec["tasks"][1]["checks"][2]["function"] = value
    with pytest.raises(SpecError) as info:
        agentworld_envs.register_spec(spec)
    assert info.value.path == path
