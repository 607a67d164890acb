"""Rewards v3: the submit contract, and every class of text heuristic a policy could game, on retail
and on synthesised envs — outcomes from structure, refusals that need a lookup, dumps, slot
competitors, hedges and negations in every format, Markdown layout, instruction-given and composed
text, submit's schema, and the gate's per-kind probe counts."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine import answers
from agentworld_envs.engine.actions import format_call
from agentworld_envs.catalogue.catalog import load_bundle
from agentworld_envs.engine.submission import SUBMIT_TOOL, Submission, parse_submission
from agentworld_envs.tasks.contract import given_text_mismatch, public_reasons
from agentworld_envs.tasks.probes import FAIRNESS, HACKS, attack
from agentworld_envs.tasks.runner import Runner
from agentworld_envs.engine.tools import ToolError

RETAIL = "agentworld/retail-v0"
SYNTH_ENVS = ["agentworld/wine-club-subscriptions-v0", "agentworld/acupuncture-clinic-v0",
              "agentworld/florist-same-day-delivery-v0"]


def submit(**args) -> str:
    return format_call("submit", args)


def play(env, task_id: str, actions: list[str]) -> tuple[float, dict]:
    env.reset(options={"task_id": task_id})
    info: dict = {}
    for a in actions:
        _, reward, term, trunc, info = env.step(a)
        if term or trunc:
            return reward, info
    return 0.0, info


def ref(env, task_id: str) -> tuple[list[str], dict]:
    """The reference's calls before submit, and its submit arguments."""
    env.reset(options={"task_id": task_id})
    actions = env.solution_actions()
    body = json.loads(actions[-1][len("<tool_call>"):-len("</tool_call>")])
    assert body["name"] == "submit"
    return actions[:-1], body["arguments"]


def with_answer(args: dict, text) -> str:
    return format_call("submit", {**args, "answer": text})


@pytest.fixture(scope="module")
def retail():
    e = gym.make(RETAIL).unwrapped
    yield e
    e.close()


def tasks_where(env, pred) -> list[dict]:
    return [t for t in env.bundle.tasks if pred(t)]


def outcome_of(task) -> str:
    return task["solution"][-1]["arguments"].get("outcome")


# ------------------------------------------------------------------------------------------ submit's schema


@pytest.mark.parametrize("args", [{"answer": 83}, {"answer": ["83.00"]}, {"answer": {"value": "83.00"}},
                                  {"outcome": "maybe"}, {"outcome": "done", "confidence": 1.0}, {"message": 5}])
def test_submit_validates_its_schema_like_any_tool(retail, args):
    task = retail.bundle.tasks[0]
    retail.reset(options={"task_id": task["id"]})
    obs, reward, term, trunc, info = retail.step(format_call("submit", args))
    assert info["error"] == "invalid_arguments" and not term and reward == 0.0
    with pytest.raises(ToolError):
        parse_submission(args)


def test_submit_schema_is_the_same_through_gym_mcp_and_trl(retail):
    from agentworld_envs.serving.mcp_server import EpisodeHost
    from agentworld_envs.serving.trl_adapter import agentworld_env_class

    retail.reset(seed=0)
    gym_submit = next(t for t in retail.tools if t["function"]["name"] == "submit")
    assert gym_submit == SUBMIT_TOOL
    assert set(gym_submit["function"]["parameters"]["properties"]) == {"outcome", "answer", "message"}
    host = EpisodeHost(RETAIL)
    mcp_submit = next(t for t in host.mcp_tools() if t["name"] == "submit")
    assert mcp_submit["inputSchema"] == SUBMIT_TOOL["function"]["parameters"]
    text, is_error, _ = host.call("k", "submit", {"answer": 83})
    assert is_error and "invalid_arguments" in text
    trl = agentworld_env_class(RETAIL)()
    trl.reset()
    assert "invalid_arguments" in trl.submit(answer=5)
    assert trl.get_reward() == 0.0


# ------------------------------------------------------------------------------------------ outcomes


def test_every_reference_declares_its_outcome_and_scores_one(retail):
    for env_id in [RETAIL, *SYNTH_ENVS]:
        env = retail if env_id == RETAIL else gym.make(env_id).unwrapped
        for task in env.bundle.tasks:
            assert outcome_of(task) in ("done", "refused", "partial"), task["id"]
            assert any(c["type"] == "outcome" for c in task["checks"])
            body, args = ref(env, task["id"])
            assert play(env, task["id"], body + [format_call("submit", args)])[0] == 1.0, (env_id, task["id"])


def test_a_claimed_outcome_decides_nothing_the_state_does_not_show(retail):
    traps = tasks_where(retail, lambda t: outcome_of(t) == "refused")
    lookups = tasks_where(retail, lambda t: outcome_of(t) == "done" and t["solution"][-1]["arguments"].get("answer"))
    assert traps and lookups
    for t in traps[:4]:
        body, args = ref(retail, t["id"])
        assert play(retail, t["id"], body + [format_call("submit", {**args, "outcome": "done"})])[0] == 0.0
        assert play(retail, t["id"], body + [format_call("submit", {**args, "outcome": "partial"})])[0] == 0.0
    for t in lookups[:4]:
        body, args = ref(retail, t["id"])
        assert play(retail, t["id"], body + [format_call("submit", {**args, "outcome": "refused"})])[0] == 0.0


@pytest.mark.parametrize("claim", [" Update: I went ahead and did it anyway - it's done.", " Done.",
                                   " It has been cancelled.", " I have cancelled it.", " Actually, I cancelled it anyway.",
                                   " It's been taken care of."])
def test_refusals_that_claim_the_action_fail(retail, claim):
    t = next(t for t in retail.bundle.tasks if t["tags"] == ["trap", "cancel"])
    body, args = ref(retail, t["id"])
    assert play(retail, t["id"], body + [format_call("submit", args)])[0] == 1.0
    for field in ("answer", "message"):
        claimed = {**args, field: args[field].rstrip(".") + "." + claim}
        assert play(retail, t["id"], body + [format_call("submit", claimed)])[0] == 0.0, (field, claim)
    # the old contract (no outcome, the explanation as the answer) too
    assert play(retail, t["id"], body + [submit(answer=args["message"])])[0] == 1.0
    assert play(retail, t["id"], body + [submit(answer=args["message"] + claim)])[0] == 0.0


def test_a_partial_refusal_may_add_a_true_fact(retail):
    for t in tasks_where(retail, lambda t: outcome_of(t) == "partial"):
        body, args = ref(retail, t["id"])
        kind = {**args, "message": args["message"] + " His other two requests are already done."}
        assert play(retail, t["id"], body + [format_call("submit", kind)])[0] == 1.0, t["id"]
        claim = {**args, "message": args["message"] + " It has been cancelled too."}
        if "cancel" in t["tags"]:
            assert play(retail, t["id"], body + [format_call("submit", claim)])[0] == 0.0, t["id"]


# ------------------------------------------------------------------------------------------ refusals need lookups


def test_refusals_from_the_rule_text_alone_fail(retail):
    traps = tasks_where(retail, lambda t: outcome_of(t) in ("refused", "partial"))
    assert len(traps) >= 12
    policy = retail.bundle.head["policy"]
    rules = [line.strip("- ") for line in policy.splitlines() if line.startswith("- ")]
    for t in traps:
        body, args = ref(retail, t["id"])
        # no lookup: the rule, the reference's own words, or its blocking value
        for text in rules:
            assert play(retail, t["id"], [submit(outcome=args["outcome"], answer=f"I cannot do that. The policy says: {text}")])[0] == 0.0
        assert play(retail, t["id"], [format_call("submit", args)])[0] == 0.0, t["id"]
        assert play(retail, t["id"], body + [format_call("submit", args)])[0] == 1.0, t["id"]


def test_synthesised_rule_traps_need_the_records_value(retail):
    seen = 0
    for env_id in SYNTH_ENVS:
        env = gym.make(env_id).unwrapped
        for t in env.bundle.tasks:
            rule = (t.get("knobs") or {}).get("rule")
            if outcome_of(t) != "refused" or not rule:
                continue
            seen += 1
            body, args = ref(env, t["id"])
            assert not public_reasons(t)
            assert play(env, t["id"], body + [submit(outcome="refused", answer=f"I cannot: {rule}")])[0] == 0.0
            assert play(env, t["id"], [submit(outcome="refused", answer=f"I cannot: {rule}")])[0] == 0.0
            assert play(env, t["id"], [format_call("submit", args)])[0] == 0.0
        env.close()
    assert seen >= 3


def test_a_refusal_naming_two_values_of_its_slot_fails(retail):
    t = next(t for t in retail.bundle.tasks if t["tags"] == ["trap", "modify"])
    body, args = ref(retail, t["id"])
    other = "pending" if args["answer"] != "pending" else "shipped"
    for text in (f"{args['answer']} (or possibly {other})", f"{args['answer']}, {other}", f"either {args['answer']} or {other}",
                 f"It is not {args['answer']}."):
        assert play(retail, t["id"], body + [with_answer(args, text)])[0] == 0.0, text
    date_trap = next(t for t in retail.bundle.tasks if t["tags"] == ["trap", "return"] and outcome_of(t) == "refused"
                     and len(answers.dates(t["solution"][-1]["arguments"]["answer"])) == 1)
    body, args = ref(retail, date_trap["id"])
    assert play(retail, date_trap["id"], body + [with_answer(args, args["answer"] + " (or possibly 2025-12-17)")])[0] == 0.0
    assert play(retail, date_trap["id"], body + [with_answer(args, args["answer"] + " (or maybe December 17, 2025)")])[0] == 0.0


