"""What the main commands write on fixed inputs, as digests: a check that a change of the code (a restructuring)
keeps every output byte-identical and asks the LLM the same requests.

It runs, each in a fresh process, on the package's shipped sample and inputs made from it:

- ``demo`` offline (the main job with the baseline judges, no plots);
- ``demo --llm endpoint`` on the package's test endpoint (every LLM step of the main job);
- ``trec-rag`` on the sample's two runs written as TREC RAG 2026 answers: nuggets, rubrics and support judged on the
  test endpoint, then again with ``--unanswered omit`` and the support from the toolkit's support file;
- ``arena`` of the two runs, both orders, on the test endpoint;

then writes ``OUT/digests.tsv``: one line per output file (its SHA-256) and per response cache (the SHA-256 of its
sorted requests and answers: what the LLM was asked), the test endpoint's port (another at each run) left out. Two
runs of the same code give the same digests.

Usage::

    python scripts/output_snapshot.py OUT                       # run everything, write OUT/digests.tsv
    python scripts/output_snapshot.py OUT --compare BEFORE      # ... and compare with BEFORE/digests.tsv
                                                                 # (exit 1 and the differing files when they differ)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from pyterrier_nuggets.pipeline import SAMPLE_DIR
from pyterrier_nuggets.testing import TestEndpoint

PORT = re.compile(r"127\.0\.0\.1:\d+")  # the test endpoint's port, another at each run
RAG_MINI = Path(SAMPLE_DIR)


def command(argv: list[str], env: dict) -> None:
    """``pyterrier-nuggets ARGV`` in a fresh process; stop on failure with its output."""
    argv = [str(a) for a in argv]
    code = "import sys; from pyterrier_nuggets.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"pyterrier-nuggets {' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def inputs(root: Path) -> dict[str, Path]:
    """The sample's runs as TREC RAG 2026 answers (at most 3 citations an object), a rubric per topic made of its
    nuggets, and the toolkit's support file of both runs (labels cycling 2, 1, 0, -1)."""
    root.mkdir(parents=True)
    files = {"answers": root / "answers.jsonl", "rubrics": root / "rubrics.jsonl", "support": root / "support.jsonl",
             "topics": root / "topics.tsv"}
    shutil.copy(RAG_MINI / "topics.tsv", files["topics"])
    answers, support = [], []
    for run in ("bm25-rag", "dense-rag"):
        for line in (RAG_MINI / f"{run}.answers.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            objects = [{"text": o["text"], "citations": o["citations"][:3]} for o in row["answer"]]
            answers.append({"metadata": {"team_id": "snapshot", "run_id": run, "type": "automatic",
                                         "narrative_id": row["topic_id"]},
                            "references": row["references"], "answer": objects})
            n = len(run)
            sentences = []
            for j, o in enumerate(objects):
                cites = []
                for k, c in enumerate(o["citations"]):
                    cites.append({"citationID": k, "reference": row["references"][c],
                                  "support": ["2", "1", "0", "-1"][n % 4]})
                    n += 1
                sentences.append({"sentenceID": j, "text": o["text"], "citations": cites})
            support.append({"topic_id": row["topic_id"], "run_id": run, "sentences": sentences})
    files["answers"].write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    files["support"].write_text("".join(json.dumps(s) + "\n" for s in support), encoding="utf-8")
    rubrics = []
    for line in (RAG_MINI / "nuggets.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rubrics.append({"qid": row["qid"], "criteria": [
            {"text": n["text"], "weight": 3 if n["importance"] == "vital" else 1,
             "tier": "mandatory" if n["importance"] == "vital" else "optional"} for n in row["nuggets"]]})
    files["rubrics"].write_text("".join(json.dumps(r) + "\n" for r in rubrics), encoding="utf-8")
    return files


def run_all(out: Path) -> None:
    env = {**os.environ, "HOME": str(out / "home"), "PYTHONHASHSEED": "0", "SOURCE_DATE_EPOCH": "0"}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL", "PYTERRIER_NUGGETS_CACHE"):
        env.pop(name, None)
    files = inputs(out / "inputs")
    with TestEndpoint() as endpoint:
        llm = ["--base-url", endpoint.base_url, "--model", "snapshot"]
        command(["demo", "--out", out / "demo-offline", "--no-plots", "--index-dir", out / "indexes"], env)
        command(["demo", "--llm", "endpoint", *llm, "--llm-cache", out / "caches" / "demo.sqlite",
                 "--out", out / "demo-llm", "--no-plots", "--index-dir", out / "indexes"], env)
        trec = ["trec-rag", "--answers", files["answers"], "--nuggets", RAG_MINI / "nuggets.jsonl",
                "--rubrics", files["rubrics"], "--topics", files["topics"], *llm,
                "--llm-cache", out / "caches" / "trec-rag.sqlite"]
        command([*trec, "--support", "--docs", RAG_MINI / "segments.jsonl", "--out", out / "trec-rag"], env)
        command([*trec, "--support-assignments", files["support"], "--unanswered", "omit",
                 "--out", out / "trec-rag-toolkit-support"], env)
        command(["arena", "--answers", files["answers"], "--topics", files["topics"], "--both-orders",
                 "--resamples", "50", "--prior", "1", "--no-plot", *llm, "--llm-cache", out / "caches" / "arena.sqlite",
                 "--out", out / "arena"], env)
    write_digests(out)


def file_digest(path: Path) -> str:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha256(PORT.sub("127.0.0.1:PORT", text).encode("utf-8")).hexdigest()


def cache_digest(path: Path) -> str:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT request, response FROM responses").fetchall()
    finally:
        con.close()
    rows = sorted((PORT.sub("127.0.0.1:PORT", request), response) for request, response in rows)
    return hashlib.sha256(json.dumps(rows).encode("utf-8")).hexdigest() + f" ({len(rows)} requests)"


def write_digests(out: Path) -> None:
    lines = []
    for folder in ("demo-offline", "demo-llm", "trec-rag", "trec-rag-toolkit-support", "arena"):
        for path in sorted((out / folder).rglob("*")):
            if path.is_file() and not path.name.endswith((".sqlite", ".sqlite-wal", ".sqlite-shm")):
                lines.append(f"{path.relative_to(out)}\t{file_digest(path)}")
    for path in sorted((out / "caches").glob("*.sqlite")):
        lines.append(f"{path.relative_to(out)} (requests)\t{cache_digest(path)}")
    (out / "digests.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} digests in {out / 'digests.tsv'}")


def compare(out: Path, before: Path) -> int:
    def read(folder: Path) -> dict[str, str]:
        return dict(line.split("\t", 1) for line in (folder / "digests.tsv").read_text().splitlines())
    now, then = read(out), read(before)
    differ = sorted(k for k in now.keys() | then.keys() if now.get(k) != then.get(k))
    for name in differ:
        print(f"differs: {name}: before {then.get(name, '(absent)')}, now {now.get(name, '(absent)')}")
    print(f"{len(now)} outputs; {len(differ)} differ from {before}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("out", type=Path, help="a new folder for the outputs and digests.tsv")
    parser.add_argument("--compare", type=Path, metavar="BEFORE", help="a folder of an earlier snapshot")
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists: give a new folder")
    run_all(args.out)
    return compare(args.out, args.compare) if args.compare else 0


if __name__ == "__main__":
    sys.exit(main())
