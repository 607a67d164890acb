"""Rewards that cannot be gamed and accept every correct answer: exact state diffs, the answer
matcher, refusals with evidence, the gate's hack and fairness probes, and action semantics."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine import answers
from agentworld_envs.engine.actions import ActionError, format_call, parse_calls
from agentworld_envs.catalogue.catalog import load_bundle
from agentworld_envs.tasks.probes import HACKS, attack, fairness_probes, hack_probes
from agentworld_envs.tasks.runner import Runner
from agentworld_envs.audit.validation import validate_env

RETAIL = "agentworld/retail-v0"
SYNTH = "agentworld/wine-club-subscriptions-v0"
SYNTH_ENVS = [SYNTH, "agentworld/acupuncture-clinic-v0", "agentworld/florist-same-day-delivery-v0"]


def play(env, task_id: str, actions: list[str]) -> tuple[float, dict]:
    env.reset(options={"task_id": task_id})
    info: dict = {}
    for a in actions:
        _, reward, term, trunc, info = env.step(a)
        if term or trunc:
            return reward, info
    return 0.0, info


def body(task) -> list[str]:
    return [format_call(s["name"], s["arguments"]) for s in task["solution"] if s["name"] != "submit"]


def submit(answer=None) -> str:
    return format_call("submit", {} if answer is None else {"answer": answer})


@pytest.fixture(scope="module")
def retail():
    e = gym.make(RETAIL).unwrapped
    yield e
    e.close()


# ------------------------------------------------------------------------------------------ answer matcher

@pytest.mark.parametrize("text, expected", [
    ("The answer is 42.", ["42"]),
    ("83.00.", ["83.00"]),
    ("28.73 ml", ["28.73"]),
    ("$1,234.50", ["1234.50"]),
    ("511-941-6346", ["5119416346"]),
    ("(511) 941 6346", ["511-941-6346"]),
    ("#W1 and #W2", ["#W1", "#W2"]),
    ("There are 104 high-priority closing tasks.", ["104"]),
    ("It was delivered on March 5, 2026.", ["2026-03-05"]),
    ("It is SILVER.", ["silver"]),
    ("You have three delivered orders.", ["3"]),
    ("The balance is €-51,33.", ["-51.33"]),                 # a decimal comma after a sign after the currency
    ("Net change: EUR -51,33", ["-51.33"]),
])
def test_correct_answers_in_prose_pass(text, expected):
    assert answers.match_values(text, expected, answers.Candidates(["gold", "silver", "#W3"])).ok


@pytest.mark.parametrize("text, days", [
    ("the weekend of 13-14 June 2026", ["2026-06-13", "2026-06-14"]),
    ("Saturday 13 and Sunday 14 June 2026", ["2026-06-13", "2026-06-14"]),
    ("June 13-14, 2026", ["2026-06-13", "2026-06-14"]),
    ("12, 13 and 14 June 2026", ["2026-06-12", "2026-06-13", "2026-06-14"]),
])
def test_days_sharing_one_month_are_days_not_figures(text, days):
    """Blind round 87: "the weekend of 13-14 June 2026" in a reply named 13 as a rival of its total."""
    assert sorted(answers.dates(text)) == days and answers.numbers(text) == []
    # without a year, the listed day is read as the day beside its month is (never as a figure of its own)
    assert 13.0 not in answers.numbers(text.replace(" 2026", "").replace(",", ""))


@pytest.mark.parametrize("text, expected, candidates", [
    ("gold, silver, bronze", ["silver"], ["gold", "silver", "bronze"]),           # a dump of labels
    ("1, 2, 3, 41, 42, 43", ["42"], []),                                         # a dump of numbers
    ("#W1, #W2 and #W3", ["#W1", "#W2"], ["#W1", "#W2", "#W3"]),                 # an extra member
    ("silvery", ["silver"], ["gold", "silver"]),                                 # not the whole word
    ("43", ["42"], []),
    ("one, two, three or four", ["3"], []),                                     # spelled-out hedging
    ("-51.33 / --51.33", ["-51.33"], []),                                       # a doubled sign is another figure
    ("13-14", ["14"], []),                                                      # a range of figures is no date
    ("13 or 14 June", ["13"], []),                                              # a figure beside a day is no day
])
def test_hedged_or_wrong_answers_fail(text, expected, candidates):
    assert not answers.match_values(text, expected, answers.Candidates(candidates)).ok


@pytest.mark.parametrize("text, ok", [
    ("The order is shipped; it hasn't been delivered yet.", True),
    ("Shipped (not delivered).", True),
    ("It's shipped, not pending.", True),
    ("It isn't pending, isn't shipped, isn't delivered, isn't cancelled.", False),   # every value negated
    ("It is not shipped.", False),                                                    # the value negated
])
def test_negated_mentions_neither_compete_nor_count(text, ok):
    cands = answers.Candidates(["pending", "shipped", "delivered", "cancelled"])
    assert answers.match_values(text, ["shipped"], cands).ok is ok


def test_echoing_the_instruction_is_not_hedging():
    cands = answers.Candidates(["open", "closed", "pending"], instruction="Is ticket T-9 open or closed?")
    assert answers.match_values("Ticket T-9 is closed.", ["closed"], cands).ok
    m = answers.match_values("Customer 57 has 3 orders.", ["3"], answers.Candidates([], "How many orders has customer 57?"))
    assert m.ok


@pytest.mark.parametrize("text, ok", [
    ("I can’t cancel it: the order was already delivered.", True),           # curly apostrophe
    ("I'm not able to cancel that order, it has been delivered.", True),
    ("I could not cancel it because it is delivered.", True),
    ("Sorry, I cannot do that.", False),                                     # no reason
    ("Cancelled successfully! … I can't help with?", False),                 # claims the action
    ("I can't: it is pending, shipped, delivered, returned.", False),        # padded with every status
    ("It is delivered, so I cancelled it.", False),                          # no refusal at all
])
def test_refusals_need_a_negation_the_reason_and_no_claim(text, ok):
    cands = answers.Candidates(["shipped", "returned", "processing"])
    assert answers.match_refusal(text, [["delivered"]], cands, results=["cancelled"]).ok is ok


@pytest.mark.parametrize("text, ok", [
    ("I cannot give notice on the lease: it is terminated.", True),
    ("Given that the lease is terminated, I cannot give notice on it.", True),      # the preposition
    ("I cannot give notice on the lease: it is terminated. I gave notice on it anyway.", False),
    ("I cannot give notice on the lease: it is terminated. It has been gived.", False),
    ("I cannot give notice on the lease: it is terminated. It has been given.", False),
])
def test_a_claim_in_an_irregular_verb_form_is_a_claim(text, ok):
    """The action's result is the status "notice_given"; "gave" and "gived" say it as much as "given"."""
    cands = answers.Candidates(["active", "ended"], instruction="Please give notice on the lease LSE-1.")
    assert answers.match_refusal(text, [["terminated"]], cands, results=["notice_given"]).ok is ok


