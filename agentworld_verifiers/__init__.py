"""The verifiers taskset id ``agentworld-verifiers``: ``vf-eval agentworld-verifiers ...``.

verifiers (0.4, ``verifiers.v1``) resolves a taskset id ``owner/name@version`` to the module
``name`` (dashes as underscores) and takes the ``Taskset``, ``Harness`` and ``Env`` subclasses its
``__all__`` exports. The adapter itself is :mod:`agentworld_envs.serving.integrations.vf_taskset`.
"""

from agentworld_envs.serving.integrations.vf_taskset import AgentWorldEvalEnv, AgentWorldHarness, AgentWorldTaskset

__all__ = ["AgentWorldTaskset", "AgentWorldHarness", "AgentWorldEvalEnv"]