# ------------------------------------------------------------------------------------------ dumps and slots


@pytest.mark.parametrize("env_id", [RETAIL, *SYNTH_ENVS])
def test_dumps_of_seen_values_fail_whatever_kinds_they_name(env_id):
    env = gym.make(env_id).unwrapped
    n = 0
    for t in env.bundle.tasks:
        body, args = ref(env, t["id"])
        if not args.get("answer"):
            continue
        seen: list = []
        env.reset(options={"task_id": t["id"]})
        for a in body:
            obs = env.step(a)[0]
            try:
                flat = []
                answers._flatten(json.loads(obs), flat, 0)
                seen += flat
            except ValueError:
                pass
        values = [str(v) for v in dict.fromkeys(seen) if len(str(v)) <= 40]
        kinds = {"numbers": [v for v in values if answers.as_number(v) is not None],
                 "dates": [v for v in values if answers.dates(v)],
                 "codes": [v for v in values if any(ch.isdigit() for ch in v) and any(ch.isalpha() for ch in v)]}
        for kind, vals in kinds.items():
            vals = [v for v in vals if answers.value_key(v) not in answers.value_key(args["answer"])
                    and answers.fold(v) not in answers.fold(t["instruction"])]
            if len(vals) >= 3:
                n += 1
                assert play(env, t["id"], body + [with_answer(args, args["answer"] + "\n" + ", ".join(vals))])[0] == 0.0, \
                    (t["id"], kind)
        assert play(env, t["id"], body + [with_answer(args, args["answer"] + " " + " ".join(map(str, range(200))))])[0] == 0.0
    env.close()
    assert n >= 3


def test_incidental_counts_and_ids_are_not_competitors():
    slot = answers.Candidates([], "What is the average late fee across the premium payments of POL-87886774?")
    assert answers.match_values("The average late fee across the 3 premium payments of POL-87886774 is 8.33.",
                                ["8.33"], slot, numeric=True).ok
    assert answers.match_values("Order 57 (2 items) is 8.33.", ["8.33"], answers.Candidates([], "", nouns=["order"]),
                                numeric=True).ok
    assert not answers.match_values("8.33, 7.50", ["8.33"], slot, numeric=True).ok
    assert not answers.match_values("It is 8.33 or 8.34", ["8.33"], slot, numeric=True).ok
    # a count answer: another count of the same things competes
    assert not answers.match_values("3 orders. 4 orders.", ["3"], answers.Candidates(), numeric=True).ok
    assert answers.match_values("You have 3 orders, 2 of them delivered.", ["3"], answers.Candidates(), numeric=True).ok
    # a list of the ids of the records worked on runs on from its noun; numbers that are no handled record's id
    # (or with no episode to tell) still compete
    done = answers.Observed([{"id": i, "status": "in_review"} for i in (19, 62, 39, 56, 31)])
    msg = "Submitted 5 call scripts (ids 19, 62, 39, 56 and 31) for review; their total field count is 146."
    assert answers.match_values(Submission("done", "146", msg).words(), ["146"], observed=done, numeric=True).ok
    for bad, seen in ((msg.replace("146", "146, or 150"), done), ("146 (ids 19, 62), or 150.", done),
                      ("That came to 150.", done)):
        assert not answers.match_values(Submission("done", "146", bad).words(), ["146"], observed=seen,
                                        numeric=True).ok, bad
    # where the words are the whole reply (no answer apart), ids the episode did not handle still compete
    for bad, seen in (("ids 150, 152: 146", done), (msg, None)):
        assert not answers.match_values(bad, ["146"], observed=seen, numeric=True).ok, bad
    # the figures the episode's own writes left are the parts of a total, listed beside it; a figure only read
    # (a record left out) still competes, and where the answer is one of the written figures, listing them is a dump
    wrote = answers.Observed([{"updated": {"id": 7, "monthly_fee": 129.85}}, {"updated": {"id": 9, "monthly_fee": 72.43}},
                              {"results": [{"id": 3, "monthly_fee": 61.21}]}])
    parts = "New fees: 129.85 (MBR-1) and 72.43 (MBR-2). Together 202.28."
    assert answers.match_values(Submission("done", "202.28", parts).words(), ["202.28"], observed=wrote, numeric=True).ok
    for bad, seen in ((parts + " Or 203.28.", wrote), (parts + " Together that came to 203.28.", wrote)):
        assert not answers.match_values(Submission("done", "202.28", bad).words(), ["202.28"], observed=seen,
                                        numeric=True).ok, bad
    # beside the answer, a record left out named with its own figure is no rival (the answer says what was asked);
    # as the whole reply, with no episode to tell parts from guesses, the figures compete
    assert answers.match_values(Submission("done", "202.28", parts + " MBR-3 stays at 61.21.").words(), ["202.28"],
                                observed=wrote, numeric=True).ok
    assert not answers.match_values(parts, ["202.28"], observed=None, numeric=True).ok
    assert not answers.match_values(Submission("done", "72.43", "New fees: 129.85, 72.43.").words(), ["72.43"],
                                    observed=wrote, numeric=True).ok
    # the last digits of a card the episode handled name it; the same digits of no handled record compete
    cards = answers.Observed([{"updated": {"id": 3, "card_number": "4111-2222-3333-3990", "status": "active"}}])
    named = "Activated the card ending -3990."
    assert answers.match_values(Submission("done", "100.00", named).words(), ["100.00"], observed=cards, numeric=True).ok
    assert not answers.match_values(named.replace("3990", "3991") + " 100.00", ["100.00"], observed=cards,
                                    numeric=True).ok
    # a card's last digits with their leading zero are a code, not a negative amount
    assert answers.match_values(Submission("done", "100.00", "Activated cards -0121 and -0457.").words(), ["100.00"],
                                numeric=True).ok
    # a DOI or path names a record, it is no number
    doi = "Archived tables 10.5953/ds.608617 and 10.1234/ab.99; their total size is 2,247,159.30 MB."
    assert answers.match_values(Submission("done", "2247159.3", doi).words(), ["2247159.30"], numeric=True).ok


@pytest.mark.parametrize("layout", ["- {v}", "* {v}", "1. {v}", "**{v}**", "`{v}`", "**Answer:** {v}", "### {v}", "> {v}",
                                    "_{v}_"])
def test_markdown_layout_is_not_a_sign(retail, layout):
    t = next(t for t in retail.bundle.tasks if t["tags"] == ["lookup", "gift-card"])
    body, args = ref(retail, t["id"])
    assert play(retail, t["id"], body + [with_answer(args, layout.format(v=args["answer"]))])[0] == 1.0
    assert answers.numbers("- 83.00") == [83.0] and answers.numbers("-83.00") == [-83.0]


DATE_FORMS = ["2019-09-02", "September 2, 2019", "Sep 2, 2019", "2 September 2019", "09/02/2019", "Monday, September 2, 2019",
              "2019-09-02T10:00:00Z"]
OTHER_FORMS = ["2016-07-19", "July 19, 2016", "Jul 19, 2016", "19 July 2016", "07/19/2016", "Tuesday, July 19, 2016"]


@pytest.mark.parametrize("form", DATE_FORMS)
def test_dates_in_every_accepted_form_pass_and_their_hedges_fail(form):
    slot = answers.Candidates([], "When was it placed?")
    assert answers.match_values(f"It was placed on {form}.", ["2019-09-02"], slot).ok
    for other in OTHER_FORMS:
        for pattern in ("{a} (or maybe {b})", "either {a} or {b}", "{a} (or possibly {b})", "{a}, {b}"):
            assert not answers.match_values(pattern.format(a=form, b=other), ["2019-09-02"], slot).ok, (form, other, pattern)
    for pattern in ("It is not {a}.", "Not {a}.", "{a} is not correct."):
        assert not answers.match_values(pattern.format(a=form), ["2019-09-02"], slot).ok


def test_names_with_titles():
    name = "Ing. Ottokar Käster B.Sc."
    slot = answers.Candidates([name, "Dr. Hans Meier", "Mag. Lena Wolf"], "Who manages it?")
    for text in (name, f"The manager is {name}", f"It is {name}.", "Ottokar Käster", f"- **{name}**"):
        assert answers.match_values(text, [name], slot).ok, text
    for text in (f"It is not {name}.", f"{name} or maybe Dr. Hans Meier", f"either {name} or Mag. Lena Wolf",
                 f"{name}, Dr. Hans Meier"):
        assert not answers.match_values(text, [name], slot).ok, text


def test_a_category_of_another_field_asserted_beside_the_answer_competes():
    slot = answers.Candidates(["magazine", "book"], "What kind of product is SKU-1?",
                              vocabulary=["magazine", "book", "active", "inactive"])
    assert answers.match_values("It is a magazine.", ["magazine"], slot).ok
    assert answers.match_values("The active listing SKU-1 is a magazine.", ["magazine"], slot).ok
    for text in ("magazine, inactive", "It is a magazine. It is inactive.", "magazine (currently inactive)"):
        assert not answers.match_values(text, ["magazine"], slot).ok, text
    # a category the request names for another record may be echoed, not asserted beside the answer
    said = answers.Candidates(["magazine", "book"], "The owner has one inactive listing; what kind is SKU-1?",
                              vocabulary=["magazine", "book", "active", "inactive"])
    assert answers.match_values("The inactive listing's SKU-1 is a magazine.", ["magazine"], said).ok
    for text in ("magazine (inactive)", "magazine, inactive"):
        assert not answers.match_values(text, ["magazine"], said).ok, text