@pytest.mark.parametrize("text, ok", [
    ("4", True),
    ("The position of the member with rating 5 has 4 dossiers in screening.", True),   # the request's 5, echoed
    ("4, 5", False), ("4 (5%)", False), ("4, five", False),                            # listed beside the answer
])
def test_a_number_of_the_request_listed_beside_the_answer_is_a_second_answer(text, ok):
    cands = answers.Candidates([], instruction="For the member with rating 5: how many dossiers are in screening?")
    assert answers.match_values(text, ["4"], cands).ok is ok


def test_a_records_title_in_brackets_after_its_code_is_no_rival_reason():
    """Blind round 68 (luxury-fashion-consignment syn-001): a partial refusal saying "The consigned piece
    LST-8464041 (Main consigned piece) … is published" failed as naming a rival value. A title in brackets
    after the code of the record that holds it glosses that record."""
    from agentworld_envs.engine.submission import Submission

    piece = lambda i, code, title, status: {"id": i, "listing_code": code, "consignor_id": 103, "title": title,  # noqa: E731
                                            "price": 100.0 + i, "listed_at": "2026-04-02T00:39:40Z", "status": status}
    results = [{"id": 104, "inspection_number": "INSP-479644", "score": 38, "status": "done"},
               {"id": 103, "store_name": "Barberini-Trillini e figli", "joined_on": "2025-01-13"},
               {"total": 3, "offset": 0, "results": [piece(499, "LST-4341553", "Summit consigned piece", "in_review"),
                                                     piece(134, "LST-4573507", "Autumn consigned piece", "published"),
                                                     piece(18, "LST-8464041", "Main consigned piece", "published")]},
               {"updated": {"id": 104, "inspection_number": "INSP-479644", "score": 40, "status": "done"}}]
    seen = answers.Observed(results, writes=results[-1:])
    cands = answers.Candidates(["published", "archived"], "Hi, set the score to 40 for authentication INSP-479644. And "
                               "could you return the consigned piece of the consignor named Barberini-Trillini e figli "
                               "listed on 2026-04-02 to draft? Thank you.", allowed=["draft", "in_review", "scheduled"],
                               vocabulary=["draft", "in_review", "scheduled", "published", "archived", "done"],
                               nouns=["consignors", "consignor", "consigned_pieces", "consigned_piece", "piece",
                                      "authentications", "authentication"], today="2026-06-15",
                               rule="Only return a consigned piece to draft when it is in review or scheduled.")
    said = ("Authentication INSP-479644 score set to 40. The consigned piece LST-8464041 (Main consigned piece) of "
            "Barberini-Trillini e figli listed on 2026-04-02 is published; only in_review or scheduled pieces can be "
            "returned to draft, so it was left unchanged.")
    check = dict(results=["draft"], about=["Barberini-Trillini e figli"], declared=True, partial=True, observed=seen)
    assert answers.match_refusal(Submission("partial", "published", said).words(), [["published"]], cands, **check).ok
    # another record's title standing as a value of its own is still a rival
    rival = said.replace("left unchanged.", "left unchanged. Summit consigned piece.")
    assert not answers.match_refusal(Submission("partial", "published", rival).words(), [["published"]], cands, **check).ok


