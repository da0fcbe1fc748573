"""What the LLM client does when a request fails, in one place: the classification table and the retry rules.

As openai-python's ``_base_client`` keeps ``_should_retry`` and ``_calculate_retry_timeout`` side by side, this
module holds every rule of the client's one retry loop (:meth:`.rotation.Rotation.call`; one endpoint is a rotation
of one), and the loop holds none of its own:

- **what a failure is**: :func:`classify` reads each failed attempt (an HTTP status, a timeout, no connection, a
  reply that is no chat completion) off the table below into a :class:`Rule` of one of four kinds:

  ==================================  ===========  ================  ====================================
  failure                             kind         endpoint failed   while the endpoint never answered
  ==================================  ===========  ================  ====================================
  HTTP 429                            congested    no
  HTTP 503, 504                       congested    yes
  HTTP 408; a timeout                 congested    yes
  HTTP 409                            retry        no
  HTTP 500, 502 and any other 5xx     retry        yes
  no connection (refused, reset)      retry        yes               a short probe, then fatal
  a body that is not JSON             retry        yes               fatal
  HTTP 401, 403, 404                  fatal
  HTTP 400 naming a parameter the     refused
  model refuses (:func:`refusal`)
  HTTP 200 without ``choices``        failed                         fatal
  any other HTTP status or SDK error  failed
  ==================================  ===========  ================  ====================================

  *retry*: asked again after a wait; *congested*: asked again, and the endpoint's adaptive limit
  (:mod:`.limits`) decreases; *fatal*: no request can succeed, the endpoint is unusable and the job stops
  (:class:`EndpointError`); *failed*: this request failed, no retry fixes it, the job goes on; *refused*: the model
  refuses a parameter of the request (OpenAI's error body names it: ``param``, ``code`` ``unsupported_value`` or
  ``unsupported_parameter``): the client learns what the model takes (:mod:`.profile`) and sends the request again
  without it, at once (no wait, not counted as a retry). *Endpoint failed*:
  the failure counts toward taking an endpoint out of rotation (a 429 only asks for fewer requests);
- **what the server says** (:func:`kind_of`): an HTTP error with ``x-should-retry: true`` is asked again even where
  its row fails it, one with ``x-should-retry: false`` is not asked again even where its row retries it (the header
  openai-python's ``_should_retry`` obeys); a *fatal* or *refused* row stays what it is (a wrong key does not become
  right by asking again; a refused parameter is left out, which is a new request, not a retry). The row itself
  still tells the adaptive limit (a 429 asks for fewer requests, retried or not);
- **how long to wait** (:func:`next_wait`): the endpoint's ``Retry-After`` (:func:`retry_after`), in full (stretched
  by up to 20%, never shortened, :func:`jittered`), or the exponential backoff, jittered, at most ``max_backoff``;
  bounded by the :class:`~.options.RetryPolicy` in count (``max_retries``) and in total time (``max_retry_time``: a
  ``Retry-After`` that would pass it fails the request at once);
- **when to stop the job because no server is there** (:func:`cannot_connect`): no endpoint has answered yet and
  none can be reached after a short probe (:data:`PROBE_ATTEMPTS` attempts, waits of at most :data:`PROBE_WAIT`);
  and **because the server went away** (:func:`gone_away`): endpoints that answered before accept no connection any
  more, and a request has used up its retries on that.

The same rules serve the chat requests (:meth:`.rotation.Rotation.call`) and the Batch API's own calls (uploads,
batch creations, polls, downloads: :mod:`.batch`). The HTTP transport raises the openai SDK's error class of each status
(:func:`status_error`), as the SDK's own path does, so that both read alike here.

Where openai-python's rules (``_should_retry``, ``_calculate_retry_timeout``) differ, on purpose (docs/decisions.md,
decision 3): it retries 2 times after 0.5 s doubling up to 8 s, ours 6 times in at most 600 s after 1 s doubling up to
60 s (a judging job of hours against a rate-limited endpoint would rather wait than fail items); it does not retry at
all after a ``Retry-After`` above 120 s, ours waits for it while ``max_retry_time`` allows; it retries a 401, 403 or 404
that carries ``x-should-retry: true``, ours stops the job.
"""
from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import openai

