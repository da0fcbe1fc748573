"""What the package's test endpoint (:mod:`pyterrier_nuggets.testing`) answers to each judge: a deterministic, valid
reply read off the judge's own prompt (word overlap stands in for understanding). A judge declares its function as
``test_reply`` (:class:`~pyterrier_nuggets.judges.base.LLMJudge`); the endpoint picks it by the stage the client
declares with each request (``X-Pyterrier-Nuggets-Stage``: the judge's ``step``), never by the prompt's wording. A
new judge declares its own and the endpoint needs no change.

Each function takes the first user message of the request (a re-ask is answered as the question it re-asks) and
returns the reply's text. These are no judgments: the test endpoint's tables say so.
"""
from __future__ import annotations

import hashlib
import json
import re


def _stable(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def after(label: str, text: str) -> str:
    """The rest of the line after ``label`` in ``text`` ("" when it is not there)."""
    m = re.search(re.escape(label) + r"[ ]?(.*)", text)
    return m.group(1) if m else ""


def covered(text: str, passage: str) -> tuple[int, int]:
    """(how many of the words of more than 3 letters of ``text`` are in ``passage`` (lower case), how many there
    are)."""
    words = [w.strip(".,?!:;\"'").lower() for w in text.split() if len(w) > 3]
    passage = passage.lower()
    return sum(w in passage for w in words), len(words)


def _json_list(text: str) -> list:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def nugget_creation(prompt: str) -> str:
    """The nugget list so far, and the first six words of each passage of the window as new nuggets (30 at most)."""
    nuggets = _json_list(after("Initial Nugget List:", prompt))
    context = prompt.split("Context:", 1)[-1].split("Search Query:", 1)[0]
    for line in context.strip().splitlines():
        nugget = " ".join(re.sub(r"^\[\d+\]\s*", "", line).split()[:6])
        if nugget and nugget not in nuggets:
            nuggets.append(nugget)
    return json.dumps(nuggets[:30])


def _count(prompt: str) -> int:
    m = re.search(r"label each of the (\d+) nuggets", prompt)
    return int(m.group(1)) if m else len(_json_list(after("Nugget List:", prompt)))


def nugget_scoring(prompt: str) -> str:
    """vital or okay per nugget, by a hash of its text."""
    nuggets = _json_list(after("Nugget List:", prompt))[:_count(prompt)]
    return json.dumps(["vital" if _stable(str(n)) % 2 == 0 else "okay" for n in nuggets])


def nugget_assignment(prompt: str) -> str:
    """support when every word of the nugget is in the passage; partial_support (where the prompt offers it) when
    some are; else not_support."""
    nuggets = _json_list(after("Nugget List:", prompt))[:_count(prompt)]
    passage = after("Passage:", prompt).lower()
    labels = []
    for n in nuggets:
        words = [w for w in str(n).lower().split() if len(w) > 3]
        found = sum(w in passage for w in words)
        labels.append("support" if words and found == len(words) else
                      "partial_support" if found and "partial_support" in prompt else "not_support")
    return json.dumps(labels)


def _support_level(prompt: str) -> str:
    statement = prompt.split("Statement: ", 1)[-1].split("\nCitation: ", 1)[0]
    passage = prompt.split("\nCitation: ", 1)[-1].lower()
    words = [w.strip(".,").lower() for w in statement.split() if len(w) > 3]
    found = sum(w in passage for w in words)
    return "Full Support" if found == len(words) else "Partial Support" if found else "No Support"


def support_judgment(prompt: str) -> str:
    """Full Support when every word of the statement is in the cited passage, Partial Support when some are, else
    No Support."""
    return _support_level(prompt)


def biogen_relation(prompt: str) -> str:
    """Supports / Neutral / Not Relevant from the same word overlap as :func:`support_judgment`."""
    return {"Full Support": "Supports", "Partial Support": "Neutral", "No Support": "Not Relevant"}[_support_level(prompt)]


def relevance(prompt: str) -> str:
    """UMBRELA: the query words found in the passage (0-3); against sub-narratives (0-4): 0 covered -> 1 if a
    narrative word is there else 0, 1 -> 2, 2-3 -> 3, 4+ -> 4."""
    passage = after("Passage:", prompt)
    if "Sub-narratives:" in prompt:
        subs = _json_list(after("Sub-narratives:", prompt))
        done = sum(1 for sub in subs if covered(str(sub), passage)[0] == covered(str(sub), passage)[1] > 0)
        if done == 0:
            return f"##final score: {1 if covered(after('Narrative:', prompt), passage)[0] else 0}"
        return f"##final score: {2 if done == 1 else 3 if done <= 3 else 4}"
    query = {w for w in after("Query:", prompt).split("\n")[0].lower().split() if len(w) > 3}
    return f"##final score: {min(3, sum(w in passage.lower() for w in query))}"


def rubric_grading(prompt: str) -> str:
    """satisfied when every word of the criterion is in the answer, partially_satisfied when some are, else
    not_satisfied."""
    answer = after("Answer:", prompt)
    verdicts = []
    for criterion in _json_list(after("Criteria:", prompt)):
        found, total = covered(str(criterion), answer)
        verdicts.append("satisfied" if total and found == total else "partially_satisfied" if found
                        else "not_satisfied")
    return json.dumps(verdicts)


def pairwise(prompt: str) -> str:
    """The answer holding more of the question's words wins; equal is a tie."""
    question = after("Question:", prompt).split("\n")[0]
    counts = []
    for label in ("A", "B"):
        text = prompt.split(f"[Answer {label}]", 1)[-1].split(f"[End of answer {label}]", 1)[0]
        counts.append(covered(question, text)[0])
    return "[[A]]" if counts[0] > counts[1] else "[[B]]" if counts[1] > counts[0] else "[[Tie]]"


def cited_generation(prompt: str) -> str:
    """The first sentence of passages [1] and [2], each citing its passage, and one uncited sentence."""
    passages = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.M)
    sentences = [f"{text.split('. ')[0].rstrip('.')} [{number}]." for number, text in passages[:2]]
    return " ".join(sentences + ["That is all I know."])


def nugget_extraction(prompt: str) -> str:
    """The sentences of the text that hold a word of the query, one a line, copied exactly ("No nugget" when none
    does)."""
    query = after("#User query:", prompt)
    text = after("#Text:", prompt)
    spans = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip() and covered(query, s)[0]]
    return "\n".join(spans) if spans else "No nugget"


def matching(prompt: str) -> str:
    """yes when every word of the gold information is in the response, else no."""
    found, total = covered(after("#Gold Information:", prompt), after("#Response:", prompt))
    return "yes" if total and found == total else "no"
