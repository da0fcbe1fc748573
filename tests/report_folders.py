"""Output folders of the package's commands for the report's tests, made by running the commands: the main job
(``demo``, offline, on a small collection written here) and ``trec-rag`` + ``arena`` (on the fake endpoint).
Answers, nuggets, rubric criteria, topics and segment texts carry markup that must stay text (:data:`PAYLOAD`)."""
from __future__ import annotations

import json
from pathlib import Path

from pyterrier_nuggets import cli

# markup that would run if a page ever took text as HTML, or if a data file's JSON could end its script
PAYLOAD = '<img src=x onerror="window.__pnXss=1"></script><script>window.__pnXss=2</script>\u2028&amp;'

DOCS = {
    "b1": "Honey bees perform a waggle dance to tell other bees the direction and distance of food.",
    "b2": "The angle of the waggle run relative to vertical gives the direction of the food relative to the sun.",
    "b3": "When food is close to the hive, bees perform a round dance instead of a waggle dance.",
    "b4": "Bumblebees nest in the ground and live in small colonies. " + PAYLOAD,
    "l1": "The northern lights appear when charged particles from the sun hit the upper atmosphere.",
    "l2": "Oxygen atoms in the upper atmosphere give off green and red light in an aurora.",
    "l3": "The southern counterpart of the northern lights is the aurora australis.",
    "l4": "Lighthouses guide ships along the coast at night.",
}
TOPICS = {"t1": "how do honey bees tell other bees where to find food", "t2": "what causes the northern lights " +
          PAYLOAD}
QRELS = {("t1", "b1"): 3, ("t1", "b2"): 3, ("t1", "b3"): 2, ("t1", "b4"): 0, ("t2", "l1"): 3, ("t2", "l2"): 2,
         ("t2", "l3"): 1, ("t2", "l4"): 0}
NUGGETS = {"t1": [("Bees perform a waggle dance to share where food is", "vital"),
                  ("The waggle run's angle gives the direction " + PAYLOAD, "vital"),
                  ("Close food gets a round dance", "okay")],
           "t2": [("Charged particles from the sun hit the atmosphere", "vital"),
                  ("Oxygen gives off green light", "okay")]}
# a system whose answers come from a file, with markup in a sentence
ANSWERS = [{"run_id": "marked", "topic_id": "t1", "topic": TOPICS["t1"], "references": ["b1", "b2"],
            "answer": [{"text": "Bees dance to show where food is.", "citations": [0]},
                       {"text": "The angle gives the direction. " + PAYLOAD, "citations": [1, 0]},
                       {"text": "They also like flowers.", "citations": []}]},
           {"run_id": "marked", "topic_id": "t2", "topic": TOPICS["t2"], "references": ["l1"],
            "answer": [{"text": "Particles from the sun hit the atmosphere.", "citations": [0]}]}]


