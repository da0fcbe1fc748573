"""The LLM layer at TREC scale against the fake endpoint: adaptive concurrency observed at the
server, rate-limit headers and quotas, transient errors, the stage-overlapped run (identical to the staged
one), the Batch API (partial errors, several polls, a resumed batch), dry runs whose counts equal the calls
a real run then makes, re-runs that complete items whose answers failed validation; and the endpoint
selection."""
import json
import threading
import time

import pandas as pd
import pytest

from pyterrier_nuggets.judges import LLMStepError, NuggetAssigner, NuggetCreator, NuggetScorer, Overlapped
from pyterrier_nuggets.llm import (
    BatchOptions,
    ClientOptions,
    Limits,
    LLMClient,
    Prices,
    ResponseCache,
    Sampling,
    TokenCounter,
)
from pyterrier_nuggets.llm.batch import BatchError
from pyterrier_nuggets.llm.limits import AdaptiveLimiter, parse_duration
from pyterrier_nuggets.testing import INVALID, Reply, TestEndpoint, first_prompt
from tests.conftest import quick_options

WORDS = "river bridge castle museum harbour market garden tower canal library station forest".split()


def workload(topics: int = 4, segments: int = 12, answers: int = 2, interleave: bool = False):
    """Judged segments and answers like benchmarks/bench_llm.py's W1, small."""
    judged, rows = [], []
    for t in range(topics):
        qid, query = f"t{t}", f"what is special about place {t}"
        texts = [f"Place{t} has a {WORDS[s % len(WORDS)]} number{s} built in year {1800 + 7 * s + t}"
                 for s in range(segments)]
        judged += [{"qid": qid, "query": query, "docno": f"{qid}-d{s}", "text": x, "label": 1 + s % 3}
                   for s, x in enumerate(texts)]
        rows += [{"qid": qid, "query": query, "run_id": f"run{a}", "qanswer": " ".join(texts[a::answers + 1])}
                 for a in range(answers)]
    answers_frame = pd.DataFrame(rows)
    if interleave:  # run-major order, as answer files of several runs concatenated
        answers_frame = answers_frame.sort_values(["run_id", "qid"], kind="stable").reset_index(drop=True)
    return pd.DataFrame(judged), answers_frame


def client(server, cache, batch: bool = False, batch_timeout: float | None = None, **options):
    """A client of ``server``, quick retries, no progress bars; ``batch``: the Batch API, polled every 0.01 s (for at
    most ``batch_timeout`` seconds); ``options``: the other fields of its ClientOptions."""
    batch_options = BatchOptions(enabled=batch, poll=0.01, timeout=batch_timeout)
    return LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=cache, progress=False,
                     options=quick_options(batch=batch_options, **options))


def staged(llm, judged, answers, **creator):
    nuggets = (NuggetCreator(llm, **creator) >> NuggetScorer(llm))(judged)
    return nuggets, NuggetAssigner(nuggets, llm)(answers)


def test_limiter_starts_where_an_earlier_run_left_it(tmp_path):
    """The level a run learns (pushed back above it, or the ceiling taken without push-back) is kept in the
    response cache; the next client of the same endpoint and model starts there, not at 8. The push-back is certain:
    the client starts 8 requests at once, the endpoint takes 6 and holds their replies until it has rejected one."""
    messages = [[{"role": "user", "content": f"item {i}"}] for i in range(40)]
    held = []  # per reply: whether the endpoint had rejected a request before it (False: held to the bound)

    def responder(body):
        held.append(server.wait_for(lambda stats: stats["rejected"] > 0))
        return "[]"

    with TestEndpoint(max_in_flight=6, retry_after=0.1, responder=responder) as server:
        first = client(server, tmp_path / "l.sqlite", limits=Limits(concurrency=32))
        assert all(r.ok for r in first.map(first.chat, messages))
        assert all(held) and server.stats["rejected"] > 0
        level, pushed_back = ResponseCache(tmp_path / "l.sqlite").learned_limit(f"{server.base_url} fake")
        assert pushed_back and level == first.limiter.known_max
        second = client(server, tmp_path / "l.sqlite", limits=Limits(concurrency=32))
        assert second.limiter.limit == level and second.limiter.known_max == level and not second.limiter.slow_start
    lim = AdaptiveLimiter(64)
    lim.start_from(64, pushed_back=False)
    assert lim.limit == 64 and lim.slow_start


def test_the_stored_level_is_the_latest_learned_when_two_push_backs_overlap(tmp_path):
    """Two push-backs in quick succession: the first one's write to the cache is still under way (held here until the
    limiter has decreased a second time) when the second one's level is learned. The cache ends with the second,
    lower level, the one the limiter knows, never the first written last."""
    cache = ResponseCache(tmp_path / "l.sqlite")
    lim = AdaptiveLimiter(32, initial=20)
    told, writing = [], threading.Event()

    def store(level, pushed_back):
        if not writing.is_set():  # the first write waits until the limiter has learned a newer level
            writing.set()
            deadline = time.monotonic() + 60  # a bound on a failing test
            while lim.stats["decreases"] < 2 and time.monotonic() < deadline:
                time.sleep(0.001)
        told.append(level)
        cache.learn_limit("endpoint", level, pushed_back)

    lim.on_learned = store
    tickets = [lim.acquire() for _ in range(20)]
    first = threading.Thread(target=lim.release, args=(tickets.pop(),), kwargs=dict(status=429, congested=True))
    first.start()  # rejected at level 20: the endpoint takes 19
    assert writing.wait(60)  # its level is being written
    for t in tickets[10:]:  # replies of the first burst: room under the decreased limit
        lim.release(t, status=200)
    again = lim.acquire()  # sent after the first decrease: its push-back is a second one
    lim.release(again, status=429, congested=True)  # rejected at level 11: the endpoint takes 10
    first.join(timeout=60)
    assert not first.is_alive() and lim.stats["decreases"] == 2 and lim.known_max == 10
    assert cache.learned_limit("endpoint") == (10, True) and told[-1] == 10
    for t in tickets[:10]:
        lim.release(t, status=200)


