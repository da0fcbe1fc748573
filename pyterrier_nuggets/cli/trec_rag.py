"""``pyterrier-nuggets trec-rag``: TREC RAG 2025 / 2026 submission files to the track's scores
(docs/trec-rag-2025-2026.md): the answers validated under the year's rules, nuggets assigned (V_strict ... A,
sub-narrative coverage), every citation judged for support (the three variants of the 2026 toolkit) or the
toolkit's support assignments read, rubric criteria graded (rubric score, failed mandatory criteria); the
evaluation files written beside the scores."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any

from pyterrier_nuggets.cli.errors import ON_INVALID, UsageError, positive_int
from pyterrier_nuggets.cli.options import add_llm_options, add_overwrite, llm_client, llm_mode, plan_first, step_policy
from pyterrier_nuggets.cli.paths import nonempty, nugget_file, output_folder

JUDGING = "judging.json"  # who judged each measure (formats/judging_io.py)
SUPPORT_TOOLKIT_NAMES = {  # our measure -> the 2026 toolkit's support metric name (castorini/RAGDoll), its order
    "SupportP": "weighted_precision_first_citation", "SupportR": "weighted_recall_first_citation",
    "SupportP(cite='all_judged')": "weighted_precision_all_judged_citations",
    "SupportR(cite='all_judged')": "weighted_recall_all_judged_citations",
    "SupportP(credit='hard')": "hard_precision", "SupportR(credit='hard')": "hard_recall",
}


def fitted(wide, width: int) -> str:
    """The table of means (a run a row, a measure a column) as text no wider than ``width`` where it can be: as it is
    when it fits, else transposed (a measure a row, a run a column), and cut into blocks of runs side by side that
    fit; a single column wider than ``width`` is printed as it is."""
    def text(frame) -> str:
        return frame.to_string(float_format=lambda v: f"{v:.4f}")

    def widest(block: str) -> int:
        return max(len(line) for line in block.splitlines())

    whole = text(wide)
    if widest(whole) <= width:
        return whole
    measures = wide.T
    blocks, runs = [], list(measures.columns)
    while runs:
        take = 1
        while take < len(runs) and widest(text(measures[runs[:take + 1]])) <= width:
            take += 1
        blocks.append(text(measures[runs[:take]]))
        runs = runs[take:]
    return "\n\n".join(blocks)


def add_parser(sub) -> None:
    p = sub.add_parser("trec-rag", help="TREC RAG 2025/2026 answer files to the track's scores: nuggets, "
                       "sub-narrative coverage, citation support (2026 variants), rubrics",
                       description="Score TREC RAG 2025/2026 answer files (one or more runs) as the track does, with "
                       "the LLM judges of this package on any OpenAI-compatible endpoint (cached): nugget assignment "
                       "(--nuggets), citation support of every citation (--support, or the toolkit's support "
                       "assignments with --support-assignments), rubric grading (--rubrics). Writes the qrels, one "
                       "evaluation run per run, the judges' files, per-topic scores and the toolkit's support metric "
                       "rows into --out, all or nothing. Example: pyterrier-nuggets trec-rag --answers myrun.jsonl "
                       "--nuggets nuggets.jsonl --support --docs docs.jsonl --out out/trec-rag (answers in the 2024 "
                       "form, as demo writes them: add --rules 2025; docs/trec-rag-2025-2026.md)")
    p.add_argument("--answers", action="append", required=True, metavar="FILE",
                   help="answer JSONL in the TREC RAG 2025/2026 form; repeat for several files, e.g. --answers run1.jsonl --answers run2.jsonl")
    p.add_argument("--rules", choices=("2026", "2025"), default="2026",
                   help="2026 (default): at most 1,024 words and 0-3 citations per answer object are checked; "
                   "2025: the format only, e.g. --rules 2025")
    p.add_argument("--nuggets", metavar="FILE|ID", help="nugget JSONL or an ir_datasets id whose docs are nuggets "
                   "(e.g. msmarco-segment-v2.1/trec-rag-2025/dev-nuggets): assign them (V_strict ... A; "
                   "SubNarrativeCoverage when they name sub-narratives)")
    p.add_argument("--rubrics", metavar="FILE|ID", help="rubric JSONL (ResearchRubrics or the toolkit's form) or an "
                   "ir_datasets id (e.g. trec-rag-2026/research-rubrics-dev): grade every criterion (RubricScore)")
    p.add_argument("--support", action="store_true", help="judge every citation of every answer (SupportJudge, "
                   "citations='all'); the cited texts come from --docs")
    p.add_argument("--support-assignments", action="append", default=[], metavar="FILE",
                   help="the toolkit's support assignment JSONL instead of judging (labels 2/1/0/-1), e.g. --support-assignments support.jsonl")
    p.add_argument("--docs", metavar="FILE|ID", help="texts of the cited documents or segments: JSONL {docno, text} "
                   "or an ir_datasets id with a docstore, e.g. --docs cited_segments.jsonl")
    p.add_argument("--unanswered", choices=("zero", "omit"), default="zero",
                   help="a topic with nuggets or a rubric that a run did not answer: 'zero' (default) scores 0 there "
                   "(trec_eval's rule); 'omit' leaves it out of that run's means, as the TREC RAG 2026 toolkit "
                   "averages the (topic, run) cells it scored, and writes each run's qrels (RUN.qrels.txt, the "
                   "topics it answered) instead of qrels.txt, so plain ir_measures gives the same means. Support and "
                   "length always average over the answered topics; e.g. --unanswered omit")
    p.add_argument("--topics", metavar="FILE|ID", help="the topics' text for the judges (TSV qid<TAB>text or an "
                   "ir_datasets id); default: the answers' narrative, else the nugget file's query, e.g. --topics topics.tsv")
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse",
                   help="a --nuggets file with invalid importance labels: refuse it (default) or drop those nuggets, "
                        "reported, e.g. --on-invalid drop")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder, e.g. --out out/trec-rag")
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="spread the topics over N processes (PyTerrier's .parallel(), one response cache, the outputs "
                        "of one process), sharing --concurrency between them: for an endpoint wider than one process "
                        "keeps busy (docs/scale.md); default 1, e.g. --workers 2")
    add_overwrite(p)
    add_llm_options(p)
    from pyterrier_nuggets.cli.shards import add_shard_option
    add_shard_option(p, "topics of the answers")
    p.set_defaults(func=run)


def _dataset(value: str, option: str):
    """The ir_datasets dataset of id ``value`` (given by ``option`` when it is not a file)."""
    import ir_datasets

    import datasets_ext  # noqa: F401  (registers the ids)
    try:
        return ir_datasets.load(value)
    except KeyError:
        raise UsageError(f"{option} {value!r} is neither a file nor an ir_datasets id") from None


def dataset_file(value: str, option: str) -> str:
    """``value`` itself when it is a file, else the file behind the docs of ir_datasets id ``value``."""
    return value if os.path.isfile(value) else _dataset(value, option).docs_path()


def topic_texts(value: str | None) -> dict[str, str]:
    """The texts of ``--topics`` (a TSV or an ir_datasets id), none without it."""
    from pyterrier_nuggets.pipeline.collections import topic_texts as read
    return read(value, "--topics") if value is not None else {}


def _docstore(value: str | None):
    from pyterrier_nuggets import formats
    if value is None:
        return None
    return formats.read_docs(value) if os.path.isfile(value) else _dataset(value, "--docs")


def _measures(nuggets, rubrics, support: bool) -> list:
    import ir_measures_ext as M
    measures = [M.AnswerWords]
    if nuggets is not None:
        measures += list(M.NUGGET_MEASURES)
        from pyterrier_nuggets import formats
        if formats.sub_narratives(nuggets):
            measures += [M.SubNarrativeCoverage, M.SubNarrativeCoverage(credit="partial")]
    if support:
        measures += [M.SupportP, M.SupportR, M.SupportP(cite="all_judged"), M.SupportR(cite="all_judged"),
                     M.SupportP(credit="hard"), M.SupportR(credit="hard")]
    if rubrics is not None:
        measures += [M.RubricScore, M.RubricScore(grading="binary")]
        if all(c.tier is not None for c in rubrics.criteria):
            measures.append(M.RubricFailedMandatory)
    return measures


@dataclass
class _Job:
    """What ``trec-rag`` reads, checks and judges, before anything is scored or written."""

    answers: list
    runs: list[str]
    nuggets: Any
    rubrics: Any
    topics: dict[str, str]
    support: list
    inputs: dict[str, str]
    docstore: Any = None
    assigned: list = field(default_factory=list)
    verdicts: list = field(default_factory=list)
    llm: Any = None
    only: set[str] | None = None  # a shard's topics: its qrels and scores are of those only
    left_out: dict[str, str] = field(default_factory=dict)  # topic -> the LLM step that failed on it (--on-failure)
    judges: dict[str, Any] = field(default_factory=dict)  # step -> the judge that ran it (judging.json)
    manifest: Any = None  # what judging.json says


def run(args) -> int:
    from pyterrier_nuggets import formats
    if args.support and args.support_assignments:
        raise UsageError("give --support (judge the citations) or --support-assignments (judged already), not both")
    if not (args.nuggets or args.rubrics):
        raise UsageError("give --nuggets and/or --rubrics: they define the topics and what is scored")
    from pyterrier_nuggets.cli import shards
    job = _read(args)  # every input, each file completely and the files against each other, before any call
    topics = list(dict.fromkeys(a.qid for a in job.answers))
    folder = output_folder(args, "trec-rag", inputs=job.inputs.values())  # refused before anything changes
    shards.begin(args, "trec-rag")
    if args.shard is not None:
        _keep_topics(job, set(args.shard.select(topics)))
        if not job.answers:
            return shards.finish(args, "trec-rag", topics)
    out_files = _outputs(args, job)
    formats.check_outputs(out_files, job.inputs)
    frame = _frame(job)
    if job.nuggets is not None or job.rubrics is not None or args.support:
        if args.workers > 1 and args.batch:
            raise UsageError("--batch sends every request from one process: leave out --workers")
        job.llm = llm_client(args, llm_mode(args))
    if plan_first(args, job.llm, lambda: _judge(args, job, frame), "these judgments"):
        return 0
    _judge(args, job, frame)
    _leave_out(job)
    qrels, measures, rows_by_run, table, means = _score(args, job)
    job.manifest = judging_manifest(args, job, measures, qrels)
    folder.write_all(_writers(out_files, job, qrels, rows_by_run, table, means))
    wide = means.pivot(index="run", columns="measure", values="value").reindex(columns=[str(m) for m in measures])
    print(fitted(wide, shutil.get_terminal_size().columns))
    print(_note(table, measures, args.unanswered))
    judge = f"judges: {job.llm.describe()}" if job.llm is not None else "judges: none (support assignments given)"
    print(f"{len(job.runs)} run(s), {len(job.answers)} answers; {judge}; written to {args.out}")
    if job.llm is not None:
        print("\nLLM work per stage:\n" + job.llm.usage().to_text())
    if job.left_out:
        print(f"note: {len(job.left_out)} topic(s) left out of every run's scores (--on-failure leave-out): an LLM "
              f"step failed on them ({', '.join(f'{q}: {s}' for q, s in list(job.left_out.items())[:8])}"
              f"{' ...' if len(job.left_out) > 8 else ''}); never scored. Run the same command again with --overwrite "
              "to complete them (what succeeded is cached)")
    return shards.finish(args, "trec-rag", topics, job.left_out, job.llm)


def _keep_topics(job: _Job, topics: set[str]) -> None:
    """``job`` cut to the answers (and given support assignments) of ``topics``: a shard's."""
    job.only = topics
    job.answers = [a for a in job.answers if a.qid in topics]
    job.runs = list(dict.fromkeys(a.run_id for a in job.answers))
    job.support = [j for j in job.support if j.qid in topics]