def test_a_list_of_handled_ids_with_names_in_brackets_is_a_list_of_ids():
    """Blind round 72 (smart-sprinkler-zones syn-901): "deactivated their active watering programs 39 (Heritage) and
    16 (Advanced)" beside the count 6 failed as naming 16: the name in brackets broke the list of ids."""
    from agentworld_envs.engine.submission import Submission

    program = lambda i, name: {"updated": {"id": i, "program_code": f"WP-{i:04d}", "name": name,  # noqa: E731
                                           "status": "inactive"}}
    results = [program(39, "Heritage"), program(16, "Advanced")]
    seen = answers.Observed(results, writes=results)
    cands = answers.Candidates([], "Retire every irrigation controller in maintenance installed on a weekend more than "
                               "79 days before today. Then tell me how many you retired.",
                               nouns=["irrigation_controllers", "irrigation_controller", "controller", "watering_programs",
                                      "watering_program", "program"], today="2026-06-15")
    said = "Retired 6 controllers; deactivated their active watering programs 39 (Heritage) and 16 (Advanced)."
    assert answers.match_values(Submission("done", "6", said).words(), ["6"], cands, observed=seen).ok
    # a number the episode never handled as a record stays a second count, brackets or not
    rival = said.replace("16 (Advanced)", "7 (Advanced)")
    assert not answers.match_values(Submission("done", "6", rival).words(), ["6"], cands, observed=seen).ok


def test_a_partial_refusal_may_count_the_records_it_did_change():
    """Blind round 86 (hot-air-balloon-flights syn-913): "22, 24" with "Finished 7 flight slots: ...; did not finish
    DEP-938432: the record holds 22 seats booked, not 23" failed as naming 7, a seats-booked value elsewhere in the
    world. The number of records the allowed parts changed is a count beside the reason; any other stays a rival."""
    from agentworld_envs.engine.submission import Submission

    cands = answers.Candidates([22, 24, 7, 12, 8, 6, 11, 3, 4, 23, 25], "I have 9 flight slots to finish, each with its "
                               "seats booked as I have it: DEP-938432 (with seats booked 23); DEP-727504 (with seats "
                               "booked 25).", nouns=["flight_slots", "flight_slot", "slot"], today="2026-06-15")
    said = ("Finished 7 flight slots: DEP-621716, DEP-020245. Did not finish DEP-938432: the record holds 22 seats booked, "
            "not 23. Did not finish DEP-727504: the record holds 24 seats booked, not 25.")
    reply = lambda text: Submission("partial", "22, 24", text).words()  # noqa: E731
    ok = lambda text, done: answers.match_refusal(reply(text), [[22, 24]], cands, results=["done"],  # noqa: E731
                                                  about=["DEP-938432", "DEP-727504"], declared=True, partial=True,
                                                  done=done).ok
    assert ok(said, 7)
    assert not ok(said, None)                                   # without the count it is a rival value
    assert not ok(said.replace("Finished 7", "Finished 8"), 7)  # a count the parts did not come to still competes


