"""Files checked against each other where they describe the same thing: support judgments against the
answers they judge, assignments against the answers and the nuggets they were made with, answers against
the run they are said to belong to. Each check raises an :class:`InputError` naming the file, the topic and
what differs, and what to do (CONE-RAG: response nuggets against the responses they were extracted from);
readers validate each file on its own (:mod:`pyterrier_nuggets.formats`)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyterrier_nuggets.formats.assignment_io import AssignedAnswer
from pyterrier_nuggets.formats.cone_io import ResponseNuggets, same_response
from pyterrier_nuggets.formats.files import InputError
from pyterrier_nuggets.formats.nugget_io import NuggetSet
from pyterrier_nuggets.records import Answer, SupportJudgment

__all__ = ["one_run", "check_support", "check_assignments_answers", "check_assignment_nuggets", "check_response_nuggets"]


def one_run(path: str, run_ids: Iterable[str], run_tag: str | None = None) -> str:
    """The one run a file holds; a file of several runs, or of another run than ``run_tag``, is refused.

    :param path: the file, named in the error.
    :param run_ids: the run of each of its items.
    :param run_tag: the run the file must hold, if known.
    :returns: the run (``run_tag``, or ``""``, for a file without items).
    """
    runs = sorted(set(run_ids))
    if len(runs) > 1:
        raise InputError(path, None, "run_id", f"holds {len(runs)} runs {runs}",
                         "split it, one run per file, or give the run to use")
    if run_tag is not None and runs and runs[0] != run_tag:
        raise InputError(path, None, "run_id", f"is run {runs[0]!r}, not {run_tag!r}", "give the files of one run")
    return runs[0] if runs else (run_tag or "")


def check_support(path: str, judgments: Sequence[SupportJudgment], answers: Sequence[Answer]) -> None:
    """Support judgments must judge exactly the citations of the answers (one run).

    For each sentence of each answer: one judgment per citation in order, of the cited segment, or one ``citation:
    null`` judgment for a sentence without citation; no judgment of another topic, run or sentence. Raises
    :class:`InputError` naming the first difference.

    :param path: the support file, named in errors.
    :param judgments: its judgments.
    :param answers: the answers they judge.
    """
    by_topic = {a.qid: a for a in answers}
    run = one_run(path, [j.run_id for j in judgments if j.run_id], None)
    answer_runs = {a.run_id for a in answers}
    if run and answer_runs and run not in answer_runs:
        raise InputError(path, None, "run_id", f"judges run {run!r}, but the answers are of run "
                         f"{sorted(answer_runs)}", "give the support judgments of the same run")
    of_run = f"run {run}, " if run else ""
    judged: dict[str, dict[int, dict[int | None, SupportJudgment]]] = {}
    for j in judgments:
        if j.qid not in by_topic:
            raise InputError(path, None, "qid", f"judges topic {j.qid}, which has no answer",
                             "give the support judgments of these answers")
        judged.setdefault(j.qid, {}).setdefault(j.sentence, {})[j.citation] = j
    for qid, sentences in judged.items():
        answer = by_topic[qid]
        for s in sorted(sentences):
            if s >= len(answer.sentences):
                raise InputError(path, None, "sentence", f"{of_run}topic {qid}: sentence {s} is judged, but the answer has "
                                 f"{len(answer.sentences)} sentences (0-based)", "judge these answers")
        for s in range(len(answer.sentences)):
            got = sentences.get(s)
            if got is None:
                raise InputError(path, None, "sentence", f"{of_run}topic {qid}: sentence {s} of the answer has no judgment",
                                 "judge every sentence; one without citation gets citation null, support none")
            cited = answer.cited_docnos(s)
            # the first citation only (the track's default, [support24 §3.3]) or every citation (cite='all_judged' or 'all_pairs')
            expected: list[int | None] = list(range(len(cited))) if cited else [None]
            if sorted(got, key=lambda c: -1 if c is None else c) not in (expected, expected[:1]):
                raise InputError(path, None, "citation", f"{of_run}topic {qid}, sentence {s}: judged citations "
                                 f"{sorted(got, key=str)}, but the sentence has {len(cited)} citation(s) "
                                 f"{expected}", "judge the first citation or each citation once (null for a "
                                 "sentence without)")
            for k, docno in enumerate(cited[:len(got)]):
                if got[k].docno != docno:
                    raise InputError(path, None, "docno", f"{of_run}topic {qid}, sentence {s}, citation {k}: judged segment "
                                     f"{got[k].docno!r}, but the sentence cites {docno!r}",
                                     "the judgments are of another answer")
    missing = sorted(q for q, a in by_topic.items() if a.sentences and q not in judged)
    if missing:
        raise InputError(path, None, "qid", ("holds no judgment (an empty file): none" if not judgments else
                                             "no support judgments") + f" for the answers of topic(s) "
                         f"{', '.join(missing[:10])}",
                         "judge every answer, or leave out the support measures")


def check_assignments_answers(path: str, assigned: Sequence[AssignedAnswer], answers: Sequence[Answer],
                              answers_path: str) -> None:
    """Assignments and answers of one run describe the same answers: the same topics, and where the
    assignment file carries the answer text, the same text. Raises :class:`InputError` naming the first difference.

    :param path: the assignment file, named in errors.
    :param assigned: its assigned answers.
    :param answers: the answers.
    :param answers_path: the answer file, named in errors.
    """
    by_topic = {a.qid: a for a in answers}
    for a in assigned:
        answer = by_topic.get(a.qid)
        if answer is None:
            raise InputError(answers_path, None, "topic_id", f"has no answer of topic {a.qid}, which {path} assigns",
                             "give the answers the assignments were made for")
        if a.answer_text is not None and " ".join(a.answer_text.split()) != " ".join(answer.text.split()):
            raise InputError(path, None, "answer_text", f"topic {a.qid}: the assigned answer text differs from "
                             f"the answer in {answers_path} ({a.answer_text[:40]!r}... vs {answer.text[:40]!r}...)",
                             "give the answers the assignments were made for")
    missing = sorted(set(by_topic) - {a.qid for a in assigned})
    if missing:
        raise InputError(path, None, "qid", f"has no assignments for the answers of topic(s) "
                         f"{', '.join(missing[:10])} in {answers_path}", "give the assignments of every answer")


def check_assignment_nuggets(path: str, assigned: Sequence[AssignedAnswer], nuggets: NuggetSet,
                             nuggets_path: str) -> None:
    """Assignments were made with the given nuggets: per topic the same nuggets (id, text and importance).
    Raises :class:`InputError` naming the first difference.

    :param path: the assignment file, named in errors.
    :param assigned: its assigned answers.
    :param nuggets: the nuggets.
    :param nuggets_path: the nugget file, named in errors.
    """
    by_topic = nuggets.by_topic()
    for a in assigned:
        theirs = {n.index: n for n in by_topic.get(a.qid, [])}
        ours = {n.index: n for n in a.nuggets}
        if a.qid not in by_topic:
            raise InputError(nuggets_path, None, "qid", f"has no nuggets for topic {a.qid}, which {path} assigns",
                             "give the nuggets the assignments were made with")
        if set(theirs) != set(ours):
            raise InputError(path, None, "nuggets", f"topic {a.qid}: the assignments have {len(ours)} nuggets, "
                             f"{nuggets_path} has {len(theirs)}", "give the nuggets the assignments were made with")
        for i, n in ours.items():
            m = theirs[i]
            if (" ".join(n.text.split()), n.importance) != (" ".join(m.text.split()), m.importance):
                raise InputError(path, None, f"nuggets[{i}]", f"topic {a.qid}: nugget {n.id} is "
                                 f"{n.text[:40]!r} ({n.importance}) here but {m.text[:40]!r} ({m.importance}) in "
                                 f"{nuggets_path}", "give the nuggets the assignments were made with")


def check_response_nuggets(path: str, items: Sequence[ResponseNuggets], responses: dict[tuple[str, str], str]) -> None:
    """A CONE-RAG response-nugget file against the responses file.

    One entry for each (turn, run) response, none for a response the file does not have, and the same response
    text (up to case, punctuation, Markdown and whitespace: the published nugget files hold the responses with
    their Markdown stripped). A missing entry would score Recall_NtN and Precision_NtN 0 without a word.

    :param path: the response-nugget file, named in errors.
    :param items: its entries.
    :param responses: ``(turn, run) -> response text`` of the responses file.
    """
    entries = {(r.qid, r.run_id): r for r in items}
    missing = [key for key in responses if key not in entries]
    if missing:
        shown = ", ".join(f"{t} {r}" for t, r in missing[:5])
        raise InputError(path, None, None, f"{len(missing)} of {len(responses)} responses have no entry (turn run: "
                         f"{shown}{', ...' if len(missing) > 5 else ''})", "give the response nuggets extracted from "
                         "this responses file")
    extra = [key for key in entries if key not in responses]
    if extra:
        t, r = extra[0]
        raise InputError(path, None, f"{t}.{r}", f"{len(extra)} entries are responses the responses file does not "
                         f"have (first: turn {t}, run {r})", "give the responses file these nuggets were extracted from")
    for key, text in responses.items():
        if not same_response(entries[key].response, text):
            raise InputError(path, None, f"{key[0]}.{key[1]}.response", "differs from the response of the responses "
                             "file", "the nuggets were extracted from another response: give matching files")
