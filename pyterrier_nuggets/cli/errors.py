"""What the command line reports as a one-line error with exit code 2 (usage and input errors), and the
argparse types that refuse bad option values where they are parsed."""
from __future__ import annotations

import argparse


class UsageError(ValueError):
    """Options that do not fit together, or an option value that cannot be used."""


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


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a significance level)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1 (e.g. 0.05)")
    return value
