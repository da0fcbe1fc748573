"""``pyterrier-nuggets``: the command line (one module per subcommand, :data:`SUBCOMMANDS`). Synopsis:

    pyterrier-nuggets demo [--out DIR] [--sample-only] [--dataset ID] [--topics QID ...] [--max-topics N]
                           [--system [NAME=]bm25|dense:K ...] [--run NAME=PATH] [--answers NAME=PATH]
                           [--assignments NAME=PATH] [--nuggets PATH] [--index-dir DIR] [--no-plots]
                           [--overwrite] [LLM options]   (see docs/cli.md)
    pyterrier-nuggets demo --dataset trec-ikat/2024 --run NAME=RUN.json ... [--nuggets SET|FILE]
                           [--generate resolved|raw [-k N]]   (submitted iKAT runs, docs/ikat.md)
    pyterrier-nuggets export --nuggets N.jsonl | --assignments A.jsonl [--answers ANS.jsonl]
                             [--support S.jsonl] [--on-invalid refuse|drop] --qrels OUT [--run OUT]
    pyterrier-nuggets table --nugget-qrels Q [--segment-qrels S] --system NAME EVAL_RUN [SEGMENT_RUN] ...
                            [--measures ...] [--retrieval-measures ...] [--baseline NAME] [--out PREFIX]
                            [--compare-to OTHER.perquery.csv] [--arena leaderboard.csv]
    pyterrier-nuggets score --assignments A.jsonl [--on-invalid refuse|drop]   (per-topic scores)
    pyterrier-nuggets correlate A B --measure M [--measure-b M] [--level run|topic|all] [--runs-a NAME=RUN ...]
                                [--runs-b NAME=RUN ...] [--resamples N] [--json] [--plot PNG]
    pyterrier-nuggets agree A B [C ...] [--kind KIND] [--labels L1,L2,...] [--ordinal] [--name NAME ...] [--json]
                            [--plot PNG] [--consensus majority|mean|median --out QRELS [--ties low|high]]
    pyterrier-nuggets ikat (--run RUN.json ... | --responses FILE [--response-nuggets FILE]) [--gold-nuggets SET|FILE]
                           [--qrels Q] [--topics T] [--matcher embedding[:T]|nli:PATH|llm] [--out DIR]
    pyterrier-nuggets annotate init|users|serve|export ...   (the human annotation tool, docs/annotation.md)
    pyterrier-nuggets arena --answers FILE ... --out DIR [--design all|topics:N|appearances:K] [--seed N]
                            [--both-orders] [--rubrics FILE|ID | --nuggets FILE|ID] [--judge llm|baseline]
                            [--resamples N] [--prior N] [--overwrite] [LLM options]
    pyterrier-nuggets arena --battles FILE ... --out DIR   (a leaderboard of battles judged already; docs/arena.md)
    pyterrier-nuggets check-endpoint [--base-url URL] [--model NAME]   (can a job use the LLM endpoint?)
    pyterrier-nuggets trec-rag --answers FILE ... --out DIR [--rules 2026|2025] [--nuggets FILE|ID]
                               [--rubrics FILE|ID] [--support --docs FILE|ID | --support-assignments FILE ...]
                               [--topics FILE|ID] [--overwrite] [LLM options]   (docs/trec-rag-2025-2026.md)
    pyterrier-nuggets calibrate PAIRS.jsonl | --crowd-labels [FILE] [--task T] [--matcher M] [--split S] [--json]
    pyterrier-nuggets demo|trec-rag|ikat|arena ... --shard I/N --out SHARD_DIR   (one shard of the topics)
    pyterrier-nuggets merge SHARD_DIR ... --out DIR [--llm-cache PATH]   (the shards as one run, docs/shards.md)
    pyterrier-nuggets cache merge SOURCE ... --into TARGET   (response caches folded into one)
    pyterrier-nuggets report IN_FOLDER ... --out REPORT_FOLDER [--collection DIR] [--answers FILE]   (HTML report)
    pyterrier-nuggets test-endpoint [--port 0]   (a deterministic local endpoint for trying the LLM commands)
    pyterrier-nuggets --version

LLM options (the same on demo, trec-rag, arena, ikat and calibrate: cli/options.py): --llm endpoint|embedded|offline,
--base-url URL, --model NAME, --timeout S, --llm-cache PATH, --frozen, --concurrency N, --max-rpm N, --max-tpm N,
--max-retry-time S, --batch, --batch-poll S, --batch-discount F, --dry-run, --price IN,OUT, --max-calls N,
--on-failure leave-out|stop, --max-failed-share F.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings

from ir_measures_ext.errors import InvalidInput, SetupError
from pyterrier_nuggets.cli import (
    agree,
    annotate,
    arena,
    cache,
    calibrate,
    check_endpoint,
    correlate,
    demo,
    export,
    ikat,
    merge,
    report,
    score,
    table,
    test_endpoint,
    trec_rag,
)
from pyterrier_nuggets.cli.errors import Parser

# exit codes (docs/cli.md): 0 done; 1 an LLM step or the endpoint failed; 2 an input, usage or set-up error
# (one line); 3 a bug of the package (its traceback); 130 interrupted (Ctrl-C)
EXIT_LLM_FAILED, EXIT_INPUT, EXIT_BUG, EXIT_INTERRUPTED = 1, 2, 3, 130

SUBCOMMANDS = (demo, export, table, score, correlate, agree, annotate, ikat, calibrate, trec_rag, arena,
               check_endpoint, test_endpoint, merge, cache, report)

DESCRIPTION = (
    "Evaluate retrieval-augmented generation as the TREC RAG and TREC iKAT tracks do: nugget recall (AutoNuggetizer: "
    "V_strict ... A), citation support, rubrics and pairwise battles, next to retrieval measures such as nDCG@10, with "
    "paired tests. Score answer files (trec-rag, arena, ikat), run retrieval, generation and evaluation on a "
    "collection (demo), make and compare tables from files (table, score, correlate, agree, calibrate), annotate by "
    "hand (annotate), and split LLM work over machines (--shard, merge). The LLM judges run on any OpenAI-compatible "
    "endpoint, cached and resumable; test-endpoint starts a deterministic local one for trying the commands. Start "
    "with: pyterrier-nuggets demo (offline, on the sample collection shipped with the package; docs/getting-started.md)")
EPILOG = "Each command has its own --help, e.g. pyterrier-nuggets trec-rag --help. Exit codes: 0 done; 1 an LLM step " \
         "or the endpoint failed; 2 an input, usage or set-up error (one line); 3 a bug of pyterrier-nuggets; 130 " \
         "interrupted."


#: the commands that may load a model of the model libraries (the embedding and NLI matchers, dense retrieval, the
#: offline baseline judges; merge runs demo, ikat or arena again): the only ones with -v
MODEL_COMMANDS = ("demo", "ikat", "calibrate", "arena", "merge")


def verbose_help(command: str) -> str:
    """The help of ``-v`` on ``command``, with an example of that command."""
    return ("also show what the model libraries print while loading a model (their progress bars and warnings), e.g. "
            f"{command} -v; by default only this command's own progress and results")


# what the model libraries (transformers, sentence-transformers, huggingface_hub) print unless -v: set before they
# are imported, and only where the user has not set them
QUIET_LIBRARIES = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (``-v`` on the command itself and on each subcommand)."""
    from pyterrier_nuggets import __version__
    parser = Parser(prog="pyterrier-nuggets", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"pyterrier-nuggets {__version__}",
                        help="print the version and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help=verbose_help("pyterrier-nuggets demo") + " (for the commands that load a model: "
                        + ", ".join(MODEL_COMMANDS) + ")")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    for name in MODEL_COMMANDS:
        sub.choices[name].add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                                       help=verbose_help(f"pyterrier-nuggets {name}"))
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv  # the command line as given: a shard's manifest keeps it (cli/shards.py)
    args.parser = parser  # merge parses the shards' command lines with it
    if not args.verbose:
        for name, value in QUIET_LIBRARIES.items():
            os.environ.setdefault(name, value)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = args.func(args)
        _print_warnings(caught)
        return code
    except (InvalidInput, SetupError, OSError) as e:  # our input, usage and set-up errors; a file not found
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_INPUT
    except Exception as e:
        if _llm_failure(e):  # the model or the endpoint failed, not the input
            print(f"error: {_llm_failure_text(e)}", file=sys.stderr)
            return EXIT_LLM_FAILED
        traceback.print_exc()  # anything else is a bug of ours: keep the traceback
        print(f"pyterrier-nuggets: internal error (exit {EXIT_BUG}): this is a bug of pyterrier-nuggets, not of your "
              "input; please report it with the traceback above and the command line", file=sys.stderr)
        return EXIT_BUG
    except BaseException as e:  # Ctrl-C, or the LLM work it cancelled
        if not _interrupted(e):
            raise
        llm_work = _interrupt_llm_work()
        print(f"interrupted (exit {EXIT_INTERRUPTED})" + (": every LLM answer received so far is in the response "
              "cache; run the same command again to go on (cached answers cost no call)" if llm_work else ""),
              file=sys.stderr)
        return EXIT_INTERRUPTED


