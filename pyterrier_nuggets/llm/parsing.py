"""Reading LLM output: Python or JSON lists, one label, yes or no; with or without code fences, checked strictly.

The prompts of the AutoNuggetizer ([nugget-recall §4.1-4.2], [autonuggetizer §3.1-3.3]) ask for "a Pythonic list".
Models answer with a Python list, a JSON list, either inside Markdown code fences or after some words,
or (in JSON mode) an object holding the list. Everything else, a list of the wrong length and a label
outside the allowed set are :class:`OutputError`: never guessed, never counted as another label.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence

_DECORATION = re.compile(r"^[\s\"'“”‘’*_`]+|[\s\"'“”‘’*_`.!]+$")
#: the JSON schema of a yes/no reply, for a judge's ``json_schema`` (structured output)
YES_NO_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                 "required": ["answer"]}


class OutputError(ValueError):
    """The model's output cannot be used; the message says why, in words fit to re-ask the model."""


_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)


def strip_fences(text: str) -> str:
    """The content of the first Markdown code fence, or the text itself when it has none."""
    m = _FENCE.search(text)
    if m:
        return m.group(1).strip()
    text = text.strip()
    if text.startswith("```"):  # an unclosed fence, e.g. an answer cut off at the token limit
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text.strip()


def reply_body(text: str | None) -> tuple[str, object]:
    """A short reply's body (fences stripped) and its JSON value (the body itself when it is not JSON); an
    empty reply is an :class:`OutputError`. The first step of every one-label reply parser."""
    if text is None or not text.strip():
        raise OutputError("the answer is empty")
    body = strip_fences(text)
    try:
        return body, json.loads(body)
    except ValueError:
        return body, body


def reply_label(text: str | None, what: str = "a label") -> str:
    """The one string of a short one-label reply: the reply's body, a JSON string, or the only string of a
    JSON object (as JSON mode gives it); anything else is an :class:`OutputError` naming ``what`` it should be."""
    _, value = reply_body(text)
    if isinstance(value, dict):
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) != 1:
            raise OutputError(f"the answer is an object without exactly one {what.removeprefix('a ')}")
        value = strings[0]
    if not isinstance(value, str):
        raise OutputError(f"the answer is a {type(value).__name__}, not {what}")
    return value


def parse_yes_no(text: str) -> bool:
    """True for "yes", False for "no": case, surrounding quotes, Markdown emphasis and a final full stop ignored, JSON
    ``{"answer": "yes"}`` accepted (JSON mode); anything else is an :class:`OutputError` (re-asked, then a failure:
    never read as "no"). The parser of every yes/no judge (the CONE-RAG matcher, a judge of whole answers).

    :param text: the model's reply.
    """
    value = reply_label(text, "yes or no")
    word = _DECORATION.sub("", value).lower()
    if word in ("yes", "no"):
        return word == "yes"
    raise OutputError(f"{value.strip()[:60]!r} is not \"yes\" or \"no\"")


def _literal(text: str):
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise OutputError("the answer is not a valid Python or JSON list") from None


def parse_list(text: str) -> list:
    """The list in a model's answer: a Python/JSON list, possibly fenced or surrounded by words, or the
    only list inside a JSON object (as JSON mode may produce)."""
    if text is None or not text.strip():
        raise OutputError("the answer is empty; a list was expected")
    body = strip_fences(text)
    try:
        value = _literal(body)
    except OutputError:
        start, end = body.find("["), body.rfind("]")
        if start < 0 or end <= start:
            raise OutputError("the answer holds no list in the form [\"a\", \"b\", ...]") from None
        value = _literal(body[start:end + 1])
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise OutputError("the answer is an object, not a list")
        value = lists[0]
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise OutputError(f"the answer is a {type(value).__name__}, not a list")
    return value


def parse_strings(text: str, *, max_items: int | None = None, max_words: int | None = None) -> list[str]:
    """A list of non-empty strings (nuggets), at most ``max_items`` of at most ``max_words`` words each."""
    items = parse_list(text)
    problems = []
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            problems.append(f"item {i + 1} is not a string")
            continue
        item = " ".join(item.split())
        if not item:
            problems.append(f"item {i + 1} is empty")
        elif max_words is not None and len(item.split()) > max_words:
            problems.append(f"item {i + 1} has {len(item.split())} words, more than {max_words}")
        out.append(item)
    if max_items is not None and len(items) > max_items:
        problems.append(f"the list has {len(items)} items, more than {max_items}")
    if problems:
        raise OutputError("; ".join(problems))
    return out


def normalise_label(label: str) -> str:
    """Canonical spelling of a label: lower case, spaces and hyphens as underscores ("Partial Support"
    -> "partial_support"). It only changes spelling; the label must still be in the allowed set."""
    return re.sub(r"[\s\-]+", "_", label.strip().strip(".").lower())


def parse_labels(text: str, n: int, allowed: Sequence[str]) -> list[str]:
    """Exactly ``n`` labels, each one of ``allowed`` (after :func:`normalise_label`)."""
    items = parse_list(text)
    if len(items) != n:
        raise OutputError(f"the list has {len(items)} labels but there are {n} nuggets; give exactly one "
                          "label per nugget, in order")
    out, unknown = [], []
    for item in items:
        label = normalise_label(item) if isinstance(item, str) else None
        if label not in allowed:
            unknown.append(repr(item))
        out.append(label)
    if unknown:
        raise OutputError(f"unknown labels {', '.join(unknown)}; use only {', '.join(allowed)}")
    return out
