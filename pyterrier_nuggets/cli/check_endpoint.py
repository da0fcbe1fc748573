"""``pyterrier-nuggets check-endpoint``: ask the configured LLM endpoint one tiny question and say whether a job
could use it (the probe a job makes with its first request, on purpose and for a few tokens)."""
from __future__ import annotations

from pyterrier_nuggets.cli.errors import positive_number
from pyterrier_nuggets.cli.options import add_base_url


def add_parser(sub) -> None:
    p = sub.add_parser("check-endpoint", help="ask the LLM endpoint one tiny question: can a job use it? (exit 0 if "
                                              "so; 1 with the cause, e.g. HTTP 401, an unknown model, no server)", description="Ask the configured LLM endpoint one tiny question and say whether a job can use it (exit 0) or what is wrong (exit 1): the address, the key, the model name, the reply. Example: pyterrier-nuggets check-endpoint --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct")
    add_base_url(p, "the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL, else the "
                    "OpenAI API when $OPENAI_API_KEY is set); each of several is checked")
    p.add_argument("--model", help="the model name at that endpoint, e.g. gpt-4o-mini (default: "
                                   "$PYTERRIER_NUGGETS_MODEL)")
    p.add_argument("--timeout", type=positive_number, default=30.0, metavar="SECONDS",
                   help="seconds to wait for the reply (default 30), e.g. --timeout 60")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.llm import LLMClient
    llm = LLMClient(model=args.model, base_url=args.base_url, cache=None, progress=False, timeout=args.timeout,
                    max_retries=2, max_retry_time=args.timeout)
    print(llm.probe())
    return 0
