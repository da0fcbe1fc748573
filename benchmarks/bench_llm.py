"""Benchmark of the LLM layer at TREC scale against the fake OpenAI-compatible server.

Workload W1: nugget creation (windows of 10 judged segments) and importance scoring for ``--topics`` topics
of ``--segments`` judged segments each, then assignment of the nuggets to ``--answers`` answers per topic.
The server answers each call in ``--latency`` seconds and rejects (429, ``Retry-After: 1``) any request
arriving while ``--limit`` are in flight. Every line starts from a fresh cache unless it says otherwise;
all lines run in one process, side by side (the server in a process of its own). The timed lines 1-3 are
repeated ``--repeat`` times, interleaved so that the machine's load falls on all of them alike; their
median is reported.

1. a dry run (no call), then the stage-overlapped run at ceiling ``--limit``: wall time against the floor
   (calls x latency / limit), planned calls against the calls made; for reference, as many independent
   requests (no dependencies, no judges) through the package's client, and the practical floor: the minimal
   keep-alive client of ``floor.py`` for as many calls on the same server;
2. the same at a ceiling of ``--over`` (a user who over-asks): wall time against line 1, share rejected;
3. for comparison, the staged run (every topic's creation, then every scoring, then every assignment);
4. an identical second run on line 1's cache: calls and whether every result is identical;
5. a first run in which ``--invalid`` of the conversations get unusable replies on every ask (re-asks
   included), then a second run on its cache: failed items before and after, fresh calls of the re-run;
6. Batch API mode: calls through the chat endpoint, batches, polls, and whether every result is identical
   to line 1's.

    .venv/bin/python benchmarks/bench_llm.py              # the figures of docs/benchmarks.md
    .venv/bin/python benchmarks/bench_llm.py --topics 5   # a quick look
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import urllib.request
import warnings

import ir_measures
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ir_measures_ext  # noqa: E402
from pyterrier_nuggets.formats import nugget_qrels  # noqa: E402
from pyterrier_nuggets.judges import NuggetAssigner, NuggetCreator, NuggetScorer, Overlapped  # noqa: E402
from pyterrier_nuggets.llm import BatchOptions, ClientOptions, Limits, LLMClient  # noqa: E402
from pyterrier_nuggets.testing import TestEndpoint, first_prompt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from floor import practical_floor  # noqa: E402

WORDS = ("river bridge castle museum harbour market garden tower canal library station forest valley "
         "island temple palace square theatre school hospital").split()


def workload(topics: int, segments: int, answers: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """W1: judged segments (``qid query docno text label``) and answers (``qid query run_id qanswer``)."""
    judged, answer_rows = [], []
    for t in range(topics):
        qid, query = f"t{t}", f"what is special about place {t}"
        texts = [f"Place{t} has a {WORDS[s % len(WORDS)]} number{s} built in year {1800 + 7 * s + t} near the "
                 "old town" for s in range(segments)]
        judged += [{"qid": qid, "query": query, "docno": f"{qid}-d{s}", "text": x, "label": 1 + s % 3}
                   for s, x in enumerate(texts)]
        for a in range(answers):
            covered = texts[a::answers + 1]  # each answer mentions a different share of the facts
            answer_rows.append({"qid": qid, "query": query, "run_id": f"run{a}", "qanswer": " ".join(covered)})
    return pd.DataFrame(judged), pd.DataFrame(answer_rows)


def scores(nuggets: pd.DataFrame, assigned: pd.DataFrame) -> dict:
    """The six nugget scores of every run (ir_measures over the nugget qrels and the assignment run)."""
    qrels = nugget_qrels(nuggets).rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    out = {}
    for run_id, group in assigned.groupby("run_id"):
        run = group.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        for measure, value in ir_measures.calc_aggregate(ir_measures_ext.NUGGET_MEASURES, qrels, run).items():
            out[(run_id, str(measure))] = value
    return out


class ServerProcess:
    """The fake server in a process of its own (forked, so ``invalid_when`` may be any function), as a real
    endpoint is: in the benchmark's process its threads would compete with the client's for the GIL."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self) -> ServerProcess:
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        self._stop = context.Event()
        self._process = context.Process(target=self._serve, args=(send,), daemon=True)
        self._process.start()
        self.base_url = receive.recv()
        return self

    def _serve(self, send) -> None:
        with TestEndpoint(**self.kwargs) as server:
            send.send(server.base_url)
            self._stop.wait()

    @property
    def stats(self) -> dict:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/_fake/stats") as reply:
            return json.load(reply)

    def kill(self) -> None:
        """Kill the server's process (SIGKILL), as a crashed endpoint: its connections drop, new ones are refused."""
        self._process.kill()
        self._process.join(timeout=10)

    def __exit__(self, *exc) -> None:
        if self._process.is_alive():  # (setting the event would wait for a killed process to acknowledge it)
            self._stop.set()
        self._process.join(timeout=10)


