"""The environment variables that configure the LLM layer (an argument of :class:`~.client.LLMClient` wins)."""

ENV_BASE_URL = "OPENAI_BASE_URL"  # endpoint, e.g. http://localhost:8000/v1
ENV_API_KEY = "OPENAI_API_KEY"  # secret; never stored, logged or printed
ENV_MODEL = "PYTERRIER_NUGGETS_MODEL"  # model name sent with each request
ENV_CACHE = "PYTERRIER_NUGGETS_CACHE"  # path of the SQLite response cache

# What the client declares beside each request, never inside it (the request body is the cache key): the stage of the
# package that asks (a judge's ``step``: "create", "assign", "support", ...). The test endpoint chooses its reply by it
# (:mod:`pyterrier_nuggets.testing`); other endpoints ignore an unknown header.
STAGE_HEADER = "X-Pyterrier-Nuggets-Stage"
# How the test endpoint names itself in every reply (``system_fingerprint``): tables made on it say so.
TEST_ENDPOINT_FINGERPRINT = "pyterrier-nuggets-test-endpoint"
TEST_ENDPOINT_LABEL = "the TEST ENDPOINT of pyterrier-nuggets: deterministic replies, no model; not a judge"


def stage_headers(stage: str | None) -> dict[str, str]:
    """The request headers that declare ``stage`` (none for a request without one)."""
    return {STAGE_HEADER: stage} if stage else {}