def test_a_price_rise_reply_may_list_each_raised_records_new_figure_after_its_key():
    """Blind round 73 (library-upgrade-campaigns syn-901): the right total beside "Advanced (LXE) 95,883.97;
    Annual (LIY) 267,345.77 …" failed as naming other values: a project's key in brackets before the figure the
    episode wrote into it is that record's figure, not a second total."""
    from agentworld_envs.engine.submission import Submission

    camp = lambda i, key, name, budget: {"updated": {"id": i, "project_key": key, "name": name,  # noqa: E731
                                                     "priority": "high", "budget": budget}}
    results = [camp(14, "LXE", "Advanced upgrade campaign", 95883.97), camp(66, "LIY", "Annual upgrade campaign", 267345.77),
               {"value": 4879574.99}]
    seen = answers.Observed(results, writes=results[:2])
    cands = answers.Candidates([], "Raise the budget of every upgrade campaign with priority high by 6%. Then report "
                               "what the budget figures of all upgrade campaigns with priority high add up to.",
                               allowed=["95883.97", "267345.77", "90456.58", "252212.99"],
                               nouns=["upgrade_campaigns", "upgrade_campaign", "campaign"], today="2026-06-15")
    said = "Raised: Advanced (LXE) 95,883.97; Annual (LIY) 267,345.77. Total budget is now 4,879,574.99."
    assert answers.match_values(Submission("done", "4,879,574.99", said).words(), ["4879574.99"], cands, observed=seen).ok
    # a figure the record does not hold is a value of its own
    rival = said.replace("267,345.77", "4,880,000.00")
    assert not answers.match_values(Submission("done", "4,879,574.99", rival).words(), ["4879574.99"], cands,
                                    observed=seen).ok


def test_a_second_guess_inside_a_restated_rule_is_a_hedge():
    policy = "A job stream may have at most 1 queued or running job step at a time."
    cands = answers.Candidates([], instruction="Please add a job step to RUN-7.", policy=policy)
    said = "I cannot add it: A job stream may have at most 1 queued or running job step at a time. It already has 1."
    assert answers.match_refusal(said, [["1", "RUN-7"]], cands).ok is False   # the code is not named yet
    said = said.replace("add it", "add it to RUN-7")
    assert answers.match_refusal(said, [["1", "RUN-7"]], cands).ok
    hedged = said.replace("1 queued or", "1 queued (or possibly failed) or")
    m = answers.match_refusal(hedged, [["1", "RUN-7"]], cands)
    assert not m.ok and "hedges" in m.detail


def test_list_members_split_on_and_newlines_and_bullets():
    assert answers.split_list("A1, B2 and C3") == ["A1", "B2", "C3"]
    assert answers.split_list("- A1\n- B2") == ["A1", "B2"]
    assert answers.match_set("A1 and B2", ["A1", "B2"]).ok
    assert not answers.match_set("A1, B2, C3", ["A1", "B2"]).ok


# ------------------------------------------------------------------------------------------ exact state

def test_collateral_writes_to_other_rows_of_an_allowed_table_fail(retail):
    """retail: the reference cancel plus cancelling other customers' pending orders."""
    task = next(t for t in retail.bundle.tasks if t["tags"] == ["write", "cancel"])
    assert play(retail, task["id"], body(task) + [submit()])[0] == 1.0
    target = next(s for s in task["solution"] if s["name"] == "cancel_pending_order")["arguments"]["order_number"]
    others = [r[0] for r in retail.bundle.initial.execute(
        "SELECT order_number FROM orders WHERE status = 'pending' AND order_number != ? ORDER BY id LIMIT 5", (target,))]
    extra = [format_call("cancel_pending_order", {"order_number": o, "reason": "no longer needed"}) for o in others]
    reward, info = play(retail, task["id"], body(task) + extra + [submit()])
    assert reward == 0.0
    state_check = next(c for c in info["checks"] if c["type"] == "state")
    assert not state_check["passed"] and "orders" in state_check["detail"]


