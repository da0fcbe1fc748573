"""Options that several commands share, defined once.

- :func:`add_llm_options`: the LLM option group of every command that calls an LLM (``demo``, ``trec-rag``,
  ``arena``, ``ikat``, ``calibrate``): the same names, defaults and help everywhere (:data:`LLM_COMMANDS`;
  tests/test_cli_options.py holds every such command to it). ``check-endpoint`` takes its endpoint part
  (:func:`add_endpoint_options`) and what each request asks (:func:`add_request_options`).
- :func:`add_overwrite`: ``--overwrite`` of every command that writes a folder
  (:class:`~pyterrier_nuggets.formats.folders.OutputFolder`).
- :func:`llm_client`: the one place where a command's LLM client is made from those options (which model and
  endpoint, the dry run's placeholder key, the cache, limits, retries, Batch API, prices, what each request asks:
  :func:`sampling`).
- :func:`plan_first`: the dry run, the budget (``--max-calls``) and the Batch API plan, before any call.
"""
from __future__ import annotations

import argparse
import os
import sys

from pyterrier_nuggets.cli.errors import (
    DeprecatedAlias,
    UsageError,
    non_negative_int,
    positive_int,
    positive_number,
    share,
)

#: the commands that call an LLM and take the whole group (``check-endpoint`` takes its endpoint part)
LLM_COMMANDS = ("demo", "trec-rag", "arena", "ikat", "calibrate")
#: ``--llm``: who answers the LLM steps
LLM_MODES = ("endpoint", "embedded", "offline")
#: ``--reasoning-effort``: the values OpenAI's reasoning models take (the model refuses those it does not)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
#: ``--structured``: the :class:`~pyterrier_nuggets.llm.Sampling` ``json_mode`` of each word
STRUCTURED = {"auto": "auto", "on": True, "off": False}
#: ``--on-failure``: what a failed LLM item does to the run, as the ``on_failure`` policy of the command's steps (the one
#: vocabulary of judges/failures.py): ``leave-out`` is ``"exclude"`` (and the command leaves the topics the failures
#: touch out for every system), ``stop`` is ``"raise"``
ON_FAILURE = {"leave-out": "exclude", "stop": "raise"}
LLM_GROUP = "LLM"  # the group of the options below, the same on every command that calls an LLM
LLM_GROUP_TEXT = "the same options on every command that calls an LLM (docs/llm.md)"
DRY_RUN_KEY = "dry-run: no key needed"  # the key of a dry run's client: never sent (a dry run makes no call)
DRY_RUN_MODEL = "(no model given)"  # the model a dry run without --model plans for (tokens counted as GPT-4o's)


def add_base_url(parser, help: str) -> None:
    """``--base-url URL``, repeatable (a list of addresses, or None when not given); ``help`` says what the endpoint
    is for, with an example."""
    parser.add_argument("--base-url", action="append", metavar="URL",
                        help=f"{help}; give it more than once for several endpoints serving the same model (each "
                             "request goes where there is room; one that fails is taken out of rotation)")


def add_endpoint_options(group) -> None:
    """``--base-url``, ``--model`` and ``--timeout``: which endpoint, and how long a reply may take."""
    add_base_url(group, "an OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else the OpenAI API when "
                        "$OPENAI_API_KEY is set); the key is read from $OPENAI_API_KEY only (a local server without one "
                        "gets the placeholder key EMPTY), e.g. --base-url http://localhost:8000/v1")
    group.add_argument("--model", help="the model name at that endpoint (default: $PYTERRIER_NUGGETS_MODEL), e.g. "
                                       "--model gpt-4o-mini")
    group.add_argument("--timeout", type=positive_number, default=120.0, metavar="SECONDS",
                       help="seconds to wait for one LLM reply before it is retried (default 120), e.g. --timeout 300")


def temperature(text: str) -> float | None:
    """``--temperature``: a number from 0 to 2, or ``default`` (left out: the model's own)."""
    if text == "default":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 2 or 'default', got {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"{text} is not from 0 to 2 (or 'default')")
    return value


def add_request_options(group) -> None:
    """``--max-tokens``, ``--temperature`` and ``--reasoning-effort``: what each request asks the model (the same on
    ``check-endpoint``, which asks as a job asks)."""
    group.add_argument("--max-tokens", type=positive_int, metavar="N", help="the longest reply, in tokens (default: "
                       "the endpoint's own; 256 for the embedded model); sent as max_completion_tokens to a model that "
                       "wants it (learned), which counts a reasoning model's thinking too: give it room, e.g. "
                       "--max-tokens 4000")
    group.add_argument("--temperature", type=temperature, default=0.0, metavar="T|default",
                       help="the sampling temperature (default 0: repeatable); default leaves it out (the "
                            "model's own, 1 on OpenAI: tables then say the answers are sampled). A model that takes "
                            "only its default is learned from its first refusal, e.g. --temperature default")
    group.add_argument("--reasoning-effort", choices=REASONING_EFFORTS, help="the reasoning effort of a reasoning "
                       "model (OpenAI's o-series and GPT-5 family, gpt-oss, Qwen3 on vLLM); left out: the model's "
                       "default. A model that refuses it stops the run, e.g. --reasoning-effort low")


