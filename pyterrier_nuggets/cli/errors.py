"""What the command line reports as a one-line error with exit code 2 (usage and input errors), and the
argparse types that refuse bad option values where they are parsed."""
from __future__ import annotations

import argparse


class UsageError(ValueError):
    """Options that do not fit together, or an option value that cannot be used."""


def positive_int(text: str) -> int:
    """An argparse type: an integer of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a significance level)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (e.g. 0.05), got {value}")
    return value