def _jsonl(path: Path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def collection(root: Path) -> Path:
    """A collection folder in the sample's form (docs.jsonl, topics.tsv, segments.qrels, nuggets.jsonl)."""
    root.mkdir(parents=True, exist_ok=True)
    _jsonl(root / "docs.jsonl", [{"docno": d, "text": t} for d, t in DOCS.items()])
    (root / "topics.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in TOPICS.items()), encoding="utf-8")
    (root / "segments.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in QRELS.items()))
    _jsonl(root / "nuggets.jsonl", [{"qid": q, "query": TOPICS[q], "nuggets": [
        {"id": f"{q}:n{i}", "text": t, "importance": imp} for i, (t, imp) in enumerate(ns)]} for q, ns in NUGGETS.items()])
    return root


def main_job_folder(tmp: Path) -> tuple[Path, Path]:
    """``pyterrier-nuggets demo`` offline on :func:`collection`: BM25 and dense at k = 2 (extractive answers) and
    the system ``marked`` of :data:`ANSWERS`; baseline judges; the arena. Returns (output folder, collection)."""
    coll = collection(tmp / "collection")
    answers = _jsonl(tmp / "marked.answers.jsonl", ANSWERS)
    run = tmp / "marked.run"
    run.write_text("t1 Q0 b1 1 3.0 marked\nt1 Q0 b2 2 2.0 marked\nt1 Q0 b4 3 1.0 marked\nt2 Q0 l1 1 2.0 marked\n"
                   "t2 Q0 l4 2 1.0 marked\n")
    out = tmp / "demo"
    code = cli.main(["demo", "--collection", str(coll), "--system", "bm25:2", "--system", "dense:2", "--answers",
                     f"marked={answers}", "--run", f"marked={run}", "--out", str(out), "--index-dir",
                     str(tmp / "indexes"), "--no-plots"])
    assert code == 0
    return out, coll


TREC_DOCS = {"d1": "Paris is the capital of France.", "d2": "Lyon is a large city.", "d3": "Bananas are yellow fruit.",
             "d4": "Marseille is a port on the Mediterranean."}
TREC_TOPICS = {"t1": "tell me about French cities", "t2": "ports of France"}


def _answer(run: str, qid: str, sentences, references) -> dict:
    return {"metadata": {"team_id": "us", "run_id": run, "type": "automatic", "narrative_id": qid},
            "references": references, "answer": [{"text": t, "citations": c} for t, c in sentences]}


TREC_ANSWERS = [
    _answer("A", "t1", [("Paris is the capital.", [0, 1]), ("## Summary", []), ("Bananas are yellow.", ["d3"])],
            ["d1", "d2", "d3"]),
    _answer("A", "t2", [("Marseille is a port. " + PAYLOAD, [0])], ["d4"]),
    _answer("B", "t1", [("Lyon is large.", [0]), ("Nothing else.", [])], ["d2"]),
    _answer("B", "t2", [("Marseille is on the Mediterranean.", [0])], ["d4"]),
    _answer("C", "t1", [("Paris is the capital of France.", [0])], ["d1"]),
    _answer("C", "t2", [("Lyon is a large city.", [0])], ["d2"]),
]
TREC_NUGGETS = [{"qid": "t1", "query": TREC_TOPICS["t1"], "nuggets": [
    {"text": "Paris capital", "importance": "vital", "mapped_sub_narrative": "Capital city"},
    {"text": "Bananas yellow " + PAYLOAD, "importance": "okay", "mapped_sub_narrative": "Fruit"},
    {"text": "Lyon large city", "importance": "vital", "mapped_sub_narrative": "Other cities"}]},
    {"qid": "t2", "query": TREC_TOPICS["t2"], "nuggets": [
        {"text": "Marseille port Mediterranean", "importance": "vital", "mapped_sub_narrative": "South"}]}]
TREC_RUBRICS = [{"qid": "t1", "criteria": [{"text": "Paris capital", "weight": 5, "tier": "mandatory"},
                                           {"text": "Bananas " + PAYLOAD, "weight": 2, "tier": "optional"},
                                           {"text": "Lyon", "weight": -3, "tier": "optional"}]},
                {"qid": "t2", "criteria": [{"text": "Marseille port", "weight": 4, "tier": "mandatory"}]}]


def trec_rag_folders(tmp: Path, base_url: str, names: dict[str, str] | None = None) -> tuple[Path, Path, str]:
    """``trec-rag`` (nuggets, rubric, support judged) and ``arena`` (both orders) of three runs on the fake endpoint
    at ``base_url``; ``names``: the runs A, B, C renamed (e.g. to a track's long run names). Returns (trec-rag folder,
    arena folder, the segment texts file)."""
    tmp.mkdir(parents=True, exist_ok=True)
    rows = [{**a, "metadata": {**a["metadata"], "run_id": (names or {}).get(a["metadata"]["run_id"],
                                                                          a["metadata"]["run_id"])}}
            for a in TREC_ANSWERS]
    answers = _jsonl(tmp / "answers.jsonl", rows)
    docs = _jsonl(tmp / "docs.jsonl", [{"docno": d, "text": t} for d, t in TREC_DOCS.items()])
    topics = tmp / "topics.tsv"
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in TREC_TOPICS.items()))
    endpoint = ["--base-url", base_url, "--model", "fake", "--llm-cache", str(tmp / "cache.sqlite")]
    trec, arena = tmp / "trec", tmp / "arena"
    assert cli.main(["trec-rag", "--answers", answers, "--nuggets", _jsonl(tmp / "nuggets.jsonl", TREC_NUGGETS),
                     "--rubrics", _jsonl(tmp / "rubrics.jsonl", TREC_RUBRICS), "--support", "--docs", docs,
                     "--out", str(trec), *endpoint]) == 0
    assert cli.main(["arena", "--answers", answers, "--topics", str(topics), "--out", str(arena), "--both-orders",
                     "--resamples", "50", "--prior", "1", "--no-plot", *endpoint]) == 0
    return trec, arena, docs


def many_topics_trec_rag(tmp: Path, base_url: str, runs=("A", "B"), topics: int = 12, *options: str,
                         out: str = "trec") -> Path:
    """``trec-rag`` (nuggets, support judged) of ``runs`` on ``topics`` topics ``t0`` ... on the fake endpoint at
    ``base_url``, with ``options`` added (e.g. ``--shard 1/2``): a folder to cut, edit or shard. Returns the folder."""
    tmp.mkdir(parents=True, exist_ok=True)
    qids = [f"t{i}" for i in range(topics)]
    answers = _jsonl(tmp / "many.answers.jsonl", [
        _answer(run, q, [(f"{run} says {TREC_DOCS['d1']}", [0]), ("Nothing else.", [])], ["d1"])
        for run in runs for q in qids])
    nuggets = _jsonl(tmp / "many.nuggets.jsonl", [{"qid": q, "query": f"topic {q}", "nuggets": [
        {"text": "Paris capital", "importance": "vital"}, {"text": "Lyon large", "importance": "okay"}]} for q in qids])
    docs = _jsonl(tmp / "many.docs.jsonl", [{"docno": d, "text": t} for d, t in TREC_DOCS.items()])
    folder = tmp / out
    assert cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--support", "--docs", docs,
                     "--out", str(folder), "--base-url", base_url, "--model", "fake", "--llm-cache",
                     str(tmp / "many.cache.sqlite"), *options]) == 0
    return folder