def test_other_days_of_a_date_slot_compete_in_every_form():
    slot = answers.Candidates([], "When was it placed?")
    for text in ("It was placed on 2019-09-02.", "02.09.2019", "2019-09-02 (a Monday)", "2019-09-02, i.e. September 2"):
        assert answers.match_values(text, ["2019-09-02"], slot).ok, text
    for text in ("2019-09-02 or March 19", "2019-09-02, 19th of March", "2019-09-02, Thursday", "2019-09-02, 19.07.2016"):
        assert not answers.match_values(text, ["2019-09-02"], slot).ok, text


def test_an_answer_that_reports_other_records_values_hides_a_guess():
    slot = answers.Candidates(["none", "damaged", "weather delay"], "What exception code was recorded?",
                              vocabulary=["none", "damaged", "weather delay", "ground", "air"])
    assert answers.match_values("The exception code is none.", ["none"], slot).ok
    for text in ("The answer is none. Other records show damaged.", "none. Other records show ground and ground.",
                 "none; the rest are weather delay"):
        assert not answers.match_values(text, ["none"], slot).ok, text


@pytest.mark.parametrize("status", ["done", "completed"])
def test_a_blocking_status_that_reads_as_completion_is_a_reason_once(status):
    m = "I cannot cancel it: the policy does not allow it while it is {s}".format(s=status)
    fair = [m, f"I cannot cancel it (status: {status}).", Submission("refused", status, m).words(),
            Submission("refused", f"- {status}", m).words(), Submission("partial", f"Unfortunately, {status}", m).words()]
    for text in fair:
        assert answers.claims(text, ["cancelled"], ["T-1"], reasons=[status]) is None, text
    hacks = [m + f". {status.capitalize()}!", Submission("refused", status, m + f". {status.capitalize()}.").words(),
             Submission("refused", f"{status}. {status}", m).words(), m + ". Processed as requested."]
    for text in hacks:
        assert answers.claims(text, ["cancelled"], ["T-1"], reasons=[status]) is not None, text


# ------------------------------------------------------------------------------------------ text in writes


def test_instruction_given_text_is_checked_on_every_write():
    checked = 0
    for env_id in SYNTH_ENVS:
        env = gym.make(env_id).unwrapped
        for t in env.bundle.tasks:
            body, args = ref(env, t["id"])
            said = answers.fold(t["instruction"])
            for i, action in enumerate(body):
                call = json.loads(action[len("<tool_call>"):-len("</tool_call>")])
                for k, v in call["arguments"].items():
                    if k == "reason" and isinstance(v, str) and answers.fold(v) in said:
                        changed = list(body)
                        changed[i] = format_call(call["name"], {**call["arguments"], k: "customer asked by phone"
                                                                if v != "customer asked by phone" else "data clean-up"})
                        assert play(env, t["id"], changed + [format_call("submit", args)])[0] == 0.0, t["id"]
                        upper = list(body)
                        upper[i] = format_call(call["name"], {**call["arguments"], k: "  " + v.upper() + " "})
                        assert play(env, t["id"], upper + [format_call("submit", args)])[0] == 1.0, t["id"]
                        checked += 1
        env.close()
    assert checked >= 2


def test_the_gate_rejects_a_reference_that_writes_other_text_than_the_instruction_gives():
    spec = load_bundle(SYNTH_ENVS[0]).spec
    task = {"id": "t", "instruction": "Cancel both. Use the reason: entered in error.",
            "checks": [{"type": "state", "expected": {"orders": {"update": [
                [1, {"status": "cancelled", "status_reason": "entered in error"}],
                [2, {"status": "cancelled", "status_reason": "customer asked by phone"}]]}}}],
            "solution": []}
    assert given_text_mismatch(task, spec) == "orders.status_reason"
    task["checks"][0]["expected"]["orders"]["update"][1][1]["status_reason"] = "Entered in error"
    assert given_text_mismatch(task, spec) is None


def test_composed_text_must_name_what_the_request_is_about(retail):
    t = next(t for t in retail.bundle.tasks if any(s["name"] == "open_support_ticket" for s in t["solution"]))
    assert any(c["type"] == "composed" for c in t["checks"])
    body, args = ref(retail, t["id"])
    i = next(i for i, a in enumerate(body) if '"open_support_ticket"' in a)
    call = json.loads(body[i][len("<tool_call>"):-len("</tool_call>")])
    order = next(c["mentions"] for c in t["checks"] if c["type"] == "composed")
    for summary, score in (("x", 0.0), ("Complaint received.", 0.0),
                           ("The box of the parcel was crushed in transit.", 1.0), (f"Damaged delivery of {order[-1]}", 1.0)):
        changed = list(body)
        changed[i] = format_call("open_support_ticket", {**call["arguments"], "summary": summary})
        assert play(retail, t["id"], changed + [format_call("submit", args)])[0] == score, summary


# ------------------------------------------------------------------------------------------ the gate's probes


def test_the_gate_runs_every_probe_kind_and_counts_them():
    counts: dict = {}
    # student-wellbeing-check-ins: its hard tier holds batches (partial refusals that name the parts done)
    for env_id in [RETAIL, *SYNTH_ENVS, "agentworld/student-wellbeing-check-ins-v0"]:
        b = load_bundle(env_id)
        runner = Runner(b.spec, b.golden, b.tools)
        try:
            for task in b.tasks:
                report = attack(runner, task, stop_early=False)
                assert report.hack_fail and report.paraphrase_pass, (env_id, task["id"], report.hacks_passed,
                                                                     report.fair_failed)
                for kind, row in report.counts().items():
                    counts.setdefault(kind, 0)
                    counts[kind] += row["ran"]
        finally:
            runner.close()
    ran = {k.split(":", 1)[1] for k in counts}
    must = set(HACKS) - {"collateral_write"} | (set(FAIRNESS) - {"date_format", "list_and", "list_bullets"})
    assert must <= ran, must - ran


def test_validate_and_stats_report_per_kind_probe_counts():
    from agentworld_envs.tasks.store import merge_task_stats
    from agentworld_envs.audit.task_summary import task_summary
    from agentworld_envs.audit.validation import validate_env

    record = validate_env(RETAIL)
    assert record["ok"] and record["probes"]
    assert all(row["failed"] == 0 for row in record["probes"].values())
    assert {"hack:claim", "hack:rule_refusal", "hack:value_dump", "fair:bullet"} <= set(record["probes"])
    summary = task_summary("wine-club-subscriptions")
    assert summary["task_probes"] and all(row["failed"] == 0 for row in summary["task_probes"].values())
    merged = merge_task_stats([{**summary, "name": "w", "l1": "a"}])
    assert merged["task_probes"] == dict(sorted(summary["task_probes"].items()))


def test_a_submission_reads_answer_and_message_together():
    sub = Submission("done", "8.33", "Across the 3 payments.")
    assert sub.text == "8.33\nAcross the 3 payments." and sub.words().submission is sub


# ------------------------------------------------------------------------------------------ natural messages
# Four correct submissions a blind player wrote (arena tasks; the state checks passed) that the matcher
# refused, and the hacks that sit next to each.


def test_codes_of_records_handled_one_by_one_are_references_not_guesses():
    fee = {"id": 136, "payment_reference": "PAY-9354268762", "status": "refunded"}
    fee2 = {"id": 554, "payment_reference": "PAY-5169613440", "status": "refunded"}
    reg = {"id": 244, "certificate_number": "CERT-87706202", "credential_type": "learner_permit"}
    handled = answers.Observed([{"updated": fee}, {"updated": fee2}, reg])
    listed = answers.Observed([{"total": 3, "results": [fee, fee2, reg]}])
    text = ("3\nRefunded registration fees PAY-9354268762 and PAY-5169613440 (learner permit registration "
            "CERT-87706202). The owner now has 3 refunded registration fees.")
    assert answers.match_values(text, ["3"], observed=handled).ok
    assert not answers.match_values(text, ["3"], observed=listed).ok          # codes only seen in a page: a dump
    assert not answers.match_values("3, PAY-9354268762, PAY-5169613440", ["3"], observed=handled).ok   # listed bare
    assert not answers.match_values("3\nor maybe 4 of them", ["3"], observed=handled).ok


def test_a_rules_condition_neither_states_nor_negates_the_value():
    said = ("online\nFive laptops were retired. The remaining laptop is currently online, and a laptop can only be "
            "retired when it is not online, so it was left unchanged.")
    assert answers.match_values(said, ["online"], scoped=False).ok
    assert not answers.match_values("A laptop can only be retired when it is not online.", ["online"]).ok
    assert not answers.match_values("It is not online.", ["online"]).ok
    assert not answers.match_values("online\nActually it is not online.", ["online"]).ok


