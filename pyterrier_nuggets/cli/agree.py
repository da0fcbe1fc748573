"""``pyterrier-nuggets agree``: do two or more judges give the same labels to the same items? Exact agreement,
Cohen's κ (linearly and quadratically weighted too for ordinal labels), the confusion matrix and each judge's
label distribution for every pair; Krippendorff's α over all judges; a consensus qrels (docs/meta-evaluation.md)."""
from __future__ import annotations

import json
import os

from pyterrier_nuggets.cli.errors import ON_INVALID
from pyterrier_nuggets.cli.paths import check_inputs, check_output

KIND_CHOICES = ("assignment", "assignment-2grade", "importance", "support", "relevance", "match", "preference", "generic")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "agree", help="label agreement (exact, Cohen's κ, weighted κ, Krippendorff's α, confusion matrices) between "
        "two or more judges of the same items; consensus qrels",
        description="Agreement between judges' labels of the same items, matched by id: for every pair exact "
        "agreement, Cohen's κ (and linearly and quadratically weighted κ for ordinal labels), the confusion matrix "
        "in counts and percent, each judge's label distribution; with three or more judges also Krippendorff's α "
        "(nominal, ordinal, interval for grades) over all of them. Items only some judges have are listed, not "
        "compared. --consensus writes one qrels of the judges' qrels (majority, mean or median grade, ties broken "
        "by --ties and counted). Example: pyterrier-nuggets agree human.assignments.jsonl llm.assignments.jsonl "
        "--name human --name llm (docs/meta-evaluation.md)")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="each judge's labels, files of one type: assignment JSONL, nugget JSONL, support JSONL or the "
                   "TREC RAG 2026 toolkit's support assignments, TREC qrels, arena battle files (battles.jsonl, the "
                   "toolkit's judgments.jsonl, human verdicts), or a generic label file (JSONL "
                   "{\"id\", \"label\"} or TSV id<TAB>label); at least two, e.g. nist.qrels umbrela.qrels")
    p.add_argument("--kind", choices=KIND_CHOICES,
                   help="which labels (default from the file: assignment, importance for nugget files, support, "
                   "relevance for qrels, generic); assignment files also give importance or assignment-2grade; "
                   "generic label files give match (CONE-RAG yes/no) or generic, e.g. --kind importance")
    p.add_argument("--labels", metavar="L1,L2,...", help="generic labels in order, lowest first, comma-separated (e.g. low,mid,high)")
    p.add_argument("--ordinal", action="store_true", help="generic labels are ordinal (needs --labels): adds "
                   "weighted κ")
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse",
                   help="nuggets with invalid labels in nugget/assignment files: refuse (default) or drop (counted), e.g. --on-invalid drop")
    p.add_argument("--name", action="append", metavar="NAME",
                   help="a judge's name in the output, once per file in order (default: the file names), e.g. --name NIST --name GPT-4o")
    p.add_argument("--label-a", metavar="NAME", help="name of the first judge (same as the first --name), e.g. --label-a NIST")
    p.add_argument("--label-b", metavar="NAME", help="name of the second judge (same as the second --name), e.g. --label-b GPT-4o")
    p.add_argument("--consensus", choices=("majority", "mean", "median"),
                   help="write the judges' consensus to --out (qrels files): the most frequent grade, the mean grade "
                   "rounded, or the median grade, of the items every judge labelled, e.g. --consensus median")
    p.add_argument("--ties", choices=("low", "high"), default="low",
                   help="a tie (several most frequent grades, a mean or median half-way between two grades) goes to "
                   "the lower (default) or the higher grade; ties are counted in the output, e.g. --ties high")
    p.add_argument("--out", metavar="FILE", help="the consensus qrels to write (with --consensus), e.g. --out out/consensus.qrels")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text report")
    p.add_argument("--plot", metavar="FILE", help="write the confusion-matrix heat map of two judges as FILE's .png, .pdf and .svg, e.g. --plot out/confusion.png")
    p.set_defaults(func=run)


