"""What a chat completion says, read in one place for the online path (:class:`~.endpoint.Endpoint`), the Batch API
(:mod:`.batch`) and the cache: the answer's text, the model's reasoning apart from it, why the reply ended, and the
usage.

Reasoning models think before they answer, and servers return that thinking in one of three ways
(docs/llm.md, "Reasoning models"):

- in the content, before the answer: ``<think>...</think>`` (Qwen3, DeepSeek-R1 distills and gpt-oss on vLLM,
  SGLang, Ollama or llama.cpp without a reasoning parser). DeepSeek-R1's chat template opens the block in the prompt,
  so its content may start inside it, with only the closing ``</think>``. A token limit that ends inside the block
  leaves it unterminated: no answer at all;
- in a field of the message beside the content: ``reasoning_content`` (vLLM, SGLang with a reasoning parser;
  DeepSeek's API) or ``reasoning`` (Ollama, OpenRouter);
- not at all, only counted: ``usage.completion_tokens_details.reasoning_tokens`` (OpenAI's reasoning models; the
  tokens are billed as completion tokens, which include them).

The text a judge parses is the answer alone (:func:`split_thinking`); the reasoning is kept beside it (the cache
keeps both, a judge's outcome carries it: :attr:`~.client.Outcome.reasoning`).
"""
from __future__ import annotations

import re

from pyterrier_nuggets.llm.config import TEST_ENDPOINT_FINGERPRINT

_OPEN = re.compile(r"\s*<think>", re.I)
_CLOSE = re.compile(r"</think>", re.I)
#: the fields of a message that hold the model's reasoning, in the order they are read
REASONING_FIELDS = ("reasoning_content", "reasoning")


def split_thinking(content: str) -> tuple[str, str | None]:
    """``(answer, thinking)`` of a content that may start with the model's thinking: ``<think>...</think>`` before
    the answer, or (DeepSeek-R1, its template opening the block in the prompt) thinking that ends with
    ``</think>``. An unterminated block (a token limit reached while the model thought) is all thinking: the answer
    is empty. A content without a block is all answer (``thinking`` None).

    :param content: the message's content.
    """
    opened = _OPEN.match(content)
    if opened:
        rest = content[opened.end():]
        closed = _CLOSE.search(rest)
        if closed is None:
            return "", rest.strip()
        return rest[closed.end():].strip(), rest[:closed.start()].strip()
    closed = _CLOSE.search(content)
    if closed is not None and "<think>" not in content[:closed.start()].lower():
        return content[closed.end():].strip(), content[:closed.start()].strip()
    return content, None


def with_thinking(text: str, reasoning: str | None) -> str:
    """A reply as the model gave it, its reasoning in front in the ``<think>`` form: what a file keeps as a judge's raw
    output (the battles' ``raw_output``, shown by the report) so that the reasoning behind a verdict can be read.

    :param text: the answer.
    :param reasoning: the reasoning before it (None: the answer alone).
    """
    return f"<think>\n{reasoning}\n</think>\n\n{text}" if reasoning else text


def reasoning_of(message: dict, thinking: str | None) -> str | None:
    """The model's reasoning: the message's ``reasoning_content`` / ``reasoning`` field, else its ``<think>`` block."""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return thinking


def usage_of(completion: dict) -> dict:
    """The token counts of a chat completion: ``prompt_tokens``, ``completion_tokens`` (reasoning included, as
    OpenAI bills them) and, where the endpoint reports them, ``reasoning_tokens``."""
    usage = completion.get("usage")
    if not isinstance(usage, dict):
        return {}
    out = {"prompt_tokens": usage.get("prompt_tokens") or 0, "completion_tokens": usage.get("completion_tokens") or 0}
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens"):
        out["reasoning_tokens"] = int(details["reasoning_tokens"])
    return out


def read_completion(completion: dict) -> dict:
    """A chat completion's JSON body (which has a first choice) as the cache keeps it: ``text`` (the answer, the
    thinking taken out), ``reasoning`` (where there is any), ``finish_reason``, ``usage`` (:func:`usage_of`) and
    ``test_endpoint`` when the package's test endpoint gave it.

    :param completion: the body.
    """
    choice = completion["choices"][0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = message.get("content")
    text, thinking = split_thinking(content if isinstance(content, str) else "")
    reply = {"text": text, "finish_reason": choice.get("finish_reason"), "usage": usage_of(completion)}
    reasoning = reasoning_of(message, thinking)
    if reasoning:
        reply["reasoning"] = reasoning
    if completion.get("system_fingerprint") == TEST_ENDPOINT_FINGERPRINT:
        reply["test_endpoint"] = True
    return reply


def cut_note(reply_text: str | None, finish_reason: str | None, reasoning: str | None, usage: dict) -> str:
    """What a reply cut at the token limit needs said beside why it could not be used ("" for a reply that was not
    cut): that it was cut, whether the model was still thinking, and the option that gives it room."""
    if finish_reason != "length":
        return ""
    thinking = not (reply_text or "").strip() and (reasoning or usage.get("reasoning_tokens"))
    where = " while the model was still thinking (no answer yet)" if thinking else ""
    return (f" (the reply was cut at the token limit{where}: raise --max-tokens, Sampling(max_tokens=...); reasoning "
            "models count their reasoning in it)")