def _read(args) -> _Job:
    from pyterrier_nuggets import formats
    rules = formats.TREC_RAG_2026 if args.rules == "2026" else None
    inputs = {f"--answers {i + 1}": a for i, a in enumerate(args.answers)}
    inputs.update({f"--support-assignments {i + 1}": s for i, s in enumerate(args.support_assignments)})
    for value, option in ((args.nuggets, "--nuggets"), (args.rubrics, "--rubrics"), (args.docs, "--docs"),
                          (args.topics, "--topics")):
        if value and os.path.isfile(value):
            inputs[option] = value
    answers = []
    files_of_run: dict[str, str] = {}
    for path in args.answers:
        read = nonempty(path, formats.read_answers(path, rules=rules))
        for run_id in dict.fromkeys(a.run_id for a in read):
            other = files_of_run.setdefault(run_id, path)
            if other != path:
                raise formats.InputError(path, None, "run_id", f"run {run_id} is also in {other} (--answers): two "
                                         "files of one run, or two runs of one name",
                                         "give each run one file and its own run id")
        answers += read
    nuggets = nugget_file(dataset_file(args.nuggets, "--nuggets"), args.on_invalid) \
        if args.nuggets else None
    rubrics = formats.read_rubrics(dataset_file(args.rubrics, "--rubrics")) if args.rubrics else None
    _check_topics(answers, files_of_run, args, nuggets, rubrics)
    support = []
    for path in args.support_assignments:
        judged = formats.read_support_assignments(path)
        for run_id in dict.fromkeys(j.run_id for j in judged):
            formats.check_support(path, [j for j in judged if j.run_id == run_id],
                                  [a for a in answers if a.run_id == run_id])
        support += judged
    unjudged = [r for r in dict.fromkeys(a.run_id for a in answers) if r not in {j.run_id for j in support}]
    if args.support_assignments and unjudged:
        raise formats.InputError(", ".join(args.support_assignments), None, "run_id",
                                 f"no support assignment of run {unjudged[0]}"
                                 + (f" (nor of {len(unjudged) - 1} other run(s))" if len(unjudged) > 1 else "")
                                 + f"; they judge run(s) {', '.join(dict.fromkeys(j.run_id for j in support))}",
                                 "give the support assignments of every run of --answers")
    return _Job(answers, list(dict.fromkeys(a.run_id for a in answers)), nuggets, rubrics, topic_texts(args.topics),
                support, inputs, _docstore(args.docs))


