"""Evaluation: run a policy over chosen environments and tasks, one JSON record per episode.

A *policy* maps a batch of episode states to text actions (:class:`Policy`). Scripted ones
calibrate the arena: ``reference`` replays each task's reference solution (success 1.0),
``noop`` submits at once (0.0), ``random`` plays the seeded random trajectories of validation.
:class:`OpenAIPolicy` talks to any OpenAI-compatible chat endpoint (vLLM, SGLang, …); the
trainer package adds a local-model policy.

Task sets: the registered tasks of each env, or, with ``round=R``, tasks freshly synthesised
for round R (seeded by R, gated like every task, disjoint from the env's own set), so arena
results cannot be memorised. Same policy, seed and round → same tasks, and for deterministic
policies the same scores.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..engine import trajectories
from ..engine.spec import canonical_json

WRITE_ERROR_CODES = ("precondition_failed", "constraint_violation", "not_found")


@dataclass
class EpisodeState:
    """What a policy sees of one running episode: the conversation so far and the tools.

    ``messages`` alternate the env's observations and the policy's actions: the first is the
    task (role ``user``); after each action (role ``assistant``, its text) comes the observation,
    role ``tool`` for tool results and ``user`` when the env says it is a new user message
    (``info["observation_role"]``, e.g. BFCL's next user turn). ``tools`` is the current tool list
    (an env may add tools mid-episode: ``info["tools"]``)."""

    env_id: str
    task_id: str
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    turn: int
    reference: list[str] = field(default_factory=list, repr=False)   # for scripted calibration policies
    rng: random.Random | None = field(default=None, repr=False)
    pool: dict[str, dict[str, list[Any]]] = field(default_factory=dict, repr=False)
    shown: dict[str, str] = field(default_factory=dict, repr=False)


class Policy(Protocol):
    name: str
    deterministic: bool

    def act(self, states: Sequence[EpisodeState]) -> list[str]: ...


class ReferencePolicy:
    """Replays each task's reference solution (the arena's upper calibration point)."""

    name, deterministic = "reference", True

    def act(self, states: Sequence[EpisodeState]) -> list[str]:
        return [s.reference[s.turn] if s.turn < len(s.reference) else trajectories.NOOP for s in states]


class NoopPolicy:
    """Submits at once with no answer (the lower calibration point)."""

    name, deterministic = "noop", True

    def act(self, states: Sequence[EpisodeState]) -> list[str]:
        return [trajectories.NOOP for _ in states]


class RandomPolicy:
    """The seeded random trajectories validation plays: random tools with schema-shaped arguments."""

    name, deterministic = "random", True

    def act(self, states: Sequence[EpisodeState]) -> list[str]:
        out = []
        for s in states:
            if s.turn >= 6:
                out.append(trajectories.NOOP)
                continue
            out.append(trajectories.random_actions(s.tools, s.pool, s.rng, s.shown, n_calls=1)[0])
        return out


class OpenAIPolicy:
    """Any OpenAI-compatible ``/chat/completions`` endpoint (the tools are passed as functions)."""

    deterministic = True

    def __init__(self, base_url: str, model: str, api_key: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 512, timeout: float = 120.0):
        self.base_url, self.model, self.api_key = base_url.rstrip("/"), model, api_key
        self.temperature, self.max_tokens, self.timeout = temperature, max_tokens, timeout
        self.name = f"openai:{model}"

    def _complete(self, state: EpisodeState) -> str:
        import urllib.error
        import urllib.request

        # Actions go as assistant text, so results cannot be tool messages (those need tool_call ids):
        # every observation is sent as a user message.
        messages = [m if m["role"] != "tool" else {"role": "user", "content": m["content"]} for m in state.messages]
        body = {"model": self.model, "messages": messages, "tools": state.tools,
                "temperature": self.temperature, "max_tokens": self.max_tokens}
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                reply = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise EvaluationError(f"chat endpoint {self.base_url} failed: {exc}") from None
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise EvaluationError(f"chat endpoint {self.base_url} returned no choices: {str(reply)[:200]}") from None
        if message.get("tool_calls"):
            return json.dumps({"role": "assistant", "tool_calls": message["tool_calls"]})
        return message.get("content") or ""

    def act(self, states: Sequence[EpisodeState]) -> list[str]:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, max(1, len(states)))) as pool:
            return list(pool.map(self._complete, states))


SCRIPTED: dict[str, type] = {"reference": ReferencePolicy, "noop": NoopPolicy, "random": RandomPolicy}


class EvaluationError(RuntimeError):
    """An evaluation that cannot run (an unreachable endpoint, an unknown policy)."""


# ------------------------------------------------------------------------------------------ records


@dataclass
class EpisodeRecord:
    """One evaluated episode."""

    env_id: str
    l1: str
    l2: str
    split: str
    task_id: str
    kind: str
    family: str
    difficulty: float | None
    chain_length: int
    reference_tools: list[str]
    turns: int
    calls: list[dict[str, Any]]       # {"tool", "error"} per tool call, in order
    checks: list[dict[str, Any]]
    reward: float
    success: bool
    submitted: bool
    truncated: bool
    answer: Any
    state_hash: str
    outcome: str                       # success | turn_limit | premature_submit | wrong_final_state | wrong_answer | failed_check
    seed: int
    round: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def outcome_of(record_checks: list[dict[str, Any]], *, success: bool, truncated: bool, submitted: bool,
               calls: list[dict[str, Any]], reference_tools: list[str], writes: set[str]) -> str:
    """Why an episode failed, in one word (``success`` when it did not)."""
    if success:
        return "success"
    if truncated or not submitted:
        return "turn_limit"
    ok_calls = [c["tool"] for c in calls if not c.get("error")]
    needed_writes = [t for t in reference_tools if t in writes]
    if (needed_writes and not any(t in writes for t in ok_calls)) or (reference_tools and not ok_calls):
        return "premature_submit"
    failed = {c["type"] for c in record_checks if not c["passed"]}
    if failed & {"state", "sql", "footprint"}:
        return "wrong_final_state"
    if "answer" in failed:
        return "wrong_answer"
    return "failed_check"


# ------------------------------------------------------------------------------------------ task sets


def round_tasks(env_id: str, round_: int, n: int, max_steps: int | None = None) -> list[dict[str, Any]]:
    """Tasks freshly synthesised for arena round ``round_`` (seeded by it), none of them in the env's own set
    (``max_steps``: only tasks whose reference has at most this many calls, submit included)."""
    from ..catalogue.catalog import load_bundle
    from ..catalogue.fresh_tasks import synthesize_tasks

    bundle = load_bundle(env_id)
    own = {canonical_json([t["solution"], t["instruction"]]) for t in bundle.tasks}
    tasks, _ = synthesize_tasks(env_id, n=n + 2, seed=10_000 + round_, max_steps=max_steps)
    fresh = [dict(t, id=f"r{round_}-{t['id']}") for t in tasks if canonical_json([t["solution"], t["instruction"]]) not in own]
    return fresh[:n]


def select_tasks(env_ids: Sequence[str], *, tasks_per_env: int = 0, round_: int | None = None,
                 seed: int = 0, overlay_dir: Path | None = None,
                 max_steps: int | None = None,
                 skip_traps: bool = False) -> tuple[list[tuple[str, str]], Path | None]:
    """``(env_id, task_id)`` pairs to evaluate, and the overlay file holding round tasks (if any).

    ``skip_traps``: leave out tasks whose right outcome is a refusal citing the policy
    (:func:`agentworld_envs.env.needs_policy`), for policies that are not shown the policy."""
    from ..catalogue.catalog import load_bundle
    from ..env import needs_policy
    from ..catalogue.overlay import write_overlay

    pairs: list[tuple[str, str]] = []
    overlay: dict[str, list[dict[str, Any]]] = {}
    for env_id in env_ids:
        bundle = load_bundle(env_id)
        if round_ is not None:
            tasks = round_tasks(env_id, round_, tasks_per_env or 6, max_steps)
            overlay[bundle.name] = tasks
        else:
            tasks = [t for t in bundle.tasks if max_steps is None or len(t["solution"]) <= max_steps]
            if tasks_per_env and len(tasks) > tasks_per_env:
                tasks = random.Random(f"{seed}:{bundle.name}").sample(tasks, tasks_per_env)
        pairs += [(bundle.env_id, t["id"]) for t in tasks if not (skip_traps and needs_policy(t))]
    path = None
    if round_ is not None:
        path = write_overlay((overlay_dir or Path(".")) / f"round-{round_}-tasks.json", overlay)
    return pairs, path


# ------------------------------------------------------------------------------------------ running


def evaluate(policy: Policy, pairs: Sequence[tuple[str, str]], *, seed: int = 0, max_turns: int | None = None,
             batch_size: int = 8, overlay: str | Path | None = None, round_: int | None = None,
             max_tools: int | None = None, show_policy: bool = True, env_workers: str = "local",
             ray_address: str | None = None, ray_workers: int = 2,
             env_kwargs: dict[str, Any] | None = None) -> list[EpisodeRecord]:
    """Play one episode per ``(env_id, task_id)`` with ``policy``, ``batch_size`` episodes at a time.

    ``env_workers``: where the envs run, ``"local"`` (this process) or ``"ray"`` (``ray_workers``
    Ray actors, on the cluster at ``ray_address`` or a local session bound to 127.0.0.1; see
    :mod:`agentworld_envs.serving.workers`). Records are the same either way. ``env_kwargs``: more
    ``gym.make`` keywords for every env (e.g. a benchmark's ``split``).
    """
    from ..serving.workers import make_env_workers

    kwargs: dict[str, Any] = dict(env_kwargs or {})
    if max_turns:
        kwargs["max_turns"] = max_turns
    if max_tools:
        kwargs["max_tools"] = max_tools
    if not show_policy:
        kwargs["show_policy"] = False
    if overlay is not None:
        # Absolute: env workers may run in another working directory (a cluster needs shared storage).
        kwargs.update(task_overlay=str(Path(overlay).resolve()), overlay_mode="only")
    workers = make_env_workers(env_workers, env_kwargs=kwargs, num_workers=ray_workers, address=ray_address)
    try:
        return _play(policy, pairs, workers, seed=seed, batch_size=batch_size, round_=round_)
    finally:
        workers.close()


def _play(policy: Policy, pairs: Sequence[tuple[str, str]], workers: Any, *, seed: int, batch_size: int,
          round_: int | None) -> list[EpisodeRecord]:
    records: list[EpisodeRecord] = []
    pools: dict[str, Any] = {}
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        wanted = {env_id for env_id, _ in chunk} - set(pools)
        episodes = [{"slot": i, "env_id": env_id, "task_id": task_id, "seed": seed + start + i, "extras": True,
                     "pool": env_id in wanted} for i, (env_id, task_id) in enumerate(chunk)]
        live = []
        for ep, opened in zip(episodes, workers.open(episodes)):
            if "pool" in opened:
                pools[ep["env_id"]] = opened["pool"]
            env_id, task_id = ep["env_id"], ep["task_id"]
            state = EpisodeState(env_id, task_id, opened["tools"], [{"role": "user", "content": opened["obs"]}], 0,
                                 reference=opened["reference"], rng=random.Random(f"{seed}:{env_id}:{task_id}"),
                                 pool=pools[env_id], shown=opened["shown"])
            live.append({"slot": ep["slot"], "state": state, "calls": [], "seed": ep["seed"], "done": None})
        while any(x["done"] is None for x in live):
            active = [x for x in live if x["done"] is None]
            actions = policy.act([x["state"] for x in active])
            results = workers.step({x["slot"]: action for x, action in zip(active, actions)})
            for x, action in zip(active, actions):
                obs, reward, term, trunc, info = results[x["slot"]]
                x["calls"] += [{"tool": c["tool_name"], "error": c["error"]} for c in info.get("calls", [])]
                st = x["state"]
                role = "user" if info.get("observation_role") == "user" else "tool"
                st.messages += [{"role": "assistant", "content": action}, {"role": role, "content": obs}]
                if info.get("tools"):   # tools added mid-episode (BFCL miss_func): the new full list
                    st.tools = list(info["tools"])
                st.turn += 1
                if term or trunc:
                    x["done"] = (reward, term, trunc, info)
        facts = workers.finish([x["slot"] for x in live])
        for x in live:
            (reward, term, trunc, info), fact = x["done"], facts[x["slot"]]
            task, tax, ref_tools = fact["task"], fact["taxonomy"], fact["reference_tools"]
            success = bool(info.get("success"))
            checks = [{k: c.get(k) for k in ("type", "passed", "detail")} for c in info.get("checks", [])]
            records.append(EpisodeRecord(
                env_id=fact["env_id"], l1=tax.get("l1", ""), l2=tax.get("l2", ""), split=fact["split"],
                task_id=task["id"], kind=task.get("kind", ""), family=task.get("knobs", {}).get("family", task.get("kind", "")),
                difficulty=task.get("difficulty"), chain_length=len(ref_tools), reference_tools=ref_tools,
                turns=x["state"].turn, calls=x["calls"], checks=checks, reward=float(reward), success=success,
                submitted=bool(term), truncated=bool(trunc), answer=info.get("answer"), state_hash=fact["state_hash"],
                outcome=outcome_of(checks, success=success, truncated=bool(trunc), submitted=bool(term),
                                   calls=x["calls"], reference_tools=ref_tools, writes=set(fact["writes"])),
                seed=x["seed"], round=round_))
    return records


def _rates(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    n = len(records)
    return {"episodes": n,
            "success_rate": round(sum(r.success for r in records) / n, 6) if n else 0.0,
            "reward_mean": round(sum(r.reward for r in records) / n, 6) if n else 0.0,
            "turns_mean": round(sum(r.turns for r in records) / n, 3) if n else 0.0}


def summarize(records: Sequence[EpisodeRecord], **meta: Any) -> dict[str, Any]:
    """Totals over ``records`` plus ``meta``; with ``per_env=True`` in meta, also a row per env id."""
    per_env = meta.pop("per_env", False)
    out = {**meta, **_rates(records), "envs": len({r.env_id for r in records})}
    if per_env:
        by_env: dict[str, list[EpisodeRecord]] = {}
        for r in records:
            by_env.setdefault(r.env_id, []).append(r)
        out["per_env"] = {env: _rates(rs) for env, rs in sorted(by_env.items())}
    return out


# ------------------------------------------------------------------------------------------ benchmark suites

#: ``--split`` of ``agentworld eval`` -> the benchmark split it means for a suite: the arena is the held-out
#: test split (τ²'s ``test``; BFCL's whole set, it has no other), ``train`` the training split (BFCL: none),
#: ``all`` every task (τ²'s ``base``: the published task sets).
SUITE_SPLITS = {"arena": "test", "train": "train", "all": "base"}


def suite_tasks(suite: str, split: str = "arena", tasks_per_env: int = 0, seed: int = 0) -> list[tuple[str, str]]:
    """``(env_id, task_id)`` pairs of a benchmark suite (``bfcl``, ``tau2``): every task of the split, or a
    seeded sample of ``tasks_per_env`` per env, in the benchmark's order. Raises the benchmark's
    :class:`~agentworld_envs.external.MissingExtraError` when its packages are not installed."""
    import gymnasium as gym

    from ..external import suite_env_ids

    if split not in SUITE_SPLITS:
        raise EvaluationError(f"suite split must be one of {', '.join(SUITE_SPLITS)}, not {split!r}")
    pairs: list[tuple[str, str]] = []
    for env_id in suite_env_ids(suite):
        env = gym.make(env_id)
        try:
            try:
                ids = env.unwrapped.split_task_ids(SUITE_SPLITS[split])
            except ValueError as exc:
                raise EvaluationError(str(exc)) from None
        finally:
            env.close()
        if tasks_per_env and len(ids) > tasks_per_env:
            keep = set(random.Random(f"{seed}:{env_id}").sample(ids, tasks_per_env))
            ids = [t for t in ids if t in keep]
        pairs += [(env_id, t) for t in ids]
    return pairs


def evaluate_suite(policy: Policy, suite: str, *, split: str = "arena", tasks_per_env: int = 0, seed: int = 0,
                   max_turns: int | None = None, batch_size: int = 8, show_policy: bool = True,
                   env_workers: str = "local", ray_address: str | None = None,
                   ray_workers: int = 2) -> list[EpisodeRecord]:
    """Evaluate ``policy`` on a benchmark suite (see :func:`suite_tasks`); ``suite="arena"`` is not one
    (use :func:`select_tasks` and :func:`evaluate`). Records are the arena's: the same summary and diagnosis."""
    pairs = suite_tasks(suite, split, tasks_per_env, seed)
    return evaluate(policy, pairs, seed=seed, max_turns=max_turns, batch_size=batch_size, show_policy=show_policy,
                    env_workers=env_workers,
                    ray_address=ray_address, ray_workers=ray_workers,
                    env_kwargs={"split": SUITE_SPLITS[split]})


def run_files(records: Sequence[EpisodeRecord], summary: dict[str, Any]) -> dict[str, str]:
    """The texts of a run directory: ``records.jsonl`` (one episode a line), then ``summary.json``."""
    lines = "".join(json.dumps(r.to_json(), ensure_ascii=False, default=str) + "\n" for r in records)
    return {"records.jsonl": lines, "summary.json": json.dumps(summary, indent=1)}


def write_run(out_dir: Path, records: Sequence[EpisodeRecord], summary: dict[str, Any]) -> None:
    """``records.jsonl`` (one episode a line) and ``summary.json`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in run_files(records, summary).items():
        (out_dir / name).write_text(text)


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """The episode records of a run directory; a record of the wrong shape is an :class:`EvaluationError`
    naming its line (a partial last line, from an interrupted run, is skipped)."""
    path = Path(run_dir) / "records.jsonl"
    if not path.is_file():   # also refuses a FIFO or a directory of that name
        raise EvaluationError(f"{run_dir}: no records.jsonl (run `agentworld eval --out {run_dir}` first)")
    try:
        lines = path.read_bytes().decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    out = []
    numbered = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    for k, (i, line) in enumerate(numbered):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            if k == len(numbered) - 1:
                continue   # a partial last line from an interrupted run
            raise EvaluationError(f"{path}:{i}: not a JSON record") from None
        problem = record_problem(record)
        if problem:
            raise EvaluationError(f"{path}:{i}: not an episode record ({problem})")
        out.append(record)
    return out


#: Fields a record needs (and their JSON types) for diagnosis; see :class:`EpisodeRecord`.
_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "env_id": (str,), "task_id": (str,), "success": (bool,), "reward": (int, float), "outcome": (str,),
    "turns": (int,)}
_OPTIONAL_FIELDS: dict[str, tuple[type, ...]] = {
    "l1": (str,), "l2": (str,), "kind": (str,), "family": (str,), "difficulty": (int, float, type(None)),
    "chain_length": (int,), "calls": (list,), "checks": (list,), "reference_tools": (list,)}


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not an episode record diagnosis can read (None when it is)."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    for fields, required in ((_RECORD_FIELDS, True), (_OPTIONAL_FIELDS, False)):
        for name, types in fields.items():
            if name not in record:
                if required:
                    return f"no {name!r}"
                continue
            value = record[name]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                return f"{name!r} is {json.dumps(value)[:40]}"
            if isinstance(value, float) and value != value:
                return f"{name!r} is NaN"
    for c in record.get("calls", []):
        if not (isinstance(c, dict) and isinstance(c.get("tool"), (str, type(None)))
                and isinstance(c.get("error"), (str, type(None)))):
            return "a call is not {\"tool\", \"error\"}"
    for c in record.get("checks", []):
        if not (isinstance(c, dict) and isinstance(c.get("type"), str) and isinstance(c.get("passed"), bool)
                and isinstance(c.get("detail", ""), (str, type(None)))):
            return "a check is not {\"type\", \"passed\", \"detail\"}"
    if not all(isinstance(t, str) for t in record.get("reference_tools", [])):
        return "reference_tools is not a list of names"
    return None