RETRY, CONGESTED, FATAL, FAILED, REFUSED = "retry", "congested", "fatal", "failed", "refused"
PROBE_ATTEMPTS = 3  # a request that cannot connect before any answer: tried this often (about 1 s), then the job stops
PROBE_WAIT = 0.5  # the longest wait between those attempts


class EndpointError(RuntimeError):
    """The endpoint cannot be used at all (a wrong key, model or address, a server that is down, HTTP 200 without
    a chat completion): the job stops at once, in one line naming the endpoint, the model and the cause, instead
    of failing every item after its retries."""


@dataclass(frozen=True)
class Rule:
    """One row of the classification table (module docstring).

    :param kind: :data:`RETRY`, :data:`CONGESTED`, :data:`FATAL`, :data:`FAILED` or :data:`REFUSED`.
    :param endpoint_failed: the endpoint itself failed (counts toward taking it out of rotation).
    :param connection: the request never reached the server, or the server went away (refused, reset, unreachable).
    :param unanswered: the kind instead while the endpoint has not answered yet (``None``: the same).
    :param cause: a fatal row's message (``{status}``, ``{message}``: the endpoint's own words, ``{error}``).
    :param error: the openai SDK's error class of a status row.
    """

    kind: str
    endpoint_failed: bool = False
    connection: bool = False
    unanswered: str | None = None
    cause: str = ""
    error: type[openai.APIStatusError] = openai.APIStatusError

    def kind_for(self, answered: bool) -> str:
        """This row's kind for an endpoint that has (or has not yet) answered a request with a chat completion."""
        return self.kind if answered or self.unanswered is None else self.unanswered

    @property
    def retried(self) -> bool:
        return self.kind in (RETRY, CONGESTED)


def _fatal(error: type[openai.APIStatusError], what: str, fix: str) -> Rule:
    return Rule(FATAL, cause=f"HTTP {{status}}, {what} ({{message}}); {fix}", error=error)


NOT_A_CHAT_ENDPOINT = "is this an OpenAI-compatible /v1 endpoint?"
# by HTTP status (the SDK's error class of each, as openai's own client maps them)
STATUS: dict[int, Rule] = {
    400: Rule(FAILED, error=openai.BadRequestError),
    401: _fatal(openai.AuthenticationError, "the API key was refused",
                "check the key ($OPENAI_API_KEY) and that it belongs to this endpoint"),
    403: _fatal(openai.PermissionDeniedError, "access is forbidden", "check that the key may use this model"),
    404: _fatal(openai.NotFoundError, "not found (no such model, or not a chat completions endpoint)",
                "check the model name ($PYTERRIER_NUGGETS_MODEL, --model) and the endpoint's address "
                "($OPENAI_BASE_URL, --base-url: most servers' addresses end in /v1)"),
    408: Rule(CONGESTED, endpoint_failed=True),  # the server timed out waiting: as a timeout of ours
    409: Rule(RETRY, error=openai.ConflictError),  # a conflict, e.g. a lock timeout: openai-python retries it
    422: Rule(FAILED, error=openai.UnprocessableEntityError),
    429: Rule(CONGESTED, error=openai.RateLimitError),  # the endpoint says: fewer requests, please
    503: Rule(CONGESTED, endpoint_failed=True, error=openai.InternalServerError),
    504: Rule(CONGESTED, endpoint_failed=True, error=openai.InternalServerError),
}
# HTTP 404 whose body says the model is unknown (OpenAI's code; the test endpoint's): the name, not the address
MODEL_NOT_FOUND = _fatal(openai.NotFoundError, "the endpoint serves no model of that name",
                         "check the model name ($PYTERRIER_NUGGETS_MODEL, --model): GET <base URL>/models lists the "
                         "names an endpoint serves")