def test_limiter_default_ceiling_and_a_given_start():
    """Without a ceiling the limit may grow to 256 (slow start from 8, 1.5 x per round trip while requests wait);
    ``start`` at the ceiling sends that many from the first request; an earlier run's level that went through raises
    the start, never lowers it."""
    lim = AdaptiveLimiter(Limits().concurrency)
    assert lim.ceiling == 256 and lim.limit == 8
    lim._waiters.append(((), -1))  # someone waits: the limit is binding, so it may grow
    rounds = 0
    while lim.limit < 256:
        level = int(lim.limit)
        lim._waiters.pop()
        tickets = [lim.acquire() for _ in range(level)]
        lim._waiters.append(((), -1))
        for t in tickets:
            lim.release(t, status=200)
        rounds += 1
    assert rounds == 9 and lim.limit == 256  # 8 x 1.5^9 > 256: nine round trips
    lim._waiters.clear()
    given = AdaptiveLimiter(64, initial=64)
    assert given.limit == 64 and [given.acquire().level for _ in range(64)][-1] == 64
    given.start_from(20, pushed_back=False)  # an earlier run got 20 through: the given start stays
    assert given.limit == 64


def test_limiter_never_exceeds_a_level_pushed_back_in_the_job():
    """After a push-back the limit is back at the level that went through within one round trip (slow-start pace,
    not one more per round trip) and never above it for the rest of the job, whatever the probe hold; a level an
    earlier run learned is probed above once the hold has passed."""
    lim = AdaptiveLimiter(64, initial=20, probe_hold=0.0)
    over = [lim.acquire() for _ in range(20)]
    lim.release(over[-1], status=429, congested=True)  # rejected at level 20: the endpoint takes 19
    assert lim.known_max == 19 and lim.limit == pytest.approx(19 * 0.7)
    for t in over[:-1]:
        lim.release(t, status=200)
    lim._waiters.append(((), -1))
    for _ in range(int(19 * 0.7)):  # one round trip at the decreased limit
        lim._waiters.pop()
        ticket = lim.acquire()
        lim._waiters.append(((), -1))
        lim.release(ticket, status=200)
    assert lim.limit == 19
    for _ in range(500):  # however long the job runs (the probe hold is 0): no probe above 19
        lim._waiters.pop()
        ticket = lim.acquire()
        lim._waiters.append(((), -1))
        lim.release(ticket, status=200)
    assert lim.limit == 19
    lim._waiters.clear()
    earlier = AdaptiveLimiter(64, probe_hold=0.0)
    earlier.start_from(19, pushed_back=True)  # an earlier run's level: may be stale, probed after the hold
    earlier._waiters.append(((), -1))
    for _ in range(200):
        earlier._waiters.pop()
        ticket = earlier.acquire()
        earlier._waiters.append(((), -1))
        earlier.release(ticket, status=200)
    assert earlier.limit > 19
    earlier._waiters.clear()


def test_a_probe_that_goes_through_is_what_the_next_run_starts_from():
    """An earlier run's level (4) is probed above after the hold; the level that went through (5) is what the
    limiter tells the cache, so the next run starts there instead of probing up from 4 again."""
    learned = []
    lim = AdaptiveLimiter(64, probe_hold=0.0, on_learned=lambda *told: learned.append(told))
    lim.start_from(4, pushed_back=True)
    lim._waiters.append(((), -1))  # a request waits: the limit may grow
    for _ in range(20):  # round trips at the limit, until one went through above 4
        lim._waiters.pop()
        tickets = [lim.acquire() for _ in range(int(lim.limit))]
        lim._waiters.append(((), -1))
        for ticket in tickets:
            lim.release(ticket, status=200)
        if lim.known_max > 4:
            break
    lim._waiters.clear()
    assert lim.known_max == 5 and learned == [(5, True)]


def test_a_wide_client_starts_only_the_threads_its_work_needs(tmp_path):
    """The default ceiling is 256 requests in flight, and as many worker threads at most: a client with 3 requests
    to make starts 3 (a process that makes many clients does not pile up 256 threads each)."""
    with TestEndpoint(responder=lambda b: "[]") as server:
        llm = client(server, tmp_path / "t.sqlite")
        assert all(r.ok for r in llm.map(llm.chat, [[{"role": "user", "content": f"item {i}"}] for i in range(3)]))
        assert llm.scheduler.workers == 256 and 1 <= llm.scheduler.alive <= 3


