"""A miniature ``IR_DATASETS_HOME`` in the real formats of every file datasets_ext reads.

Written independently of datasets_ext (the byte offsets in the segment ids are computed here), so the tests
check the readers against the formats, not against themselves.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

SEG_DIR = "msmarco-segment-v2.1/msmarco_v2.1_doc_segmented"
N_SHARDS = 60

RAG24_TOPICS = [("2024-145979", "what is vicarious trauma and how can it be coped with?"),
                ("2024-21669", "do abortions kill more black people than other weapons"),
                ("2024-32912", "how bad did the vietnam war devastate the economy in 1968")]
RAG25_QUERIES = [("464", "I want a thorough understanding of what makes up a community."),
                 ("58", "Nuclear energy: advantages, accidents and safety?")]
RAG26_QUERIES = [("rag2026-0", "I’m on a hospital nursing DEI council with limited money."),
                 ("rag2026-1", "My mother is 72 and my father died suddenly six weeks ago.")]
# the three judges' UMBRELA files of the RAG25 development topics: grades of the same three documents
UMBRELA_DEV = {"rag25-climbmix-umbrela-codex-gpt5.5-medium-reasoning-v1.qrels": [4, 2, 0],
               "rag25-climbmix-umbrela-qwen3.5-9b-v2.qrels": [3, 1, 0],
               "rag25-climbmix-umbrela-ministral-3-14b-instruct-2512-v2.qrels": [4, 2, 1]}


def segment_records(shard: int, n_docs: int) -> list[dict]:
    """Segments of ``n_docs`` small documents for one shard, with non-ASCII text (offsets are in bytes)."""
    records = []
    docbyte = 0
    for d in range(n_docs):
        title = f"Doc {shard}-{d} café"
        headings = f"{title}\nSection ✓ {d}"
        sentences = [f"Sentence {i} of document {d} in shard {shard}, naïve text – {'x' * (i * 7 % 50)}."
                     for i in range(3 + d % 4)]
        n_segs = 1 + d % 3
        for s in range(n_segs):
            body = " ".join(sentences[s:])
            records.append({"docbyte": docbyte, "segidx": s, "url": f"https://example.org/{shard}/{d}",
                            "title": title, "headings": headings, "segment": body,
                            "start_char": 10 * s, "end_char": 10 * s + len(body)})
        docbyte += 1000 + 37 * d
    return records


def write_shard(path: Path, shard: int, n_docs: int) -> list[str]:
    """Write one gzipped JSONL shard; returns its segment ids, whose last part is the line's byte offset."""
    ids = []
    offset = 0
    lines = []
    for r in segment_records(shard, n_docs):
        doc_id = f"msmarco_v2.1_doc_{shard:02d}_{r['docbyte']}#{r['segidx']}_{offset}"
        record = {"docid": doc_id, "url": r["url"], "title": r["title"], "headings": r["headings"],
                  "segment": r["segment"], "start_char": r["start_char"], "end_char": r["end_char"]}
        line = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
        lines.append(line)
        ids.append(doc_id)
        offset += len(line)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as f:
        f.write(b"".join(lines))
    return ids


def build_segments(home: Path) -> dict[int, list[str]]:
    """All 60 shards (shard 0 and 59 bigger); returns shard -> ids in file order."""
    return {shard: write_shard(home / SEG_DIR / f"msmarco_v2.1_doc_segmented_{shard:02d}.json.gz", shard,
                               40 if shard in (0, 59) else 2)
            for shard in range(N_SHARDS)}


def _write(path: Path, text: str, newline: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline=newline) as f:
        f.write(text)


def build_rag(home: Path, ids: dict[int, list[str]]) -> None:
    d24 = home / "msmarco-segment-v2.1/trec-rag-2024"
    # topics: qid<TAB>text with CRLF line endings, as the official file
    _write(d24 / "topics.rag24.test.txt", "".join(f"{q}\t{t}\n" for q, t in RAG24_TOPICS), newline="\r\n")
    # NIST qrels: column 2 is the assessment condition (1-5)
    _write(d24 / "qrels.rag24.test.txt", f"2024-145979 1 {ids[0][0]} 3\n2024-145979 4 {ids[0][1]} 0\n"
                                         f"2024-21669 5 {ids[59][2]} 2\n")
    _write(d24 / "qrels.rag24.test-umbrela-all.txt", f"2024-145979 0 {ids[0][0]} 2\n2024-32912 0 {ids[3][0]} 1\n")
    nuggets = [
        {"query": RAG24_TOPICS[0][1], "qid": "2024-145979", "nuggets": [
            {"text": "Vicarious trauma comes from exposure to others' trauma", "importance": "vital"},
            {"text": "Self-care helps", "importance": "okay"},
            {"text": "a label the parser never validated", "importance": "failed"},
            {"text": "Supervision helps", "importance": "okay"}]},
        {"query": RAG24_TOPICS[1][1], "qid": "2024-21669", "nuggets": [
            {"text": "Statistics differ by source", "importance": "vital"}]},
    ]
    _write(d24 / "rag24_nuggets_mistral.jsonl", "".join(json.dumps(n) + "\n" for n in nuggets))

    d25 = home / "msmarco-segment-v2.1/trec-rag-2025"
    _write(d25 / "trec_rag_2025_queries.jsonl", "".join(json.dumps({"id": q, "title": t}) + "\n"
                                                       for q, t in RAG25_QUERIES))
    _write(d25 / "qrels.rag25.test.txt", f"58 0 {ids[0][3]} 4\n58 0 {ids[1][0]} 0\n")
    _write(d25 / "rag25-topics-dev.tsv", f"58\t{RAG25_QUERIES[1][1]}\n")
    dev = {"qid": "58", "nuggets": [
        {"text": "nuclear energy produces very low greenhouse gas emissions",
         "mapped_sub_narrative": "\"Key advantages of nuclear energy\"", "importance": "vital", "source": "original"},
        {"text": "Chernobyl and Fukushima were major accidents",
         "mapped_sub_narrative": "\"Major nuclear accidents\"", "importance": "okay", "source": "post-edit"}]}
    _write(d25 / "rag25-dev-nuggets.jsonl", json.dumps(dev) + "\n")

    d26 = home / "trec-rag-2026"
    _write(d26 / "trec_rag_2026_queries.tsv", "".join(f"{q}\t{t}\n" for q, t in RAG26_QUERIES))
    _write(d26 / "research-rubrics-topics-dev.tsv", "683a\tWrite a blog post on competition geometry.\n")
    rubric = {"qid": "683a", "domain": "STEM", "rubrics": [
        {"criterion": "The response defines every acronym.", "weight": 4.0, "axis": "Communication Quality"},
        {"criterion": "The response places diagrams far from their text.", "weight": -3.0, "axis": "Communication Quality"}]}
    _write(d26 / "research-rubrics-dev-rubrics.jsonl", json.dumps(rubric) + "\n")
    for name, grades in UMBRELA_DEV.items():
        _write(d26 / name, "".join(f"58 0 shard_0000{i}_{i * 11} {g}\n" for i, g in enumerate(grades)))


