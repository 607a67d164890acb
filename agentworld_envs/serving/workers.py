"""Env workers: many env instances per worker, behind one batched interface, in-process or on Ray.

An :class:`EnvHost` hosts episodes in *slots* (slot ``i`` runs one episode of any env id at a
time; the instances it makes are kept per slot and env id, so a thousand slots share each id's
bundle). Callers talk to a set of hosts through :class:`EnvWorkers`:

* :class:`LocalEnvWorkers`: one host in this process (what ``agentworld eval`` always did);
* :class:`RayEnvWorkers`: ``num_workers`` Ray actors, each an :class:`EnvHost`, placed by Ray
  across processes and machines; slot ``i`` lives on actor ``i % num_workers`` and each batched
  call is one remote call per actor, all in flight at once.

Both serve the trainer's slot vector env (``agentworld_rl.vector_env.WorkerSlotVectorEnv``) and the
arena evaluation (:func:`agentworld_envs.arena.evaluation.evaluate`).

**Local Ray is loopback only.** Without an address, :func:`start_ray` starts a private Ray
session bound to 127.0.0.1: Ray's own ``_node_ip_address="127.0.0.1"`` is not enough (``ray.init``
replaces a loopback address with the machine's routable one, and gcs_server, raylet and every
worker then listen on all interfaces), so it also sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
Ray's single-machine mode, in which the node address stays 127.0.0.1 and every Ray server binds
to it, and ``RAY_USAGE_STATS_ENABLED=0`` (no usage report). Ray reads that variable when it is
imported, so it must be set before the first ``import ray`` of the process; :func:`start_ray`
checks the address Ray ended up with and refuses to run otherwise. Give ``address`` to join a real
cluster instead (``"auto"``, ``"ray://head:10001"``, ``"10.0.0.5:6379"``).

**A dead worker is an error, never a silent zero reward.** If an actor dies (killed, out of
memory, its machine lost), the call raises :class:`~agentworld_envs.util.errors.EnvWorkerError` naming
the worker and the episodes it held, and the actor is replaced, so a caller that catches the
error can start new episodes. An exception raised by an env inside a worker (a bad task id, a bug)
is re-raised in the caller as that exception.
"""

from __future__ import annotations

import importlib
import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..util.errors import EnvWorkerError