def test_rate_limit_headers_end_slow_start():
    """A reply saying the endpoint has more requests left than the ceiling: the limit goes to the ceiling."""
    lim = AdaptiveLimiter(64)
    ticket = lim.acquire()
    lim.release(ticket, status=200, headers={"x-ratelimit-remaining-requests": "5000",
                                             "x-ratelimit-reset-requests": "1s"})
    assert lim.limit == 64


def overlapped(llm, judged, answers, **creator):
    return Overlapped(NuggetCreator(llm, **creator) >> NuggetScorer(llm)).assign(judged, answers,
                                                                                 NuggetAssigner(None, llm))


# --------------------------------------------------------------------------------- adaptive concurrency

def test_adaptive_concurrency_backs_off_to_what_the_endpoint_takes(tmp_path):
    """Ceiling 32 against an endpoint that rejects above 4 in flight: every item answered, each push-back lowers
    the limit (the rules step by step: test_limiter_slow_start_decrease_and_probe_hold)."""
    messages = [[{"role": "user", "content": f"item {i}"}] for i in range(60)]
    with TestEndpoint(latency=0.05, max_in_flight=4, retry_after=0.1, responder=lambda b: "[]") as server:
        llm = client(server, tmp_path / "a.sqlite", limits=Limits(concurrency=32))
        results = llm.map(llm.chat, messages)
        adaptive = dict(server.stats)
        # what holds however the threads are scheduled (how many are rejected depends on when replies come back:
        # benchmarks/bench_llm.py measures it): every item answered once, each rejection counted and followed by a
        # decrease to below the level that was pushed back
        assert all(r.ok for r in results) and adaptive["accepted"] == 60
        assert llm.stats["throttled"] == adaptive["rejected"]
        if adaptive["rejected"]:
            assert llm.limiter.stats["decreases"] >= 1 and llm.limiter.limit < llm.limiter.known_max + 1


def test_limiter_slow_start_decrease_and_probe_hold():
    """The limiter's rules on a scripted sequence of replies (no server): slow start while requests wait,
    one multiplicative decrease per burst of rejections, no growth above the pushed-back level before the
    probe hold has passed."""
    lim = AdaptiveLimiter(64, probe_hold=100.0)
    assert lim.limit == 8
    tickets = [lim.acquire() for _ in range(8)]
    lim._waiters.append(((), -1))  # someone waits: the limit is binding, so it may grow
    for t in tickets:
        lim.release(t, status=200)
    assert lim.limit == 12  # 1.5 x per round trip (slow start)
    level = int(lim.limit)
    lim._waiters.clear()
    over = [lim.acquire() for _ in range(level)]
    lim.release(over[-1], status=429, congested=True)  # rejected at this level
    assert lim.known_max == level - 1 and lim.limit == pytest.approx((level - 1) * 0.7) and not lim.slow_start
    lim.release(over[-2], status=429, congested=True)  # same burst (sent before the decrease): no second decrease
    assert lim.stats["decreases"] == 1
    for t in over[:-2]:
        lim.release(t, status=200)
    lim._waiters.append(((), -1))
    for _ in range(200):  # additive increase, capped at the known level during the probe hold
        lim._waiters.clear()  # the fake waiter would stand in front of this acquire
        ticket = lim.acquire()
        lim._waiters.append(((), -1))
        lim.release(ticket, status=200)
    assert lim.limit == pytest.approx(level - 1)
    lim._waiters.clear()


def test_rate_limit_headers_and_quota(tmp_path):
    """An endpoint with a quota of 5 requests a second that says so in its headers: the client waits for the
    reset instead of being rejected again and again."""
    with TestEndpoint(quota=5, quota_window=1.0, ratelimit_headers=True, responder=lambda b: "[]") as server:
        llm = client(server, tmp_path / "c.sqlite", limits=Limits(concurrency=4))
        results = llm.map(llm.chat, [[{"role": "user", "content": str(i)}] for i in range(12)])
        assert all(r.ok for r in results) and llm.limiter.stats["waits_for_quota"] >= 1
        # at most the requests already in flight when a reply said the budget was used up (concurrency - 1), once
        # for each window the 12 requests span (the sliding window frees one request at a time after a reset)
        assert server.stats["accepted"] == 12 and server.stats["quota_rejected"] <= 3 * 3
        assert llm.limiter.header_requests is not None
    assert parse_duration("6m0s") == 360 and parse_duration("20ms") == 0.02 and parse_duration("1.5s") == 1.5
    assert parse_duration("x") is None


def test_user_quota_keeps_under_the_endpoint_quota(tmp_path):
    with TestEndpoint(quota=5, quota_window=1.0, responder=lambda b: "[]") as server:
        llm = client(server, tmp_path / "q.sqlite", limits=Limits(concurrency=8, requests_per_minute=120))  # 2 a second
        assert all(r.ok for r in llm.map(llm.chat, [[{"role": "user", "content": str(i)}] for i in range(6)]))
        # 2 at once, then one every half second: held by the client's bucket, never by the endpoint
        assert llm.limiter.stats["waits_for_quota"] >= 1 and server.stats["accepted"] == 6
        assert server.stats["quota_rejected"] == 0