def _check_topics(answers: list, files_of_run: dict[str, str], args, nuggets, rubrics) -> None:
    """Refuse answers whose topic ids are not those of the nuggets or the rubrics (``T1`` for ``t1``): every nugget
    and rubric score would be 0 (a topic with nuggets that a run did not answer scores 0). Each given file must share
    a topic with the answers, and each run a topic with one of them; the error names the answer file(s), the topic
    field, the other file, and an id of each side."""
    from pyterrier_nuggets.formats import InputError
    families = [(option, {n.qid for n in fam.nuggets} if option == "--nuggets" else set(fam.by_topic()))
                for option, fam in (("--nuggets", nuggets), ("--rubrics", rubrics)) if fam is not None]
    answered = {a.qid for a in answers}
    scored = set().union(*(topics for _, topics in families))
    field = "metadata.narrative_id" if answers and answers[0].metadata.get("format") == 2025 else "topic_id"
    fix = "check that both use the same topic ids"
    for option, topics in families:
        if not answered & topics:
            raise InputError(", ".join(dict.fromkeys(files_of_run.values())), None, field,
                             f"none of the {len(answered)} topics of the answers is a topic of {option} "
                             f"{getattr(args, option[2:])} ({len(topics)} topics; e.g. the answers have "
                             f"{min(answered)!r}, {option} has {min(topics)!r}): every score of it would be 0", fix)
    for run_id in dict.fromkeys(a.run_id for a in answers):
        mine = {a.qid for a in answers if a.run_id == run_id}
        if not mine & scored:
            given = " or ".join(f"{o} {getattr(args, o[2:])}" for o, _ in families)
            raise InputError(files_of_run[run_id], None, field, f"run {run_id} answers none of the topics of "
                             f"{given} (e.g. it has {min(mine)!r}, they have {min(scored)!r}): its nugget and rubric "
                             "scores would all be 0", fix)


