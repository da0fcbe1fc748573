"""What the package ships for trying its LLM commands offline and for testing code that uses them: the test endpoint
(:class:`TestEndpoint`, ``pyterrier-nuggets test-endpoint``), a deterministic OpenAI-compatible endpoint on
127.0.0.1 whose replies are chosen by the stage each request declares (:mod:`.endpoint`), optionally as a given
server answers (:mod:`.profiles`: OpenAI's reasoning models, ``<think>`` content, vLLM, Ollama, llama.cpp, ...).

Examples::

    from pyterrier_nuggets import LLMClient, NuggetAssigner
    from pyterrier_nuggets.testing import TestEndpoint

    with TestEndpoint() as endpoint:                      # any free port on 127.0.0.1
        llm = LLMClient(model="test", base_url=endpoint.base_url, cache=None)
        assigned = NuggetAssigner(nuggets, llm)(answers)  # deterministic labels: word overlap, not a model
"""
from pyterrier_nuggets.testing.endpoint import (
    INVALID,
    PROBE_STAGE,
    Reply,
    TestEndpoint,
    completion,
    declared_replies,
    first_prompt,
    stage_reply,
)
from pyterrier_nuggets.testing.profiles import PROFILES, ServerProfile

__all__ = ["TestEndpoint", "Reply", "INVALID", "PROBE_STAGE", "completion", "declared_replies", "first_prompt",
           "stage_reply", "ServerProfile", "PROFILES"]
