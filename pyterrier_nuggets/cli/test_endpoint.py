"""``pyterrier-nuggets test-endpoint``: the package's deterministic test endpoint (:mod:`pyterrier_nuggets.testing`)
on 127.0.0.1 until interrupted; it prints its base URL first."""
from __future__ import annotations

from pyterrier_nuggets.cli.errors import non_negative_number, port, positive_int, positive_number

# the profiles of pyterrier_nuggets.testing.profiles, named here so that --help loads nothing
PROFILE_NAMES = ("openai", "openai-reasoning", "think", "vllm", "sglang", "ollama", "llama-cpp", "fenced")


#: the model names the command's endpoint serves unless --model says otherwise (the name the docs export)
DEFAULT_MODELS = ("test",)
#: the variable ``--background`` sets to the process id of the endpoint it leaves running
PID_VARIABLE = "PYTERRIER_NUGGETS_TEST_ENDPOINT_PID"


def add_parser(sub) -> None:
    p = sub.add_parser("test-endpoint", help="a deterministic local OpenAI-compatible endpoint for trying the LLM "
                       "commands offline (no model: its tables say so)",
                       description="Run the package's test endpoint on 127.0.0.1: an OpenAI-compatible chat endpoint "
                       "that runs no model. Each judge's requests get a deterministic, valid reply made from the "
                       "words of the judge's own prompt, so every command runs, in seconds; every table made with it "
                       "names it as a test endpoint. As a real server, it answers only under /v1 and only the model "
                       "names of --model (default: test); another name gets HTTP 404 (model_not_found). In the "
                       "foreground (until Ctrl-C) it prints its base URL first; with --background it keeps running "
                       "after the command returns and prints the shell line that points the LLM commands at it. "
                       "Example: eval \"$(pyterrier-nuggets test-endpoint --background)\" (then any LLM command, e.g. "
                       "pyterrier-nuggets check-endpoint; stop it with kill $" + PID_VARIABLE + "; docs/llm.md)")
    p.add_argument("--port", type=port, default=0, help="the port on 127.0.0.1 (default 0: any free one, "
                   "printed), e.g. --port 8000")
    p.add_argument("--background", action="store_true",
                   help="start it in the background and print, for eval in a shell, the line that sets "
                        "OPENAI_BASE_URL, OPENAI_API_KEY, PYTERRIER_NUGGETS_MODEL and " + PID_VARIABLE +
                        " (its process id, for kill)")
    p.add_argument("--model", action="append", metavar="NAME",
                   help="a model name it serves, repeatable (default: test); requests for any other get HTTP 404 "
                        "as from a real server, e.g. --model gpt-4o-mini")
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
    import os
    import shlex
    import signal
    import sys
    import threading

    from pyterrier_nuggets.testing import TestEndpoint
    models = tuple(dict.fromkeys(args.model or DEFAULT_MODELS))
    endpoint = TestEndpoint(latency=args.latency, max_in_flight=args.max_in_flight, retry_after=args.retry_after,
                            quota=args.quota, quota_window=args.quota_window,
                            ratelimit_headers=args.ratelimit_headers, port=args.port, profile=args.profile,
                            models=models)  # bound here: a port in use is one line, before anything runs
    names = " ".join(models)
    if args.background:
        sys.stdout.flush()
        pid = os.fork()
        if pid:  # the command: the line for eval, then done; the endpoint lives on in the child
            values = {"OPENAI_BASE_URL": endpoint.base_url, "OPENAI_API_KEY": "none",
                      "PYTERRIER_NUGGETS_MODEL": models[0], PID_VARIABLE: str(pid)}
            print("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items()), flush=True)
            print(f"the test endpoint of pyterrier-nuggets (no model: deterministic replies) serves {names} at "
                  f"{endpoint.base_url} in the background, process {pid}; stop it with: kill ${PID_VARIABLE}",
                  file=sys.stderr)
            return 0
        # the endpoint: not the terminal's Ctrl-C (it would stop a server started in the background), and no hold
        # on the command's output (a shell's $(...), or a caller that captures stderr, waits until every writer of it
        # has closed it); it serves without a word, as before
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        with endpoint:
            threading.Event().wait()
    with endpoint:
        try:  # from its first line on, Ctrl-C is the way to stop it: no job to resume, nothing to report
            print(endpoint.base_url, flush=True)
            print(f"the test endpoint of pyterrier-nuggets (no model: deterministic replies) serves {names} at "
                  f"{endpoint.base_url} until Ctrl-C; point the LLM commands at it (in another shell): export "
                  f"OPENAI_BASE_URL={endpoint.base_url} OPENAI_API_KEY=none PYTERRIER_NUGGETS_MODEL={models[0]}",
                  file=sys.stderr, flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            print("the test endpoint stopped", file=sys.stderr)
    return 0