def _outputs(args, job: _Job) -> dict[str, str]:
    """Every output file, by what it is (all are checked before any work and written all or none)."""
    judged = bool(args.support or args.support_assignments)
    out_files = {"scores": os.path.join(args.out, "scores.tsv"), "judging": os.path.join(args.out, JUDGING)}
    if args.unanswered == "zero":
        out_files["qrels"] = os.path.join(args.out, "qrels.txt")
    if judged:
        out_files["metric rows"] = os.path.join(args.out, "support_metric_rows.txt")
    for run_id in job.runs:
        out_files[f"{run_id} run"] = os.path.join(args.out, f"{run_id}.eval.run")
        if args.unanswered == "omit":  # each run's own qrels: plain ir_measures on them leaves its unanswered out
            out_files[f"{run_id} qrels"] = os.path.join(args.out, f"{run_id}.qrels.txt")
        if judged:
            out_files[f"{run_id} support"] = os.path.join(args.out, f"{run_id}.support_assignments.jsonl")
        if job.nuggets is not None:
            out_files[f"{run_id} assignments"] = os.path.join(args.out, f"{run_id}.assignments.jsonl")
        if job.rubrics is not None:
            out_files[f"{run_id} verdicts"] = os.path.join(args.out, f"{run_id}.verdicts.jsonl")
    return out_files


