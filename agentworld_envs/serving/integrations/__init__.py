"""Adapters that meet agent-RL frameworks on their own interfaces (one module per framework).

Each module imports its framework lazily, so importing this package costs nothing and needs
none of them; install a framework with its extra (``pip install 'agentworld[verifiers]'``):

| module | framework | extra | entry point |
|---|---|---|---|
| :mod:`.vf_taskset` | Prime Intellect ``verifiers`` 0.4 (``verifiers.v1``) | ``verifiers`` | taskset id ``agentworld-verifiers`` |
| :mod:`.openenv_server` | OpenEnv (``openenv-core``) | ``openenv`` | ``agentworld serve-openenv ID...`` |
| :mod:`.skyrl_env` | SkyRL-gym 0.4 | ``skyrl`` | ``skyrl_gym.make("agentworld", ...)`` |
| :mod:`.statedb` | ``sqlite-utils`` / Datasette | ``db`` | ``agentworld db ID --out FILE.db`` |

Every adapter plays episodes through :class:`agentworld_envs.env.AgentWorldEnv` itself: the
tool schemas are the env's own (``info["tools"]``), actions are the canonical text actions,
and the reward is the task verifier's score, so errors and scores are the Gymnasium env's.
"""

from __future__ import annotations

__all__: list[str] = []