def _ikat_topics(number_of, year: int) -> list[dict]:
    topics = []
    for t in range(2):
        number = number_of(t)
        turns = []
        for turn in range(1, 4):
            turns.append({"turn_id": turn, "utterance": f"{year} question {turn} of topic {number}",
                          "resolved_utterance": f"{year} resolved question {turn} of topic {number}",
                          "response": f"{year} answer {turn} of topic {number}",
                          "ptkb_provenance": [1] if year == 2023 else ["2"],
                          "response_provenance": [f"clueweb22-en0000-00-0000{turn}:{t}"]})
        topics.append({"number": number, "title": f"Topic {number}",
                       "ptkb": {"1": "I'm vegetarian.", "2": "I live in Glasgow."}, "turns": turns})
    return topics


def build_ikat(home: Path) -> None:
    d = home / "trec-ikat"
    _write(d / "2023/2023_test_topics.json", json.dumps(_ikat_topics(lambda t: f"{9 + t}-1", 2023), indent=1))
    _write(d / "2024/2024_test_topics.json", json.dumps(_ikat_topics(lambda t: t, 2024), indent=1))
    _write(d / "2023/2023-qrels.all-turns.txt", "9-1_1 Q0 clueweb22-en0000-00-00001:0 2\n"
                                                "9-1_2 Q0 clueweb22-en0000-00-00002:1 0\n")
    _write(d / "2024/2024-qrels.txt", "0_1 Q0 clueweb22-en0000-00-00001:0 3\n")
    _write(d / "2023/ptkb_rel_nist", "9-1_1 0 1 1\n9-1_1 0 2 0\n10-1_2 0 2 1\n")
    build_cone(d / "2024")
    passages = [{"id": f"clueweb22-en0000-00-0000{i}:{j}", "contents": f"passage {j} of document {i}",
                 "url": f"https://example.org/{i}"} for i in range(1, 4) for j in range(2)]
    p = d / "clueweb22b-passages/ikat_2023_passages_00.jsonl.gz"
    p.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps(x) + "\n" for x in passages))


CONE_GOLD_HUMAN = {"0_1": {"[1]": {"text": "Glasgow has a mild climate.", "relevance": "3"},
                           "[2]": {"text": "It rains often in Glasgow.", "relevance": "2"}},
                   "0_2": {"[1]": {"text": "Vegetarian food is common.", "relevance": "2"}}}


def build_cone(d: Path) -> None:
    """Miniature CONE-RAG files in the published forms (turns of the 2024 miniature topics)."""
    dedup = {"0_1": {"[2]": CONE_GOLD_HUMAN["0_1"]["[2]"]}, "0_2": CONE_GOLD_HUMAN["0_2"]}
    llm = {"0_1": {"[1]": {"text": "Glasgow is mild.", "relevance": "3"}}}
    _write(d / "gold_nuggets_human.json", json.dumps(CONE_GOLD_HUMAN, indent=1))
    _write(d / "gold_nuggets_human_deduplicated.json", json.dumps(dedup, indent=1))
    _write(d / "gold_nuggets_llm.json", json.dumps(llm, indent=1))
    _write(d / "gold_nuggets_llm_deduplicated.json", json.dumps(llm, indent=1))
    _write(d / "gold_response_and_nuggets_human.json", json.dumps(
        {"0_1": {"manual": {"nuggets": {"matched": ["mild climate"], "not-matched": []},
                            "response": "Glasgow has a mild climate."}}}))
    _write(d / "automatic_responses.json", json.dumps(
        {"0_1": {"runA": "Glasgow has a mild climate.", "runB": "No idea."},
         "0_2": {"runA": "Vegetarian food is common.", "runB": ""}}))
    _write(d / "manual_responses.json", json.dumps({"0_1": {"manual-run": "Glasgow is mild and wet."}}))


def build_home(home: Path) -> dict[int, list[str]]:
    """Everything; returns the segment ids per shard."""
    ids = build_segments(home)
    build_rag(home, ids)
    build_ikat(home)
    return ids
