"""``pyterrier-nuggets``: the command line over the library, one module per subcommand.

    pyterrier-nuggets demo [--out DIR] [--sample-only] [--dataset ID] [--topics QID ...] [--max-topics N]
                           [--system [NAME=]bm25|dense:K ...] [--run NAME=PATH] [--answers NAME=PATH]
                           [--assignments NAME=PATH] [--nuggets PATH] [--base-url URL] [--model NAME]
                           [--index-dir DIR] [--strict] [--no-plots]   (see docs/cli.md)
    pyterrier-nuggets export --nuggets N.jsonl | --assignments A.jsonl [--answers ANS.jsonl]
                             [--support S.jsonl] [--on-invalid refuse|drop] --qrels OUT [--run OUT]
    pyterrier-nuggets table --nugget-qrels Q [--segment-qrels S] --system NAME EVAL_RUN [SEGMENT_RUN] ...
                            [--measures ...] [--retrieval-measures ...] [--baseline NAME] [--out PREFIX]
                            [--compare-to OTHER.perquery.csv]
    pyterrier-nuggets score --assignments A.jsonl [--on-invalid refuse|drop]   (per-topic scores)
    pyterrier-nuggets correlate A B --measure M [--measure-b M] [--level run|topic|all] [--runs-a NAME=RUN ...]
                                [--runs-b NAME=RUN ...] [--resamples N] [--json] [--plot PNG]
    pyterrier-nuggets agree A B [--kind KIND] [--labels L1,L2,...] [--ordinal] [--json] [--plot PNG]
    pyterrier-nuggets annotate init|users|serve|export ...   (the human annotation tool, docs/annotation.md)
"""
from __future__ import annotations

import argparse
import sys
import warnings

from pyterrier_nuggets import formats
from pyterrier_nuggets.cli import agree, annotate, correlate, demo, export, score, table

SUBCOMMANDS = (demo, export, table, score, correlate, agree, annotate)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pyterrier-nuggets", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the CLI prints the invalid-label report itself
            return args.func(args)
    except (formats.InputError, formats.InvalidLabelsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