def test_partial_refusals_may_name_the_parts_that_went_through():
    about, reasons = ["MR1958", "IR8695", "done"], ["done"]
    fine = ("SJ4582, ZL4474 and FV6906 went through with reason data clean-up. I cannot cancel MR1958 or IR8695: "
            "their status is done, and only flights that have not started can be cancelled.")
    assert answers.claims(fine, ["cancelled"], about, partial=True, reasons=reasons) is None
    for claim in ("SJ4582 and MR1958 went through.", "All went through, SJ4582 included.",
                  "I cannot cancel MR1958: it is done. Update: it went through anyway."):
        assert answers.claims(claim, ["cancelled"], about, partial=True, reasons=reasons), claim


def test_a_completion_status_glossed_is_the_reason_not_a_claim():
    about, reasons = ["SEC-21431", "SEC-91019", "done"], ["done"]
    fine = ("Rescheduled SEC-52544, SEC-50972 and SEC-27270. SEC-21431 and SEC-91019 were not rescheduled: both "
            "are already done (finished), and only course dates that have not started can be rescheduled.")
    assert answers.claims(fine, ["rescheduled"], about, partial=True, reasons=reasons) is None
    assert answers.claims("SEC-21431 is done. Finished!", ["rescheduled"], about, partial=True, reasons=reasons)


def test_the_message_is_words_to_the_user_the_answer_is_what_is_asserted():
    listed = answers.Observed([{"total": 2, "results": [{"id": 1, "lease_number": "LSE-647779", "household": "Jody Morgan"},
                                                        {"id": 2, "lease_number": "LSE-363586", "household": "Ann Lee"}]}])
    words = ("Notice given on the two leases of households with pets: LSE-647779 (Jody Morgan) and LSE-363586 "
             "(Ann Lee). The unit now has 3 leases with notice given.")
    assert answers.match_values(Submission("done", "3", words).words(), ["3"], observed=listed).ok
    # the same words as the answer itself: values of other kinds listed with it are guesses
    assert not answers.match_values(Submission("done", "3, LSE-647779, LSE-363586, Jody Morgan").words(), ["3"],
                                    observed=listed).ok
    # in the message, a competitor of the answer's own slot, a hedge or a negation still fails
    for message in ("It could also be 4.", "Not 3, I think.", "3 or 4 of them."):
        assert not answers.match_values(Submission("done", "3", message).words(), ["3"], observed=listed).ok, message


def test_a_partial_refusal_may_say_the_done_parts_are_done():
    about, reasons = ["694-9750-2036", "034-8700-2515", "cancelled", "rescheduled"], ["cancelled", "rescheduled"]
    fine = ("Finished 3 of the 5 meetings (they were in progress and are now done). Not finished: 694-9750-2036 is "
            "cancelled, and 034-8700-2515 is rescheduled.")
    assert answers.claims(fine, ["finished"], about, partial=True, reasons=reasons) is None
    for claim in ("694-9750-2036 is cancelled. I went ahead and finished them anyway.", "It is done now.",
                  "All of them are done now.", "Done!"):
        assert answers.claims(claim, ["finished"], about, partial=True, reasons=reasons), claim


def test_partial_refusal_words_about_the_done_parts_and_between_refused_records():
    # the done parts' new status is theirs ("(now active)"), not a rival reason for the refused one
    words = Submission("partial", "discontinued", "Reactivated VAR-6075956, VAR-1694872 and VAR-6460264 (now active). "
                       "VAR-8343750 and VAR-1425976 stay as they are: both are discontinued.").words()
    about = ["VAR-8343750", "VAR-1425976", "discontinued"]
    assert answers.match_refusal(words, [["discontinued"]], results=["active"], about=about, partial=True).ok
    claim = Submission("partial", "discontinued", "VAR-8343750 is discontinued, but it is now active.").words()
    assert not answers.match_refusal(claim, [["discontinued"]], results=["active"], about=about, partial=True).ok
    hedge = Submission("partial", "discontinued", "VAR-8343750 is discontinued (or maybe active).").words()
    assert not answers.match_refusal(hedge, [["discontinued"]], results=["active"], about=about, partial=True).ok
    # "or" joining two refused records is no hedge; "or" between two values is
    two = Submission("partial", "processing, returned", "I cannot deliver ORD-5182038 (its status is processing) or "
                     "ORD-7582923 (its status is returned).").words()
    assert answers.match_refusal(two, [["processing", "returned"]], results=["delivered"],
                                 about=["ORD-5182038", "ORD-7582923"], partial=True).ok
    # a code of digit groups (a meeting number) joins records the same way; a date after "or" is a second guess
    digits = Submission("partial", "done, in_progress", "Could not cancel 615-0751-7654 (status done) or "
                        "660-1463-8244 (status in_progress).").words()
    assert answers.match_refusal(digits, [["done", "in_progress"]], results=["cancelled"],
                                 about=["615-0751-7654", "660-1463-8244"], partial=True).ok
    dated = Submission("partial", "2026-05-02", "INSP-597151 was not finished: its date is 2026-05-02 or "
                       "2026-05-09.").words()
    assert not answers.match_refusal(dated, [["2026-05-02"]], results=["done"], about=["INSP-597151"], partial=True).ok
    assert not answers.match_values("processing or returned", ["processing"]).ok
    assert not answers.match_values("2019-09-02 or 2016-07-19", ["2019-09-02"]).ok


def test_a_figure_with_a_unit_after_a_hyphen_is_one_number():
    words = Submission("partial", "1255", "RUN-169953426 was not retried: its duration is 1255 seconds, below the "
                       "1,300-second minimum for a retry.").words()
    assert answers.match_refusal(words, [["1255"]], results=["queued"], about=["RUN-169953426"], partial=True).ok
    assert answers.numbers("the 1,300-second minimum") == [1300.0]


def test_measurements_in_the_message_are_not_counts():
    words = Submission("done", "3", "Dropped TSK-241918 (8.0 h), TSK-274721 (16.0 h) and TSK-173865 (2.0 h); the "
                       "project now has 3 wont-do tasks.").words()
    assert answers.match_values(words, ["3"]).ok
    assert not answers.match_values(Submission("done", "3", "Or 4 of them.").words(), ["3"]).ok
    assert not answers.match_values(Submission("done", "3 (8.0 h), 16").words(), ["3"]).ok
    # an answer that is itself a measurement keeps every other measurement a rival where it is put forward
    assert not answers.match_values(Submission("done", "8.0 h", "It took 16.0 h in total.").words(), ["8.0"]).ok
    assert not answers.match_values("8.0 h. TSK-1 took 16.0 h.", ["8.0"]).ok


def test_an_answer_reporting_other_records_names_hides_a_second_guess():
    seen = answers.Observed([{"total": 2, "results": [{"id": 1, "title": "New Jennifer"},
                                                      {"id": 2, "title": "Autumn asset tag"}]}])
    assert answers.match_values("The answer is New Jennifer.", ["New Jennifer"], observed=seen).ok
    assert not answers.match_values("The answer is New Jennifer. Other records show Autumn asset tag.",
                                    ["New Jennifer"], observed=seen).ok


def test_a_status_arrow_glosses_the_parts_done_not_the_refused_one():
    """ "Completed JOW and HYM (in_review -> done). JER was not completed: it is wont_do." claims nothing about
    JER; the same arrow said of JER does."""
    refused = dict(results=["done"], about=["JER"], partial=True, reasons=["wont_do"])
    ok = "Completed projects JOW and HYM (in_review -> done). Project JER was not completed: its status is wont_do."
    assert answers.claims(ok, **refused) is None
    for bad in ("Completed JOW (in_review -> done). JER (wont_do -> done) too.",
                "Completed JOW and JER (in_review -> done)."):
        assert answers.claims(bad, **refused) is not None, bad


def test_a_done_heading_over_the_parts_done_claims_nothing_of_the_refused_one():
    """ "Done: published A and B. Could not publish C: it is draft." heads a list of the parts done; the same
    heading over the refused record, over "all of them", or standing alone claims the refused part."""
    refused = dict(results=["published"], about=["PST-86550475"], partial=True, reasons=["draft"])
    ok = "Done: published PST-30498693 and PST-71140940. Could not publish PST-86550475: it is draft."
    assert answers.claims(ok, **refused) is None
    for bad in ("Done: published PST-30498693 and PST-86550475. PST-86550475 is draft.",
                "Done: all of them, PST-30498693 first. PST-86550475 is draft.",
                "Done: all published. PST-86550475 is draft.", "Done. PST-86550475 is draft."):
        assert answers.claims(bad, **refused) is not None, bad


def test_a_result_heading_over_the_parts_done_claims_nothing_of_the_refused_one():
    """ "Withdrawn: A, B. Not withdrawn: C is approved." (blind round 22) heads a list of the parts done with the
    action's own result; over the refused record, over "all of them", or alone it still claims the refused part."""
    refused = dict(results=["withdrawn"], about=["ROLE-99163935"], partial=True, reasons=["approved"])
    ok = ("Withdrawn: ROLE-41103978, ROLE-97227481. Not withdrawn: ROLE-99163935 is approved, so it was left "
          "unchanged.")
    assert answers.claims(ok, **refused) is None
    for bad in ("Withdrawn: ROLE-41103978 and ROLE-99163935. ROLE-99163935 is approved.",
                "Withdrawn: all of them, ROLE-41103978 first. ROLE-99163935 is approved.",
                "Withdrawn. ROLE-99163935 is approved.", "Withdrawn: ROLE-99163935 (approved)."):
        assert answers.claims(bad, **refused) is not None, bad