def lenient_judge(body):
    """A second judge on the test endpoint (model ``lenient``): every nugget supported, every citation fully
    supported; the other models get the endpoint's own replies."""
    from pyterrier_nuggets.testing import first_prompt, stage_reply
    if body.get("model") != "lenient":
        return None
    prompt = first_prompt(body)
    if "Nugget List:" in prompt:
        return stage_reply(body, "assign").content.replace("not_support", "support").replace("partial_support",
                                                                                            "support")
    if "Statement: " in prompt:
        return "Full Support"
    return None


def second_judge_folder(tmp: Path, base_url: str, answers: list[str], nuggets: str, docs: str | None = None,
                        out: str = "second") -> Path:
    """``trec-rag`` of ``answers`` against ``nuggets`` (and every citation's support with ``docs``) by the second judge
    of :func:`lenient_judge` (the endpoint at ``base_url`` must answer with it). Returns the folder."""
    argv = ["trec-rag", *[x for a in answers for x in ("--answers", a)], "--nuggets", nuggets, "--rules", "2025",
            "--out", str(tmp / out), "--base-url", base_url, "--model", "lenient", "--llm-cache",
            str(tmp / f"{out}.sqlite")]
    if docs:
        argv += ["--support", "--docs", docs]
    assert cli.main(argv) == 0
    return tmp / out