def _llm_failure(e: Exception) -> bool:
    """A failed LLM step, endpoint or batch (imported here, once something failed: ``--help`` stays fast)."""
    from pyterrier_nuggets.judges import LLMStepError
    from pyterrier_nuggets.llm.batch import BatchError
    from pyterrier_nuggets.llm.retry import EndpointError
    return isinstance(e, (LLMStepError, EndpointError, BatchError))


def _interrupted(e: BaseException) -> bool:
    """Ctrl-C, or LLM work it cancelled (:class:`~pyterrier_nuggets.llm.scheduler.Cancelled`, where an LLM client was
    made: its module is loaded)."""
    scheduler = sys.modules.get("pyterrier_nuggets.llm.scheduler")
    return isinstance(e, KeyboardInterrupt) or (scheduler is not None and isinstance(e, scheduler.Cancelled))


def _interrupt_llm_work() -> bool:
    """Ctrl-C: no new LLM request starts, and those in flight get a grace period to come back (their answers are
    cached); only where an LLM client was made (its module is loaded). Whether there was LLM work to interrupt (the
    only case where "run the same command again" resumes anything)."""
    scheduler = sys.modules.get("pyterrier_nuggets.llm.scheduler")
    if scheduler is not None:
        try:
            scheduler.interrupt_all()
        except KeyboardInterrupt:  # Ctrl-C again: stop at once
            pass
    return scheduler is not None


def _llm_failure_text(e: Exception) -> str:
    """A failed LLM step in the command line's words (its options, not the Python arguments)."""
    from pyterrier_nuggets.judges import LLMStepError
    return e.for_command_line() if isinstance(e, LLMStepError) else str(e)


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or e}"
    if isinstance(e, InvalidInput):
        return e.for_command_line()
    return str(e)


def _print_warnings(caught) -> None:
    """The warnings of a command, each once, on stderr (the invalid-label report is printed by the command)."""
    from pyterrier_nuggets.formats.files import DroppedLabelsWarning
    seen = set()
    for w in caught:
        text = str(w.message)
        if text in seen or issubclass(w.category, DroppedLabelsWarning) or not issubclass(w.category, UserWarning):
            continue
        seen.add(text)
        print(f"warning: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
