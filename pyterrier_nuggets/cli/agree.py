"""``pyterrier-nuggets agree``: do two judges give the same labels to the same items? Exact agreement, Cohen's κ
(linearly weighted too for ordinal labels), the confusion matrix and each judge's label distribution
(docs/meta-evaluation.md)."""
from __future__ import annotations

import json
import os

from pyterrier_nuggets import formats
from pyterrier_nuggets.cli.paths import check_inputs, check_output
from pyterrier_nuggets.formats import InputError

KIND_CHOICES = ("assignment", "assignment-2grade", "importance", "support", "relevance", "match", "generic")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "agree", help="label agreement (exact, Cohen's κ, confusion matrix) between two judges of the same items",
        description="Agreement between two judges' labels of the same items, matched by id: exact agreement, "
        "Cohen's κ (and linearly weighted κ for ordinal labels), the confusion matrix in counts and percent, "
        "each judge's label distribution. Items only one judge has are listed, not compared.")
    p.add_argument("a", metavar="A", help="judge A's labels: assignment JSONL, nugget JSONL, support JSONL, TREC "
                   "qrels, or a generic label file (JSONL {\"id\", \"label\"} or TSV id<TAB>label)")
    p.add_argument("b", metavar="B", help="judge B's labels, a file of the same type")
    p.add_argument("--kind", choices=KIND_CHOICES,
                   help="which labels (default from the file: assignment, importance for nugget files, support, "
                   "relevance for qrels, generic); assignment files also give importance or assignment-2grade; "
                   "generic label files give match (CONE-RAG yes/no) or generic")
    p.add_argument("--labels", help="generic labels in order, lowest first, comma-separated (e.g. low,mid,high)")
    p.add_argument("--ordinal", action="store_true", help="generic labels are ordinal (needs --labels): adds "
                   "linearly weighted κ")
    p.add_argument("--on-invalid", choices=formats.POLICIES, default="refuse",
                   help="nuggets with invalid labels in nugget/assignment files: refuse (default) or drop (counted)")
    p.add_argument("--label-a", help="name of judge A in the output (default: its file name)")
    p.add_argument("--label-b", help="name of judge B in the output (default: its file name)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text report")
    p.add_argument("--plot", metavar="PNG", help="write the confusion-matrix heat map (seed 004 Figure 3) to this PNG")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.evaluation.agreement import agreement
    from pyterrier_nuggets.evaluation.labels import detect_file_type, generic_kind, read_labels
    check_inputs(args.a, args.b)
    if args.plot:
        check_output(args.plot, [args.a, args.b], "--plot")
    types = [detect_file_type(args.a), detect_file_type(args.b)]
    kind = args.kind
    if kind is None and types[0] != types[1]:
        raise InputError(args.b, None, None, f"a {types[1]} file, but {args.a} is a {types[0]} file",
                         "compare files of the same type, or say which labels with --kind (e.g. importance "
                         "from a nugget file and an assignment file)")
    if args.labels or args.ordinal or kind == "generic":
        if kind not in (None, "generic") or types != ["generic", "generic"]:
            raise InputError(args.a, None, None, "--labels and --ordinal are for generic label files only")
        labels = [x.strip() for x in args.labels.split(",")] if args.labels else None
        if args.ordinal and not labels:
            raise InputError(args.a, None, None, "--ordinal needs --labels to give the order, lowest first")
        try:
            kind = generic_kind(labels, args.ordinal)
        except ValueError as e:
            raise InputError(args.a, None, None, f"--labels: {e}") from None
    a = read_labels(args.a, kind, on_invalid=args.on_invalid, file_type=types[0])
    b = read_labels(args.b, kind, on_invalid=args.on_invalid, file_type=types[1])
    result = agreement(a, b, args.label_a or os.path.basename(args.a), args.label_b or os.path.basename(args.b))
    print(json.dumps(result.to_dict(), ensure_ascii=False, indent=1) if args.json else result.to_text())
    if args.plot:
        from pyterrier_nuggets.evaluation.plots import confusion_heatmap
        confusion_heatmap(result, args.plot)
        if not args.json:
            print(f"written: {args.plot}")
    return 0