SERVER_ERROR = Rule(RETRY, endpoint_failed=True, error=openai.InternalServerError)  # any other 5xx
OTHER_STATUS = Rule(FAILED)  # any other status (a 3xx, a 4xx not above)
# by exception kind
TIMEOUT = Rule(CONGESTED, endpoint_failed=True)
NO_CONNECTION = Rule(RETRY, endpoint_failed=True, connection=True)
MALFORMED = Rule(RETRY, endpoint_failed=True, unanswered=FATAL,
                 cause=f"HTTP 200 without a chat completion ({{error}}); {NOT_A_CHAT_ENDPOINT}")
NO_CHOICES = Rule(FAILED, unanswered=FATAL,
                  cause=f"HTTP 200 without a chat completion (no choices in the reply); {NOT_A_CHAT_ENDPOINT}")
OTHER_ERROR = Rule(FAILED)  # any other error of the SDK
REFUSED_PARAMETER = Rule(REFUSED, error=openai.BadRequestError)  # HTTP 400 naming a parameter the model refuses
#: the ``code`` of an OpenAI error body that says the model refuses a parameter (or its value)
REFUSAL_CODES = ("unsupported_value", "unsupported_parameter")


@dataclass(frozen=True)
class Refusal:
    """A parameter the model refuses, as the endpoint's 400 names it.

    :param param: the parameter (``temperature``, ``max_tokens``, ...).
    :param code: ``unsupported_value`` (it takes only another value, e.g. only the default) or
        ``unsupported_parameter`` (it takes no such parameter).
    :param message: the endpoint's own words.
    """

    param: str
    code: str
    message: str


