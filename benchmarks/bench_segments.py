"""Benchmark of msmarco-segment-v2.1 lookups (datasets_ext.segments) on a synthetic shard.

Writes a shard of at least ``--gb`` GB decompressed in the real format (benchmarks/synthetic.py) under
``--workdir`` (default /tmp), then measures for several checkpoint spacings: access-index build time and
size, random lookups per second cold (fresh docstore: index loaded from disk, first lookups) and warm,
and compares with the upper bound of decompressing the shard once and seeking in the plain file. Also
measures ``docs_iter()`` throughput. Everything runs on one core. The big files are deleted at the end
unless ``--keep``.

    .venv/bin/python benchmarks/bench_segments.py --gb 1.1
"""
import argparse
import gzip
import os
import random
import resource
import shutil
import sys
import time
from pathlib import Path

from synthetic import write_segment_shard  # benchmarks/synthetic.py, next to this script

from datasets_ext.segments import N_SHARDS, SHARD_DIR, SHARD_FILE, SegmentShards, parse_segment_id

SHARD = 7


def fmt_mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def lookups_per_s(store, ids: list[str]) -> float:
    t = time.perf_counter()
    found = store.get_many(ids)
    dt = time.perf_counter() - t
    assert len(found) == len(set(ids))
    return len(ids) / dt


def one_by_one_per_s(store, ids: list[str]) -> float:
    """Random single lookups (``get``): every one seeks from the nearest checkpoint, as a user's loop would."""
    t = time.perf_counter()
    for doc_id in ids:
        assert store.get(doc_id).doc_id == doc_id
    return len(ids) / (time.perf_counter() - t)


def plain_lookups_per_s(path: Path, ids: list[str]) -> float:
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        for doc_id in ids:
            f.seek(parse_segment_id(doc_id).offset)
            line = _readline(f)
            assert line.startswith(b'{"docid": "' + doc_id.encode())
    return len(ids) / (time.perf_counter() - t)


def _readline(f) -> bytes:
    buf = f.read(4096)
    while b"\n" not in buf:
        more = f.read(16384)
        if not more:
            break
        buf += more
    return buf.split(b"\n", 1)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.1, help="decompressed size of the synthetic shard (GB)")
    ap.add_argument("--workdir", default="/tmp/bench_segments")
    ap.add_argument("--spacings", default="256,512,1024,2048,4096", help="checkpoint spacings in KiB")
    ap.add_argument("--lookups", type=int, default=2000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    work = Path(args.workdir)
    base = work / "msmarco-segment-v2.1"
    shard_path = base / SHARD_DIR / SHARD_FILE.format(shard=SHARD)
    try:
        t = time.perf_counter()
        ids = write_segment_shard(shard_path, SHARD, min_bytes=int(args.gb * 1e9))
        decompressed = parse_segment_id(ids[-1]).offset  # + the last line, negligible
        compressed = shard_path.stat().st_size
        print(f"synthetic shard: {len(ids):,} segments, {fmt_mb(decompressed)} decompressed, "
              f"{fmt_mb(compressed)} gzipped (ratio {decompressed / compressed:.2f}), written in "
              f"{time.perf_counter() - t:.0f} s")
        for shard in range(N_SHARDS):  # the other shards: one segment each, so docs_iter() runs
            if shard != SHARD:
                write_segment_shard(base / SHARD_DIR / SHARD_FILE.format(shard=shard), shard, n_segments=1)

        rng = random.Random(42)
        sample = rng.sample(ids, args.lookups)
        cold_sample = rng.sample(ids, 100)

        print("\n| spacing | checkpoints | build (s) | index on disk | % of gzipped shard | index in memory "
              "| cold: open (s) | cold: first 100 lookups/s | warm get_many lookups/s | warm get() lookups/s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for kib in [int(x) for x in args.spacings.split(",")]:
            shards = SegmentShards(base, spacing=kib * 1024)
            indexed = shards.indexed_shard(SHARD)
            t = time.perf_counter()
            indexed.build_index()
            build = time.perf_counter() - t
            on_disk = indexed.index_path.stat().st_size
            store = shards.docs_store()
            t = time.perf_counter()
            f = store._shard(SHARD).open()
            opened = time.perf_counter() - t
            npoints = f.raw.npoints if hasattr(f, "raw") else f.npoints
            cold = lookups_per_s(store, cold_sample)
            warm = lookups_per_s(store, sample)
            single = one_by_one_per_s(store, sample[:500])
            store.clear_cache()
            print(f"| {kib} KiB | {npoints:,} | {build:.1f} | {fmt_mb(on_disk)} | {100 * on_disk / compressed:.1f}% "
                  f"| {fmt_mb(npoints * 32768)} | {opened:.2f} | {cold:,.0f} | {warm:,.0f} | {single:,.0f} |")

        # upper bound: decompress once, seek in the plain file
        plain = work / "plain.jsonl"
        t = time.perf_counter()
        with gzip.open(shard_path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        decompress = time.perf_counter() - t
        plain_lookups_per_s(plain, sample[:200])  # warm the page cache
        plain_rate = plain_lookups_per_s(plain, sample)
        print(f"\nplain file (decompress once: {decompress:.1f} s, {fmt_mb(plain.stat().st_size)} on disk): "
              f"{plain_rate:,.0f} warm random lookups/s")

        # docs_iter throughput over all 60 shards (59 of them one segment)
        shards = SegmentShards(base)
        t = time.perf_counter()
        n = sum(1 for _ in shards.docs_iter())
        dt = time.perf_counter() - t
        print(f"docs_iter(): {n:,} segments in {dt:.1f} s = {n / dt:,.0f} segments/s, "
              f"{decompressed / dt / 1e6:,.0f} MB/s decompressed")
        t = time.perf_counter()
        with open(plain, "rb") as f:
            m = sum(1 for _ in f)
        print(f"plain file line scan (no JSON parsing): {m:,} lines in {time.perf_counter() - t:.1f} s")
        print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB; "
              f"python {sys.version.split()[0]}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