def add_llm_options(parser) -> None:
    """The LLM option group (documented in docs/cli.md, "The LLM options")."""
    g = parser.add_argument_group(LLM_GROUP, LLM_GROUP_TEXT)
    g.add_argument("--llm", choices=LLM_MODES, help="who answers the LLM steps: endpoint (--base-url/--model or "
                   "$OPENAI_BASE_URL, $PYTERRIER_NUGGETS_MODEL; the default when one is configured), embedded (every "
                   "LLM step on the embedded SmolLM2-135M on CPU: a check of the code path, its numbers mean nothing) "
                   "or offline (no LLM: the command's offline judges, where it has them; demo's default without an "
                   "endpoint), e.g. --llm embedded")
    add_endpoint_options(g)
    add_request_options(g)
    g.add_argument("--structured", choices=STRUCTURED, default="auto", help="structured output: a JSON schema of the "
                   "reply each judge expects, which constrains the model's decoding (the prompts stay the papers' "
                   "words): auto (default: where the endpoint is known to take one: the embedded model, an endpoint "
                   "check-endpoint probed), on (always: probed on first use; an endpoint that takes none stops the "
                   "run) or off, e.g. --structured on")
    g.add_argument("--llm-cache", metavar="FILE", help="SQLite response cache (default: $PYTERRIER_NUGGETS_CACHE or "
                   "~/.cache/pyterrier-nuggets/llm-cache.sqlite; a shard's: llm-cache.sqlite in its output folder), "
                   "e.g. --llm-cache out/cache.sqlite")
    g.add_argument("--frozen", action="store_true", help="replay every cached LLM answer, also those that failed "
                   "validation (a byte-identical re-run); by default a re-run asks the failed ones again")
    g.add_argument("--concurrency", type=positive_int, metavar="N", help="the most LLM requests in flight, per "
                   "endpoint. Left out: up to 256, the client finds how many the endpoint takes (from 8 in flight, or "
                   "from what an earlier run learned of it); given: N in flight from the first request, fewer only if "
                   "the endpoint pushes back, e.g. --concurrency 32")
    g.add_argument("--max-rpm", type=positive_number, metavar="N", help="requests per minute to stay under (a "
                   "published quota), e.g. --max-rpm 500")
    g.add_argument("--max-tpm", type=positive_number, metavar="N", help="tokens per minute to stay under (a "
                   "published quota), e.g. --max-tpm 200000")
    g.add_argument("--max-retry-time", type=positive_number, default=600.0, metavar="SECONDS",
                   help="seconds one request may spend in retries before it fails (default 600), e.g. "
                        "--max-retry-time 1800")
    g.add_argument("--batch", action="store_true", help="OpenAI Batch API mode: the LLM requests go in batches (half "
                   "the price on OpenAI, answers within 24 h), one round per dependent step; resumable: an "
                   "interrupted run picks up its batches. The rounds and cost are printed before it starts")
    g.add_argument("--batch-poll", type=positive_number, default=30.0, metavar="SECONDS",
                   help="seconds between polls of a running batch (default 30), e.g. --batch-poll 60")
    g.add_argument("--batch-discount", type=share, default=0.5, metavar="F",
                   help="share of the price taken off in Batch API mode (default 0.5, OpenAI's), e.g. "
                        "--batch-discount 0.5")
    g.add_argument("--dry-run", action="store_true", help="print the LLM requests per stage (and those already "
                   "cached), their tokens and cost; make no LLM call, write nothing; needs no endpoint (--model at "
                   "most, for the token count and the price)")
    g.add_argument("--price", metavar="INPUT,OUTPUT", help="USD per million prompt and completion tokens, for the cost "
                   "in the dry run and after the run, e.g. --price 0.15,0.60")
    g.add_argument("--max-calls", type=non_negative_int, metavar="N", help="a budget: refuse to start (before any "
                   "call) when the run needs more than N LLM calls, e.g. --max-calls 5000")
    g.add_argument("--on-failure", choices=ON_FAILURE, default="leave-out",
                   help="an LLM item that still fails after its retries and re-asks: leave-out (default: the topics it "
                        "touches are left out for every system, named in a note; never scored) or stop (exit 1 once "
                        "every other item ran and is cached), e.g. --on-failure stop")
    g.add_argument("--max-failed-share", type=share, default=0.1, metavar="F",
                   help="stop, without scores, when more than this share of a stage's LLM items failed (default 0.1), "
                        "e.g. --max-failed-share 0.5")


