"""agentworld environments: stateful, verifiable tool-use tasks as Gymnasium envs.

Importing this package registers every environment in ``env_registry`` with
Gymnasium as ``agentworld/<name>-v0``::

    import gymnasium as gym, agentworld_envs
    env = gym.make("agentworld/retail-v0")
    obs, info = env.reset(seed=0)

It also registers the real-benchmark envs of :mod:`agentworld_envs.external` (BFCL v4
multi-turn, τ²-bench), whose packages load only when one is made.

Importing it stays cheap (registration only): the engine, jsonschema, Faker and SQLite
helpers load on first use. ``register_spec``, ``validate_spec`` and ``SpecError`` are
resolved on first access (PEP 562), because they pull in the spec validator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
import sys
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType

from .external import register_external
from .registration import register_all

if TYPE_CHECKING:
    from .plugins import register_spec
    from .engine.spec import SpecError, validate_spec

__all__ = ["register_spec", "validate_spec", "SpecError"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "register_spec":
        from .plugins import register_spec

        return register_spec
    if name in ("validate_spec", "SpecError"):
        from .engine import spec

        return getattr(spec, name)
    if name in _MOVED:   # an old module name: the moved module
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


register_all()
register_external()  # BFCL and τ² ids (their packages load only on make)


# Old module names (before the layer subpackages) -> new ones, under this package:
# ``import agentworld_envs.catalog`` and ``python -m agentworld_envs.mcp_server`` keep working. The finder
# imports the new module the first time an old name is asked for and binds the old name to that
# same module object (classes and module state are shared, nothing is copied); nothing is
# imported before. The names are relative on purpose: the architecture test does not count an
# alias as a dependency of the package.
_MOVED: dict[str, str] = {
    "actions": "engine.actions",
    "answers": "engine.answers",
    "argcheck": "engine.argcheck",
    "bench": "audit.bench",
    "cachefile": "util.cachefile",
    "catalog": "catalogue.catalog",
    "cli_arena": "arena.cli",
    "datagen": "engine.datagen",
    "diagnosis": "arena.diagnosis",
    "episode": "engine.episode",
    "errors": "util.errors",
    "evaluation": "arena.evaluation",
    "extras": "util.extras",
    "inputs": "util.inputs",
    "integrations": "serving.integrations",
    "language": "engine.language",
    "lint": "audit.lint",
    "lint_tasks": "tasks.lint",
    "mcp_server": "serving.mcp_server",
    "outputs": "util.outputs",
    "overlay": "catalogue.overlay",
    "procs": "util.procs",
    "program_checks": "engine.program_checks",
    "registry": "util.registry",
    "rules": "engine.rules",
    "spaces": "engine.spaces",
    "spec": "engine.spec",
    "sqlcheck": "engine.sqlcheck",
    "state": "engine.state",
    "statediff": "engine.statediff",
    "submission": "engine.submission",
    "synthesis.build_all": "audit.build_all",
    "targeting": "arena.targeting",
    "taskcheck": "catalogue.taskcheck",
    "tasks.export": "serving.export",
    "tasks.summary": "audit.task_summary",
    "textgen": "engine.textgen",
    "tools": "engine.tools",
    "trajectories": "engine.trajectories",
    "trl_adapter": "serving.trl_adapter",
    "validation": "audit.validation",
    "verifiers": "engine.verifiers",
    "workers": "serving.workers",
}


def _new_name(fullname: str) -> str | None:
    head, _, rest = fullname.partition(".")
    if head != __name__ or not rest:
        return None
    parts = rest.split(".")
    for i in range(len(parts), 0, -1):
        new = _MOVED.get(".".join(parts[:i]))
        if new is not None:
            return ".".join([__name__, new, *parts[i:]])
    return None


class _MovedModules:
    """Meta-path finder and loader of the old module names in :data:`_MOVED`."""

    def __init__(self, new: str = "") -> None:
        self.new = new
        self.spec: ModuleSpec | None = None

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        new = _new_name(fullname)
        return None if new is None else ModuleSpec(fullname, _MovedModules(new))  # type: ignore[arg-type]

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib

        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec   # the import system gave it the old name's spec: give its own back

    def get_code(self, fullname: str) -> CodeType:
        # `python -m <old name>`: run the module under its new name (its relative imports need it)
        return compile(f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)\n",
                       f"<{fullname}, moved to {self.new}>", "exec")


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())  # before the path finder, which would load a second copy