def _frame(job: _Job):
    """The answers as the judges read them, with each topic's text (a rubric topic without one is refused)."""
    from pyterrier_nuggets import formats
    frame = formats.answers_to_frame(job.answers)
    frame["query"] = [job.topics.get(a.qid) or a.query or (job.nuggets.queries.get(a.qid, "") if job.nuggets else "")
                      for a in job.answers]
    if job.rubrics is not None:
        textless = sorted({q for q, text in zip(frame["qid"], frame["query"])
                           if q in job.rubrics.by_topic() and not text})
        if textless:
            raise UsageError(f"the rubric judge needs each topic's text: topic(s) {', '.join(textless[:5])} have none "
                             "in the answers (metadata narrative); give --topics")
    return frame


def _judge(args, job: _Job, frame) -> None:
    """The LLM work: nugget assignment, support (``--support``), rubric grading. Under ``--on-failure leave-out``
    an answer with failed work gives no rows and its topic is recorded in ``job.left_out``; ``stop`` raises once
    every judgment ran; more failed than ``--max-failed-share`` stops the command."""
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.judges import NuggetAssigner, RubricJudge, SupportJudge
    from pyterrier_nuggets.judges.failures import check_failed_share
    policy = step_policy(args)
    judges = job.judges

    def spread(judge):  # --workers: the topics over processes (a dry run or the Batch API plans in this one)
        return judge.parallel(args.workers) if args.workers > 1 and job.llm.mode == "online" else judge

    if job.nuggets is not None:
        topics_with_nuggets = {n.qid for n in job.nuggets.nuggets}
        judges["assignment"] = NuggetAssigner(job.nuggets, job.llm, on_failure=policy)
        assigned_frame = spread(judges["assignment"])(frame[frame["qid"].isin(topics_with_nuggets)])
        job.assigned = formats.assignment_frame_to_answers(assigned_frame, job.nuggets)
    if args.support:
        judges["support"] = SupportJudge(job.llm, citations="all", docstore=job.docstore, on_failure=policy)
        job.support = formats.frame_to_judgments(spread(judges["support"])(frame))
    if job.rubrics is not None:
        graded = frame[frame["qid"].isin(set(job.rubrics.by_topic()))]
        judges["rubric"] = RubricJudge(job.rubrics, job.llm, on_failure=policy)
        job.verdicts = formats.frame_to_verdicts(spread(judges["rubric"])(graded))
    if job.llm is not None and job.llm.mode != "plan":
        check_failed_share(job.llm, args.max_failed_share)
    job.left_out = {qid: step for judge in judges.values() for qid, step in judge.failed_topics().items()}


def _leave_out(job: _Job) -> None:
    """The topics of ``job.left_out`` out of every run: their answers, judgments and qrels (never scored)."""
    if not job.left_out:
        return
    out = set(job.left_out)
    job.answers = [a for a in job.answers if a.qid not in out]
    job.assigned = [a for a in job.assigned if a.qid not in out]
    job.support = [j for j in job.support if j.qid not in out]
    job.verdicts = [v for v in job.verdicts if v.qid not in out]


def _score(args, job: _Job):
    """The qrels, the measures, each run's evaluation rows, the per-topic scores and the means per run."""
    import pandas as pd

    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation import score
    nugget_qrels = formats.nugget_qrels(job.nuggets) if job.nuggets else None
    qrels = pd.DataFrame(
        (list(zip(*[nugget_qrels[c] for c in ("qid", "docno", "label")])) if job.nuggets else [])
        + (formats.rubric_qrels_rows(job.rubrics) if job.rubrics else []), columns=["qid", "docno", "label"])
    if job.only is not None:
        qrels = qrels[qrels["qid"].isin(job.only)]
    qrels = qrels[~qrels["qid"].isin(set(job.left_out))]
    measures = _measures(job.nuggets, job.rubrics, bool(args.support or args.support_assignments))
    rows_by_run, scores = {}, []
    for run_id in job.runs:
        rows = formats.evaluation_rows([a for a in job.assigned if a.run_id == run_id],
                                       [a for a in job.answers if a.run_id == run_id],
                                       [j for j in job.support if j.run_id == run_id])
        rows += formats.rubric_rows(v for v in job.verdicts if v.run_id == run_id)
        rows_by_run[run_id] = rows
        scores.append(score(qrels, formats.run_frame(rows), measures).assign(run=run_id))
    table = pd.concat(scores, ignore_index=True)[["run", "qid", "measure", "value"]]
    if args.unanswered == "omit":  # the toolkit's cells: only the topics each run answered
        answered = {(a.run_id, a.qid) for a in job.answers}
        table = table[[cell in answered for cell in zip(table["run"], table["qid"])]].reset_index(drop=True)
    means = table.groupby(["run", "measure"], sort=False)["value"].mean().reset_index().assign(qid="all")
    return qrels, measures, rows_by_run, table, means