class Bench:
    def __init__(self, args, judged: pd.DataFrame, answers: pd.DataFrame, tmp: str):
        self.args, self.judged, self.answers, self.tmp = args, judged, answers, tmp

    def server(self, **kwargs) -> ServerProcess:
        return ServerProcess(latency=self.args.latency, max_in_flight=self.args.limit, retry_after=1.0, **kwargs)

    def client(self, server: ServerProcess, cache: str, ceiling: int, batch: BatchOptions | None = None) -> LLMClient:
        options = ClientOptions(limits=Limits(concurrency=ceiling), batch=batch or BatchOptions())
        return LLMClient(model="fake", base_url=server.base_url, api_key="bench", cache=os.path.join(self.tmp, cache),
                         progress=False, options=options)

    def run(self, llm: LLMClient, staged: bool = False, lenient: bool = False) -> dict:
        """One run of W1: nuggets, assignments, their scores, wall time, the judges' failures."""
        policy = "exclude" if lenient else "raise"
        creator = NuggetCreator(llm, on_failure=policy)
        scorer = NuggetScorer(llm, on_failure=policy)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # failures are counted below
            if staged:
                nuggets = (creator >> scorer)(self.judged)
                assigner = NuggetAssigner(nuggets, llm, on_failure=policy)
                assigned = assigner(self.answers)
            else:
                assigner = NuggetAssigner(None, llm, on_failure=policy)
                nuggets, assigned = Overlapped(creator >> scorer).assign(self.judged, self.answers, assigner)
        wall = time.perf_counter() - start
        failures = len(creator.failures) + len(scorer.failures) + len(assigner.failures)
        return dict(wall=wall, nuggets=nuggets, assigned=assigned, scores=scores(nuggets, assigned),
                    failures=failures, stats=dict(llm.stats))


