"""What one model at one endpoint takes (decisions.md, decision 14; docs/llm.md, "Which server, which options").

The client asks every model the same way: temperature 0 and a seed (repeatable), the token limit as ``max_tokens``,
and what :class:`~.options.Sampling` adds (``reasoning_effort``, a JSON schema). Not every model takes it: OpenAI's
reasoning models (o-series, most of the GPT-5 family) take temperature only at its default 1 and want
``max_completion_tokens`` instead of ``max_tokens``; servers differ in the structured output they take. Rules by
model name are fragile (``gpt-5-chat-latest`` takes a temperature), so the client learns from the endpoint itself:

- a :class:`ModelProfile` says what to change in every request: the parameters the model refuses, left out
  (``temperature``, ``seed``, ``top_p``); the name of its token limit; the structured output it takes;
- it is **learned** from the endpoint's own HTTP 400 that names the parameter (:func:`~.retry.refusal`; the
  classification table's *refused* row): once per endpoint and model, the request sent again at once without it;
  **remembered** in the response cache beside the learned limits (the next run sends the right request from its
  first); **probed** by ``pyterrier-nuggets check-endpoint`` (the structured output too, :mod:`.structured`);
- what it changes is said: a model that samples at its own temperature makes tables that say so
  (:meth:`ModelProfile.sampled`; "a re-run without the cache may differ; the cache makes it repeatable").

The request as changed is the request sent, and its cache key (:func:`~.cache.request_key`).
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace

from pyterrier_nuggets.llm.retry import Refusal

MAX_TOKENS, MAX_COMPLETION_TOKENS = "max_tokens", "max_completion_tokens"
#: the sampling parameters a model may take only at their default: left out when it refuses another value
DROPPABLE = ("temperature", "seed", "top_p")
#: structured output: OpenAI's ``json_schema`` (strict; vLLM, SGLang, Ollama too), llama.cpp's ``json_object`` with a
#: ``schema``, or none that the endpoint takes
JSON_SCHEMA, JSON_OBJECT, NO_STRUCTURED = "json_schema", "json_object", "none"
STRUCTURED_FORMATS = (JSON_SCHEMA, JSON_OBJECT, NO_STRUCTURED)


@dataclass(frozen=True)
class ModelProfile:
    """What one model at one endpoint takes, beyond what every request asks.

    :param left_out: the parameters it refuses (``temperature``, ``seed``, ``top_p``): left out of every request,
        so the model uses its default.
    :param token_limit: the name of its token limit: ``max_tokens``, or ``max_completion_tokens`` (OpenAI's reasoning
        models; it counts the reasoning tokens too).
    :param structured: the structured output it takes (:data:`JSON_SCHEMA`, :data:`JSON_OBJECT`,
        :data:`NO_STRUCTURED`), ``None`` while it is not known.
    :param learned: what was learned, in words (said once, and in the tables' notes).

    Examples::

        ModelProfile(left_out=("temperature",), token_limit="max_completion_tokens").apply(
            {"model": "gpt-5.5", "messages": [], "temperature": 0, "seed": 0, "max_tokens": 4000})
        # {"model": "gpt-5.5", "messages": [], "seed": 0, "max_completion_tokens": 4000}
    """

    left_out: tuple[str, ...] = ()
    token_limit: str = MAX_TOKENS
    structured: str | None = None
    learned: tuple[str, ...] = field(default=(), compare=False)

    def apply(self, body: dict) -> dict:
        """``body`` as this model takes it (a new dict; ``body`` is left as it is)."""
        out = {k: v for k, v in body.items() if k not in self.left_out}
        if self.token_limit != MAX_TOKENS and MAX_TOKENS in out:
            out[self.token_limit] = out.pop(MAX_TOKENS)
        return out

    def leaves_out(self, refused: Refusal) -> bool:
        """Whether requests made with this profile no longer carry what ``refused`` refuses (it was learned)."""
        if refused.param in DROPPABLE:
            return refused.param in self.left_out
        if refused.param in (MAX_TOKENS, MAX_COMPLETION_TOKENS):
            return self.token_limit != refused.param
        return False

    def learn(self, refused: Refusal) -> ModelProfile | None:
        """This profile with what ``refused`` teaches: a sampling parameter left out, the other name of the token
        limit; ``None`` when it teaches nothing the client may change on its own (``reasoning_effort``,
        ``response_format``, the messages: the user asked for those)."""
        if self.leaves_out(refused):
            return self
        if refused.param in DROPPABLE:
            default = " (it takes only its default: answers are sampled)" if refused.param == "temperature" else ""
            return replace(self, left_out=self.left_out + (refused.param,),
                           learned=self.learned + (f"{refused.param} left out{default}",))
        if refused.param == MAX_TOKENS:
            return replace(self, token_limit=MAX_COMPLETION_TOKENS,
                           learned=self.learned + ("the token limit sent as max_completion_tokens",))
        if refused.param == MAX_COMPLETION_TOKENS:
            return replace(self, token_limit=MAX_TOKENS, learned=self.learned + ("the token limit sent as max_tokens",))
        return None

    def with_structured(self, structured: str) -> ModelProfile:
        """This profile with the structured output the endpoint takes (probed, :mod:`.structured`)."""
        if structured not in STRUCTURED_FORMATS:
            raise ValueError(f"structured output is one of {STRUCTURED_FORMATS}, got {structured!r}")
        return replace(self, structured=structured)

    def to_json(self) -> str:
        return json.dumps({"left_out": list(self.left_out), "token_limit": self.token_limit,
                           "structured": self.structured, "learned": list(self.learned)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ModelProfile:
        """A profile as the cache keeps it (an unreadable one is the default profile: it is learned again)."""
        try:
            data = json.loads(text)
            left_out = tuple(p for p in data.get("left_out", ()) if p in DROPPABLE)
            token_limit = data.get("token_limit") if data.get("token_limit") in (MAX_TOKENS, MAX_COMPLETION_TOKENS) \
                else MAX_TOKENS
            structured = data.get("structured") if data.get("structured") in STRUCTURED_FORMATS else None
            learned = tuple(str(x) for x in data.get("learned", ()))
        except (ValueError, AttributeError, TypeError):
            return cls()
        return cls(left_out, token_limit, structured, learned)


class Profiles:
    """The profile of a client's model at its endpoints, as it is learned (thread-safe): the current
    :class:`ModelProfile`, a ``version`` that changes whenever it does (a request built before is stale), and where
    it is remembered (``remember(profile)``: the response cache, under each endpoint's address and the model).

    :param profile: what an earlier run learned (or the default).
    :param remember: keeps a learned profile (the cache's; ``None``: not kept).
    :param say: says once what was learned (a line on stderr).
    """

    def __init__(self, profile: ModelProfile, remember=None, say=None):
        self._profile = profile
        self._remember, self._say = remember, say
        self._lock = threading.Lock()
        self.version = 0

    @property
    def current(self) -> ModelProfile:
        return self._profile

    def learn(self, refused: Refusal, where: str) -> bool:
        """Take in what ``refused`` teaches: True when a request refused for it may be sent again as the profile now
        builds it (learned now, or by another thread before: the request was built before); False when it teaches
        nothing (the request's failure stands). ``where``: the endpoint and model, in the line that says it."""
        with self._lock:
            learned = self._profile.learn(refused)
            if learned is None:
                return False
            if learned is self._profile:
                return True
            self._profile, self.version = learned, self.version + 1
        if self._remember is not None:
            self._remember(learned)
        if self._say is not None:
            self._say(f"the model at {where} refuses {refused.param} ({refused.message}): "
                      f"{learned.learned[-1]} from now on, remembered in the response cache")
        return True

    def set_structured(self, structured: str) -> ModelProfile:
        """Take in the structured output the endpoint takes (probed); remembered."""
        with self._lock:
            if self._profile.structured == structured:
                return self._profile
            self._profile, self.version = self._profile.with_structured(structured), self.version + 1
            profile = self._profile
        if self._remember is not None:
            self._remember(profile)
        return profile