def test_user_token_quota_spaces_requests(tmp_path):
    """tokens_per_minute: requests wait for the token bucket (prompt tokens counted offline, plus
    max_tokens); a quota of one request's tokens a second lets one request through a second."""
    messages = [[{"role": "user", "content": f"count these words please, item {i}"}] for i in range(3)]
    with TestEndpoint(responder=lambda b: "[]") as server:
        probe = client(server, None, sampling=Sampling(max_tokens=5))
        per_request = probe.tokens.count_messages(messages[0]) + 5
        llm = client(server, tmp_path / "tpm.sqlite", sampling=Sampling(max_tokens=5),
                     limits=Limits(concurrency=8, tokens_per_minute=60 * per_request))
        admitted, acquire = [], llm.limiter.acquire

        def recorded(*args, **kwargs):
            ticket = acquire(*args, **kwargs)
            admitted.append(time.monotonic())
            return ticket

        llm.limiter.acquire = recorded
        assert all(r.ok for r in llm.map(llm.chat, messages))
        assert llm.limiter.stats["waits_for_quota"] >= 2
    # a lower bound the bucket guarantees however slow the machine: one request's tokens refill in a second
    assert len(admitted) == 3 and all(b - a >= 0.99 for a, b in zip(admitted, admitted[1:]))


def test_transient_5xx_are_retried(tmp_path):
    with TestEndpoint(fail_every=3, responder=lambda b: "[]") as server:
        llm = client(server, tmp_path / "t.sqlite", limits=Limits(concurrency=2))
        assert all(r.ok for r in llm.map(llm.chat, [[{"role": "user", "content": str(i)}] for i in range(10)]))
        assert server.stats["injected_errors"] >= 3 and llm.stats["retries"] == server.stats["injected_errors"]
        assert llm.limiter.stats["decreases"] == 0  # a 500 is an error, not a request to slow down


# ------------------------------------------------------------------------------------ stage overlap

@pytest.mark.parametrize("interleave", [False, True])
def test_overlapped_identical_to_staged(tmp_path, interleave):
    judged, answers = workload(interleave=interleave)
    with TestEndpoint() as server:
        n1, a1 = staged(client(server, tmp_path / "s.sqlite"), judged, answers)
        calls = server.count
        llm = client(server, tmp_path / "o.sqlite", limits=Limits(concurrency=4))
        n2, a2 = overlapped(llm, judged, answers)
        assert server.count == 2 * calls  # the same requests, none twice
        pd.testing.assert_frame_equal(n1, n2)
        pd.testing.assert_frame_equal(a1, a2)
        n3 = Overlapped(NuggetCreator(llm) >> NuggetScorer(llm))(judged)  # as a transformer, from the cache
        pd.testing.assert_frame_equal(n1, n3)
        assert server.count == 2 * calls


def test_overlapped_interleaves_stages(tmp_path):
    """No barrier between stages: while one topic's long chain of creation windows goes on, the other
    topics' scoring and assignments reach the server; the staged run sends every creation first."""
    judged, answers = workload(topics=5)
    long_judged, _ = workload(topics=1, segments=100)  # t0 with 10 windows, asked one after the other
    judged = pd.concat([long_judged, judged[judged["qid"] != "t0"]], ignore_index=True)

    def kind(body):
        prompt = first_prompt(body)
        return "create" if "Updated Nugget List" in prompt else "score" if "vital or okay" in prompt else "assign"

    def kinds(requests):
        return [kind(b) for b in requests]

    # t0's second creation window is answered only once an assignment has reached the server: without a barrier
    # between stages that comes (the other topics go on in the other two slots); with one it never would
    assigned, t0_windows, waited = threading.Event(), [], []

    def responder(body):
        if kind(body) == "assign":
            assigned.set()
        elif kind(body) == "create" and "place 0" in first_prompt(body):
            t0_windows.append(body)
            if len(t0_windows) == 2:
                waited.append(assigned.wait(60))  # a bound on a failing test, not a measurement
        return None  # the stage's reply

    with TestEndpoint(responder=responder) as server:
        overlapped(client(server, tmp_path / "i.sqlite", limits=Limits(concurrency=3)), judged, answers)
        seen = kinds(server.requests)
        assert waited == [True] and len(t0_windows) == 10
        last_create = max(i for i, k in enumerate(seen) if k == "create")
        assert seen.index("score") < last_create and seen.index("assign") < last_create
        calls = server.count
        staged(client(server, tmp_path / "s.sqlite", limits=Limits(concurrency=3)), judged, answers)
        seen = kinds(server.requests[calls:])
        assert seen.index("score") > max(i for i, k in enumerate(seen) if k == "create")


def test_overlapped_failures_follow_the_policies(tmp_path):
    judged, answers = workload(topics=3)
    bad = lambda body: "t1" not in first_prompt(body) and "vital or okay" in first_prompt(body)  # noqa: E731
    with TestEndpoint(invalid_first=10, invalid_when=lambda b: bad(b) and "place 2" in first_prompt(b)) as server:
        scorer = NuggetScorer(client(server, tmp_path / "f.sqlite"))
        with pytest.raises(LLMStepError, match="nugget scoring"):
            Overlapped(NuggetCreator(scorer.llm) >> scorer).assign(judged, answers, NuggetAssigner(None, scorer.llm))
        assert {f.qid for f in scorer.failures} == {"t2"}
        excluded = NuggetScorer(scorer.llm, on_failure="exclude")
        with pytest.warns(UserWarning, match="exclude"):
            nuggets = Overlapped(NuggetCreator(scorer.llm) >> excluded)(judged)
        assert set(nuggets["qid"]) == {"t0", "t1"} and {f.qid for f in excluded.failures} == {"t2"}


