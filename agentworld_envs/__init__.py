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

from .external import register_external
from .registration import register_all

if TYPE_CHECKING:
    from .plugins import register_spec
    from .spec import SpecError, validate_spec

__all__ = ["register_spec", "validate_spec", "SpecError"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "register_spec":
        from .plugins import register_spec

        return register_spec
    if name in ("validate_spec", "SpecError"):
        from . import spec

        return getattr(spec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


register_all()
register_external()  # BFCL and τ² ids (their packages load only on make)
