"""What the command line reports as a one-line error with exit code 2 (usage and input errors), the argparse types
that refuse bad option values where they are parsed, and the parser class that refuses abbreviated options."""
from __future__ import annotations

import argparse

from ir_measures_ext.errors import InvalidInput


class UsageError(InvalidInput):
    """Options that do not fit together, or an option value that cannot be used."""


class Parser(argparse.ArgumentParser):
    """The parsers of the command line: an option is given in full (``--llm`` is never read as ``--llm-cache``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


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
