"""The LLM client at TREC scale: wall time against the floor and the client's CPU per call.

Workload W1 of ``bench_llm.py`` (per topic: 20 judged segments -> nugget creation -> scoring; 4 answers assigned),
stage-overlapped, against the fake OpenAI-compatible server in a process of its own that takes ``--width``
requests in flight and answers each in ``--latency`` seconds. For each number of topics: the calls, the wall
time, the floor (calls x latency / width: no client can be faster), wall / floor, and the client process's CPU
time (user + system, ``resource.getrusage``) per call, the set-up (imports, the workload, the first client)
excluded; beside it, the practical floor: the minimal keep-alive client of ``floor.py`` for as many calls on the same
server, in the same run. Every run starts from a fresh cache; a second run on the same cache must make 0 calls and give the
same frames.

    .venv/bin/python benchmarks/bench_client_cpu.py                        # the figures of docs/benchmarks.md
    .venv/bin/python benchmarks/bench_client_cpu.py --topics 200 --profile prof.txt   # where the CPU goes
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_llm import ServerProcess, workload  # noqa: E402
from floor import practical_floor  # noqa: E402

from pyterrier_nuggets.judges import NuggetAssigner, NuggetCreator, NuggetScorer, Overlapped  # noqa: E402
from pyterrier_nuggets.llm import ClientOptions, Limits, LLMClient  # noqa: E402


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(base_url: str, cache: str, width: int, judged, answers, args):
    start = width if args.known else None  # --known: the limit is known (a run that learned it, or --concurrency)
    llm = LLMClient(model="fake", base_url=base_url, api_key="bench", cache=cache, progress=False,
                    options=ClientOptions(limits=Limits(concurrency=width, start=start)))
    start_wall, start_cpu = time.perf_counter(), cpu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.staged:  # PyTerrier's stage barriers: every creation, then every scoring, then every assignment
            nuggets = (NuggetCreator(llm) >> NuggetScorer(llm))(judged)
            assigned = NuggetAssigner(nuggets, llm)(answers)
        else:
            assigner = NuggetAssigner(None, llm)
            nuggets, assigned = Overlapped(NuggetCreator(llm) >> NuggetScorer(llm)).assign(judged, answers, assigner)
    return time.perf_counter() - start_wall, cpu() - start_cpu, llm.stats["calls"], nuggets, assigned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument("--width", type=int, nargs="+", default=[64, 256], help="requests the server takes at once")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--profile", help="write a cProfile of the largest run (by cumulative time) to this file")
    parser.add_argument("--staged", action="store_true", help="the staged pipeline (creation >> scoring, then "
                        "assignment) instead of Overlapped")
    parser.add_argument("--known", action="store_true", help="the limit is known: the client starts at the width "
                        "(Limits(start=width), as --concurrency does on the command line) instead of slow start")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; latency {args.latency} s; {'staged' if args.staged else 'Overlapped'}; "
          f"{'limit known (start at the width)' if args.known else 'slow start from 8'}; load {os.getloadavg()[0]:.2f}")
    print("| width | topics | calls | wall (s) | floor (s) | x floor | practical floor (s) | x practical floor | "
          "client CPU per call (ms) | re-run calls |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for width in args.width:
            with ServerProcess(latency=args.latency, max_in_flight=width, retry_after=1.0) as server:
                for topics in args.topics:
                    judged, answers = workload(topics, 20, 4)
                    cache = os.path.join(tmp, f"w{width}-t{topics}.sqlite")
                    profiler = None
                    if args.profile and topics == max(args.topics) and width == args.width[0]:
                        import cProfile
                        profiler = cProfile.Profile()
                        profiler.enable()
                    wall, used, calls, nuggets, assigned = run(server.base_url, cache, width, judged, answers, args)
                    if profiler is not None:
                        profiler.disable()
                        import pstats
                        with open(args.profile, "w") as out:
                            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(40)
                    _, _, again, nuggets2, assigned2 = run(server.base_url, cache, width, judged, answers, args)
                    same = nuggets.equals(nuggets2) and assigned.equals(assigned2)
                    floor = calls * args.latency / width
                    practical = practical_floor(server.base_url, calls, width)
                    print(f"| {width} | {topics} | {calls} | {wall:.2f} | {floor:.2f} | {wall / floor:.2f} | "
                          f"{practical:.2f} | {wall / practical:.2f} | {1000 * used / calls:.2f} | "
                          f"{again}{'' if same else ' (DIFFERENT frames)'} |", flush=True)


if __name__ == "__main__":
    main()