def _names(args) -> list[str]:
    from pyterrier_nuggets.formats import InputError
    names = list(args.name or [])
    if names and len(names) != len(args.files):
        raise InputError(args.files[0], None, None, f"{len(names)} --name for {len(args.files)} files",
                         "give one --name per file, in order, or none")
    if not names:
        names = [os.path.basename(f) for f in args.files]
        if len(set(names)) != len(names):  # e.g. a file compared with itself
            names = [f"{name} ({k + 1})" for k, name in enumerate(names)]
    for k, given in enumerate((args.label_a, args.label_b)):
        if given:
            names[k] = given
    if len(set(names)) != len(names):
        raise InputError(args.files[0], None, None, f"two judges have the same name ({names})", "give distinct --name")
    return names


def run(args) -> int:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation.agreement import consensus, multi_agreement
    from pyterrier_nuggets.evaluation.labels import detect_file_type, generic_kind, read_labels
    from pyterrier_nuggets.formats import InputError
    files = args.files
    if len(files) < 2:
        raise InputError(files[0], None, None, "one file: agreement needs the labels of at least two judges")
    check_inputs(*files)
    if args.plot and len(files) != 2:
        raise InputError(args.plot, None, "--plot", "draws the confusion matrix of two judges",
                         f"give two files, not {len(files)}")
    if bool(args.consensus) != bool(args.out):
        raise InputError(args.out or files[0], None, "--consensus", "--consensus and --out go together",
                         "give both: the method and the qrels file to write")
    from pyterrier_nuggets.evaluation.plots import figure_paths
    plots = [(path, "--plot") for path in figure_paths(args.plot).values()] if args.plot else []
    for path, option in [*plots, (args.out, "--out")]:
        if path:
            check_output(path, list(files), option)
    types = [detect_file_type(f) for f in files]
    kind = args.kind
    for f, t in zip(files[1:], types[1:]):
        if kind is None and t != types[0]:
            raise InputError(f, None, None, f"a {t} file, but {files[0]} is a {types[0]} file",
                             "compare files of the same type, or say which labels with --kind (e.g. importance "
                             "from a nugget file and an assignment file)")
    if args.labels or args.ordinal or kind == "generic":
        if kind not in (None, "generic") or set(types) != {"generic"}:
            raise InputError(files[0], None, None, "--labels and --ordinal are for generic label files only")
        labels = [x.strip() for x in args.labels.split(",")] if args.labels else None
        if args.ordinal and not labels:
            raise InputError(files[0], None, None, "--ordinal needs --labels to give the order, lowest first")
        try:
            kind = generic_kind(labels, args.ordinal)
        except ValueError as e:
            raise InputError(files[0], None, None, f"--labels: {e}") from None
    judges = [read_labels(f, kind, on_invalid=args.on_invalid, file_type=t) for f, t in zip(files, types)]
    names = _names(args)
    if args.consensus and (judges[0].kind.name != "relevance" or set(types) != {"qrels"}):
        raise InputError(files[0], None, "--consensus", "a consensus qrels is made of qrels files (relevance grades)",
                         f"these are {judges[0].kind.name} labels")
    result = multi_agreement(judges, names)
    report = result.pairs[0] if len(judges) == 2 else result
    out = report.to_dict()
    text = report.to_text()
    if args.consensus:
        agreed = consensus(judges, args.consensus, args.ties, source=args.out)
        rows = sorted((qid, docno, grade) for (qid, docno), grade in agreed.labels.items.items())
        formats.write_all({args.out: lambda path: formats.write_qrels(path, rows)})
        out["consensus"] = {"method": agreed.method, "ties": agreed.ties, "file": args.out, "items": len(rows),
                            "tied": len(agreed.tied), "left_out": len(agreed.left_out)}
        text += f"\n\nwritten: {args.out}: {agreed.summary()}"
    print(json.dumps(out, ensure_ascii=False, indent=1) if args.json else text)
    if args.plot:
        from pyterrier_nuggets.evaluation.plots import confusion_heatmap
        written = confusion_heatmap(result.pairs[0], args.plot)
        if not args.json:
            print(f"written: {', '.join(written)}")
    return 0
