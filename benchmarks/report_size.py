"""The report of a track (docs/report.md): ``pyterrier-nuggets report`` on a synthetic ``trec-rag`` + ``arena``
output of 30 runs x 301 topics (TREC RAG 2024's topic count), its size on disk and how fast it opens.

The inputs are written with the package's own writers, shaped like a real track: per (run, topic) an answer of
``--sentences`` sentences (about 22 words each, 1-2 citations, 15% uncited) with the toolkit's support
labels, ``--nuggets`` nuggets with assignments, a rubric of ``--criteria`` criteria with verdicts, 18 measures in
``scores.tsv`` (those ``trec-rag`` writes), each run's evaluation run, the judging manifest, arena battles (about two
per run and topic, both orders), segment texts (about 60 words) and relevance grades of every cited segment. Then the
report is written (timed), its files counted and measured, and, when Debian's chromium and chromedriver are there, the
overview, one topic page and the arena page are opened from the file system in headless Chromium: the time from
navigation to the drawn heat map / drill-down / win-rate matrix; and a search of every answer's text.

    .venv/bin/python benchmarks/report_size.py [--runs 30] [--topics 301] [--out out/report-bench]

Not a test: figures go to docs/benchmarks.md with the command, the machine and the date.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyterrier_nuggets import formats  # noqa: E402
from pyterrier_nuggets.evaluation.arena import leaderboard  # noqa: E402
from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, write_csv  # noqa: E402
from pyterrier_nuggets.formats.judging_io import (  # noqa: E402
    JudgeRecord,
    JudgingManifest,
    StepRecord,
    write_judging,
)
from pyterrier_nuggets.records import Answer, Assignment, Battle, Nugget, RubricVerdict, Sentence, SupportJudgment  # noqa: E402
from pyterrier_nuggets.report import build_report  # noqa: E402

MEASURES = ["AnswerWords", "V_strict", "V", "W_strict", "W", "A_strict", "A", "SubNarrativeCoverage",
            "SubNarrativeCoverage(credit='partial')", "SupportP", "SupportR", "SupportP(cite='all_judged')",
            "SupportR(cite='all_judged')", "SupportP(credit='hard')", "SupportR(credit='hard')", "RubricScore",
            "RubricScore(grading='binary')", "RubricFailedMandatory"]
SUPPORT = ["full", "full", "partial", "none", "unjudged"]
ASSIGNMENTS = ["support", "partial_support", "not_support", "not_support"]
VERDICTS = ["satisfied", "partially_satisfied", "not_satisfied"]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


WORDS = [w for w in ("the of and a to in is that for it as was with be by on not he this are or his from at which but "
                     "have an they you were her their one all we can has there been if more when will would who so no "
                     "bees dance hive food nectar flowers colony queen aurora solar wind particles atmosphere oxygen "
                     "nitrogen light energy magnetic field poles refrigerator compressor coolant heat kitchen").split()]


def write_inputs(root: str, runs: int, topics: int, sentences: int, nuggets: int, criteria: int, seed: int = 0
                 ) -> tuple[str, str, str, str]:
    """The trec-rag folder, the arena folder, the segment texts and their grades."""
    rng = random.Random(seed)
    trec, arena = os.path.join(root, "trec"), os.path.join(root, "arena")
    os.makedirs(trec)
    os.makedirs(arena)
    names = [f"team{r // 3:02d}.run-{r:02d}-with-a-realistic-name" for r in range(runs)]
    qids = [f"2024-{100000 + 37 * t}" for t in range(topics)]
    pool = {q: [f"msmarco_v2.1_doc_{t % 59:02d}_{1000 + 7 * t}#{k}_{20000 + k}" for k in range(40)]
            for t, q in enumerate(qids)}
    topic_nuggets = {q: [Nugget(q, i, words(rng, 8), "vital" if i % 2 == 0 else "okay",
                                {"mapped_sub_narrative": f"aspect {i % 4}"}) for i in range(nuggets)] for q in qids}
    rubric = formats.RubricSet([formats.RubricCriterion.of(q, i, words(rng, 10), 5 - i % 3 * 2, tier="mandatory"
                                                           if i < 3 else "optional")
                                for q in qids for i in range(criteria)])
    rows = []
    for name in names:
        answers, judgments, assigned, verdicts = [], [], [], []
        for q in qids:
            refs = rng.sample(pool[q], 8)
            sents = []
            for j in range(sentences):
                cites = () if rng.random() < 0.15 else tuple(sorted(rng.sample(range(8), rng.randint(1, 2))))
                sents.append(Sentence(words(rng, 22), cites))
                if not cites:
                    judgments.append(SupportJudgment(q, j, None, None, "none", name))
                for k, c in enumerate(cites):
                    judgments.append(SupportJudgment(q, j, k, refs[c], rng.choice(SUPPORT), name))
            answer = Answer(q, name, tuple(sents), tuple(refs))
            answers.append(answer)
            assigned.append(formats.AssignedAnswer(q, name, answer.text, topic_nuggets[q],
                                                   [Assignment(q, n.index, rng.choice(ASSIGNMENTS))
                                                    for n in topic_nuggets[q]], "a topic " + words(rng, 6)))
            verdicts += [RubricVerdict(q, i, rng.choice(VERDICTS), name) for i in range(criteria)]
            rows += [(name, q, m, round(rng.random() * (200 if m == "AnswerWords" else 1), 6)) for m in MEASURES]
        formats.write_support_assignments(os.path.join(trec, f"{name}.support_assignments.jsonl"), answers, judgments)
        formats.write_assignments(os.path.join(trec, f"{name}.assignments.jsonl"), assigned)
        formats.write_rubric_verdicts(os.path.join(trec, f"{name}.verdicts.jsonl"), verdicts, rubric)
        formats.write_run(os.path.join(trec, f"{name}.eval.run"), formats.evaluation_rows(assigned, answers, judgments)
                          + list(formats.rubric_rows(verdicts)), name)
    judge = JudgeRecord("a judge on a-model at https://example.invalid/v1", "endpoint", "a-model")
    write_judging(os.path.join(trec, "judging.json"), JudgingManifest("trec-rag", [
        StepRecord("assignment", MEASURES[1:9], judge, ["{run}.assignments.jsonl"]),
        StepRecord("support", MEASURES[9:15], judge, ["{run}.support_assignments.jsonl"]),
        StepRecord("rubric", MEASURES[15:], judge, ["{run}.verdicts.jsonl"]),
        StepRecord("length", MEASURES[:1], JudgeRecord("counted", "counted"))],
        {n: {"answers": topics, "unanswered": []} for n in names}))
    means = {}
    for name, _, m, v in rows:
        means.setdefault((name, m), []).append(v)
    with open(os.path.join(trec, "scores.tsv"), "w") as f:
        f.write("run\tqid\tmeasure\tvalue\n")
        f.writelines(f"{r}\t{q}\t{m}\t{v:.10g}\n" for r, q, m, v in rows)
        f.writelines(f"{r}\tall\t{m}\t{statistics.mean(v):.10g}\n" for (r, m), v in means.items())
    judge = "PairwiseJudge (naive prompt, both orders, seed 0) on a-model"
    battles = []
    for q in qids:
        order = names[:]
        rng.shuffle(order)
        met = set()
        for i, a in enumerate(order):
            for b in (order[(i + 1) % runs], order[(i + 2) % runs]) if i % 2 == 0 else ():
                if a != b and frozenset((a, b)) not in met:
                    met.add(frozenset((a, b)))
                    verdict = rng.choice(["A", "B", "Tie"])
                    battles.append(Battle(q, (a, b), a, b, verdict, judge, (verdict, verdict),
                                          raw=(f"[[{verdict}]] " + words(rng, 40), f"[[{verdict}]]"), query=q))
    formats.write_battles(os.path.join(arena, "battles.jsonl"), battles)
    board = leaderboard(battles, resamples=0, prior=1.0, judge=judge)
    write_csv(os.path.join(arena, "leaderboard.csv"), LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA, board.leaderboard_rows())
    docs = os.path.join(root, "docs.jsonl")
    formats.write_jsonl(docs, ({"docno": d, "text": words(rng, 60)} for q in qids for d in pool[q]))
    qrels = os.path.join(root, "qrels.txt")
    formats.write_qrels(qrels, ((q, d, rng.randint(0, 3)) for q in qids for d in pool[q]))
    return trec, arena, docs, qrels


def open_in_chromium(report: str) -> dict[str, float] | None:
    """Seconds from navigation to the drawn overview (heat map) and drill-down, in headless Chromium; None without
    it."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    profile = tempfile.mkdtemp(prefix="pn-bench-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--window-size=1400,1000", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    out = {}
    index = "file://" + os.path.abspath(os.path.join(report, "index.html"))
    try:
        for name, url, ready in (
                ("overview", index, "#difficulty table"),
                ("topic", "file://" + os.path.abspath(os.path.join(report, "topic.html")) + "#topic=2024-100037",
                 "#topic-title"),
                ("arena", "file://" + os.path.abspath(os.path.join(report, "arena.html")), "table.winrates")):
            start = time.perf_counter()
            driver.get(url)
            WebDriverWait(driver, 120).until(lambda d, ready=ready: d.find_elements(By.CSS_SELECTOR, ready))
            out[name] = time.perf_counter() - start
            out[name + " errors"] = len([e for e in driver.get_log("browser") if e["level"] == "SEVERE"])
        driver.get(index)
        WebDriverWait(driver, 120).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-form"))
        driver.find_element(By.ID, "search-text").send_keys("nectar flowers")
        start = time.perf_counter()
        driver.find_element(By.CSS_SELECTOR, "#search-form button").click()
        WebDriverWait(driver, 120).until(lambda d: "contain" in d.find_element(By.ID, "search-results").text)
        out["search"] = time.perf_counter() - start
        out["search errors"] = len([e for e in driver.get_log("browser") if e["level"] == "SEVERE"])
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--topics", type=int, default=301)
    parser.add_argument("--sentences", type=int, default=12)
    parser.add_argument("--nuggets", type=int, default=20)
    parser.add_argument("--criteria", type=int, default=10)
    parser.add_argument("--out", default=None, help="the report folder (default: a temporary one, removed)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pn-report-bench-")
    try:
        start = time.perf_counter()
        trec, arena, docs, qrels = write_inputs(work, args.runs, args.topics, args.sentences, args.nuggets,
                                               args.criteria)
        made = time.perf_counter() - start
        out = args.out or os.path.join(work, "report")
        if args.out and os.path.exists(out):
            shutil.rmtree(out)
        start = time.perf_counter()
        files = build_report([trec, arena], out, docs=docs, segment_qrels=qrels)
        took = time.perf_counter() - start
        sizes = {f: os.path.getsize(f) for f in files}
        topic = sorted(v for f, v in sizes.items() if os.path.basename(f).startswith("topic-"))
        measure = [v for f, v in sizes.items() if os.path.basename(f).startswith("measure-")]
        answers = [v for f, v in sizes.items() if os.path.basename(f).startswith("answers-")]
        inputs = sum(os.path.getsize(os.path.join(d, f)) for d in (trec, arena) for f in os.listdir(d))
        print(f"Command: python benchmarks/report_size.py {' '.join(sys.argv[1:])}")
        print(f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}; "
              f"date {date.today().isoformat()}\n")
        print(f"| {args.runs} runs x {args.topics} topics | |\n|---|---|")
        print(f"| inputs (trec-rag + arena folders, written in {made:.0f} s) | {inputs / 1e6:.1f} MB |")
        print(f"| report written in | {took:.1f} s |")
        print(f"| report on disk | {sum(sizes.values()) / 1e6:.1f} MB in {len(files)} files |")
        print(f"| index.html + data/index.js (what the overview loads first) | "
              f"{(sizes[os.path.join(out, 'index.html')] + sizes[os.path.join(out, 'data', 'index.js')]) / 1e3:.0f} kB |")
        print(f"| one measure's file (loaded with the heat map) | {statistics.median(measure) / 1e3:.0f} kB |")
        print(f"| one topic's file (loaded with its drill-down), median / largest | {topic[len(topic) // 2] / 1e3:.0f} "
              f"/ {topic[-1] / 1e3:.0f} kB |")
        print(f"| data/arena.js (loaded by the arena page) | {sizes[os.path.join(out, 'data', 'arena.js')] / 1e3:.0f} kB |")
        print(f"| one system's answers for the search (loaded when searched), median; all {len(answers)} | "
              f"{statistics.median(answers) / 1e3:.0f} kB; {sum(answers) / 1e6:.1f} MB |")
        opened = open_in_chromium(out)
        if opened is None:
            print("| opened in Chromium | not measured (no chromium / chromedriver) |")
        else:
            print(f"| overview drawn in headless Chromium (heat map of {args.runs * args.topics:,} cells) | "
                  f"{opened['overview']:.1f} s, {opened['overview errors']} console errors |")
            print(f"| a topic's drill-down drawn | {opened['topic']:.1f} s, {opened['topic errors']} console errors |")
            print(f"| the arena page drawn (win-rate matrix of {args.runs} x {args.runs}) | {opened['arena']:.1f} s, "
                  f"{opened['arena errors']} console errors |")
            print(f"| a search of every answer (each system's answers-S.js loaded) | {opened['search']:.1f} s, "
                  f"{opened['search errors']} console errors |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