# -------------------------------------------------------------------------------------- Batch API

def test_batch_mode_no_chat_calls_identical_results(tmp_path):
    judged, answers = workload()
    with TestEndpoint(batch_polls=3) as server:
        n1, a1 = overlapped(client(server, tmp_path / "online.sqlite"), judged, answers)
        online = server.count
        llm = client(server, tmp_path / "batch.sqlite", batch=True, prices=Prices(1.0, 2.0))
        n2, a2 = overlapped(llm, judged, answers)
        assert server.count == online  # nothing through the chat endpoint
        pd.testing.assert_frame_equal(n1, n2)
        pd.testing.assert_frame_equal(a1, a2)
        stats = llm.batch_stats
        assert stats["batches"] == server.stats["batches"] == 4  # 2 creation windows, scoring, assignment
        assert stats["polls"] >= 3 * 4 and stats["requests"] == online
        usage = llm.usage()
        assert usage.total()["batch_requests"] == online and usage.total()["calls"] == 0
        assert usage.cost(usage.total()) == pytest.approx(Prices(1.0, 2.0).cost(
            usage.total()["batch_prompt_tokens"], usage.total()["batch_completion_tokens"], batch=True))
        again = client(server, tmp_path / "batch.sqlite", batch=True)  # a re-run: all cached
        pd.testing.assert_frame_equal(overlapped(again, judged, answers)[1], a1)
        assert again.batch_stats["batches"] == 0 and server.stats["batches"] == 4


def test_batch_errors_are_explicit_failures_and_a_rerun_completes_them(tmp_path):
    judged, answers = workload(topics=2)
    failing = lambda body: 500 if "run1" not in json.dumps(body) and "place 1" in first_prompt(body) \
        and "vital or okay" in first_prompt(body) else None  # noqa: E731
    with TestEndpoint(batch_error=failing) as server:
        llm = client(server, tmp_path / "b.sqlite", batch=True)
        scorer = NuggetScorer(llm, on_failure="exclude")
        with pytest.warns(UserWarning):
            nuggets = Overlapped(NuggetCreator(llm) >> scorer)(judged)
        assert {f.qid for f in scorer.failures} == {"t1"} and "Batch API: HTTP 500" in scorer.failures[0].error
        assert set(nuggets["qid"]) == {"t0"} and server.stats["batch_errors"] >= 1
        server.batch_error = None
        rerun = client(server, tmp_path / "b.sqlite", batch=True)
        scorer = NuggetScorer(rerun, on_failure="exclude")
        nuggets = Overlapped(NuggetCreator(rerun) >> scorer)(judged)
        assert not scorer.failures and set(nuggets["qid"]) == {"t0", "t1"}
        assert rerun.batch_stats["requests"] == 2  # only the failed scoring batches of t1
        assert server.count == 0


def test_interrupted_batch_is_resumed_not_paid_twice(tmp_path):
    judged, answers = workload(topics=2)
    with TestEndpoint(batch_polls=1000) as server:  # a batch that takes long
        llm = client(server, tmp_path / "r.sqlite", batch=True, batch_timeout=0.2)
        with pytest.raises(BatchError, match="run again later"):
            NuggetCreator(llm)(judged)
        assert server.stats["batches"] == 1
        assert len(ResponseCache(tmp_path / "r.sqlite").open_batches(llm.endpoint)) == 1
        server.batch_polls = 0  # it has finished in the meantime
        resumed = client(server, tmp_path / "r.sqlite", batch=True)
        nuggets = NuggetCreator(resumed)(judged)
        assert resumed.batch_stats["resumed"] == 1 and server.stats["batches"] == 2  # the 2nd window only
        assert server.stats["uploads"] == 2 and not ResponseCache(tmp_path / "r.sqlite").open_batches(llm.endpoint)
        pd.testing.assert_frame_equal(nuggets, NuggetCreator(client(server, tmp_path / "x.sqlite"))(judged))


# ------------------------------------------------------------------------------------------- dry run

def test_dry_run_counts_equal_the_calls_of_the_run(tmp_path):
    judged, answers = workload()
    with TestEndpoint() as server:
        llm = client(server, tmp_path / "d.sqlite", prices=Prices(0.15, 0.60))
        plan = llm.plan(lambda: overlapped(llm, judged, answers))
        assert server.count == 0 and len(ResponseCache(tmp_path / "d.sqlite")) == 0
        overlapped(llm, judged, answers)
        made = {stage: c["calls"] for stage, c in llm.stage_stats.items()}
        assert {s: plan.calls(s) for s in made} == made and plan.calls() == server.count
        assert plan.rounds == 4 and "bpe-openai" in plan.method
        text = plan.to_text()
        assert "Batch API mode needs 4 round(s)" in text and "$" in text and "placeholder" in text
        prompt = plan.stages["assign"]["planned_prompt_tokens"]
        assert prompt > 0 and plan.to_frame()["cost Batch API"].iloc[-1] == pytest.approx(
            plan.to_frame()["cost online"].iloc[-1] / 2)
        again = llm.plan(lambda: overlapped(llm, judged, answers))  # everything is cached now
        assert again.calls() == 0 and again.rounds == 0
        assert sum(c["cache_hits"] for c in again.stages.values()) == server.count
        # the judges kept nothing of the placeholders
        fresh = client(server, tmp_path / "d2.sqlite")
        assigner = NuggetAssigner(overlapped(llm, judged, answers)[0], fresh)
        fresh.plan(lambda: assigner(answers))
        assert len(assigner(answers)) and server.count == 2 * plan.calls() - plan.calls("create") - plan.calls("score")