def refusal(error: BaseException) -> Refusal | None:
    """The parameter an HTTP 400 says the model refuses (OpenAI's error body: ``param`` and ``code``
    ``unsupported_value`` / ``unsupported_parameter``), or None."""
    if getattr(error, "status_code", None) != 400:
        return None
    body = getattr(error, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return None
    param, code = body.get("param"), body.get("code")
    if isinstance(param, str) and param and code in REFUSAL_CODES:
        return Refusal(param, code, _message(error))
    return None


def status_rule(status: int) -> Rule:
    """The table's row of an HTTP status."""
    rule = STATUS.get(status)
    if rule is not None:
        return rule
    return SERVER_ERROR if status >= 500 else OTHER_STATUS


def classify(error: BaseException) -> Rule:
    """The table's row of a failed attempt: an error of the openai SDK, or a ``ValueError`` / ``TypeError`` of a
    reply body that is no JSON object (:data:`MALFORMED`)."""
    if isinstance(error, openai.APITimeoutError):
        return TIMEOUT
    if isinstance(error, openai.APIConnectionError):
        return NO_CONNECTION
    if isinstance(error, openai.APIStatusError):
        if refusal(error) is not None:
            return REFUSED_PARAMETER
        if error.status_code == 404 and _code(error) == "model_not_found":
            return MODEL_NOT_FOUND
        return status_rule(error.status_code)
    if isinstance(error, (ValueError, TypeError)):
        return MALFORMED
    return OTHER_ERROR


def status_error(status: int, message: str, response, body) -> openai.APIStatusError:
    """The openai SDK's error of an HTTP status (``response`` carries the headers: ``Retry-After``)."""
    return status_rule(status).error(message, response=response, body=body)


def fatal_cause(rule: Rule, error: BaseException) -> str:
    """What a fatal row says of ``error``: the status, the endpoint's own words, the fix."""
    return rule.cause.format(status=getattr(error, "status_code", None), message=_message(error),
                             error=f"{type(error).__name__}: {error}")


def _code(error: BaseException) -> object:
    """The ``code`` of an OpenAI error body (``model_not_found``, ...), or None."""
    body = getattr(error, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    return body.get("code") if isinstance(body, dict) else None


def _message(error: BaseException) -> str:
    """The endpoint's own words about an HTTP error, short (the SDK keeps the ``error`` object of the reply)."""
    body = getattr(error, "body", None)
    message = None
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
    return " ".join(str(message or error).split())[:200]


SHOULD_RETRY = "x-should-retry"  # a server's word on whether to ask again: "true" or "false" (openai-python obeys it)


def kind_of(rule: Rule, error: BaseException, answered: bool = True) -> str:
    """What a failed attempt comes to: its row's kind (:meth:`Rule.kind_for` an endpoint that has or has not
    ``answered``), then the server's ``x-should-retry`` header of an HTTP error: ``true`` asks a *failed* request again
    (:data:`RETRY`), ``false`` fails a *retry* or *congested* one (:data:`FAILED`); *fatal* and *refused* stay."""
    kind = rule.kind_for(answered)
    response = getattr(error, "response", None)
    told = response.headers.get(SHOULD_RETRY) if isinstance(error, openai.APIStatusError) else None
    if told == "true" and kind == FAILED:
        return RETRY
    if told == "false" and kind in (RETRY, CONGESTED):
        return FAILED
    return kind


def retried_error(rule: Rule, error: BaseException) -> BaseException:
    """The error a retried attempt reports: the SDK's own, or for a malformed body what it was."""
    if rule is MALFORMED:
        return RuntimeError(f"malformed response from the endpoint ({type(error).__name__}: {error})")
    return error


def describe_error(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    return f"{name} (HTTP {status}): {exc}" if status else f"{name}: {exc}"


def retry_after(exc: BaseException) -> float | None:
    """Seconds asked for by the ``Retry-After`` (or ``retry-after-ms``) header of a failed response."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    headers = response.headers
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def next_wait(policy, asked: float | None, attempt: int, started: float, probing: bool = False) -> float | None:
    """Seconds to wait before asking again after failed attempt number ``attempt`` (0 for the first) of a request
    first sent at ``started`` (``time.monotonic()``): the ``Retry-After`` the endpoint ``asked`` for, in full (never
    shortened: ``max_backoff`` does not cut it), else the exponential backoff, jittered, at most
    ``policy.max_backoff`` (and :data:`PROBE_WAIT` while ``probing`` for a server that has not answered yet); ``None``
    when the :class:`~.options.RetryPolicy` gives up (``max_retries`` asked again, or ``max_retry_time`` would pass:
    a ``Retry-After`` longer than the time left fails the request at once, since no answer could come in time)."""
    if asked is not None:
        wait = jittered(asked, True)
    else:
        wait = min(jittered(policy.backoff * (2 ** min(attempt, 64)), False), policy.max_backoff)
    wait = min(wait, PROBE_WAIT if probing else math.inf)
    if attempt >= policy.max_retries or time.monotonic() - started + wait > policy.max_retry_time:
        return None
    return wait


def cannot_connect(probing: bool, attempts: int, wait: float | None, unreachable: Callable[[], bool]) -> bool:
    """The fail-fast rule of a server that is not there: the request is ``probing`` (its attempt could not connect
    and no endpoint has answered yet) and the retry policy gives up (``wait`` is None), or it has made
    :data:`PROBE_ATTEMPTS` ``attempts`` and ``unreachable()`` says that every endpoint failed to connect that often
    in a row."""
    return probing and (wait is None or (attempts >= PROBE_ATTEMPTS and unreachable()))


def gone_away(connection: bool, wait: float | None, refusing: Callable[[], bool]) -> bool:
    """The rule of a server that went away for good after it answered: the request's last attempt could not connect,
    the retry policy gives up on it (``wait`` is None: it waited as long as the policy allows, e.g. for a server that
    restarts), and ``refusing()`` says that no endpoint accepts a connection now (the last attempt sent to each could
    not connect). The job stops then, naming the endpoint as unreachable, instead of failing item after item until too
    many have failed."""
    return connection and wait is None and refusing()


def gave_up(error: BaseException, attempts: int) -> str:
    """The error of a request the retry policy gave up on. No elapsed time: the same failure reads the same in every
    run and every worker (failures are compared and merged by their text)."""
    return f"{describe_error(error)} (gave up after {attempts} attempts)"


def jittered(wait: float, asked: bool) -> float:
    """A retry wait with jitter, so that rejected requests do not come back in step: a wait the server
    asked for (``Retry-After``) is stretched by up to 20% (never shortened); our own exponential backoff
    is drawn from its upper half ("equal jitter")."""
    return wait * random.uniform(1.0, 1.2) if asked else wait * random.uniform(0.5, 1.0)

