"""PyTerrier's ``.parallel()`` on the CONE-RAG embedding matching of the 19 runs of the CONE-RAG sample (docs/scale.md).

    .venv/bin/python benchmarks/bench_parallel.py [--data DIR] [--jobs 2]

The work: every response of the sample's 19 automatic runs matched against the human gold nuggets, NtR (each gold
nugget against the whole response) and NtN (each gold nugget against each nugget extracted from the response), by
the offline :class:`EmbeddingMatcher` at its calibrated thresholds: local computation (all-MiniLM-L6-v2 on CPU),
where more processes can help. Side by side in one run, each from a fresh matcher (no vector cache, the encoder
loaded where it runs):

- serial, in this process;
- ``.parallel(jobs, "joblib")``: worker processes on this machine;
- ``.parallel(jobs, "ray")`` on a local Ray cluster (``ray.init(num_cpus=jobs)``; its start is timed apart).

The frames must be the serial ones: every column identical but the cosine ``match_score``, which may differ in
its last float32 digits (an encoder's vector depends by about 1e-7 on which texts are encoded in the same batch:
in a serial run too, e.g. one run scored alone or with 18 others); the script checks the decisions exactly, the
cosines to 1e-6, prints the largest difference, and exits 1 otherwise. Printed: wall times, speed-up, and the
overhead (the encoder's load in each worker, the cluster's start).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import pandas as pd

from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse
from pyterrier_nuggets.matchers import EmbeddingMatcher

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "trec-ikat", "cone-rag-sample")


def inputs(data: str) -> tuple[formats.NuggetSet, pd.DataFrame, pd.DataFrame]:
    """The gold nuggets, the responses (one row per turn and run) and the responses' extracted nuggets."""
    gold = formats.read_cone_gold_nuggets(os.path.join(data, "gold_nuggets_human.json"))
    responses = formats.read_cone_responses(os.path.join(data, "automatic_responses.json"))
    extracted = {(r.qid, r.run_id): [m for m in r.matched if m.strip()]
                 for r in formats.read_cone_response_nuggets(os.path.join(data, "automatic_response_nuggets.json"))}
    topics = {n.qid for n in gold.nuggets}
    frame = pd.DataFrame([{"qid": t, "run_id": run, "qanswer": text} for (t, run), text in responses.items()
                          if t in topics])
    nuggets = frame.assign(nuggets=[[{"text": m, "span": "exact"} for m in extracted.get((q, r), [])]
                                    for q, r in zip(frame["qid"], frame["run_id"])])
    return gold, frame, nuggets.drop(columns="qanswer")


def match(gold, frame, nuggets, jobs: int = 1, backend: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    ntr = NuggetToResponse(gold, EmbeddingMatcher.for_task("ntr"))
    ntn = NuggetToNugget(gold, EmbeddingMatcher.for_task("ntn"))
    if backend is not None:
        ntr, ntn = ntr.parallel(jobs, backend), ntn.parallel(jobs, backend)
    start = time.perf_counter()
    out = ntr(frame), ntn(nuggets)
    return out[0], out[1], time.perf_counter() - start


def compare(frame: pd.DataFrame, serial: pd.DataFrame) -> tuple[bool, float]:
    """Whether ``frame`` is ``serial`` (every column exactly but the cosines, those to 1e-6), and the largest
    cosine difference."""
    if list(frame.columns) != list(serial.columns) or len(frame) != len(serial):
        return False, float("inf")
    rest = [c for c in frame.columns if c != "match_score"]
    difference = float((frame["match_score"] - serial["match_score"]).abs().max()) if len(frame) else 0.0
    return frame[rest].equals(serial[rest]) and difference <= 1e-6, difference


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=DATA, help="the CONE-RAG sample folder, e.g. --data ../shared/data/"
                                                     "trec-ikat/cone-rag-sample")
    parser.add_argument("--jobs", type=int, default=2, help="workers of the parallel runs (default 2), e.g. --jobs 4")
    args = parser.parse_args(argv)
    gold, frame, nuggets = inputs(args.data)
    load = os.getloadavg()
    print(f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()},"
          f" Python {platform.python_version()}; load average before {'/'.join(f'{x:.2f}' for x in load)}")
    print(f"work: {frame['run_id'].nunique()} runs, {frame['qid'].nunique()} turns, {len(frame)} responses, "
          f"{len(gold.nuggets)} gold nuggets, {sum(map(len, nuggets['nuggets']))} response nuggets", flush=True)
    serial_ntr, serial_ntn, serial = match(gold, frame, nuggets)
    print(f"pairs matched: NtR {len(serial_ntr)} rows, NtN {len(serial_ntn)} rows", flush=True)
    rows = [("serial (this process)", serial, "")]
    checks = []
    joblib_ntr, joblib_ntn, joblib_time = match(gold, frame, nuggets, args.jobs, "joblib")
    checks += [compare(joblib_ntr, serial_ntr), compare(joblib_ntn, serial_ntn)]
    rows.append((f'.parallel({args.jobs}, "joblib")', joblib_time, ""))
    import ray
    start = time.perf_counter()
    ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    try:
        ray_ntr, ray_ntn, ray_time = match(gold, frame, nuggets, args.jobs, "ray")
    finally:
        ray.shutdown()
    checks += [compare(ray_ntr, serial_ntr), compare(ray_ntn, serial_ntn)]
    rows.append((f'.parallel({args.jobs}, "ray")', ray_time, f"cluster start {ray_start:.1f} s, not included"))
    # the encoder's load, paid once per process: what a worker pays before its first pair
    start = time.perf_counter()
    EmbeddingMatcher.for_task("ntr").match([("a", "b")])
    encoder = time.perf_counter() - start
    print(f"\nencoder load and first pair in a process that has loaded it before: {encoder:.2f} s "
          "(a fresh worker pays more: the import of torch and sentence-transformers)")
    print("\n| run | wall | speed-up over serial | note |\n|---|---:|---:|---|")
    for what, seconds, note in rows:
        print(f"| {what} | {seconds:.1f} s | {serial / seconds:.2f} × | {note} |")
    same = all(ok for ok, _ in checks)
    print(f"\nthe serial run's frames (rows, order, columns, decisions; cosines to 1e-6): {'yes' if same else 'NO'}; "
          f"largest cosine difference {max(d for _, d in checks):.1e}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