def _note(table, measures, unanswered: str) -> str:
    """Over how many topics each mean runs (decisions.md, decision 13), and what an unanswered topic counts."""
    from pyterrier_nuggets.evaluation.table import means_note
    per_run = table.groupby(["measure", "run"])["qid"].nunique()
    counts = {str(m): per_run[str(m)].tolist() if str(m) in per_run.index else [0] for m in measures}
    return means_note(counts) + (" A topic with nuggets or a rubric that a run did not answer scores 0 there." if
                                 unanswered == "zero" else " A topic a run did not answer is left out of its means "
                                 "(--unanswered omit, the TREC RAG 2026 toolkit's cells; each run's qrels are "
                                 "RUN.qrels.txt).")


# the steps of trec-rag: what each decides, the measures it feeds (by name), the judge's name, its files
STEPS = {
    "assignment": (("V_strict", "V", "W_strict", "W", "A_strict", "A", "SubNarrativeCoverage"),
                   "NuggetAssigner ([nugget-recall §4.2])", "{run}.assignments.jsonl"),
    "support": (("SupportP", "SupportR"), "SupportJudge ([support24 §3.2] prompt, every citation)",
                "{run}.support_assignments.jsonl"),
    "rubric": (("RubricScore", "RubricFailedMandatory"), "RubricJudge", "{run}.verdicts.jsonl"),
    "length": (("AnswerWords",), "counted: the answer's words (NFKC-normalised, as the TREC validator)", None),
}


def judging_manifest(args, job: _Job, measures, qrels):
    """What ``judging.json`` says of this run (formats/judging_io.py): per step the measures it feeds, its judge
    (model and kind: endpoint, embedded, test endpoint; support labels given as files), the nuggets and rubric judged
    against with what ``--on-invalid drop`` dropped, the judgments that failed; per run the topics it did not
    answer; the topics left out."""
    from pyterrier_nuggets.formats import shown_path
    from pyterrier_nuggets.formats.judging_io import JudgeRecord, JudgingManifest, StepRecord
    names = [str(m) for m in measures]
    steps = []
    for step, (feeds, label, files) in STEPS.items():
        fed = [n for n in names if n.split("(")[0] in feeds]
        if not fed:
            continue
        judge = job.judges.get(step)
        if step == "length":
            record = JudgeRecord(label, "counted")
        elif judge is None:  # the toolkit's support assignments, judged elsewhere
            record = JudgeRecord(f"given: {', '.join(shown_path(p) for p in args.support_assignments)} (the "
                                 "toolkit's support assignments, judged elsewhere)", "given")
        else:
            record = JudgeRecord(f"{label} on {job.llm.describe()}", job.llm.kind, str(job.llm.model))
        failed = [{"qid": f.qid, "what": f.what, "error": f.error} for f in getattr(judge, "failures", [])]
        steps.append(StepRecord(step, fed, record, [files] if files else [], _source(args, job, step),
                                _dropped(job, step), failed))
    topics = set(qrels["qid"])
    runs = {}
    for run_id in job.runs:
        answered = {a.qid for a in job.answers if a.run_id == run_id}
        runs[run_id] = {"answers": len(answered), "unanswered": sorted(topics - answered)}
    return JudgingManifest("trec-rag", steps, runs, args.unanswered, dict(job.left_out))


