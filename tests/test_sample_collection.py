"""The sample collection's hand-written gold nuggets (``sample/collection/nuggets.jsonl``).

Read with the package's own reader and checked against the other files of the collection: every topic of
``topics.tsv`` has nuggets with the same query, both importances, no duplicates, and every nugget is
grounded in the passages it names (``docnos`` provenance), which must be judged relevant (grade >= 1) for
its topic. "Grounded" is a lexical check: at least ``GROUNDED`` of the nugget's content words (lowercase,
stopwords removed, simple suffix stripping) occur in the passage. A nugget moved to another topic fails it,
and no nugget passes it on a judged non-relevant passage of its topic.
"""
from __future__ import annotations

import os
import re

import pytest

from pyterrier_nuggets import formats
from pyterrier_nuggets.pipeline.collections import SAMPLE_COLLECTION, sample_collection
from pyterrier_nuggets.records import Nugget

NUGGETS = os.path.join(SAMPLE_COLLECTION, "nuggets.jsonl")
GROUNDED = 0.6

STOPWORDS = frozenset("""
a about after all also among an and are as at be because been before between both but by can could do does
each for from has have he her his how if in into is it its itself many more most much no not of on one only
or other our out over per she so some such than that the their them then there these they this those through
to too under up very was we were what when where which while who why will with within without would
""".split())


def stem(word: str) -> str:
    """Crude suffix stripping, the same on both sides of the comparison (``stopped`` ~ ``stop``,
    ``carries`` ~ ``carry``, ``produced`` ~ ``produce``)."""
    if len(word) > 4 and word.endswith(("ies", "ied")):
        word = word[:-3] + "y"
    for suffix in ("ing", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The stemmed non-stopword tokens of a text (words of 2+ letters and numbers)."""
    tokens = re.findall(r"[a-z]+|[0-9]+", text.lower())
    return {stem(t) for t in tokens if t not in STOPWORDS and (len(t) > 1 or t.isdigit())}


def grounding(nugget_text: str, passage: str) -> float:
    """The share of the nugget's content words that occur in the passage."""
    words = content_words(nugget_text)
    return len(words & content_words(passage)) / len(words) if words else 0.0


def best_grounding(nugget_text: str, passages: list[str]) -> float:
    return max(grounding(nugget_text, p) for p in passages)


@pytest.fixture(scope="module")
def collection():
    return sample_collection()


@pytest.fixture(scope="module")
def gold() -> formats.NuggetSet:
    return formats.read_nuggets(NUGGETS)


def judged(collection, qid: str) -> dict[str, int]:
    q = collection.qrels[collection.qrels.qid == qid]
    return dict(zip(q.docno, q.label))


def relevant(collection, qid: str) -> dict[str, int]:
    return {d: g for d, g in judged(collection, qid).items() if g >= 1}


def test_every_topic_has_gold_nuggets_with_its_query(collection, gold):
    topics = dict(zip(collection.topics.qid, collection.topics["query"]))
    by_topic = gold.by_topic()
    assert sorted(by_topic) == sorted(topics)
    assert gold.queries == topics
    assert not gold.invalid.items
    for qid, nuggets in by_topic.items():
        assert 8 <= len(nuggets) <= 12, qid
        importances = [n.importance for n in nuggets]
        assert set(importances) == {"vital", "okay"}, qid
        assert 0.35 <= importances.count("vital") / len(nuggets) <= 0.5, qid
        assert [n.index for n in nuggets] == list(range(len(nuggets))), qid


def test_nuggets_are_short_and_not_duplicated(gold):
    seen: dict[tuple[str, frozenset], str] = {}
    for n in gold.nuggets:
        assert 3 <= len(n.text.split()) <= 15, n.id
        assert n.text == n.text.strip() and not n.text.endswith("."), n.id
        key = (n.qid, frozenset(content_words(n.text)))
        assert key not in seen, f"{n.id} repeats {seen[key]}"
        seen[key] = n.id


def test_every_nugget_is_stated_by_the_relevant_passages_it_names(collection, gold):
    for n in gold.nuggets:
        docnos = n.provenance.get("docnos")
        assert isinstance(docnos, list) and docnos, f"{n.id}: no docnos"
        graded = relevant(collection, n.qid)
        for docno in docnos:
            assert docno in graded, f"{n.id}: {docno} is not judged relevant for {n.qid}"
            score = grounding(n.text, collection.docstore[docno])
            assert score >= GROUNDED, f"{n.id} {n.text!r}: {score:.2f} of its words in {docno}"


def test_nuggets_are_grounded_in_their_topic_only(collection, gold):
    """The check the file must pass, and a nugget of another topic must fail; no nugget is as well
    supported by a judged non-relevant passage of its topic (those are on neighbouring subjects)."""
    by_topic = gold.by_topic()
    texts = {qid: [collection.docstore[d] for d in relevant(collection, qid)] for qid in by_topic}
    for qid, nuggets in by_topic.items():
        non_relevant = [collection.docstore[d] for d, g in judged(collection, qid).items() if g == 0]
        assert non_relevant, qid
        for n in nuggets:
            assert best_grounding(n.text, texts[qid]) >= GROUNDED, n.id
            assert best_grounding(n.text, non_relevant) < GROUNDED, n.id
        for other, passages in texts.items():
            if other != qid:
                for n in nuggets:
                    assert best_grounding(n.text, passages) < GROUNDED, f"{n.id} passes on topic {other}"


def test_a_nugget_from_a_wrong_topic_is_caught(collection, gold, tmp_path):
    """The grounding check fails a file where one nugget was put under the wrong topic."""
    by_topic = gold.by_topic()
    stray = by_topic["t08"][0]
    moved = [*by_topic["t02"], Nugget("t02", len(by_topic["t02"]), stray.text, stray.importance, {"docnos": ["p202"]})]
    path = str(tmp_path / "nuggets.jsonl")
    formats.write_nuggets(path, moved, gold.queries)
    with pytest.raises(AssertionError, match="t02:n12"):
        test_every_nugget_is_stated_by_the_relevant_passages_it_names(collection, formats.read_nuggets(path))
    with pytest.raises(AssertionError, match="t02:n12"):
        test_nuggets_are_grounded_in_their_topic_only(collection, formats.read_nuggets(path))


def test_better_passages_state_more_vital_nuggets(collection, gold):
    """A retriever that finds the grade-3 passages covers more vital nuggets than one finding only the
    grade-1 passage, so the nugget columns can separate a good retriever from a weak one."""
    for qid, nuggets in gold.by_topic().items():
        graded = relevant(collection, qid)

        def vital_covered(grade: int, nuggets=nuggets, graded=graded) -> int:
            return sum(n.importance == "vital" and any(graded[d] == grade for d in n.provenance["docnos"])
                       for n in nuggets)

        assert vital_covered(3) > vital_covered(2) >= vital_covered(1), qid
        assert all(any(d in graded for d in n.provenance["docnos"]) for n in nuggets)
        stated = {d for n in nuggets for d in n.provenance["docnos"]}
        assert stated == set(graded), f"{qid}: relevant passages without nuggets {set(graded) - stated}"
