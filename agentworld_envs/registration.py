"""Register every manifest entry with Gymnasium (cheap: no env is built until ``make``).

``gymnasium.register`` checks each new id against every spec already registered (a scan of
the whole registry per call), so registering 2,000 ids through it is quadratic: ~0.25 s at
import, more than importing Gymnasium itself. This module builds the :class:`EnvSpec`s
directly and does the same consistency check once, against a set, for the whole batch.
The resulting registry entries are exactly what ``gymnasium.register`` would have stored.
"""

from __future__ import annotations

from gymnasium.envs.registration import EnvSpec, registry

import env_registry

ENTRY_POINT = "agentworld_envs.env:AgentWorldEnv"
NAMESPACE = "agentworld"


def register_all() -> int:
    """Register all ids; returns how many were newly registered (idempotent)."""
    # gymnasium forbids a versioned id beside an unversioned one of the same namespace/name;
    # one pass over the registry collects the unversioned names instead of one pass per id.
    unversioned = {s.name for s in registry.values() if s.namespace == NAMESPACE and s.version is None}
    count = 0
    for e in env_registry.manifest():
        env_id = e["id"]
        if env_id in registry:
            continue
        if e["name"] in unversioned:
            # Same failure gymnasium.register would raise, named for this catalogue entry.
            from gymnasium import error

            raise error.RegistrationError(
                f"Can't register the versioned environment `{env_id}` when the unversioned environment "
                f"`{NAMESPACE}/{e['name']}` of the same name already exists.")
        # The engine counts turns itself (max_turns); no TimeLimit wrapper is added here, so
        # gymnasium.wrappers.TimeLimit can still be applied by users on top. No PassiveEnvChecker
        # either (~0.3 ms of a ~2 ms first make + reset): it re-checks at runtime a subset of what
        # gymnasium's full check_env verifies in the tests (test_conformance, test_engine) and in
        # ``agentworld validate``; ``gym.make(id, disable_env_checker=False)`` still adds it.
        registry[env_id] = EnvSpec(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_name": e["name"]},
                                   disable_env_checker=True)
        count += 1
    return count


def register_inline(env_id: str, name: str) -> None:
    """Register ``env_id`` (a spec added with :func:`agentworld_envs.catalogue.catalog.add_inline_spec`) with Gymnasium."""
    if env_id not in registry:
        import gymnasium as gym

        gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_name": name})
