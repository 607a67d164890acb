"""agentworld environments: stateful, verifiable tool-use tasks as Gymnasium envs.

Importing this package registers every environment in ``env_registry`` with
Gymnasium as ``agentworld/<name>-v0``::

    import gymnasium as gym, agentworld_envs
    env = gym.make("agentworld/retail-v0")
    obs, info = env.reset(seed=0)
"""

from __future__ import annotations

from .plugins import register_spec
from .registration import register_all
from .spec import SpecError, validate_spec

__all__ = ["register_spec", "validate_spec", "SpecError"]

__version__ = "0.1.0"

register_all()