def test_token_counter_counts_chat_requests():
    counter = TokenCounter("gpt-4o-mini")
    assert counter.method == "bpe-openai o200k_base"
    assert counter.count("Hello world, how are you?") == 7
    assert counter.count_messages([{"role": "user", "content": "Hello world, how are you?"}]) == 3 + 7 + 1 + 3
    assert "approximate" in TokenCounter("my-local-llama").method


# --------------------------------------------------------------------------------------- re-runs

def test_rerun_asks_again_what_failed_validation(tmp_path):
    """Run 1: two scoring batches stay invalid after the re-asks. Run 2 asks those again (fresh calls) and
    completes them; everything else comes from the cache. A frozen run replays run 1 byte for byte."""
    judged, answers = workload(topics=2)
    scoring_t1 = lambda body: "vital or okay" in first_prompt(body) and "place 1" in first_prompt(body)  # noqa: E731
    with TestEndpoint(invalid_first=3, invalid_when=scoring_t1) as server:
        frozen_cache = tmp_path / "r.sqlite"
        first = NuggetScorer(client(server, frozen_cache), on_failure="exclude")
        with pytest.warns(UserWarning):
            n1 = Overlapped(NuggetCreator(first.llm) >> first)(judged)
        assert {f.qid for f in first.failures} == {"t1"} and set(n1["qid"]) == {"t0"}
        assert all(INVALID in f.raw[0] for f in first.failures)
        marked = ResponseCache(frozen_cache).invalid()
        assert len(marked) == 3 * len(first.failures) and marked[0]["response"]["text"] == INVALID
        calls = server.count

        frozen = NuggetScorer(client(server, frozen_cache, frozen=True), on_failure="exclude")
        with pytest.warns(UserWarning):
            pd.testing.assert_frame_equal(Overlapped(NuggetCreator(frozen.llm) >> frozen)(judged), n1)
        assert server.count == calls and [f.raw for f in frozen.failures] == [f.raw for f in first.failures]

        second = NuggetScorer(client(server, frozen_cache), on_failure="exclude")
        n2 = Overlapped(NuggetCreator(second.llm) >> second)(judged)
        assert not second.failures and set(n2["qid"]) == {"t0", "t1"}
        assert server.count - calls == len(first.failures)  # one fresh call per failed item, now valid
        rejected = ResponseCache(frozen_cache).rejected()
        assert len(rejected) == len(first.failures) and rejected[0]["response"]["text"] == INVALID
        assert not ResponseCache(frozen_cache).invalid() or len(ResponseCache(frozen_cache).invalid()) == 2 * len(
            first.failures)  # the later turns of the failed exchanges are no longer used


def test_invalid_once_then_valid_on_reask(tmp_path):
    judged, _ = workload(topics=1)
    with TestEndpoint(invalid_first=1) as server:
        llm = client(server, tmp_path / "o.sqlite")
        nuggets = (NuggetCreator(llm) >> NuggetScorer(llm))(judged)
        assert len(nuggets) and server.stats["invalid_replies"] == server.count / 2  # each asked twice
        assert not ResponseCache(tmp_path / "o.sqlite").invalid()  # a success: nothing to ask again


# ----------------------------------------------------------------------------- endpoint selection

def test_model_without_endpoint_is_refused(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="model 'gpt-4o-mini' was asked for, but no LLM endpoint .*embedded=True"):
        LLMClient(model="gpt-4o-mini", cache=None)
    monkeypatch.setenv("PYTERRIER_NUGGETS_MODEL", "gpt-4o-mini")
    with pytest.raises(ValueError, match="no LLM endpoint is configured"):
        LLMClient(cache=None)
    with pytest.raises(ValueError, match="embedded=True runs"):
        LLMClient(model="gpt-4o-mini", embedded=True, cache=None)
    with pytest.raises(ValueError, match="no LLM endpoint is configured"):
        LLMClient(model="m", embedded=False, cache=None)
    monkeypatch.delenv("PYTERRIER_NUGGETS_MODEL")
    with pytest.raises(ValueError, match=r"no model name for the endpoint http://127.0.0.1:9/v1: pass model=\.\.\. "):
        LLMClient(base_url="http://127.0.0.1:9/v1", cache=None)