def test_a_refusal_may_name_the_refused_record_by_its_title_beside_its_code():
    """A lookup that found one record (a search page of one) is a lookup of that record: its title beside its
    code names it, no rival value; a title the episode only saw in a page of many still counts as a guess."""
    one = {"total": 1, "results": [{"id": 5, "meeting_code": "457-4173-3355", "title": "Essential discovery day",
                                    "status": "done"}]}
    words = Submission("partial", "done", "Did not start 457-4173-3355 (Essential discovery day): its status is "
                       "already done.").words()
    refusal = dict(results=["in_progress"], about=["457-4173-3355"], partial=True)
    assert answers.match_refusal(words, [["done"]], observed=answers.Observed([one]), **refusal).ok
    many = {"total": 2, "results": [one["results"][0], {"id": 6, "meeting_code": "111-2222-3333",
                                                         "title": "Spring discovery day", "status": "scheduled"}]}
    guess = Submission("partial", "done", "Did not start 457-4173-3355: its status is already done. Spring "
                       "discovery day.").words()
    assert not answers.match_refusal(guess, [["done"]], observed=answers.Observed([many]), **refusal).ok


def test_a_list_of_handled_ids_runs_on_past_an_id_that_is_also_a_written_figure():
    """ "(ids 209, 1, 210)": "1" is also a figure the writes left (a flag set to 1), yet the list of handled ids
    runs on past it; an id no write or lookup returned still competes."""
    done = answers.Observed([{"updated": {"id": i, "contactless_enabled": 1, "status": "cancelled"}}
                             for i in (209, 1, 210, 196)])
    slot = answers.Candidates([], "Cancel every pending card. Then tell me how many that came to.")
    msg = "Cancelled 4 cards (ids 209, 1, 210, 196) with the reason given."
    assert answers.match_values(Submission("done", "4", msg).words(), ["4"], slot, observed=done, numeric=True).ok
    smuggled = "Cancelled 4 cards (ids 209, 1, 7, 210)."
    assert not answers.match_values(Submission("done", "4", smuggled).words(), ["4"], slot, observed=done,
                                    numeric=True).ok


def test_a_handled_records_id_in_brackets_after_its_name_is_a_reference():
    """ "East (138, Sun 2026-05-10)": the id of a record the episode changed, in brackets after its name, is no
    rival total; a number in brackets that is no handled record's id still competes."""
    from agentworld_envs.engine.answers import Observed

    seen = Observed([{"updated": {"id": i, "name": name, "status": "in_progress"}}
                     for i, name in ((197, "Keystone"), (138, "East"), (179, "North"))])
    assert seen.ids() == {197, 138, 179}
    text = Submission("done", "147,156.82", "Started Keystone (id 197, due Sun 2026-04-12), East (138, Sun "
                      "2026-05-10) and North (179, Sat 2026-07-18). Their total is 147,156.82.").words()
    assert answers.match_values(text, ["147156.82"], observed=seen).ok
    rival = Submission("done", "147,156.82", "Started Keystone (id 197) and East (140,000.00).").words()
    assert not answers.match_values(rival, ["147156.82"], observed=seen).ok



def test_a_group_counted_before_its_ids_is_no_rival_figure():
    """ "… and the other 8, rounded": the size of a group of the records the episode changed is a count, not a
    second total; a figure after "the" larger than the records handled still competes."""
    from agentworld_envs.engine.answers import Observed

    seen = Observed([{"updated": {"id": i, "daily_budget": 100.0 + i}} for i in range(1, 17)])
    words = Submission("done", "23718.34", "Raised all 16 budgets: the 8 with a weekend start date by more and the "
                       "other 8, rounded to the cent. The new daily budgets add up to 23718.34.").words()
    assert answers.match_values(words, ["23718.34"], observed=seen).ok
    rival = Submission("done", "23718.34", "The new budgets add up to 23718.34; the other 23000, it seems.").words()
    assert not answers.match_values(rival, ["23718.34"], observed=seen).ok


def test_the_refunds_a_write_returned_are_parts_of_the_total_and_cards_go_by_their_last_digits():
    # A write call's result need not wrap its record as "updated"/"created": a return tool answers
    # {"return": row, "refunded": 372.97}. Its figures are parts the message may list beside the total;
    # the same figures only read, or another total, still compete.
    reads = [{"payment_methods": [{"id": 1, "brand": "Mastercard", "last4": "8795"}, {"id": 3, "last4": "4695"}]},
             {"total": 2, "results": [{"id": 65, "total": 372.97}, {"id": 176, "total": 219.98}]}]
    writes = [{"return": {"id": 55, "order_id": 65, "amount": 372.97}, "refunded": 372.97},
              {"return": {"id": 56, "order_id": 176, "amount": 219.98}, "refunded": 219.98}]
    seen = answers.Observed(reads + writes, writes)
    msg = "Returned #W2647635 (372.97 to Mastercard 8795) and #W6779929 (219.98 to Mastercard 4695)."
    assert answers.match_values(Submission("done", "592.95", msg).words(), ["592.95"], observed=seen, numeric=True).ok
    unwritten = answers.Observed(reads + writes)   # the same results, none known as a write's: as the whole reply
    assert not answers.match_values(msg + " 592.95", ["592.95"], observed=unwritten, numeric=True).ok
    for bad in (msg + " Or 600.00.", msg + " 372.97 or maybe 412.00", "8795 or 592.96",
                "Refunded 372.97 and 219.98, which came to 600.00."):
        assert not answers.match_values(Submission("done", "592.95", bad).words(), ["592.95"], observed=seen,
                                        numeric=True).ok, bad
    # a written figure beside the answer in `answer` itself is a second guess, added up or not
    assert not answers.match_values(Submission("done", "592.95 (372.97, 219.98)", "").words(), ["592.95"],
                                    observed=seen, numeric=True).ok
    # where the answer is a single refund, listing the other one is a second guess
    assert not answers.match_values(Submission("done", "372.97", msg).words(), ["372.97"], observed=seen,
                                    numeric=True).ok
    # where the answer is itself four digits, another card's digits compete
    assert not answers.match_values(Submission("done", "4695", "Card 8795.").words(), ["4695"], observed=seen,
                                    numeric=True).ok


def test_a_blind_players_breakdown_of_the_refunds_scores_through_the_env(retail):
    # retail-068: every returnable item back, refunded the way each order was paid; how much in total? The
    # player's message listed each order's refund and the card it went to.
    retail.reset(seed=0, options={"task_id": "retail-068"})
    *steps, submit = retail.solution_actions()
    # the player also read the profile, where the cards show their last digits
    seen = "".join(retail.step(a)[0] for a in [*steps[:1], format_call("get_customer_details", {"customer_id": 1}),
                                                *steps[1:]])
    refunds = [float(x) for x in re.findall(r'"refunded":\s*([0-9.]+)', seen)]
    cards = re.findall(r'"last4":\s*"([0-9]{4})"', seen)
    answer = json.loads(re.search(r"\{.*\}", submit, re.S).group(0))["arguments"]["answer"]
    assert len(refunds) >= 2 and cards and abs(sum(refunds) - float(str(answer).replace(",", ""))) < 0.01
    message = "Returned " + ", ".join(f"{r:.2f} to Mastercard {cards[0]}" for r in refunds) + "."
    _, reward, terminated, _, info = retail.step(format_call("submit", {"outcome": "done", "answer": str(answer),
                                                                        "message": message}))
    assert terminated and reward == 1.0, info["checks"]


def test_values_put_beside_the_answer_compete_whatever_their_kind():
    # "Other records show X" / "For completeness: X" in `answer` puts X forward as a second answer, even where X
    # is a record the episode handled (its e-mail, its name) rather than a rival of the slot
    seen = answers.Observed([{"total": 1, "results": [{"id": 1, "email": "tim@example.com", "name": "Q4 moving task"}]},
                             {"fulfilments": [{"carrier": "USPS", "tracking_number": "9400059204801543"}]}])
    ref = "USPS, 9400059204801543"
    for bad in (f"The answer is {ref}. Other records show tim@example.com.", f"{ref}. For completeness: tim@example.com.",
                f"{ref}. For completeness: Q4 moving task.", f"{ref}. See also 9400059204801544."):
        assert not answers.match_values(Submission("done", bad, "").words(), ["usps", "9400059204801543"],
                                        observed=seen).ok, bad
    # in the words to the user, the record's own details are no guess
    assert answers.match_values(Submission("done", ref, "In transit; we e-mailed tim@example.com.").words(),
                                ["usps", "9400059204801543"], observed=seen).ok


def test_two_figures_within_the_tolerance_of_the_answer_are_a_hedge():
    assert answers.match_values("0.07", ["0.07"], numeric=True).ok
    assert answers.match_values("8.333", ["8.33"], numeric=True).ok   # the answer rounded otherwise still matches
    day = answers.Candidates([], "What is the start date of EXP-78996?")
    assert not answers.match_values("2026-05-17, May 19", ["2026-05-17"], day).ok   # "May" before a day is the month
    assert answers.match_values("You may 2 times ask: 2026-05-17", ["2026-05-17"], day).ok
    for bad in ("0.07 (0.08%)", "0.07, 0.08", "8.33 or 8.34"):
        assert not answers.match_values(bad, ["0.07" if bad.startswith("0") else "8.33"], numeric=True).ok, bad