def add_overwrite(parser) -> None:
    """``--overwrite``: replace the outputs of an earlier run in ``--out``
    (:class:`~pyterrier_nuggets.formats.folders.OutputFolder`)."""
    parser.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier run in the output "
                        "folder as a whole (without it a folder holding them is refused; a response cache in it is "
                        "kept; a folder holding anything the package did not write is refused all the same)")


def step_policy(args) -> str:
    """The ``on_failure`` policy of a command's steps for its ``--on-failure`` (:data:`ON_FAILURE`)."""
    return ON_FAILURE[args.on_failure]


def check_failures(args, failures: list, items: int, step_name: str) -> None:
    """The ``--on-failure`` rule for failed work a command collected itself (``failures`` of ``items``, all of one
    stage): more than ``--max-failed-share`` of them stops the command (:class:`~pyterrier_nuggets.judges.failures.
    TooManyFailures`), and so does any under ``--on-failure stop`` (:class:`~pyterrier_nuggets.judges.failures.
    LLMStepError`, naming ``step_name``); under ``leave-out`` the command leaves them out."""
    from pyterrier_nuggets.judges.failures import LLMStepError, TooManyFailures, failure_causes
    if not failures:
        return
    if len(failures) / items > args.max_failed_share:
        raise TooManyFailures(failures[0].stage, len(failures), items, args.max_failed_share, "--max-failed-share",
                              failure_causes(failures))
    if step_policy(args) == "raise":
        raise LLMStepError(step_name, failures, "'exclude'")


class StrictAlias(DeprecatedAlias):
    """``--strict``, the first spelling of ``--on-failure stop``: kept hidden, with a warning naming the new one."""

    def __init__(self, option_strings, dest, command: str, **kwargs):
        super().__init__(option_strings, dest, new="--on-failure stop", command=command, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"warning: {self.command} {option_string} is deprecated: give --on-failure stop", file=sys.stderr)
        setattr(namespace, self.dest, "stop")


# ------------------------------------------------------------------------------------------------ the client

def llm_mode(args, offline: bool = False) -> str:
    """``--llm``, or its default: ``endpoint`` when one is configured (options or environment; in a dry run
    ``--model`` or ``--base-url`` is enough) or when the command has no ``offline`` judges, else ``offline``.
    ``--llm offline`` on a command without offline judges is refused."""
    from pyterrier_nuggets.llm import endpoint_configured
    if args.llm == "offline" and not offline:
        raise UsageError(f"--llm offline: {command_name(args)} has no offline judges; give --llm endpoint (with "
                         "--base-url and --model) or --llm embedded")
    if args.llm is not None:
        if args.llm == "endpoint" and not args.dry_run and not endpoint_configured(args.model, args.base_url):
            raise UsageError("--llm endpoint: no endpoint is configured; give --base-url URL --model NAME, or set "
                             "OPENAI_BASE_URL and PYTERRIER_NUGGETS_MODEL (OPENAI_API_KEY for the OpenAI API)")
        return args.llm
    given = args.dry_run and (args.model or args.base_url)
    if not offline or given or endpoint_configured(args.model, args.base_url):
        return "endpoint"
    return "offline"


def command_name(args) -> str:
    return f"pyterrier-nuggets {getattr(args, 'command', None) or ''}".rstrip()


def dry_run_key(args) -> str | None:
    """A dry run makes no call, so it needs no API key: with ``--dry-run`` and no key in the environment, the plan is
    made with a placeholder key that is never sent."""
    from pyterrier_nuggets.llm.config import ENV_API_KEY
    if getattr(args, "dry_run", False) and not os.environ.get(ENV_API_KEY):
        return DRY_RUN_KEY
    return None


def client_options(args):
    """The :class:`~pyterrier_nuggets.llm.ClientOptions` of the LLM group: limits, retries, Batch API, prices,
    replay, and ``cache_only`` (merge's re-run)."""
    from pyterrier_nuggets.llm import BatchOptions, ClientOptions, Prices, RetryPolicy
    prices = Prices.parse(args.price, args.batch_discount) if args.price else None
    return ClientOptions(retry=RetryPolicy(timeout=args.timeout, max_retry_time=args.max_retry_time),
                         limits=limits(args), sampling=sampling(args),
                         batch=BatchOptions(enabled=args.batch, poll=args.batch_poll), prices=prices,
                         frozen=args.frozen, cache_only=bool(getattr(args, "cache_only", False)))


