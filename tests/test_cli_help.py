"""Every option of every subcommand says what it does, with an example; help texts, plot titles and
table notes say no internal jargon (no seed numbers of the papers: they are named by their short key)."""
import argparse
import re

import pytest

from pyterrier_nuggets import cli, formats
from pyterrier_nuggets.cli.errors import ON_INVALID, DeprecatedAlias


def parsers():
    """(command path, parser) of the command line and of every subcommand, at any depth."""
    root = cli.build_parser()
    todo = [("pyterrier-nuggets", root)]
    while todo:
        name, parser = todo.pop(0)
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", p) for sub, p in action.choices.items()]


def options():
    for name, parser in parsers():
        for action in parser._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                yield name, "/".join(action.option_strings) or action.dest, action


@pytest.mark.parametrize("command, parser", list(parsers()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_subcommand_has_a_description(command, parser):
    if command != "pyterrier-nuggets":
        assert parser.description and len(parser.description) > 20, f"{command}: no description"


def test_every_option_has_help_with_an_example():
    missing, no_example = [], []
    for command, option, action in options():
        if isinstance(action, DeprecatedAlias):
            assert action.help == argparse.SUPPRESS  # a hidden alias: the new spelling is documented
            continue
        if not action.help or action.help == argparse.SUPPRESS:
            missing.append(f"{command} {option}")
        elif action.nargs != 0 and "e.g." not in action.help:  # an option with a value shows one
            no_example.append(f"{command} {option}")
    assert not missing, f"options without help: {missing}"
    assert not no_example, f"options whose help gives no example (e.g. ...): {no_example}"


def test_no_seed_numbers_or_the_word_in_help():
    for command, parser in parsers():
        texts = [parser.description or ""] + [a.help or "" for a in parser._actions]
        for text in texts:
            assert not re.search(r"(?<!-)\bseed\s*0*\d", text, re.I), f"{command}: {text}"  # a seed number with a figure
            assert "seed" not in text.lower().replace("--seed", ""), f"{command}: {text}"


def test_table_notes_say_no_seed():
    import pandas as pd

    from pyterrier_nuggets.evaluation.table import JointTable
    per_query = pd.DataFrame([("a", "q1", "V_strict", 0.5), ("b", "q1", "V_strict", 0.2)],
                             columns=["system", "qid", "measure", "value"])
    means = per_query.pivot_table(index="system", columns="measure", values="value")
    table = JointTable(means=means, per_query=per_query, pvalues=means * 0 + 0.5, baseline="a")
    for text in (table.to_text(), table.to_markdown(), table.to_latex()):
        assert "seed" not in text.lower()


def test_on_invalid_choices_are_the_formats_policies():
    assert ON_INVALID == formats.POLICIES


def test_k_has_one_spelling(capsys):
    parser = cli.build_parser()
    assert parser.parse_args(["demo", "-k", "3"]).k == 3
    assert parser.parse_args(["ikat", "--run", "r.json", "-k", "4"]).k == 4
    args = parser.parse_args(["ikat", "--run", "r.json", "--k", "5"])  # the old spelling: still read, with a warning
    assert args.k == 5 and "ikat --k is deprecated: give -k 5" in capsys.readouterr().err
    assert "--k " not in parser._subparsers._group_actions[0].choices["ikat"].format_help()


# ------------------------------------------------------------------------------------------------ help that teaches

def test_every_command_shows_an_example():
    """trec-rag, arena, correlate and agree had none: the commands a newcomer needs one for most."""
    for command, parser in parsers():
        if command.count(" ") == 1:
            assert re.search(r"Example: \S*.*pyterrier-nuggets " + command.split(" ")[1], parser.description), command


def test_verbose_only_where_a_model_is_loaded():
    """-v says "what the model libraries print while loading a model": only on the commands that may load one."""
    for command, parser in parsers():
        name = command.split(" ")[1] if " " in command else None
        if name is None or command.count(" ") > 1:
            continue
        has = any("-v" in a.option_strings for a in parser._actions)
        assert has is (name in cli.MODEL_COMMANDS), command


# the placeholders of option values: one word for one kind of thing (files are FILE, folders DIR, ...)
PLACEHOLDERS = {"FILE", "DIR", "PREFIX", "FILE|ID", "NAME=FILE", "NAME", "N", "K", "P", "C", "X", "QID", "ID", "URL",
                "MODEL", "SECONDS", "MEASURE", "METHOD", "TEXT", "TAG", "KEY=VALUE", "I/N", "F", "T|default",
                "INPUT,OUTPUT", "HOST", "PORT", "IPS", "L1,L2,...", "STEP", "A", "B", "SET|FILE", "RUN.json",
                "PAIRS.jsonl", "OUT.jsonl", "OTHER.perquery.csv", "leaderboard.csv", "PATH|none", "[NAME=]RUN", "[NAME=]FILE",
                "[NAME=]RETRIEVER:K[:GENERATOR]", "NAME EVAL_RUN [SEGMENT_RUN]", "all|topics:N|appearances:K",
                "alternate|none|G1,G2,...", "embedding[:T]|nli:PATH|llm", "embedding|nli:PATH|llm", "SHARD_DIR"}


def test_placeholders_are_one_vocabulary():
    """`PATH` vs `NUGGETS`, `OUT` vs `DIR` vs `REPORT_FOLDER` said the same thing differently."""
    odd = set()
    for command, option, action in options():
        if action.nargs == 0 or action.choices or action.help == argparse.SUPPRESS or option == "command" or \
                option.endswith("_command"):
            continue
        shown = action.metavar or (action.dest.upper() if action.option_strings else action.dest.upper())
        if shown not in PLACEHOLDERS:
            odd.add(f"{command} {option}: {shown}")
    assert not odd, sorted(odd)


def test_table_system_is_shown_as_one_system_per_option():
    usage = dict(parsers())["pyterrier-nuggets table"].format_usage()
    assert "--system NAME EVAL_RUN [SEGMENT_RUN]" in usage and "[NAME EVAL_RUN" not in usage, usage


def test_group_titles_are_titles():
    for command, parser in parsers():
        for group in parser._action_groups:
            assert len(group.title or "") <= 40, f"{command}: {group.title}"


def test_no_jargon_in_help():
    """No citation keys ([nugget-annotation]), no other tool's vocabulary (nuggetizer assign JSONL), no "read off"."""
    for command, parser in parsers():
        texts = [parser.description or ""] + [a.help or "" for a in parser._actions]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                texts += [a.help or "" for a in action._choices_actions]
        for text in texts:
            assert not re.search(r"\[[a-z0-9-]+( [^\]]*)?\]", text.replace("[NAME=]", "")), f"{command}: {text}"
            for word in ("nuggetizer assign", "nuggetizer assignment", "read off", "ManualAssign"):
                assert word not in text, f"{command}: {text}"
