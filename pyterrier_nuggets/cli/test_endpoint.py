"""``pyterrier-nuggets test-endpoint``: the package's deterministic test endpoint (:mod:`pyterrier_nuggets.testing`)
on 127.0.0.1 until interrupted; it prints its base URL first."""
from __future__ import annotations

from pyterrier_nuggets.cli.errors import non_negative_number, port, positive_int, positive_number

# the profiles of pyterrier_nuggets.testing.profiles, named here so that --help loads nothing
PROFILE_NAMES = ("openai", "openai-reasoning", "think", "vllm", "sglang", "ollama", "llama-cpp", "fenced")


def add_parser(sub) -> None:
    p = sub.add_parser("test-endpoint", help="a deterministic local OpenAI-compatible endpoint for trying the LLM "
                       "commands offline (no model: its tables say so)",
                       description="Run the package's test endpoint on 127.0.0.1 until interrupted (Ctrl-C): an "
                       "OpenAI-compatible chat endpoint that runs no model. Each judge's requests get a deterministic, "
                       "valid reply read off the judge's prompt (word overlap), chosen by the stage the client "
                       "declares; every table made with it names it as a test endpoint. It prints its base URL, e.g. "
                       "http://127.0.0.1:8000/v1, then serves. Example: pyterrier-nuggets test-endpoint --port 8000 & "
                       "then pyterrier-nuggets arena --base-url http://127.0.0.1:8000/v1 --model test ... (docs/llm.md)")
    p.add_argument("--port", type=port, default=0, help="the port on 127.0.0.1 (default 0: any free one, "
                   "printed), e.g. --port 8000")
    p.add_argument("--latency", type=non_negative_number, default=0.0, metavar="SECONDS",
                   help="seconds slept before every reply (default 0), e.g. --latency 0.2")
    p.add_argument("--max-in-flight", type=positive_int, metavar="N",
                   help="answer HTTP 429 to a request that arrives while N are being served, e.g. --max-in-flight 8")
    p.add_argument("--retry-after", type=positive_number, default=1.0, metavar="SECONDS",
                   help="the Retry-After of those 429 replies (default 1), e.g. --retry-after 2")
    p.add_argument("--quota", type=positive_int, metavar="N",
                   help="at most N requests per --quota-window seconds (above it: HTTP 429), e.g. --quota 100")
    p.add_argument("--quota-window", type=positive_number, default=60.0, metavar="SECONDS",
                   help="the window of --quota (default 60), e.g. --quota-window 10")
    p.add_argument("--ratelimit-headers", action="store_true",
                   help="send OpenAI's x-ratelimit-* headers of the --quota with every reply")
    p.add_argument("--profile", choices=sorted(PROFILE_NAMES),
                   help="answer as that server does (docs/llm.md, \"Which server, which options\"): openai-reasoning "
                        "(OpenAI's reasoning models: temperature 0 and max_tokens refused with OpenAI's error body, "
                        "reasoning tokens in the usage), think (<think>...</think> before the answer), vllm "
                        "(reasoning_content), sglang, ollama (reasoning), llama-cpp, openai, fenced; e.g. --profile "
                        "openai-reasoning")
    p.set_defaults(func=run)


def run(args) -> int:
    import threading

    from pyterrier_nuggets.testing import TestEndpoint
    with TestEndpoint(latency=args.latency, max_in_flight=args.max_in_flight, retry_after=args.retry_after,
                      quota=args.quota, quota_window=args.quota_window, ratelimit_headers=args.ratelimit_headers,
                      port=args.port, profile=args.profile) as endpoint:
        print(endpoint.base_url, flush=True)
        threading.Event().wait()
    return 0