def sampling(args):
    """The :class:`~pyterrier_nuggets.llm.Sampling` of ``--temperature``, ``--max-tokens``, ``--reasoning-effort`` and
    ``--structured`` (the seed: 0; what the model refuses is learned and left out, :mod:`~pyterrier_nuggets.llm.profile`)."""
    from pyterrier_nuggets.llm import Sampling
    return Sampling(temperature=args.temperature, max_tokens=args.max_tokens, reasoning_effort=args.reasoning_effort,
                    json_mode=STRUCTURED[getattr(args, "structured", "auto")])


def limits(args):
    """The :class:`~pyterrier_nuggets.llm.Limits` of the LLM group: a ``--concurrency`` the user gives is in flight from
    the first request (no slow start: the user said what the endpoint takes); left out, the default ceiling, below
    which the client finds the endpoint's limit (docs/llm.md, "Adaptive concurrency"). A command's ``--workers``
    processes share the ceiling and the quotas: each gets its share."""
    from pyterrier_nuggets.llm import Limits
    from pyterrier_nuggets.llm.limits import DEFAULT_CEILING
    workers = getattr(args, "workers", 1)
    ceiling = -(-(args.concurrency or DEFAULT_CEILING) // workers)
    start = {} if args.concurrency is None else {"start": ceiling}
    return Limits(concurrency=ceiling, requests_per_minute=args.max_rpm and args.max_rpm / workers,
                  tokens_per_minute=args.max_tpm and args.max_tpm / workers, **start)


def llm_client(args, mode: str = "endpoint"):
    """The command's LLM client for ``mode`` (:func:`llm_mode`): the endpoint of ``--base-url``/``--model`` or the
    environment, or the embedded model, with the cache of :func:`~pyterrier_nuggets.cli.shards.cache_path` and the
    options of the LLM group (:func:`client_options`). A dry run needs no endpoint: without one, the requests are
    planned as if for the OpenAI API (``--model``, or a placeholder name) with a key that is never sent."""
    from pyterrier_nuggets.cli.shards import cache_path
    from pyterrier_nuggets.llm import LLMClient, ResponseCache, default_cache_path, endpoint_configured
    from pyterrier_nuggets.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
    options = client_options(args)
    cache = {"cache": path} if (path := cache_path(args)) is not None else {}  # else the client's default
    if args.dry_run:  # read, never written: a missing cache is an empty one (a dry run writes nothing)
        cache = {"cache": ResponseCache(path or default_cache_path(), read_only=True)}
    if mode == "embedded":
        return LLMClient(embedded=True, options=options, **cache)
    model, key = args.model, dry_run_key(args)
    if args.dry_run and not model and not os.environ.get(ENV_MODEL):
        model = DRY_RUN_MODEL
    if args.dry_run and not (args.base_url or os.environ.get(ENV_BASE_URL) or os.environ.get(ENV_API_KEY)):
        print("Dry run without an endpoint: the requests are planned as the OpenAI API would get them (answers "
              "cached for another endpoint are not counted as cached)", flush=True)
    if not args.dry_run and not endpoint_configured(args.model, args.base_url):
        raise UsageError(f"{command_name(args)}: the LLM steps need an endpoint: give --base-url URL --model NAME (or "
                         "set OPENAI_BASE_URL and PYTERRIER_NUGGETS_MODEL; OPENAI_API_KEY for the OpenAI API), or "
                         "--llm embedded")
    return LLMClient(model=model, base_url=args.base_url, api_key=key, options=options, **cache)


def plan_first(args, llm, work, what: str = "this run", smaller: str = "make the run smaller") -> bool:
    """Before any call: with ``--dry-run``, ``--max-calls`` or ``--batch``, the plan of ``work()`` (the command's LLM
    work, run on placeholder answers) is printed, and a run over ``--max-calls`` is refused. Returns True when the
    command is done (a dry run). ``smaller``: how the command's run is made smaller, in the refusal."""
    if llm is None:
        if args.dry_run:
            print(f"Dry run: {what} needs no LLM call.")
        return bool(args.dry_run)
    if not (args.dry_run or args.max_calls is not None or llm.batch):
        return False
    with llm.planning() as plan:
        work()
    print(plan.to_text(), flush=True)
    if args.max_calls is not None and plan.calls() > args.max_calls:
        raise UsageError(f"{what}: {plan.calls()} LLM calls needed, more than --max-calls {args.max_calls}; raise "
                         f"the budget or {smaller}")
    if llm.batch and not args.dry_run:
        print("Batch API mode: starting.", flush=True)
    return bool(args.dry_run)
