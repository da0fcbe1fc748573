"""``pyterrier-nuggets report``: a static HTML report of output folders (docs/report.md)."""
from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="a static HTML report of output folders (demo, trec-rag, arena, ikat, table, "
                       "annotate export): leaderboard, per-topic heat map, drill-down per system and topic",
                       description="Write a static HTML report of one or more output folders of the package: the "
                       "leaderboard of every measure with significance marks and the arena rating, who judged, a "
                       "per-topic heat map, and per (system, topic) the answer with its citations coloured by support, "
                       "the nuggets and their assignment, sub-narratives, rubric verdicts, retrieved segments with "
                       "relevance grades, arena battles and iKAT matches; two systems side by side. It opens from the "
                       "file system, without a server or network. Example: pyterrier-nuggets report out/demo "
                       "--collection $SAMPLE --out out/report (docs/report.md)")
    p.add_argument("folders", nargs="+", metavar="DIR", help="an output folder of demo, trec-rag, arena, ikat, "
                   "table --out or annotate export; several (of the same systems): at most one with scores, e.g. "
                   "out/trec out/arena")
    p.add_argument("--out", required=True, metavar="DIR", help="the report's folder (new or empty), e.g. "
                   "--out out/report; open REPORT_FOLDER/index.html")
    from pyterrier_nuggets.cli.options import add_overwrite
    add_overwrite(p)
    p.add_argument("--answers", action="append", default=[], metavar="[NAME=]FILE", help="an answer file (TREC RAG "
                   "2024/2025/2026) of systems whose answers the folders do not keep (trec-rag without --support, "
                   "arena); its run ids must be systems of the folders, else NAME=FILE reads a file of one run as "
                   "the system NAME; repeat for several, e.g. --answers answers.jsonl --answers gpt4o=run.jsonl")
    p.add_argument("--topics", metavar="FILE|ID", help="the topics' texts (TSV qid<TAB>text or an ir_datasets id), "
                   "e.g. the --topics given to trec-rag: --topics topics.tsv")
    p.add_argument("--second-judge", metavar="DIR", help="an output folder of the same systems judged by another "
                   "judge (another trec-rag or demo run, an annotation export): its nugget assignments and support "
                   "labels are shown beside the folders', the disagreements marked (judges.html), e.g. "
                   "--second-judge out/trec-llama")
    from pyterrier_nuggets.cli.errors import ON_INVALID
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse", help="nugget or assignment files with "
                   "invalid labels (real files have importance 'failed' and free-text assignments): refuse them "
                   "(default) or drop those nuggets, said in the report, e.g. --on-invalid drop")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--collection", metavar="DIR", help="a collection folder (docs.jsonl, topics.tsv, segments.qrels; "
                   "the shipped sample's folder is printed by python -c \"from pyterrier_nuggets.pipeline import "
                   "SAMPLE_COLLECTION; print(SAMPLE_COLLECTION)\") for segment texts, relevance grades and topics, e.g. "
                   "--collection my_collection/")
    g.add_argument("--dataset", metavar="ID", help="an ir_datasets id for the same, e.g. "
                   "msmarco-segment-v2.1/trec-rag-2024")
    p.add_argument("--docs", metavar="FILE", help="segment texts from a document JSONL ({\"docno\", \"text\"}), e.g. "
                   "--docs docs.jsonl")
    p.add_argument("--segment-qrels", metavar="FILE", help="relevance grades of the segments (TREC qrels), e.g. "
                   "--segment-qrels qrels.txt")
    p.add_argument("--baseline", metavar="NAME", help="for scores that state no test (trec-rag's scores.tsv, an "
                   "export): the system the report's paired t-tests are against (default: the first), e.g. --baseline A")
    p.add_argument("--title", metavar="TEXT", help="the report's title, e.g. --title \"TREC RAG 2026 dev runs\"")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.cli.paths import check_inputs
    from pyterrier_nuggets.report import build_report
    from pyterrier_nuggets.report.folders import answer_file
    check_inputs(*[p for p in (args.docs, args.segment_qrels, *(answer_file(a)[1] for a in args.answers)) if p])
    written = build_report(args.folders, args.out, answers=args.answers, collection=args.collection,
                           dataset=args.dataset, docs=args.docs, segment_qrels=args.segment_qrels, title=args.title,
                           baseline=args.baseline, overwrite=args.overwrite, topics=args.topics,
                           on_invalid=args.on_invalid, second_judge=args.second_judge)
    pages = [w for w in written if w.endswith(".html")]
    print(f"written: {args.out} ({len(written)} files: {', '.join(pages)}, assets/, data/); open "
          f"{args.out}/index.html in a browser")
    return 0
