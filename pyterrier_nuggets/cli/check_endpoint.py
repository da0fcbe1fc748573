"""``pyterrier-nuggets check-endpoint``: ask the configured LLM endpoint one tiny question and say whether a job
could use it (the probe a job makes with its first request, on purpose and for a few tokens)."""
from __future__ import annotations

from pyterrier_nuggets.cli.options import add_endpoint_options


def add_parser(sub) -> None:
    p = sub.add_parser("check-endpoint", help="ask the LLM endpoint one tiny question: can a job use it? (exit 0 if "
                                              "so; 1 with the cause, e.g. HTTP 401, an unknown model, no server)", description="Ask the configured LLM endpoint one tiny question and say whether a job can use it (exit 0) or what is wrong (exit 1): the address, the key, the model name, the reply. Example: pyterrier-nuggets check-endpoint --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct")
    add_endpoint_options(p.add_argument_group("endpoint (as on every command that calls an LLM; each of several "
                                              "--base-url is checked)"))
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.cli.errors import UsageError
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, RetryPolicy
    from pyterrier_nuggets.llm.endpoint import NoEndpoint
    try:
        retry = RetryPolicy(timeout=args.timeout, max_retries=2, max_retry_time=args.timeout)
        llm = LLMClient(model=args.model, base_url=args.base_url, cache=None, progress=False,
                        options=ClientOptions(retry=retry))
    except NoEndpoint:
        raise UsageError("no LLM endpoint is configured to check: give --base-url URL --model NAME, or set "
                         "OPENAI_BASE_URL and PYTERRIER_NUGGETS_MODEL (OPENAI_API_KEY for the OpenAI API)") from None
    print(llm.probe())
    return 0