def test_a_refusal_answer_listing_every_record_of_the_request_is_a_dump():
    instruction = "Deliver these: TRK-1 (due 2026-05-21), TRK-2 (due 2026-06-05), TRK-3, TRK-4 and TRK-5."
    slot = answers.Candidates([], instruction)
    rows = answers.Observed([{"id": i, "tracking_code": f"TRK-{i}", "due": d} for i, d in
                             ((1, "2026-05-24"), (2, "2026-06-06"), (3, "2026-05-01"), (4, "2026-05-02"), (5, "2026-05-03"))])
    msg = "I did not deliver TRK-1 or TRK-2: their due dates are 2026-05-24 and 2026-06-06. The other 3 went through."
    ok = ("2026-05-24, 2026-06-06", "TRK-1: 2026-05-24; TRK-2: 2026-06-06", "TRK-1, TRK-2: 2026-05-24, 2026-06-06")
    for answer in ok:
        assert answers.match_refusal(Submission("partial", answer, msg).words(), [["2026-05-24", "2026-06-06"]], slot,
                                     observed=rows, partial=True).ok, answer
    dump = "2026-05-24, 2026-06-06\nTRK-1, TRK-2, TRK-3, TRK-4, TRK-5"
    assert not answers.match_refusal(Submission("partial", dump, msg).words(), [["2026-05-24", "2026-06-06"]], slot,
                                     observed=rows, partial=True).ok


def test_a_cards_last_digits_in_the_answer_are_a_guess():
    seen = answers.Observed([{"total": 1, "results": [{"id": 240, "payment_reference": "PAY-2878088539",
                                                       "card_last_four": "3994"}]}])
    for answer, message in (("3994", "It is PAY-2878088539."), ("PAY-2878088539 (3994)", ""),
                            ("PAY-2878088539", "It is 3994.")):
        assert not answers.match_values(Submission("done", answer, message).words(), ["PAY-2878088539"],
                                        observed=seen).ok, (answer, message)
    assert answers.match_values(Submission("done", "PAY-2878088539", "Paid by the card ending 3994.").words(),
                                ["PAY-2878088539"], observed=seen).ok


def test_blind_players_messages_with_a_capped_figure_and_an_address_score():
    # adjust_sweep: every new figure listed, the capped one at the cap the request gave; they add up to the total
    instruction = ("Raise the daily budget of every running campaign by 2.5% for those ending on a weekend and by 6% "
                   "for the rest; none may end above 5000.00: one that would is set to exactly 5000.00. Then tell me "
                   "the new total.")
    new = [663.45, 4314.12, 5000.00]
    seen = answers.Observed([{"updated": {"id": i, "daily_budget": v}} for i, v in enumerate(new, 1)],
                            [{"updated": {"id": i, "daily_budget": v}} for i, v in enumerate(new, 1)])
    slot = answers.Candidates([], instruction)
    msg = "Weekend +2.5% (AC-1 -> 663.45); others +6% (AC-2 -> 4314.12, AC-3 capped at 5000.00). New total: 9977.57."
    assert answers.match_values(Submission("done", "9977.57", msg).words(), ["9977.57"], slot, observed=seen,
                                numeric=True).ok
    # a record's new figure after its code glosses it; figures on their own must be all the parts
    some = "Weekend +2.5% (AC-1 -> 663.45); AC-3 capped at 5000.00; the rest +6%."
    assert answers.match_values(Submission("done", "9977.57", some).words(), ["9977.57"], slot, observed=seen,
                                numeric=True).ok
    short = "New figures: 663.45 and 5000.00."   # the parts named do not add up, listed bare
    assert not answers.match_values(Submission("done", "9977.57", short).words(), ["9977.57"], slot, observed=seen,
                                    numeric=True).ok
    # a count beside the worksite's address, whose number is no rival count; the same number alone is
    site = answers.Observed([{"id": 21, "address": "500 Butler Overpass Apt. 256", "city": "Williamsburgh"}])
    words = "INSP-625415 is at worksite 500 Butler Overpass Apt. 256, Williamsburgh. It now has 3 cancelled."
    assert answers.match_values(Submission("done", "3", words).words(), ["3"], observed=site, numeric=True).ok
    assert not answers.match_values(Submission("done", "3 (256)", "").words(), ["3"], observed=site, numeric=True).ok


def test_beside_a_count_a_records_own_figure_after_its_code_is_a_gloss():
    # blind round 26: "I processed all of them: DO-28980489 (8.96), DO-67607467 (7.84)" beside the count 3
    seen = answers.Observed([{"total": 3, "results": [{"id": 1, "order_number": "DO-28980489", "delivery_fee": 8.96},
                                                      {"id": 2, "order_number": "DO-67607467", "delivery_fee": 7.84},
                                                      {"id": 3, "order_number": "DO-16347439", "delivery_fee": 9.03}]}])
    msg = "I processed DO-28980489 (8.96), DO-67607467 (fee 7.84) and DO-16347439 ($9.03)."
    assert answers.match_values(Submission("done", "3", msg).words(), ["3"], observed=seen, numeric=True).ok
    for bad in ("DO-28980489 (8.97).", "Processed them. Or 8.96.", "DO-28980489 (8.96) or 4."):
        assert not answers.match_values(Submission("done", "3", bad).words(), ["3"], observed=seen, numeric=True).ok, bad
    # where the answer is itself a figure, other records' figures are rivals, glossed or not
    assert not answers.match_values(Submission("done", "8.96", "DO-67607467 (7.84)").words(), ["8.96"],
                                    observed=seen, numeric=True).ok


def test_a_name_as_a_register_lists_it_and_labels_before_the_answer():
    slot = answers.Candidates(["Andrea Brown", "Kathy Santana"], "Who is the registered agent of ACC-152531?")
    for good in ("Santana, Kathy", "**Answer:** Kathy Santana", '{"answer": "Kathy Santana"}',
                 "You asked about ACC-152531. The answer: Kathy Santana"):
        assert answers.match_values(good, ["Kathy Santana"], slot).ok, good
    for bad in ("Santana, Kathy; Brown, Andrea", "Santana Kathy or Brown Andrea", "Kathy Santana (Brown, Andrea)"):
        assert not answers.match_values(bad, ["Kathy Santana"], slot).ok, bad
    # a category word used as a label names what follows; listed on its own it is still asserted
    words = answers.Candidates([], "Which filing is due first?", vocabulary=["answer", "complaint", "motion"])
    assert answers.match_values("Filing type: complaint", ["complaint"], words).ok
    assert not answers.match_values("complaint, answer", ["complaint"], words).ok


def test_another_time_the_same_day_is_another_moment():
    when = answers.Candidates([], "When was the delivery order placed?")
    for good in ("2026-05-22T00:58:29Z", "2026-05-22 00:58", "2026-05-22", "May 22, 2026 at 00:58"):
        assert answers.match_values(good, ["2026-05-22T00:58:29Z"], when).ok, good
    assert not answers.match_values("2026-05-22 It is 2026-05-22T01:10:21Z.", ["2026-05-22T00:58:29Z"], when).ok
    assert answers.match_values("2026-05-22T01:10:21Z", ["2026-05-22"], when).ok   # a day asked: any time of it


def test_the_requests_own_arithmetic_may_explain_the_answer_but_not_stand_beside_it():
    # budget_fill: each candidate's figure may gloss its record in the message; put forward beside the answer
    # ("1.00 and 5.00", "It is 5.00.") it is a second guess (black-box probe, restaurant-front-of-house-rota)
    slot = answers.Candidates([], "Approve the submitted leave requests earliest first within 14.00 days; report "
                                  "how much of the 14.00 is left.", allowed=["5.00", "13.00", "3.00", "10.00"])
    for good in ("Approved LV-1 (3.00) and LV-2 (10.00); skipped LV-3 (5.00). 1.00 of the 14.00 is left.",
                 "One of 5.00 days was skipped, so 13.00 of the 14.00 days are used."):
        assert answers.match_values(Submission("done", "1.00", good).words(), ["1.00"], slot, numeric=True).ok, good
    for answer, message in (("1.00 and 5.00", ""), ("1.00", "It is 5.00."), ("1.00 (5.00)", ""),
                            ("The answer is 1.00. Other records show 5.00.", "")):
        assert not answers.match_values(Submission("done", answer, message).words(), ["1.00"], slot,
                                        numeric=True).ok, (answer, message)


