"""The environment variables that configure the LLM layer (an argument of :class:`~.client.LLMClient` wins)."""

ENV_BASE_URL = "OPENAI_BASE_URL"  # endpoint, e.g. http://localhost:8000/v1
ENV_API_KEY = "OPENAI_API_KEY"  # secret; never stored, logged or printed
ENV_MODEL = "PYTERRIER_NUGGETS_MODEL"  # model name sent with each request
ENV_CACHE = "PYTERRIER_NUGGETS_CACHE"  # path of the SQLite response cache