def test_collateral_stock_write_fails(retail):
    task = next(t for t in retail.bundle.tasks if "inventory" in t["tags"]
                and any(s["name"] == "set_variant_stock" for s in t["solution"]))
    sku = next(s for s in task["solution"] if s["name"] == "set_variant_stock")["arguments"]["sku"]
    other = retail.bundle.initial.execute("SELECT sku FROM variants WHERE sku != ? AND stock > 0 ORDER BY id LIMIT 1",
                                          (sku,)).fetchone()[0]
    reward, _ = play(retail, task["id"], body(task) + [format_call("set_variant_stock", {"sku": other, "stock": 0}),
                                                       submit()])
    assert reward == 0.0


def test_the_cancel_reason_the_instruction_gives_is_checked(retail):
    task = next(t for t in retail.bundle.tasks if t["tags"] == ["write", "cancel"])
    steps = [s for s in task["solution"] if s["name"] != "submit"]
    wrong = [dict(s, arguments={**s["arguments"], "reason": "ordered by mistake"})
             if s["name"] == "cancel_pending_order" and s["arguments"]["reason"] != "ordered by mistake" else s for s in steps]
    assert wrong != steps
    assert play(retail, task["id"], [format_call(s["name"], s["arguments"]) for s in wrong] + [submit()])[0] == 0.0


def test_quoting_the_answer_contract_names_no_rival_date(retail):
    """Reward probe seed 17: a refusal quoting the answer contract shown after the policy ("dates as 2026-03-05, March
    5, 2026 …") beside its blocking date failed on those example dates. The contract is public text, blanked like the
    policy's own words where a reply quotes it; a date of the reply's own beside the answer still competes."""
    from agentworld_envs.engine.submission import ANSWER_CONTRACT

    task = next(t for t in retail.bundle.tasks if t["id"] == "retail-055")   # a return refused on its delivery date
    args = task["solution"][-1]["arguments"]
    assert args["outcome"] == "refused" and args["answer"] == "2026-01-16"
    rule = next(s for s in ANSWER_CONTRACT.split(". ") if s.startswith("Put only"))
    quoting = format_call("submit", {**args, "message": f"{args['message']} The policy: {rule}."})
    assert play(retail, task["id"], body(task) + [quoting])[0] == 1.0
    rival = format_call("submit", {**args, "message": f"{args['message']} Or was it delivered on 2026-03-05?"})
    assert play(retail, task["id"], body(task) + [rival])[0] == 0.0


@pytest.mark.parametrize("env_id", SYNTH_ENVS)
def test_synthesised_collateral_writes_fail(env_id):
    env = gym.make(env_id).unwrapped
    b = env.bundle
    runner = Runner(b.spec, b.golden, b.tools)
    seen = 0
    try:
        import random

        for task in b.tasks:
            for name, steps in hack_probes(runner, task, random.Random(0)):
                if name in ("collateral_write", "unrelated_write"):
                    seen += 1
                    reward, info = play(env, task["id"], [format_call(s["name"], s["arguments"]) for s in steps])
                    assert reward == 0.0, (task["id"], name)
                    assert not next(c for c in info["checks"] if c["type"] == "state")["passed"]
    finally:
        runner.close()
        env.close()
    assert seen >= 3


# ------------------------------------------------------------------------------------------ refusals and dumps

def test_blanket_and_padded_refusals_fail_on_every_retail_trap(retail):
    traps = [t for t in retail.bundle.tasks if "trap" in t["tags"]]
    assert len(traps) >= 12
    enum = sorted({v for t in retail.bundle.spec["tables"] for c in t["columns"] for v in c.get("enum", [])})
    for t in traps:
        assert play(retail, t["id"], [submit("Sorry, I cannot do that.")])[0] == 0.0
        assert play(retail, t["id"], [submit("I can't do that, it is " + ", ".join(enum))])[0] == 0.0
        assert play(retail, t["id"], [submit("Cancelled successfully! … I can't help with?")])[0] == 0.0
        # the reference's refusal, written with a curly apostrophe, still passes, with the outcome declared
        # and the old way (no outcome: the words decline)
        args = t["solution"][-1]["arguments"]
        words = args["message"].replace("I cannot", "I can’t")
        assert play(retail, t["id"], body(t) + [format_call("submit", {**args, "message": words})])[0] == 1.0, t["id"]
        assert play(retail, t["id"], body(t) + [submit(words)])[0] == 1.0, t["id"]