def test_nothing_configured_never_falls_back_to_the_embedded_model(monkeypatch):
    """LLMClient() and a judge without a client refuse in one line naming both ways (the endpoint, or
    embedded=True), in Python terms for the API and in option terms on the command line."""
    from ir_measures_ext.errors import InvalidInput
    from pyterrier_nuggets.judges import NuggetScorer
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InvalidInput, match="no LLM endpoint is configured: pass base_url=.*embedded=True") as err:
        LLMClient(cache=None)
    assert "\n" not in str(err.value) and "--llm embedded" in err.value.for_command_line()
    nuggets = pd.DataFrame({"qid": ["q1"], "query": ["q"], "nugget_text": ["a fact"]})
    with pytest.raises(InvalidInput, match="no LLM endpoint is configured"):
        NuggetScorer()(nuggets)


def test_cli_messages_name_options_not_python_arguments(monkeypatch, tmp_path, capsys):
    from pyterrier_nuggets.cli import main
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["demo", "--llm", "endpoint", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--base-url" in err and "base_url=" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "1", "nuggets": [{"text": "a", "importance": "failed"}]}\n')
    assert main(["export", "--nuggets", str(bad), "--qrels", str(tmp_path / "q.qrels")]) == 2
    err = capsys.readouterr().err
    assert "--on-invalid drop" in err and "on_invalid=" not in err and err.count("\n") <= 8


def test_base_url_from_the_environment_without_a_key(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with TestEndpoint(responder=lambda b: "[]") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        llm = LLMClient(model="local", cache=None, progress=False)
        assert not llm.embedded and llm.base_url == server.base_url and llm.chat([{"role": "user", "content": "x"}]).ok
        assert server.headers[0]["authorization"] == "Bearer EMPTY"


def test_batch_mode_needs_a_cache_and_a_remote_endpoint(server):
    with pytest.raises(ValueError, match="response cache"):
        LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None,
                  options=ClientOptions(batch=True))


# ------------------------------------------------------------------------------------ the main job

def test_main_job_dry_run_counts_equal_the_calls_of_the_run(tmp_path, capsys, monkeypatch):
    """``demo --dry-run`` on the sample (generation, AutoNuggets, assignment, support) prints the plan and
    writes nothing; the real run then makes exactly the planned calls, and a ``--batch`` run on a fresh
    cache makes no chat call and prints its batches."""
    from pyterrier_nuggets import cli
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with TestEndpoint() as server:
        common = ["demo", "--topics", "t03", "t05", "--system", "bm25:2", "--base-url", server.base_url,
                  "--model", "fake", "--index-dir", str(tmp_path / "idx"), "--no-plots", "--price", "0.15,0.60"]
        cache = ["--llm-cache", str(tmp_path / "c.sqlite")]
        assert cli.main(common + cache + ["--out", str(tmp_path / "dry"), "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert server.count == 0 and not (tmp_path / "dry").exists()
        assert not (tmp_path / "c.sqlite").exists() or len(ResponseCache(tmp_path / "c.sqlite")) == 0
        planned = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
                   if line.split() and line.split()[0] in ("generate", "create", "score", "assign", "support")}
        assert set(planned) == {"generate", "create", "score", "assign", "support"} and "Batch API mode needs" in out
        assert cli.main(common + cache + ["--out", str(tmp_path / "real")]) == 0
        assert server.count == sum(planned.values()) and (tmp_path / "real" / "joint_table.csv").exists()
        real = capsys.readouterr().out
        assert cli.main(common + ["--llm-cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "batch"),
                                  "--batch", "--batch-poll", "0.01"]) == 0
        assert server.count == sum(planned.values()) and server.stats["batches"] >= 4
        batch = capsys.readouterr().out
        assert "Batch API: rounds" in batch
        table = lambda text: text[text.index("Joint table"):text.index("LLM work per stage")]  # noqa: E731
        assert table(batch) == table(real)


def test_cli_refuses_a_model_without_an_endpoint(tmp_path, capsys, monkeypatch):
    from pyterrier_nuggets import cli
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    code = cli.main(["demo", "--topics", "t03", "--model", "gpt-4o-mini", "--out", str(tmp_path / "o"),
                     "--llm-cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and "gpt-4o-mini" in err and "no LLM endpoint" in err and "--base-url" in err
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_main_job_nuggets_identical_to_the_staged_pipeline(tmp_path):
    """The main job's AutoNuggets (created and scored overlapped) equal ``NuggetCreator >> NuggetScorer``
    run staged on the same judged segments, with a scoring failure excluded the same way in both."""
    from pyterrier_nuggets.docstore import fetch_texts
    from pyterrier_nuggets.pipeline import create_nuggets, sample_collection
    collection = sample_collection(qids=["t01", "t03", "t05", "t07"])
    query = collection.topics.set_index("qid").loc["t05", "query"]
    bad = lambda body: "vital or okay" in first_prompt(body) and query in first_prompt(body)  # noqa: E731
    with TestEndpoint(invalid_first=3, invalid_when=bad) as server:
        created = create_nuggets(collection, client(server, tmp_path / "m.sqlite", frozen=True))
        nuggets, notes = created.frame, created.notes
        judged = collection.qrels[collection.qrels["label"] >= 1].merge(collection.topics, on="qid")
        judged = judged.assign(text=judged["docno"].map(fetch_texts(collection.docstore, judged["docno"].tolist())))
        judged = judged.sort_values(["qid", "label"], ascending=[True, False], kind="stable")
        llm = client(server, tmp_path / "m.sqlite", frozen=True)  # replays the same answers, failures included
        with pytest.warns(UserWarning):
            staged = (NuggetCreator(llm) >> NuggetScorer(llm, on_failure="exclude"))(
                judged[["qid", "query", "docno", "text", "label"]])
        pd.testing.assert_frame_equal(nuggets, staged)
        assert any("nugget scoring" in n for n in notes) and set(nuggets["qid"]) >= {"t01", "t03", "t07"}


def test_assignment_and_support_run_together(tmp_path):
    """evaluate_answers asks the support judgments while the assignments are still being answered (no
    barrier), with rows identical to the two judges run one after the other; the assigner's failure policy
    still comes first."""
    from pyterrier_nuggets.evaluation import evaluate_answers
    from pyterrier_nuggets.judges import CitedGenerator, SupportJudge
    from pyterrier_nuggets.testing import first_prompt
    judged, _ = workload(topics=4)
    retrieved = judged.assign(score=1.0, rank=judged.groupby("qid").cumcount())[["qid", "query", "docno", "text",
                                                                                  "score", "rank"]]
    # While `hold` is set, the first assignment request is held at the endpoint until a support request has
    # arrived: with a barrier between the two judges none would arrive (the held assignment would give up
    # after a minute); without one, the first support request releases it. Order, not time. (One request
    # only: holding all would fill the client's slots and starve the support requests of the test's making.)
    hold, support_arrived, first = threading.Event(), threading.Event(), threading.Lock()
    held = []  # whether a support request released the held assignment

    def slow_assignments(body):
        kind = "support" if "supported by its corresponding citations" in first_prompt(body) else \
            "assign" if "Nugget List" in first_prompt(body) and "Passage" in first_prompt(body) else "other"
        if kind == "support":
            support_arrived.set()
        elif kind == "assign" and hold.is_set() and first.acquire(blocking=False):
            held.append(support_arrived.wait(timeout=60))
        return None

    with TestEndpoint(responder=slow_assignments) as server:
        llm = client(server, tmp_path / "t.sqlite", limits=Limits(concurrency=16))
        nuggets = (NuggetCreator(llm) >> NuggetScorer(llm))(judged)
        answers = CitedGenerator(llm, k=4)(retrieved)
        hold.set()
        together = evaluate_answers(answers, NuggetAssigner(nuggets, llm), SupportJudge(llm))
        hold.clear()
        assert held == [True]  # support asked while an assignment was still unanswered
        fresh = client(server, tmp_path / "t2.sqlite", limits=Limits(concurrency=16))
        assigned = NuggetAssigner(nuggets, fresh)(answers)
        support = SupportJudge(fresh)(answers)
        pd.testing.assert_frame_equal(together.assigned, assigned)
        pd.testing.assert_frame_equal(together.support, support)
        # the assigner raises first, as in the sequential order, although the support judge has run too
        server.invalid_first = 3
        server.invalid_when = lambda b: "supported by its corresponding citations" not in first_prompt(b)
        with pytest.raises(LLMStepError, match="nugget assignment"):
            evaluate_answers(answers, NuggetAssigner(nuggets, client(server, tmp_path / "t3.sqlite")),
                             SupportJudge(client(server, tmp_path / "t3.sqlite")))


@pytest.mark.parametrize("status", [200, 400])
def test_identical_requests_in_flight_at_once_are_paid_once(tmp_path, status):
    """Six threads ask one request at once (a ceiling of 6 from the first request, so all six can be in flight): the
    endpoint gets it once, whatever the threads' timing, and every thread gets its answer, counted as a sequential run
    counts it (1 call, 5 cache hits). The endpoint holds the reply until all six threads are asking: each either
    waits for the answer of the request in flight (``LLMClient.followers``) or has sent it. A client that sent the
    request six times would have six requests at the endpoint before any answer was stored, so it would pay six
    times; this one sends one, held until the five others wait for its answer (no timing is measured). A failed
    answer (HTTP 400, not retried) is every thread's failure, and a re-run asks it again."""
    answer = "the answer" if status == 200 else Reply(status=400, message="refused")
    asking = []  # the threads asking when the first reply was let go

    def reply(body):
        if not asking:  # the first reply (the re-run's is not held)
            deadline = time.monotonic() + 60  # a bound on a failing test
            while llm.followers() + server.stats["accepted"] < 6 and time.monotonic() < deadline:
                time.sleep(0.001)
            asking.append(llm.followers() + server.stats["accepted"])
        return answer

    with TestEndpoint(responder=reply) as server:
        llm = client(server, tmp_path / "c.sqlite", limits=Limits(concurrency=6, start=6))
        messages = [{"role": "user", "content": "one question"}]
        results = llm.map(lambda _: llm.chat(messages, stage="judge"), range(6))
        assert server.count == 1 and asking == [6]
        counts = llm.usage().stages["judge"]
        assert (counts["requests"], counts["calls"]) == (6, 1)
        if status == 200:
            assert [r.text for r in results] == ["the answer"] * 6 and counts["cache_hits"] == 5
            assert sum(not r.cached for r in results) == 1
        else:
            assert all(not r.ok and "refused" in r.error for r in results) and counts["failures"] == 6
            again = client(server, tmp_path / "c.sqlite")
            assert not again.chat(messages).ok and server.count == 2