def identical(a: dict, b: dict) -> bool:
    return a["nuggets"].equals(b["nuggets"]) and a["assigned"].equals(b["assigned"]) and a["scores"] == b["scores"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--segments", type=int, default=20)
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call (default 0.2)")
    parser.add_argument("--limit", type=int, default=16, help="requests in flight the server takes (default 16)")
    parser.add_argument("--over", type=int, default=64, help="the over-asking ceiling (default 64)")
    parser.add_argument("--invalid", type=float, default=0.05,
                        help="share of conversations answered unusably in line 5's first run (default 0.05)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of the timed lines 1-3, interleaved; "
                        "the median is reported (default 3)")
    args = parser.parse_args()
    judged, answers = workload(args.topics, args.segments, args.answers)
    print(f"W1: {args.topics} topics x {args.segments} judged segments, {len(answers)} answers; server: "
          f"{args.latency * 1000:.0f} ms per call, 429 + Retry-After: 1 above {args.limit} in flight", flush=True)
    rows = []

    def row(line, wall, sent, rejected, note):
        rows.append((line, wall, sent, rejected, note))
        print(f"  {line}: {wall:.2f} s, {sent} sent, {rejected} rejected; {note}", flush=True)

    timed: dict[str, list[dict]] = {"overlapped": [], "reference": [], "practical": [], "over": [], "staged": []}
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(args, judged, answers, tmp)

        for rep in range(args.repeat):  # interleaved, so that the machine's load falls on every line alike
            with bench.server() as server:
                llm = bench.client(server, f"c16-{rep}.sqlite", args.limit)
                if rep == 0:
                    planned_calls = llm.plan(functools.partial(bench.run, llm)).calls()
                result = bench.run(llm)
                s = server.stats
                timed["overlapped"].append({**result, "sent": s["chat_requests"], "rejected": s["rejected"]})
                if rep == 0:
                    base = result
                    calls = base["stats"]["calls"] - base["stats"]["throttled"]  # answered calls
                    floor = calls * args.latency / args.limit
                    # line 4 runs on this server (the cache is by endpoint)
                    again = bench.run(bench.client(server, f"c16-{rep}.sqlite", args.limit))
                    after = server.stats
                    again_row = ("second run, same cache", again["wall"], after["chat_requests"] - s["chat_requests"],
                                 after["rejected"] - s["rejected"], f"identical results: {identical(again, base)}")

            with bench.server(responder=lambda body: "[]") as server:  # what this machine's client reaches at best
                llm = bench.client(server, f"independent-{rep}.sqlite", args.limit)
                start = time.perf_counter()
                llm.map(llm.chat, [[{"role": "user", "content": f"request {i}"}]
                                                               for i in range(calls)])
                s = server.stats
                timed["reference"].append({"wall": time.perf_counter() - start, "sent": s["chat_requests"],
                                           "rejected": s["rejected"]})
                timed["practical"].append({"wall": practical_floor(server.base_url, calls, args.limit),
                                           "sent": calls, "rejected": server.stats["rejected"] - s["rejected"]})

            with bench.server() as server:
                result = bench.run(bench.client(server, f"c64-{rep}.sqlite", args.over))
                s = server.stats
                timed["over"].append({**result, "sent": s["chat_requests"], "rejected": s["rejected"]})

            with bench.server() as server:
                result = bench.run(bench.client(server, f"staged-{rep}.sqlite", args.limit), staged=True)
                s = server.stats
                timed["staged"].append({**result, "sent": s["chat_requests"], "rejected": s["rejected"]})
            print(f"  repetition {rep + 1}: " + ", ".join(f"{k} {v[-1]['wall']:.2f} s" for k, v in timed.items()),
                  flush=True)

        def median(kind: str) -> float:
            return statistics.median(r["wall"] for r in timed[kind])

        def worst(kind: str) -> dict:
            return max(timed[kind], key=lambda r: r["rejected"])

        def walls(kind: str) -> str:
            return "runs " + ", ".join(f"{r['wall']:.2f}" for r in timed[kind]) + " s"

        def same(kind: str) -> bool:
            return all(identical(r, base) for r in timed[kind])

        w = worst("overlapped")
        row(f"overlapped, ceiling {args.limit}", median("overlapped"), w["sent"], w["rejected"],
            f"ratio {median('overlapped') / floor:.2f} (target <= 1.2; {walls('overlapped')}); dry run planned "
            f"{planned_calls} calls, {calls} made")
        w = worst("reference")
        row(f"reference: {calls} independent requests, ceiling {args.limit}", median("reference"), w["sent"],
            w["rejected"], f"no dependencies between calls, no judge: the client's and the SDK's own overhead on this "
            f"machine ({walls('reference')})")
        w = worst("practical")
        row("practical floor: the minimal keep-alive client, as many calls", median("practical"), w["sent"],
            w["rejected"], f"a thread per slot and nothing else (floor.py); the overlapped run is "
            f"{median('overlapped') / median('practical'):.2f} x it (target <= 1.2; {walls('practical')})")
        w = worst("over")
        row(f"overlapped, ceiling {args.over}", median("over"), w["sent"], w["rejected"],
            f"{median('over') / median('overlapped'):.2f} x ceiling {args.limit} (target <= 1.10; {walls('over')}), "
            f"{w['rejected'] / w['sent']:.1%} rejected in the worst run (target <= 1%), identical results: {same('over')}")
        w = worst("staged")
        row(f"staged (creation, then scoring, then assignment), ceiling {args.limit}", median("staged"), w["sent"],
            w["rejected"], f"{walls('staged')}, identical results: {same('staged')}")
        row(*again_row)

        first_run = multiprocessing.get_context("fork").Value("b", 1)  # read by the server's process

        def unusable(body: dict) -> bool:  # a stable share of the conversations, in the first run only
            digest = hashlib.sha256(first_prompt(body).encode()).digest()
            return bool(first_run.value) and int.from_bytes(digest[:4], "big") < args.invalid * 2 ** 32

        with bench.server(invalid_first=3, invalid_when=unusable) as server:  # 3 = the ask and its 2 re-asks
            broken = bench.run(bench.client(server, "invalid.sqlite", args.limit), lenient=True)
            before = server.stats
            first_run.value = 0
            fixed = bench.run(bench.client(server, "invalid.sqlite", args.limit), lenient=True)
            s = server.stats
            row("after injected invalid replies, second run", fixed["wall"], s["chat_requests"] - before["chat_requests"],
                s["rejected"] - before["rejected"], f"failed items: {broken['failures']} in the first run "
                f"({s['invalid_replies']} invalid replies), {fixed['failures']} in the second; identical to the "
                f"clean run: {identical(fixed, base)}")

        with bench.server(batch_polls=3) as server:
            llm = bench.client(server, "batch.sqlite", args.limit, batch=BatchOptions(enabled=True, poll=0.05))
            batch = bench.run(llm)
            s, b = server.stats, llm.batch_stats
            row("Batch API mode", batch["wall"], s["chat_requests"], s["rejected"],
                f"{b['batches']} batches in {b['rounds']} rounds, {b['polls']} polls, {b['requests']} requests; "
                f"identical results: {identical(batch, base)}")

    print()
    print(f"Floor: {calls} calls x {args.latency} s / {args.limit} = {floor:.2f} s; lines 1-4: median of {args.repeat} "
          "runs, calls and rejections of the run with the most rejections")
    print()
    print("| run | wall (s) | ratio to floor | calls sent | rejected | |")
    print("|---|---:|---:|---:|---:|---|")
    for line, wall, sent, rejected, note in rows:
        print(f"| {line} | {wall:.2f} | {wall / floor:.2f} | {sent} | {rejected} | {note} |")


if __name__ == "__main__":
    main()