def test_dumping_every_candidate_fails_on_argmax_tasks():
    """"Which X has the most Y": the right label in a sentence passes, all labels fail."""
    import random

    from agentworld_envs.tasks.generate import Generator, Skip
    from agentworld_envs.tasks.model import EnvModel

    b = load_bundle(SYNTH)
    runner = Runner(b.spec, b.golden, b.tools)
    model = EnvModel(b.spec)
    part = None
    for seed in range(20):
        runner.conn.execute("SAVEPOINT probe")
        try:
            part = Generator(model, runner, random.Random(seed)).p_argmax()
            break
        except Skip:
            continue
        finally:
            runner.conn.execute("ROLLBACK TO probe")
            runner.conn.execute("RELEASE probe")
    assert part is not None
    args = part.checks[0]["args"]
    labels = [r[0] for r in b.initial.execute(f'SELECT "{args["parent_label_col"]}" FROM "{args["parent_table"]}"')]
    task = {"id": "argmax", "instruction": part.text, "checks": part.checks, "solution": part.steps}
    calls = [format_call(s["name"], s["arguments"]) for s in part.steps]
    try:
        assert runner.run(task, calls + [submit(f"That is {part.answer[1]}.")]).score == 1.0
        assert runner.run(task, calls + [submit(", ".join(map(str, labels)))]).score == 0.0
    finally:
        runner.close()


# ------------------------------------------------------------------------------------------ the gate's probes

@pytest.mark.parametrize("env_id", [RETAIL, *SYNTH_ENVS])
def test_every_task_rejects_every_hack_and_accepts_every_paraphrase(env_id):
    b = load_bundle(env_id)
    runner = Runner(b.spec, b.golden, b.tools)
    ran: set[str] = set()
    try:
        for task in b.tasks:
            report = attack(runner, task, stop_early=False)
            ran |= set(report.ran)
            assert report.hack_fail and report.paraphrase_pass, (task["id"], report)
    finally:
        runner.close()
    assert {"blanket_refusal", "enum_refusal", "unrelated_write"} <= ran
    assert ran & {"sentence", "trailing_punctuation"}


def test_probes_catch_a_verifier_without_the_state_check():
    """The probes are not vacuous: with the exact state check removed, a collateral write passes."""
    b = load_bundle(RETAIL)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        task = next(t for t in b.tasks if t["tags"] == ["write", "cancel"])
        weak = dict(task, checks=[c for c in task["checks"] if c["type"] != "state"])
        assert attack(runner, task).hack_fail
        assert "collateral_write" in attack(runner, weak, stop_early=False).hacks_passed
    finally:
        runner.close()


def test_fairness_probes_cover_numbers_and_lists():
    task = {"id": "t", "instruction": "How much?", "checks": [{"type": "answer", "mode": "numeric", "expected": "1234.50"}],
            "solution": [{"name": "submit", "arguments": {"answer": "1234.50"}}]}
    probes = dict(fairness_probes(task))
    assert probes["number_format"][-1]["arguments"]["answer"] == "$1,234.50."
    task = {"id": "t", "instruction": "Which?", "checks": [{"type": "answer", "mode": "set", "expected": "A1, B2, C3"}],
            "solution": [{"name": "submit", "arguments": {"answer": "A1, B2, C3"}}]}
    probes = dict(fairness_probes(task))
    assert probes["list_and"][-1]["arguments"]["answer"] == "A1, B2 and C3"
    assert {"blanket_refusal", "enum_refusal", "candidate_dump", "collateral_write", "unrelated_write", "value_dump",
            "hedge", "negation", "claim", "outcome_flip", "rule_refusal", "no_lookup_refusal", "given_text",
            "composed_text", "non_string_answer"} == set(HACKS)


def test_validate_reports_hack_and_paraphrase_counters():
    record = validate_env(RETAIL)
    assert record["tasks"] >= 60
    assert record["hack_fail"] == record["paraphrase_pass"] == record["tasks"] == record["solution_pass"]
    assert record["ok"]


# ------------------------------------------------------------------------------------------ action semantics

