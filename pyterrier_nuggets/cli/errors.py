"""What the command line reports as a one-line error with exit code 2 (usage and input errors), the argparse types
that refuse bad option values where they are parsed, and the parser class that refuses abbreviated options."""
from __future__ import annotations

import argparse

from ir_measures_ext.errors import InvalidInput


class UsageError(InvalidInput):
    """Options that do not fit together, or an option value that cannot be used."""


class Parser(argparse.ArgumentParser):
    """The parsers of the command line: an option is given in full (``--llm`` is never read as ``--llm-cache``); a
    mistyped option or choice is answered with the closest one (as git and pip do), and a subcommand's unknown option
    under the subcommand's own usage (:class:`SubcommandParser`), not the top-level one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("parser_class", SubcommandParser)
        return super().add_subparsers(**kwargs)

    def error(self, message: str):
        super().error(message + _suggestion(message, self))


class Group(argparse._AppendAction):
    """A repeatable option that takes a group of values each time, shown as one group (``--system NAME EVAL_RUN
    [SEGMENT_RUN]``, repeated for several systems) instead of argparse's ``--system X [X ...]``, which reads as if one
    option took several systems.

    :param shown: the group as the usage shows it, e.g. ``"NAME EVAL_RUN [SEGMENT_RUN]"``.
    """

    def __init__(self, option_strings, dest, shown: str, **kwargs):
        kwargs.setdefault("nargs", "+")
        super().__init__(option_strings, dest, metavar=shown, **kwargs)
        self.shown = shown


class Formatter(argparse.HelpFormatter):
    """argparse's help, with :class:`Group` options shown as one group of values."""

    def _format_args(self, action, default_metavar):
        if isinstance(action, Group):
            return action.shown
        return super()._format_args(action, default_metavar)


class SubcommandParser(Parser):
    """The parser of a subcommand: it refuses what it does not know itself (argparse hands a subcommand's leftovers
    up to the top-level parser, which prints its own usage and no hint)."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def closest(word: str, candidates: list[str]) -> list[str]:
    """The candidates a mistyped ``word`` most likely meant: those it begins (``--over`` -> ``--overwrite``), else the
    most similar ones (``--topic`` -> ``--topics``, ``V_strct`` -> ``V_strict``)."""
    import difflib
    starting = [c for c in candidates if c.startswith(word) and c != word]
    if starting:
        return starting[:3]
    return difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)


def _suggestion(message: str, parser: argparse.ArgumentParser) -> str:
    """'; did you mean ...?' for the unknown options or the invalid choice an argparse error names, or ''."""
    import re
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if choice:
        options = re.findall(r"'([^']*)'", choice.group(2)) or [c.strip() for c in choice.group(2).split(",")]
        near = closest(choice.group(1), options)
        return f"; did you mean {' or '.join(near)}?" if near else ""
    unknown = re.match(r"unrecognized arguments: (.*)$", message)
    if not unknown:
        return ""
    options = [o for action in parser._actions for o in action.option_strings if o.startswith("--")]
    hints = {}
    for word in unknown.group(1).split():
        word = word.split("=", 1)[0]
        near = closest(word, options) if word.startswith("-") else []
        if near:
            hints[word] = f"did you mean {' or '.join(near)}?"
    said = f"; {next(iter(hints.values()))}" if len(hints) == 1 else "".join(f"; {w}: {h}" for w, h in hints.items())
    return f"{said} ({parser.prog} --help lists its options)"


def whole_number(minimum: int):
    """An argparse type: an integer of ``minimum`` or more."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value
    parse.__name__ = f"whole number >= {minimum}"
    return parse


positive_int = whole_number(1)
non_negative_int = whole_number(0)


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: any free one)."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: ports are 0 to 65535 (0: any free one)")
    return value


port.__name__ = "port 0-65535"


def number(accept, requirement: str):
    """An argparse type: a finite number for which ``accept(value)`` holds, else "``requirement``"."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")) or not accept(value):
            raise argparse.ArgumentTypeError(f"{text} is not {requirement}")
        return value
    parse.__name__ = requirement
    return parse


def run_tag(text: str) -> str:
    """An argparse type: a run tag (one field of a TREC run, and the name of the run's files; the one rule is
    ``formats.run_tag_problem``)."""
    from pyterrier_nuggets.formats.files import run_tag_problem
    problem = run_tag_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


run_tag.__name__ = "run tag"


probability = number(lambda v: 0 < v < 1, "between 0 and 1 (e.g. 0.05)")  # a significance or confidence level
positive_number = number(lambda v: v > 0, "a number above 0")  # a rate, a number of seconds
non_negative_number = number(lambda v: v >= 0, "a number of 0 or more")  # a delay that may be none
share = number(lambda v: 0 <= v < 1, "at least 0 and below 1 (e.g. 0.5)")  # a discount

#: ``--on-invalid``: what a command does with invalid labels of an imported file (``formats.POLICIES``, spelled here
#: so that building the parser imports no file format; tests/test_cli_help.py keeps the two equal)
ON_INVALID = ("refuse", "drop")


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option, kept hidden: it stores its value under the new option's name and says on stderr
    which spelling to give instead (e.g. ``ikat --k 5`` -> ``-k 5``)."""

    def __init__(self, option_strings, dest, new: str, command: str, **kwargs):
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new, self.command = new, command

    def __call__(self, parser, namespace, values, option_string=None):
        import sys
        print(f"warning: {self.command} {option_string} is deprecated: give {self.new} {values}", file=sys.stderr)
        setattr(namespace, self.dest, values)