def _source(args, job: _Job, step: str) -> dict:
    from pyterrier_nuggets.formats import shown_path
    if step == "assignment":
        return {"file": shown_path(args.nuggets) if os.path.isfile(args.nuggets) else args.nuggets,
                "items": len(job.nuggets.nuggets), "topics": len({n.qid for n in job.nuggets.nuggets})}
    if step == "rubric":
        return {"file": shown_path(args.rubrics) if os.path.isfile(args.rubrics) else args.rubrics,
                "items": len(job.rubrics.criteria), "topics": len(job.rubrics.by_topic())}
    return {}


def _dropped(job: _Job, step: str) -> list[dict]:
    """The nuggets ``--on-invalid drop`` left out of the nugget file, each with its file, line and label."""
    if step != "assignment" or not job.nuggets.invalid:
        return []
    from pyterrier_nuggets.formats import shown_path
    return [{"file": shown_path(i.path), "line": i.line, "qid": i.qid, "index": i.index, "field": i.field,
             "value": i.value if isinstance(i.value, (str, int, float, bool)) or i.value is None else repr(i.value)}
            for i in job.nuggets.invalid.items]


def _writers(out_files: dict[str, str], job: _Job, qrels, rows_by_run: dict, table, means) -> dict:
    import pandas as pd

    from pyterrier_nuggets import formats
    from pyterrier_nuggets.formats.files import write_tsv
    from pyterrier_nuggets.formats.judging_io import write_judging
    manifest = job.manifest
    scores_tsv = pd.concat([table, means[["run", "qid", "measure", "value"]]], ignore_index=True)
    rows = [(run, qid, measure, f"{value:.10g}") for run, qid, measure, value in
            zip(scores_tsv["run"], scores_tsv["qid"], scores_tsv["measure"], scores_tsv["value"])]
    writers = {out_files["scores"]: lambda p: write_tsv(p, ("run", "qid", "measure", "value"), rows),
               out_files["judging"]: lambda p: write_judging(p, manifest)}
    if "qrels" in out_files:
        writers[out_files["qrels"]] = lambda p: formats.write_qrels(p, qrels.itertuples(index=False))
    if "metric rows" in out_files:
        writers[out_files["metric rows"]] = lambda p: _write_lines(p, support_metric_rows(table))
    for run_id in job.runs:
        run_answers = [a for a in job.answers if a.run_id == run_id]
        writers[out_files[f"{run_id} run"]] = (lambda p, r=run_id: formats.write_run(p, rows_by_run[r], r))
        if f"{run_id} qrels" in out_files:  # --unanswered omit: the qrels of the topics this run answered
            answered = {a.qid for a in run_answers}
            writers[out_files[f"{run_id} qrels"]] = (lambda p, t=answered: formats.write_qrels(
                p, qrels[qrels["qid"].isin(t)].itertuples(index=False)))
        if f"{run_id} support" in out_files:
            writers[out_files[f"{run_id} support"]] = (lambda p, ra=run_answers, r=run_id: formats.write_support_assignments(
                p, ra, [j for j in job.support if j.run_id == r]))
        if f"{run_id} assignments" in out_files:
            writers[out_files[f"{run_id} assignments"]] = (lambda p, r=run_id: formats.write_assignments(
                p, [a for a in job.assigned if a.run_id == r]))
        if f"{run_id} verdicts" in out_files:
            writers[out_files[f"{run_id} verdicts"]] = (lambda p, r=run_id: formats.write_rubric_verdicts(
                p, [v for v in job.verdicts if v.run_id == r], job.rubrics))
    return writers


def support_metric_rows(table) -> list[str]:
    """The toolkit's support metric rows ``run topic measure value`` (grouped by run, then measure in the
    toolkit's order, then topic; values with 6 decimals, trailing zeros dropped) of per-topic scores
    (``run, qid, measure, value``)."""
    lines = []
    for run_id, of_run in table.groupby("run", sort=True):
        for ours, theirs in SUPPORT_TOOLKIT_NAMES.items():
            rows = of_run[of_run["measure"] == ours].sort_values("qid", key=lambda q: q.map(_topic_order))
            lines += [f"{run_id} {qid} {theirs} {f'{value:.6f}'.rstrip('0').rstrip('.')}"
                      for qid, value in zip(rows["qid"], rows["value"])]
    return lines


def _topic_order(qid: str):
    return (0, int(qid), "") if qid.isdigit() else (1, 0, qid)


def _write_lines(path: str, lines: list[str]) -> None:
    from pyterrier_nuggets.formats import atomic_write
    with atomic_write(path) as f:
        f.writelines(line + "\n" for line in lines)