def test_several_tool_calls_run_in_order_and_return_every_result(retail):
    retail.reset(options={"task_id": retail.task_ids[0]})
    two = (format_call("get_gift_card_balance", {"code": "nope"})
           + "\n" + format_call("count_orders_by_status", {}))
    obs, _, term, _, info = retail.step(two)
    results = json.loads(obs)
    assert [r["tool"] for r in results] == ["get_gift_card_balance", "count_orders_by_status"]
    # all or nothing: the failing first call stops the action, the second does not run
    assert "error" in results[0] and results[1]["error"]["code"] == "not_run"
    assert info["error"] == results[0]["error"]["code"] and len(info["calls"]) == 2 and not term
    two = (format_call("count_orders_by_status", {}) + "\n" + format_call("get_gift_card_balance", {"code": "GC-AAAA-AAAA"}))
    results = json.loads(retail.step(two)[0])
    assert [r["tool"] for r in results] == ["count_orders_by_status", "get_gift_card_balance"]
    assert "result" in results[0] or results[0]["error"]["code"] == "rolled_back"
    # an OpenAI message with several tool_calls, the last one submit, runs both and ends the episode
    msg = {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "count_orders_by_status", "arguments": "{}"}},
        {"type": "function", "function": {"name": "submit", "arguments": "{}"}}]}
    obs, reward, term, _, info = retail.step(json.dumps(msg))
    assert term and [r["tool"] for r in json.loads(obs)] == ["count_orders_by_status", "submit"]


def test_submit_must_be_last_and_calls_are_capped():
    with pytest.raises(ActionError):
        parse_calls(format_call("submit", {}) + format_call("x", {}))
    with pytest.raises(ActionError) as exc:
        parse_calls("".join(format_call("x", {}) for _ in range(9)))
    assert exc.value.code == "too_many_calls"


def test_closing_tag_inside_a_string_argument_parses_through_gym_mcp_and_trl(retail):
    from agentworld_envs.serving.mcp_server import EpisodeHost
    from agentworld_envs.serving.trl_adapter import agentworld_env_class

    note = "see </tool_call> and <tool_call> in the text"
    task = next(t for t in retail.bundle.tasks if any(s["name"] == "add_order_note" for s in t["solution"]))
    step = next(s for s in task["solution"] if s["name"] == "add_order_note")
    args = {**step["arguments"], "body": note}
    retail.reset(options={"task_id": task["id"]})
    obs, _, _, _, info = retail.step(format_call("add_order_note", args))
    assert info["error"] is None and note in obs
    host = EpisodeHost(RETAIL)
    text, is_error, _ = host.call("k", "add_order_note", args)
    assert not is_error and note in text
    cls = agentworld_env_class(RETAIL)
    trl_env = cls()
    trl_env.reset()
    assert note in trl_env.add_order_note(**args)


@pytest.mark.parametrize("raw", ['{"name": "set_variant_stock", "arguments": {"sku": "X", "stock": NaN}}',
                                 '{"name": "set_variant_stock", "arguments": {"sku": "X", "stock": Infinity}}',
                                 '{"name": "add_order_note", "arguments": {"order_id": 1, "body": "\\ud800"}}'])
def test_non_finite_numbers_and_lone_surrogates_are_invalid_arguments(retail, raw):
    retail.reset(options={"task_id": retail.task_ids[0]})
    before = retail.state_hash()
    obs, _, _, _, info = retail.step(raw)
    assert info["error"] == "invalid_arguments"
    def strict(name):
        raise ValueError(f"{name} in the observation")

    json.loads(obs, parse_constant=strict)   # the observation is strict JSON: no NaN / Infinity echoed
    assert retail.state_hash() == before


def test_float_nan_in_a_dict_action_is_rejected(retail):
    retail.reset(options={"task_id": retail.task_ids[0]})
    msg = {"name": "set_variant_stock", "arguments": {"sku": "X", "stock": math.nan}}
    _, _, _, _, info = retail.step(msg)
    assert info["error"] == "invalid_arguments"


def test_date_parameters_are_validated():
    env = gym.make(SYNTH).unwrapped
    env.reset(seed=0)
    tool = next(t for t in env.tools if any(p.get("format") == "date" for p in
                                            t["function"]["parameters"].get("properties", {}).values()))
    name = tool["function"]["name"]
    param = next(p for p, s in tool["function"]["parameters"]["properties"].items() if s.get("format") == "date")
    _, _, _, _, info = env.step(format_call(name, {param: "2026-02-30"}))
    assert info["error"] == "invalid_arguments"
    _, _, _, _, info = env.step(format_call(name, {param: "next tuesday"}))
    assert info["error"] == "invalid_arguments"
    env.close()
