"""Old import paths keep working after the layer moves (issue 27): ``agentworld_envs.<old name>`` is
the moved module itself (one object, not a copy), ``python -m`` works under an old name, and
``import agentworld_envs`` imports none of them until asked.

Written by the relayout script from its module map.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import agentworld_envs
from agentworld_envs import _MOVED


def _import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:   # a module behind an extra that is not installed here
        if (exc.name or "").split(".")[0] == "agentworld_envs":
            raise
        pytest.skip(f"{name} needs {exc.name}")


@pytest.mark.parametrize("old", sorted(_MOVED))
def test_an_old_name_is_the_moved_module(old):
    new = _import_or_skip(f"agentworld_envs.{_MOVED[old]}")
    aliased = importlib.import_module(f"agentworld_envs.{old}")
    assert aliased is new
    assert new.__spec__.name == f"agentworld_envs.{_MOVED[old]}"   # its own spec, not the alias's
    assert sys.modules[f"agentworld_envs.{old}"] is new


def test_documented_old_imports():
    from agentworld_envs.serving import trl_adapter
    from agentworld_envs.trl_adapter import environment_factories

    assert environment_factories is trl_adapter.environment_factories
    from agentworld_envs.catalog import load_bundle
    from agentworld_envs.catalogue.catalog import load_bundle as new_load_bundle

    assert load_bundle is new_load_bundle
    assert agentworld_envs.evaluation is importlib.import_module("agentworld_envs.arena.evaluation")


def test_a_submodule_of_a_moved_package_is_not_loaded_twice():
    import pkgutil

    packages = [old for old, new in _MOVED.items()
                if hasattr(importlib.import_module(f"agentworld_envs.{new}"), "__path__")]
    if not packages:
        pytest.skip("no moved package here")
    new_pkg = importlib.import_module(f"agentworld_envs.{_MOVED[packages[0]]}")
    for child in sorted(m.name for m in pkgutil.iter_modules(new_pkg.__path__)):
        try:
            old = importlib.import_module(f"agentworld_envs.{packages[0]}.{child}")
        except ImportError:   # behind an extra not installed here
            continue
        assert old is importlib.import_module(f"{new_pkg.__name__}.{child}")
        assert len({id(m) for m in sys.modules.values() if getattr(m, "__file__", None) == old.__file__}) == 1
        return
    pytest.skip("no submodule of a moved package imports here")


def test_a_name_that_never_existed_is_still_an_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agentworld_envs.no_such_module")
    with pytest.raises(AttributeError):
        agentworld_envs.no_such_module  # noqa: B018


def test_importing_the_package_imports_no_moved_module():
    code = ("import agentworld_envs, sys; from agentworld_envs import _MOVED; "
            "layers = ('util', 'engine', 'catalogue', 'serving', 'arena', 'audit', 'tasks', 'synthesis'); "
            "print(sorted(m for m in sys.modules if m.startswith('agentworld_envs.') and "
            "(m.split('.')[1] in layers or m[len('agentworld_envs.'):] in _MOVED)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_python_dash_m_runs_a_module_under_its_old_name():
    """``python -m agentworld_envs.mcp_server --help`` (docs/recipes.md) runs serving/mcp_server.py as __main__."""
    proc = subprocess.run([sys.executable, "-m", "agentworld_envs.mcp_server", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage" in proc.stdout.lower()