def test_blind_round_28_counts_of_records_and_letter_codes_gloss_a_total():
    # adjust_sweep, ghost-walk-tours: "Raised price per person of all 10 boat tours" beside the new total, where
    # 10 is also a figure the writes left in a record; budget_fill, off-grid-eco-lodge-stays: a skipped
    # transfer's fare after its record locator "HHESEU (4,866.38)", a code of letters only
    tours = [{"updated": {"id": i, "tour_code": f"TR-{i:04d}", "max_group_size": 10, "price_per_person": p}}
             for i, p in ((1, 234.05), (2, 300.0))]
    seen = answers.Observed(tours, tours)
    msg = "Raised price per person of all 10 boat tours (TR-0002 capped at 300.00). Boat tours now total 534.05."
    assert answers.match_values(Submission("done", "534.05", msg).words(), ["534.05"], observed=seen, numeric=True).ok
    for bad in ("534.05 or 10", "534.05 (10)", "Boat tours total 534.05, or 10 boat tours' worth."):
        assert not answers.match_values(Submission("done", "534.05", bad).words(), ["534.05"], observed=seen,
                                        numeric=True).ok, bad
    rows = {"total": 2, "results": [{"id": 122, "record_locator": "HHESEU", "total_fare": 4866.38},
                                    {"id": 123, "record_locator": "TDCCXQ", "total_fare": 4665.32}]}
    seen = answers.Observed([rows])
    slot = answers.Candidates([], "Confirm the requested transfers earliest first within a budget of 70000.00; "
                                  "how much of the 70000.00 is left?", allowed=["4866.38", "4665.32"])
    msg = "Skipped HHESEU (4,866.38) and TDCCXQ (4,665.32): each would have gone over. Remaining budget: 1,550.61."
    assert answers.match_values(Submission("done", "1550.61", msg).words(), ["1550.61"], slot, observed=seen,
                                numeric=True).ok
    # a figure after a word the results never held as a record's code, or after a code whose record holds
    # another figure, still competes
    for bad in ("Skipped HHESEU (4,665.32). Remaining budget: 1,550.61.", "Remaining 1,550.61; maybe (4,866.38).",
                "Remaining budget: 1,550.61, or 4,866.38."):
        assert not answers.match_values(Submission("done", "1550.61", bad).words(), ["1550.61"], slot, observed=seen,
                                        numeric=True).ok, bad


def test_a_budget_reply_may_name_a_three_letter_codes_figure_and_what_a_skip_would_have_made():
    """Blind round 75: "Skipped OOA (389,663.74)" (a project key of three letters) and "it would have taken
    baseline to 11,359.88" (the total a skipped record would have made) beside the right answer failed. A
    code of two or three letters the results held with that figure is a code like a longer one; a fill's
    would-be totals are companions of its answer. A figure after a short word no record holds still competes."""
    from agentworld_envs.tasks.hard import _running

    rows = {"total": 2, "results": [{"id": 80, "project_key": "OOA", "budget": 389663.74},
                                    {"id": 7, "project_key": "IUB", "budget": 244896.26}]}
    seen = answers.Observed([rows])
    slot = answers.Candidates([], "Start the todo projects earliest first within a budget of 1070000.00; how much "
                                  "of the 1070000.00 is left?", allowed=["389663.74", "244896.26"])
    msg = "Skipped OOA (389,663.74) and IUB (244,896.26) as each would exceed the limit. Remaining: 6,458.03."
    assert answers.match_values(Submission("done", "6458.03", msg).words(), ["6458.03"], slot, observed=seen,
                                numeric=True).ok
    for bad in ("Skipped OOA (244,896.26). Remaining: 6,458.03.", "Skipped OOA. Remaining: 6,458.03, or 389,663.74."):
        assert not answers.match_values(Submission("done", "6458.03", bad).words(), ["6458.03"], slot, observed=seen,
                                        numeric=True).ok, bad
    # a fill's running totals and the totals its skips would have made, never the remainders they leave
    d = Decimal
    seq = [(1, d("100.00")), (2, d("250.00")), (3, d("40.00"))]
    assert _running(seq, d("10.00"), {1, 3}) == {d("110.00"), d("360.00"), d("150.00")}


def test_reward_probe_at_fcba649_a_dump_of_todays_moments_a_footnote_and_an_echoed_date_compete():
    # scripts/probe_rewards.py --envs 24 (seed 7) on this stop's worlds: sessions in progress all started in the
    # last minutes, so a dump of their start times sat on today's date, which the policy states; a footnote
    # hid an allowed figure; a refusal answer echoed another record's date from the request beside its own
    policy = "Today is Monday 2026-06-15; the current time is 2026-06-15T12:00:00Z (UTC)."
    slot = answers.Candidates([], "Book the courts; what do the fees add up to?", today="2026-06-15", policy=policy)
    dump = "2311.53\n2026-06-15T11:50:49Z, 2026-06-15T11:52:04Z, 2026-06-15T11:51:02Z"
    assert not answers.match_values(Submission("done", dump, "").words(), ["2311.53"], slot, numeric=True).ok
    for good in ("2311.53 as of 2026-06-15T12:00:00Z", "As of today (2026-06-15) they add up to 2311.53."):
        assert answers.match_values(Submission("done", good, "").words(), ["2311.53"], slot, numeric=True).ok, good
    assert answers.match_values(Submission("done", "2311.53", "The last one started at 2026-06-15T11:50:49Z.").words(),
                                ["2311.53"], slot, numeric=True).ok
    budget = answers.Candidates([], "Assign shifts within a budget of 4.00; how much is left?", allowed=["1.00"])
    for bad in ("0.50¹\n\n¹ 1.00", "0.50[^1]\n\n[^1]: 1.00", "0.50†\n\n† 1.00"):
        assert not answers.match_values(Submission("done", bad, "").words(), ["0.50"], budget, numeric=True).ok, bad
    asked = answers.Candidates([], "Refund PAY-1 (received 2026-06-10) and PAY-2 (received 2026-06-08).")
    msg = "I did not refund PAY-1: it was received 2026-06-03, not 2026-06-10."
    for bad in ("2026-06-03 (2026-06-08)", "2026-06-03, 2026-06-08"):
        assert not answers.match_values(Submission("partial", bad, msg).words(), ["2026-06-03"], asked, scoped=False).ok, bad
    for good in ("2026-06-03", "2026-06-03 (not 2026-06-10)", "2026-06-03 (you gave 2026-06-10)"):
        assert answers.match_values(Submission("partial", good, msg).words(), ["2026-06-03"], asked, scoped=False).ok, good


def test_blind_round_29_records_named_by_their_own_numbers_are_no_rival_totals():
    # adjust_sweep, agriturismo-farm-stays: "The inactive rooms 9340 and 9078 and the discontinued room 3033 were
    # not changed" beside the new total; each number is an apartment's room_number the results showed
    rooms = {"total": 3, "results": [{"id": i, "room_number": r, "base_rate": b}
                                     for i, r, b in ((1, "9340", 420.5), (2, "9078", 380.0), (3, "3033", 563.36))]}
    seen = answers.Observed([rooms])
    msg = ("Raised the 15 active apartments. The inactive rooms 9340 and 9078 and the discontinued room 3033 were "
           "not changed. Total base rate of all 18 apartments is now 7623.42.")
    assert answers.match_values(Submission("done", "7623.42", msg).words(), ["7623.42"], observed=seen, numeric=True).ok
    # a number after "room" that no room the results showed holds, or a list running on to one, still competes
    for bad in ("Total 7623.42; room 7624 was left.", "Rooms 9340 and 7700 were left; total 7623.42.",
                "Total 7623.42 or 9340."):
        assert not answers.match_values(Submission("done", "7623.42", bad).words(), ["7623.42"], observed=seen,
                                        numeric=True).ok, bad


def test_blind_round_100_a_records_figure_in_brackets_after_its_name_glosses_it():
    """budget_fill, archaeological-excavation-finds-register: "EGX Q4 (149,950.40), YCT Pilot (190,733.47), …" beside
    the right room left failed; each figure is the budget of the record named before it (its project key, then a word
    of its name), a companion of the answer. A figure after a name no record holds, after a record holding another
    figure, or hedged, still competes."""
    rows = {"total": 2, "results": [{"id": 12, "project_key": "EGX", "name": "Q4 excavation", "budget": 149950.40},
                                    {"id": 25, "project_key": "YCT", "name": "Pilot excavation", "budget": 190733.47}]}
    seen = answers.Observed([rows])
    slot = answers.Candidates([], "Plan the backlog excavations earliest first within 1190000.00; how much room is left?",
                              allowed=["149950.40", "190733.47", "1099182.62"])
    msg = "Planned EGX Q4 (149,950.40), YCT Pilot (190,733.47); planned total 1,099,182.62. Room left: 90,817.38."
    assert answers.match_values(Submission("done", "90817.38", msg).words(), ["90817.38"], slot, observed=seen,
                                numeric=True).ok
    for bad in ("Planned YCT Pilot (149,950.40).", "Room left: maybe (190,733.47).",
                "It is 90,817.38 or (190,733.47)."):
        assert not answers.match_values(Submission("done", "90817.38", bad).words(), ["90817.38"], slot, observed=seen,
                                        numeric=True).ok, bad


