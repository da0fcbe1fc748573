"""``pyterrier-nuggets check-endpoint``: ask the configured LLM endpoint one tiny question, as a job asks its requests,
and say whether a job could use it (the probe a job makes with its first request, on purpose and for a few tokens);
what it learns of the model (a parameter it refuses, the structured output it takes) is remembered in the response
cache, where every later command finds it (docs/llm.md, "Which server, which options")."""
from __future__ import annotations

from pyterrier_nuggets.cli.options import add_endpoint_options, add_request_options


def add_parser(sub) -> None:
    p = sub.add_parser("check-endpoint", help="ask the LLM endpoint one tiny question: can a job use it, and what does "
                                              "the model take? (exit 0 if usable; 1 with the cause, e.g. HTTP 401, an "
                                              "unknown model, no server)",
                       description="Ask the configured LLM endpoint one tiny question, as a job asks its requests "
                                   "(temperature, --max-tokens, --reasoning-effort), and say whether a job can "
                                   "use it (exit 0) or what is wrong (exit 1): the address, the key, the model name, "
                                   "the reply. A parameter the model refuses (a reasoning model's temperature 0, "
                                   "max_tokens) is learned from its refusal; the structured output the endpoint takes "
                                   "is probed; both are remembered in the response cache for every later command. "
                                   "Example: pyterrier-nuggets check-endpoint --base-url http://localhost:8000/v1 "
                                   "--model Qwen/Qwen2.5-7B-Instruct")
    g = p.add_argument_group("endpoint", "as on every command that calls an LLM; each of several --base-url is "
                             "checked")
    add_endpoint_options(g)
    add_request_options(g)
    g.add_argument("--llm-cache", metavar="FILE", help="the response cache where what is learned of the model is kept "
                   "(default: $PYTERRIER_NUGGETS_CACHE or ~/.cache/pyterrier-nuggets/llm-cache.sqlite: give the cache "
                   "your commands use), e.g. --llm-cache out/cache.sqlite")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.cli.errors import UsageError
    from pyterrier_nuggets.cli.options import sampling
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, RetryPolicy
    from pyterrier_nuggets.llm.endpoint import NoEndpoint
    from pyterrier_nuggets.llm.profile import NO_STRUCTURED
    cache = {"cache": args.llm_cache} if args.llm_cache else {}
    try:
        retry = RetryPolicy(timeout=args.timeout, max_retries=2, max_retry_time=args.timeout)
        llm = LLMClient(model=args.model, base_url=args.base_url, progress=False,
                        options=ClientOptions(retry=retry, sampling=sampling(args)), **cache)
    except NoEndpoint:
        raise UsageError("no LLM endpoint is configured to check: give --base-url URL --model NAME, or set "
                         "OPENAI_BASE_URL and PYTERRIER_NUGGETS_MODEL (OPENAI_API_KEY for the OpenAI API)") from None
    print(llm.probe(), flush=True)
    form = llm.find_structured(again=True)
    print("structured output: " + (
        "none of the forms probed (json_schema, json_object with a schema) constrained the reply: commands send no "
        "JSON schema (--structured on would stop)" if form == NO_STRUCTURED else
        f"the endpoint takes {form} (remembered): commands send a JSON schema of each reply in that form "
        "(--structured auto); --structured off sends none"))
    if llm.cache is not None:
        print(f"remembered in the response cache {llm.cache.path}")
    return 0