#: Environment of a local Ray session: set before ``import ray`` (Ray reads them at import) and
#: inherited by gcs_server, raylet, the agents and every worker it starts.
LOOPBACK_ENV = {
    # Ray's single-machine mode: the node address stays 127.0.0.1, so every server binds to it.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # No usage-statistics report to Ray's servers.
    "RAY_USAGE_STATS_ENABLED": "0",
}
#: Environment of the Ray processes ``ray.init`` starts, set only while it starts them. Even with
#: the dashboard off and usage stats disabled, Ray starts its API server to run the usage-stats
#: module, whose first act is to probe cloud metadata services (169.254.169.254,
#: metadata.google.internal; ``usage_stats_head.py`` calls ``get_cluster_config_to_report`` before
#: it checks whether reporting is enabled). Pointing HTTP(S) proxies at a loopback port where
#: nothing listens makes such requests fail on loopback, without a DNS query or a packet leaving
#: the machine; ``no_proxy`` keeps loopback traffic (gRPC between Ray's own processes) direct.
LOOPBACK_PROXY_ENV = {
    **{name: "http://127.0.0.1:9" for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")},
    **{name: "127.0.0.1,localhost,::1" for name in ("no_proxy", "NO_PROXY")},
}
LOOPBACK = "127.0.0.1"
RAY_MISSING = "--env-workers ray needs Ray: pip install 'agentworld[ray]' (or pip install ray)"


def _ray():
    try:
        import ray
    except ImportError:
        raise EnvWorkerError(RAY_MISSING) from None
    return ray


def start_ray(address: str | None = None, num_cpus: int | None = None,
              runtime_env: dict[str, Any] | None = None) -> bool:
    """Connect to Ray; returns True if this call started the session (then the caller shuts it down).

    ``address`` None: a private local session bound to 127.0.0.1 (see the module doc). A session
    this process already has is reused as it is, after the same loopback check when no address
    is given.
    """
    if address is None:
        for key, value in LOOPBACK_ENV.items():
            os.environ[key] = value
    ray = _ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if runtime_env:
            kwargs["runtime_env"] = runtime_env
        if address is None:
            saved = {name: os.environ.get(name) for name in LOOPBACK_PROXY_ENV}
            os.environ.update(LOOPBACK_PROXY_ENV)
            try:
                ray.init(num_cpus=num_cpus or os.cpu_count() or 1, _node_ip_address=LOOPBACK, **kwargs)
            finally:  # this process keeps its own proxy settings (e.g. for an OpenAI-compatible endpoint)
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
        else:
            ray.init(address=address, **kwargs)
        started = True
    if address is None:
        node_ip = ray.util.get_node_ip_address()
        if node_ip != LOOPBACK:
            if started:
                ray.shutdown()
            raise EnvWorkerError(
                f"local Ray would listen on {node_ip}, not only on {LOOPBACK}: Ray was imported (or started) "
                "before agentworld could set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0; set it in the environment, "
                "or pass a cluster address")
    return started


class EnvHost:
    """Episodes in numbered slots, one at a time per slot, over cached env instances (see module doc).

    Args:
        env_kwargs: passed to every ``gym.make``.
        import_modules: modules to import first (they register env ids; a fresh worker process
            knows only ``agentworld_envs``'s).
        max_cached_envs: env instances kept per host (least recently used closed first).
    """

    def __init__(self, env_kwargs: dict[str, Any] | None = None, import_modules: Sequence[str] = (),
                 max_cached_envs: int = 256):
        import agentworld_envs  # noqa: F401  (registers the catalogue ids)

        for mod in import_modules:
            importlib.import_module(mod)
        self.env_kwargs = dict(env_kwargs or {})
        self.max_cached_envs = max_cached_envs
        self._envs: OrderedDict[tuple[int, str], Any] = OrderedDict()
        self._active: dict[int, Any] = {}

    def pid(self) -> int:
        return os.getpid()

    def _env(self, slot: int, env_id: str):
        # Reuse made envs: constructing a world costs far more than resetting it.
        key = (slot, env_id)
        env = self._envs.get(key)
        if env is not None:
            self._envs.move_to_end(key)
            return env
        import gymnasium as gym

        env = self._envs[key] = gym.make(env_id, **self.env_kwargs)
        while len(self._envs) > self.max_cached_envs:
            (old_slot, _), old = next(iter(self._envs.items()))
            if self._active.get(old_slot) is old:
                break  # never close an env mid-episode; the cache runs over instead
            self._envs.popitem(last=False)
            old.close()
        return env

    def open(self, episodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Start one episode per ``{"slot", "env_id", "task_id"?, "seed"?, "extras"?, "pool"?}``.

        Returns ``{"obs", "info"}`` per episode, plus, with ``extras``, what an evaluation policy
        sees besides the conversation (``tools``, ``reference``, ``shown``) and, with ``pool``,
        the env's value pool for random calls.
        """
        out = []
        for ep in episodes:
            slot = int(ep["slot"])
            self._active.pop(slot, None)
            env = self._env(slot, ep["env_id"])
            options = {"task_id": ep["task_id"]} if ep.get("task_id") else None
            obs, info = env.reset(seed=ep.get("seed"), options=options)
            self._active[slot] = env
            item: dict[str, Any] = {"obs": obs, "info": dict(info)}
            if ep.get("extras"):
                core = env.unwrapped
                item.update(tools=core.tools, reference=core.solution_actions(), shown=core.shown_to_spec())
                if ep.get("pool"):
                    # Benchmark envs (agentworld_envs.external) have no catalogue bundle: no value pool.
                    item["pool"] = core.bundle.value_pool() if hasattr(core, "bundle") else {}
            out.append(item)
        return out

    def step(self, actions: dict[int, str]) -> dict[int, tuple[str, float, bool, bool, dict[str, Any]]]:
        """Step the episode of each slot; a slot with no running episode answers an idle no-op."""
        out = {}
        for slot, action in actions.items():
            env = self._active.get(int(slot))
            if env is None:
                out[slot] = ("", 0.0, False, False, {"slot_active": False})
                continue
            obs, reward, terminated, truncated, info = env.step(action)
            out[slot] = (obs, float(reward), bool(terminated), bool(truncated), dict(info))
        return out

    def finish(self, slots: Sequence[int]) -> dict[int, dict[str, Any]]:
        """What an evaluation record needs of each slot's (ended) episode; the slot goes idle."""
        out = {}
        for slot in slots:
            core = self._active.pop(int(slot)).unwrapped
            if hasattr(core, "episode_facts"):  # a benchmark env (agentworld_envs.external) says it itself
                out[slot] = core.episode_facts()
                continue
            task = core.task
            out[slot] = {
                "env_id": core.bundle.env_id, "split": core.bundle.split,
                "taxonomy": core.bundle.spec.get("taxonomy", {}), "task": task,
                "reference_tools": [s["name"] for s in task["solution"] if s["name"] != "submit"],
                "writes": sorted(n for n, t in core.bundle.tools.items() if t.writes),
                "state_hash": core.state_hash(),
            }
        return out

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
        self._active.clear()


class EnvWorkers:
    """Batched access to episodes in slots, wherever their hosts run (see module doc)."""

    num_workers = 1

    def open(self, episodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def step(self, actions: dict[int, str]) -> dict[int, tuple[str, float, bool, bool, dict[str, Any]]]:
        raise NotImplementedError

    def finish(self, slots: Sequence[int]) -> dict[int, dict[str, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalEnvWorkers(EnvWorkers):
    """One :class:`EnvHost` in this process."""

    def __init__(self, env_kwargs: dict[str, Any] | None = None, import_modules: Sequence[str] = ()):
        self.host = EnvHost(env_kwargs, import_modules)

    def open(self, episodes):
        return self.host.open(episodes)

    def step(self, actions):
        return self.host.step(actions)

    def finish(self, slots):
        return self.host.finish(slots)

    def close(self):
        self.host.close()


class RayEnvWorkers(EnvWorkers):
    """``num_workers`` Ray actors, each an :class:`EnvHost` holding the slots ``i`` with ``i % num_workers == w``.

    Args:
        num_workers: actors to start.
        env_kwargs, import_modules: as for :class:`EnvHost`.
        address: a Ray cluster to join; None starts a local session bound to 127.0.0.1 (module doc).
        runtime_env: Ray runtime environment for the workers (e.g. ``{"pip": ["agentworld"]}`` or
            ``{"working_dir": "."}`` on a cluster whose nodes lack the package).
        cpus_per_worker: CPUs Ray reserves per actor (placement), 1 by default.
    """

    def __init__(self, num_workers: int = 2, env_kwargs: dict[str, Any] | None = None,
                 import_modules: Sequence[str] = (), address: str | None = None,
                 runtime_env: dict[str, Any] | None = None, cpus_per_worker: float = 1.0):
        if num_workers < 1:
            raise EnvWorkerError(f"env workers must be >= 1, got {num_workers}")
        local_cpus = max(num_workers * cpus_per_worker, os.cpu_count() or 1)
        self._owns_ray = start_ray(address, num_cpus=int(-(-local_cpus // 1)), runtime_env=runtime_env)
        ray = _ray()
        self.num_workers = num_workers
        self._args = (dict(env_kwargs or {}), tuple(import_modules))
        self._actor_cls = ray.remote(EnvHost).options(num_cpus=cpus_per_worker, max_restarts=0,
                                                      max_task_retries=0)
        self._actors = [self._new_actor() for _ in range(num_workers)]
        self._pids: list[int | None] = [None] * num_workers
        self._held: dict[int, str] = {}  # slot -> env id of its running episode
        pids = self._call_all("pid", {w: () for w in range(num_workers)})  # also waits until every actor is up
        self._pids = [pids[w] for w in range(num_workers)]

    def _new_actor(self):
        return self._actor_cls.remote(*self._args)

    def worker_of(self, slot: int) -> int:
        return int(slot) % self.num_workers

    def pids(self) -> list[int]:
        """Process id of each worker (for diagnostics, and for tests that kill one)."""
        return list(self._pids)

    def _call_all(self, method: str, args_by_worker: dict[int, tuple]) -> dict[int, Any]:
        """Call ``method`` on the given workers at once; a dead worker raises EnvWorkerError after all returned."""
        ray = _ray()
        refs = {w: getattr(self._actors[w], method).remote(*args) for w, args in args_by_worker.items()}
        out, dead = {}, {}
        for w, ref in refs.items():
            try:
                out[w] = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                dead[w] = exc
            except ray.exceptions.RayTaskError as exc:
                raise exc.as_instanceof_cause() from None   # the env's own exception, as if raised here
        if dead:
            self._replace(dead)
        return out

    def _replace(self, dead: dict[int, BaseException]) -> None:
        lost = {w: sorted(s for s in self._held if self.worker_of(s) == w) for w in dead}
        held = dict(self._held)
        for w in dead:
            for slot in lost[w]:
                self._held.pop(slot, None)
            self._actors[w] = self._new_actor()
        ray = _ray()
        for w in dead:
            try:
                self._pids[w] = ray.get(self._actors[w].pid.remote())
            except ray.exceptions.RayError:
                self._pids[w] = None
        parts = []
        for w, exc in dead.items():
            eps = [f"slot {s}: {self_held}" for s, self_held in ((s, held[s]) for s in lost[w])]
            parts.append(f"env worker {w} died ({type(exc).__name__}) holding {len(eps)} running episode(s)"
                         + (f" ({', '.join(eps[:6])}{', ...' if len(eps) > 6 else ''})" if eps else ""))
        raise EnvWorkerError("; ".join(parts) + "; those episodes are lost (no reward was recorded for them); "
                             "the worker was restarted, so new episodes can start")

    def open(self, episodes):
        by_worker: dict[int, list[dict[str, Any]]] = {}
        for ep in episodes:
            by_worker.setdefault(self.worker_of(ep["slot"]), []).append(ep)
        for ep in episodes:
            self._held[int(ep["slot"])] = ep["env_id"]
        replies = self._call_all("open", {w: (eps,) for w, eps in by_worker.items()})
        results = {}
        for w, eps in by_worker.items():
            for ep, reply in zip(eps, replies[w]):
                results[int(ep["slot"])] = reply
        return [results[int(ep["slot"])] for ep in episodes]

    def step(self, actions):
        by_worker: dict[int, dict[int, str]] = {}
        for slot, action in actions.items():
            by_worker.setdefault(self.worker_of(slot), {})[slot] = action
        replies = self._call_all("step", {w: (acts,) for w, acts in by_worker.items()})
        out = {}
        for reply in replies.values():
            for slot, result in reply.items():
                out[slot] = result
                if result[2] or result[3]:
                    self._held.pop(int(slot), None)
        return out

    def finish(self, slots):
        by_worker: dict[int, list[int]] = {}
        for slot in slots:
            by_worker.setdefault(self.worker_of(slot), []).append(slot)
        replies = self._call_all("finish", {w: (s,) for w, s in by_worker.items()})
        out = {}
        for reply in replies.values():
            out.update(reply)
        for slot in slots:
            self._held.pop(int(slot), None)
        return out

    def close(self) -> None:
        ray = _ray()
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already dead or the session is gone: nothing to release
                pass
        self._actors = []
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False


def make_env_workers(kind: str, *, env_kwargs: dict[str, Any] | None = None, import_modules: Sequence[str] = (),
                     num_workers: int = 2, address: str | None = None,
                     runtime_env: dict[str, Any] | None = None) -> EnvWorkers:
    """``"local"`` (this process) or ``"ray"`` env workers; anything else is an :class:`EnvWorkerError`."""
    if kind == "local":
        return LocalEnvWorkers(env_kwargs, import_modules)
    if kind == "ray":
        return RayEnvWorkers(num_workers, env_kwargs, import_modules, address or None, runtime_env)
    raise EnvWorkerError(f"env workers must be 'local' or 'ray', not {kind!r}")

