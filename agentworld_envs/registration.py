"""Register every manifest entry with Gymnasium (cheap: no env is built until ``make``)."""

from __future__ import annotations

import gymnasium as gym

import env_registry

ENTRY_POINT = "agentworld_envs.env:AgentWorldEnv"


def register_all() -> int:
    """Register all ids; returns how many were newly registered (idempotent)."""
    count = 0
    for e in env_registry.manifest():
        if e["id"] in gym.registry:
            continue
        # The engine counts turns itself (max_turns); no TimeLimit wrapper is added here, so
        # gymnasium.wrappers.TimeLimit can still be applied by users on top.
        gym.register(id=e["id"], entry_point=ENTRY_POINT, kwargs={"env_name": e["name"]})
        count += 1
    return count