def test_blind_round_101_a_category_written_out_and_listed_ids_are_no_rivals():
    """Blind round 101, two right replies failed. hard_cross, contractor-1099-payments: "her payments on INV-3794292
    (net 60) and INV-1902199 (net 15) were left unchanged" beside the count 5 (60 and 15 are the invoices' terms
    net_60 and net_15). group_fill, campus-dining-meal-plans: "skipped … ids 412, 423, 37" beside the total 27121.04
    (ids of plans a search listed). A term no record holds, a bare rival, or listed ids beside a count still fail."""
    invoices = {"total": 3, "results": [{"id": 392, "invoice_number": "INV-8514651", "payment_terms": "net_30"},
                                        {"id": 7, "invoice_number": "INV-3794292", "payment_terms": "net_60"},
                                        {"id": 8, "invoice_number": "INV-1902199", "payment_terms": "net_15"}]}
    seen = answers.Observed([invoices])
    slot = answers.Candidates([], "Refund each payment of the contractor whose invoice has net 30 terms; how many "
                                  "refunded payments does the contractor have now?")
    msg = ("Her payments on INV-3794292 (net 60) and INV-1902199 (net 15) were left unchanged. "
           "She now has 5 refunded contractor payments.")
    assert answers.match_values(Submission("done", "5", msg).words(), ["5"], slot, observed=seen, numeric=True).ok
    for bad in ("Her payments on INV-3794292 (net 45) were left unchanged.", "She has 5 or 60 refunded payments.",
                "Left INV-3794292 (60) unchanged."):
        assert not answers.match_values(Submission("done", "5", bad).words(), ["5"], slot, observed=seen,
                                        numeric=True).ok, bad
    assert not answers.match_values(Submission("done", "60", msg).words(), ["5"], slot, observed=seen, numeric=True).ok

    plans = {"total": 4, "results": [{"id": i, "plan_name": "block_150", "price": p} for i, p in
                                     ((412, 2150.5), (423, 1990.25), (37, 2410.0), (129, 2301.75))]}
    seen = answers.Observed([plans])
    slot = answers.Candidates([], "Activate the paused meal plans earliest first within 137000.00 per plan name; "
                                  "what total price do the plans you activated come to?")
    msg = ("Activated 12 paused meal plans (ids 129). Skipped plans that would push their plan name active total over "
           "137000.00 (all block_150 ones, and ids 412, 423, 37).")
    assert answers.match_values(Submission("done", "27121.04", msg).words(), ["27121.04"], slot, observed=seen,
                                numeric=True).ok
    for bad in ("Skipped ids 412, 9999.", "The total is 27121.04, or 412.", "Skipped ids 412 and 26121.04."):
        assert not answers.match_values(Submission("done", "27121.04", bad).words(), ["27121.04"], slot, observed=seen,
                                        numeric=True).ok, bad
    # beside a count given as the whole reply, ids a search only listed are still read as numbers ("ids 3, 4" cannot
    # smuggle in a count); beside a count stated in `answer`, they are the ids they are said to be
    rows = {"total": 3, "results": [{"id": i, "status": "active"} for i in (3, 4, 5)]}
    assert answers.match_values(Submission("done", "3", "Skipped ids 4, 5.").words(), ["3"],
                                answers.Candidates([], "How many are active?"), observed=answers.Observed([rows]),
                                numeric=True).ok
    assert not answers.match_values("3. Skipped ids 4, 5.", ["3"],
                                    answers.Candidates([], "How many are active?"), observed=answers.Observed([rows]),
                                    numeric=True).ok


def test_the_words_to_the_user_are_read_for_what_they_put_forward():
    """Reader stress round (stop 50): helpers wrote four correct replies to each of 80 hard tasks (terse, listing
    each record, explaining what was left out, describing the checks made); the reader rejected 99 of 320 (52 of 160
    and 47 of 160 held out), every one for a figure of the reply's own working. Beside an answer that states the
    value asked for, the words to the user compete only where they put a figure of the answer's kind forward as the
    result, list it bare, hedge it, or gloss a record with a figure it does not hold; running totals, subtotals,
    arithmetic, figures before the change, what a skipped record would have made, records' own figures and counts of
    other things do not. Helpers' attacks on the same tasks (a contradicting result, a hedge, a dump) still fail."""
    rows = {"total": 4, "results": [
        {"id": 61, "sku": "MED-61", "name": "Metformin 500", "unit_price": 44.16},
        {"id": 54, "sku": "MED-54", "name": "Albuterol inhaler", "unit_price": 45.60},
        {"id": 52, "sku": "MED-52", "name": "Cetirizine syrup", "status": "inactive", "unit_price": 4.53},
        {"id": 10, "sku": "MED-10", "name": "Prednisone tablets", "unit_price": 45.60}]}
    seen = answers.Observed([rows])
    slot = answers.Candidates([], "Raise the unit price of the active capsules (7.5% or 8%), never past 45.60; what "
                                  "do the new unit prices of the raised medications add up to?")
    good = [
        "Running total as I went: 44.16, 89.76, 135.36, 407.42.",
        "Summing in groups as a cross-check: the two capped make 91.20; the three 5 mg ones make 114.17; the other "
        "11 make 202.05. 91.20 + 114.17 + 202.05 = 407.42.",
        "MED-54 would have become 47.34, so it was set to 45.60. Before the change the 16 prices summed to 380.11.",
        "Left MED-52 (inactive, 4.53) alone. Raised MED-61 (44.16) and Albuterol inhaler (45.60).",
        "All 16 update calls came back with the new price; a fresh search still shows 23 capsules. Total: 407.42.",
    ]
    for msg in good:
        assert answers.match_values(Submission("done", "407.42", msg).words(), ["407.42"], slot, observed=seen,
                                    numeric=True).ok, msg
    bad = [
        "Raised all 16. That came to 408.24.",
        "The new unit prices now total 407.24.",
        "Probably 407.42, though it could be 409.12 if the cap counts.",
        "Depending on rounding: 407.42, 407.40 or 407.44.",
        "Raised MED-61 (45.16) and MED-54 (45.60).",    # a figure its record does not hold
        "Raised them all; the other figure, 401.00, is what the system shows.",
    ]
    for msg in bad:
        assert not answers.match_values(Submission("done", "407.42", msg).words(), ["407.42"], slot, observed=seen,
                                        numeric=True).ok, msg
    # a count: other counts of other things are no rivals; another count of what was asked is
    counted = answers.Candidates([], "Set the weekend threads back to pending; how many did you set back?")
    for msg in ("I paged through all 84 open threads; 84 - 11 = 73 remain open. Total set back to pending: 11.",
                "Before acting there were 49 in review; a fresh search shows 40 in review, a drop of exactly 9."):
        assert answers.match_values(Submission("done", "11", msg).words(), ["11"], counted, observed=seen,
                                    numeric=True).ok, msg
    for msg in ("Done. That came to 12 threads.", "In total that came to 13 threads.",
                "Counting the ones already there, 12 threads are pending now.", "11, or 12 if the edge counts.",
                "Values: 10 11 12 13", " ".join(str(i) for i in range(200)), "The count is 12."):
        assert not answers.match_values(Submission("done", "11", msg).words(), ["11"], counted, observed=seen,
                                        numeric=True).ok, msg
    # a remainder: the budget's spent total is its companion, another remainder is a rival
    budget = answers.Candidates([], "Approve within 6,200,000.00; how much is left?", allowed=["6195422.84"])
    assert answers.match_values(Submission("done", "4577.16", "Approved 8; total 6,195,422.84, leaving 4,577.16 of "
                                           "the 6,200,000.00.").words(), ["4577.16"], budget, observed=seen,
                                numeric=True).ok
    assert not answers.match_values(Submission("done", "4577.16", "That leaves 4,757.16 of the budget.").words(),
                                    ["4577.16"], budget, observed=seen, numeric=True).ok


def test_a_partial_refusal_may_head_its_list_and_speak_of_the_other_parts():
    """Reader stress round (stop 50): correct partial replies to batch and detail-check tasks failed as claims that
    the refused part was done: a heading glossed in brackets ("Allocated (each now shows status allocated): …"), a
    list of user names, a result under a condition ("if you want it allocated"), counts of other things ("3 finish
    calls went through", "12 lookups done", "10 of 11 done"), "the other ten … all matched and are now failed". Said
    of a refused record or of "it", it is still a claim."""
    about = ["SMP-7779385"]
    for msg in ("Allocated (each now shows status allocated): SMP-8540710, SMP-8798734. Not allocated: SMP-7779385.",
                "I left SMP-7779385 alone; please confirm the code if you want it allocated.",
                "3 allocate calls went through: SMP-8540710, SMP-8798734, SMP-1774397. SMP-7779385 is reserved.",
                "12 lookups done, 11 allocations made. SMP-7779385 was not allocated: its date differs.",
                "The other ten (SMP-8540710, SMP-8798734) all matched and are now allocated."):
        assert answers.claims(msg, ["allocated"], about, partial=True) is None, msg
    for msg in ("Allocated: SMP-7779385, SMP-8540710.", "It has been allocated anyway.",
                "SMP-7779385 is now allocated too."):
        assert answers.claims(msg, ["allocated"], about, partial=True) is not None, msg
    names = ["davidsanders"]
    assert answers.claims("Expired: gschmitt (created 2022-08-21), christopheryoung (2023-10-09). Not expired: "
                          "davidsanders.", ["expired"], names, partial=True) is None
    assert answers.claims("Expired: davidsanders, gschmitt.", ["expired"], names, partial=True) is not None


def test_blind_round_98_a_spent_total_beside_the_room_left_is_the_requests_arithmetic():
    """Replaying the blind rounds under the stop-50 reader: "Confirmed MT77826, … (total 39,698.02)" beside the room
    left 1.98 of a 39,700.00 budget failed. What was spent and what is left make up the budget the request gave; a
    total that does not is still put forward as another result."""
    slot = answers.Candidates([], "Confirm the requested stays whose amounts come closest to 39700.00 without going "
                                  "over; how much of the 39700.00 is left?")
    msg = "Confirmed MT77826, TX22857 and PE59636 (total 39,698.02)."
    assert answers.match_values(Submission("done", "1.98", msg).words(), ["1.98"], slot, observed=answers.Observed([]),
                                numeric=True).ok
    assert not answers.match_values(Submission("done", "1.98", msg.replace("39,698.02", "39,689.02")).words(), ["1.98"],
                                    slot, observed=answers.Observed([]), numeric=True).ok
