"""``pyterrier-nuggets``: the command line over the library, one module per subcommand.

    pyterrier-nuggets demo [--out DIR] [--sample-only] [--dataset ID] [--topics QID ...] [--max-topics N]
                           [--system [NAME=]bm25|dense:K ...] [--run NAME=PATH] [--answers NAME=PATH]
                           [--assignments NAME=PATH] [--nuggets PATH] [--base-url URL] [--model NAME]
                           [--index-dir DIR] [--strict] [--no-plots]   (see docs/cli.md)
    pyterrier-nuggets demo --dataset trec-ikat/2024 --run NAME=RUN.json ... [--nuggets SET|FILE]
                           [--generate resolved|raw [-k N]]   (submitted iKAT runs, docs/ikat.md)
    pyterrier-nuggets export --nuggets N.jsonl | --assignments A.jsonl [--answers ANS.jsonl]
                             [--support S.jsonl] [--on-invalid refuse|drop] --qrels OUT [--run OUT]
    pyterrier-nuggets table --nugget-qrels Q [--segment-qrels S] --system NAME EVAL_RUN [SEGMENT_RUN] ...
                            [--measures ...] [--retrieval-measures ...] [--baseline NAME] [--out PREFIX]
                            [--compare-to OTHER.perquery.csv]
    pyterrier-nuggets score --assignments A.jsonl [--on-invalid refuse|drop]   (per-topic scores)
    pyterrier-nuggets correlate A B --measure M [--measure-b M] [--level run|topic|all] [--runs-a NAME=RUN ...]
                                [--runs-b NAME=RUN ...] [--resamples N] [--json] [--plot PNG]
    pyterrier-nuggets agree A B [--kind KIND] [--labels L1,L2,...] [--ordinal] [--json] [--plot PNG]
    pyterrier-nuggets ikat (--run RUN.json ... | --responses FILE [--response-nuggets FILE]) [--gold-nuggets SET|FILE]
                           [--qrels Q] [--topics T] [--matcher embedding[:T]|nli:PATH|llm] [--out DIR]
    pyterrier-nuggets annotate init|users|serve|export ...   (the human annotation tool, docs/annotation.md)
    pyterrier-nuggets calibrate PAIRS.jsonl | --crowd-labels [FILE] [--task T] [--matcher M] [--split S] [--json]
"""
from __future__ import annotations

import argparse
import sys
import warnings

from pyterrier_nuggets.cli import agree, annotate, calibrate, correlate, demo, export, ikat, score, table
from pyterrier_nuggets.judges import LLMStepError

SUBCOMMANDS = (demo, export, table, score, correlate, agree, annotate, ikat, calibrate)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pyterrier-nuggets", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = args.func(args)
        _print_warnings(caught)
        return code
    except LLMStepError as e:  # the model failed, not the input: exit 1, like a failed run
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (ValueError, OSError, LookupError) as e:  # input and usage errors (InputError is a ValueError)
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 2


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or e}"
    if isinstance(e, KeyError):  # e.g. an unknown ir_datasets id
        return f"not found: {e.args[0] if e.args else e}"
    return str(e)


def _print_warnings(caught) -> None:
    """The warnings of a command, each once, on stderr (the invalid-label report is printed by the command)."""
    seen = set()
    for w in caught:
        text = str(w.message)
        if text in seen or text.startswith("dropped from their topics") or not issubclass(w.category, UserWarning):
            continue
        seen.add(text)
        print(f"warning: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
