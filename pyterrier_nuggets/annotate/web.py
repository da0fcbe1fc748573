"""The web application of the annotation tool: Starlette, server-rendered Jinja2 templates (autoescaped:
documents are web text), no JavaScript. Served by uvicorn (:func:`serve`).

Every project is mounted under ``/p/NAME/`` and has its own users: a session cookie (HttpOnly,
SameSite=Strict, path ``/p/NAME/``) opens one project only, and every page checks that the user may see
the topic it names. Every form carries the session's CSRF token (the login form a cookie-bound one).

Each page has one form, posted to the page's own address and saved in one transaction by
:mod:`.protocol`. Its form id is issued by the server for this rendering (:class:`~.auth.Signer`); the same
form sent twice is saved once, a changed form with a used id is a new submission. A form the protocol refuses is
shown again with everything the user typed and the message next to the field it is about; a form sent after the
session ended is kept as the user's draft only when the browser holds the user's live browser token and the form
proves it came from their page in this browser (its draft key), keeping only that page's fields, and is shown
again (not saved, its changes listed) on its page after they sign in; deleting, merging,
freezing and unfreezing ask for confirmation. Every response, errors and 500s included, carries the security
headers (:class:`SecurityHeaders`, outside everything else).
"""
from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import logging
import os
import re
import sqlite3
from collections.abc import Awaitable, Callable
from importlib import resources

import jinja2
from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import FormData, MultiDict, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.annotate import auth, protocol
from pyterrier_nuggets.annotate.config import RELEVANCE_GRADES, SCALE_NAMES, SCALES
from pyterrier_nuggets.annotate.protocol import Edit, Forbidden, NotFound, fingerprint
from pyterrier_nuggets.annotate.store import AUDIT_PAGE, Conflict, Duplicate, Refused, Store

SESSION_COOKIE = "pn_session"
LOGIN_COOKIE = "pn_login"
BROWSER_COOKIE = "pn_browser"  # the browser token (Store.issue_browser): this browser signed in as that user
MAX_BODY = 1 << 20  # bytes of a request body: the largest form (stage 4 of a long answer) is far below
MAX_LOGIN_BODY = 16 << 10  # bytes of a sign-in form: a name (64 characters) and a password (1024)
MAX_FIELDS = 100_000  # fields of a form
RETRY_AFTER = "1"  # seconds, on a 503: a sign-in turned away costs nothing, and may be sent again at once
NOT_KEPT = frozenset({"csrf", "form_id", "draft_key", "password", "current", "new", "again"})  # never in a draft
MAX_ID = 2 ** 63 - 1  # SQLite's integers
HEADERS = {
    # no script runs on these pages, inline or not: a document that carries one cannot execute it
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
CONTENT_NAMES = {ids.SOME_NUGGETS: "conveys nuggets", ids.IRRELEVANT: "irrelevant", ids.NO_INFORMATION: "no information"}
NOTICES = {
    "saved": "Saved.",
    "duplicate": "This form had been saved already: the same form, with the same content, was sent twice; nothing "
                 "was saved twice.",
    "password": "Your password is changed; your other sessions are closed.",
    "users": "The users are saved.",
}
_NEXT = re.compile(r"/p/[A-Za-z0-9_-]{1,64}/[A-Za-z0-9/_-]{0,200}")

_package = resources.files("pyterrier_nuggets.annotate")
templates = Jinja2Templates(env=jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(_package / "templates")), autoescape=True, undefined=jinja2.StrictUndefined))
templates.env.globals.update(scale_names=SCALE_NAMES, content_names=CONTENT_NAMES, ids=ids,
                             relevance_grades=RELEVANCE_GRADES, review_statuses=protocol.REVIEW_STATUSES)


class IdConvertor(Convertor):
    """A row id or position in a URL: at most 18 digits (below SQLite's 2^63), else the route does not match
    (404), never an overflow."""

    regex = "[0-9]{1,18}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("pnid", IdConvertor())


class SecurityHeaders:
    """The security headers (``HEADERS``) on every response the application sends: pages, redirects, 404s,
    413s and the 500s of Starlette's error middleware (it is wrapped by this one, so nothing answers around it).
    A header a response sets itself is kept."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers") or [])
                headers = MutableHeaders(scope=message)
                for k, v in HEADERS.items():
                    if k not in headers:
                        headers[k] = v
            await send(message)
        await self.app(scope, receive, with_headers)


class BodyLimit:
    """Refuses a request body longer than ``max_bytes`` (``login_max_bytes`` for a sign-in form) with HTTP 413
    before anything reads it; a body without a declared length (chunked) is cut off at the limit the same way."""

    def __init__(self, app, max_bytes: int = MAX_BODY, login_max_bytes: int = MAX_LOGIN_BODY):
        self.app, self.max_bytes, self.login_max_bytes = app, max_bytes, login_max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.login_max_bytes if scope.get("path", "").endswith("/login") else self.max_bytes
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return await PlainTextResponse(f"The request is larger than {limit} bytes.", 413)(scope, receive, send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:  # Starlette's exception middleware answers 413, whoever was reading
                raise HTTPException(413, f"The request is larger than {limit} bytes.")
            return message
        return await self.app(scope, limited, send)


class TrustedProxies:
    """The client's address and scheme as a trusted reverse proxy saw them.

    From a peer in ``trusted`` (comma-separated addresses or networks, or ``*`` for any peer), the client is the
    rightmost entry of ``X-Forwarded-For`` that is not a trusted proxy: the address the last trusted proxy saw
    and appended (nginx's ``$proxy_add_x_forwarded_for``). Entries left of it are written by the client and never
    read. With ``*`` every peer is a proxy but the chain cannot be told from the client's own entries, so the
    rightmost entry is taken: the address the one proxy in front of the server saw. An entry is read as its
    address: a port (``203.0.113.9:443``, ``[2001:db8::1]:443``) and IPv6 brackets are dropped, so a proxy that
    writes the client's port does not make every connection a new client. The scheme is the last
    ``X-Forwarded-Proto`` value. From any other peer both headers are ignored. (uvicorn's own middleware takes the
    leftmost entry with ``*``, which the client writes: it is not used.)"""

    def __init__(self, app, trusted: str | list[str]):
        items = [t.strip() for t in (trusted.split(",") if isinstance(trusted, str) else trusted) if t.strip()]
        self.app, self.any = app, "*" in items
        try:
            self.networks = [ipaddress.ip_network(t, strict=False) for t in items if t != "*"]
        except ValueError as e:
            raise InvalidInput(f"--forwarded-allow-ips: {e}; give addresses or networks such as 127.0.0.1 or "
                               "10.0.0.0/8, comma-separated") from None

    def trusted(self, host: str) -> bool:
        if self.any:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    @staticmethod
    def host(entry: str) -> str:
        """The address of an ``X-Forwarded-For`` entry: without a port or IPv6 brackets (``[2001:db8::1]:443``,
        ``203.0.113.9:80``); an entry that is no address is kept as it is."""
        entry = entry.strip()
        if entry.startswith("[") and "]" in entry:
            entry = entry[1:entry.index("]")]
        elif entry.count(":") == 1:
            entry = entry.partition(":")[0]
        try:
            return str(ipaddress.ip_address(entry))
        except ValueError:
            return entry

    def client(self, hops: list[str]) -> str:
        """The client's address of a chain of ``X-Forwarded-For`` entries (left to right)."""
        hops = [self.host(h) for h in hops]
        if self.any:
            return hops[-1]
        for host in reversed(hops):
            if not self.trusted(host):
                return host
        return hops[0]  # only proxies: the first one is as far as anyone can tell

    async def __call__(self, scope, receive, send):
        peer = scope.get("client")
        if scope["type"] in ("http", "websocket") and peer and self.trusted(peer[0]):
            forwarded, proto = [], None
            for key, value in scope.get("headers") or []:
                if key == b"x-forwarded-for":
                    forwarded += [h.strip() for h in value.decode("latin-1").split(",") if h.strip()]
                elif key == b"x-forwarded-proto":
                    proto = value.decode("latin-1").split(",")[-1].strip().lower()
            scope = dict(scope)
            if forwarded:
                scope["client"] = (self.client(forwarded), 0)
            if proto in ("http", "https"):
                scope["scheme"] = proto if scope["type"] == "http" else {"http": "ws", "https": "wss"}[proto]
        return await self.app(scope, receive, send)


class FormState:
    """What the fields of a page's form show: the saved values, or the values the user sent (a refused form
    shown again, a draft kept over a sign-in), the errors by field, and a notice. ``form_id`` and
    ``draft_key`` are issued for each rendering (:meth:`App.render`), never taken from what was sent.

    A ``draft`` records, while the page renders, every field whose value it changes from the saved one
    (:attr:`changes`): the page lists them, so nothing restored passes for what is saved. Every rendering records
    the fields the page's form has (:meth:`kept`: what a draft of this page may keep)."""

    def __init__(self, sent: list[tuple[str, str]] | None = None, errors: dict[str, str] | None = None,
                 notice: str | None = None, status: int = 200, draft: bool = False):
        self.sent = None if sent is None else MultiDict([(k, v) for k, v in sent if isinstance(v, str)])
        self.errors = errors or {}
        self.notice = notice
        self.status = status
        self.draft = draft
        self.form_id = self.draft_key = ""
        self._fields: dict[str, tuple[str, set[str], set[str]]] = {}  # name -> (label, saved values, draft values)
        self._values: set[str] = set()  # the fields of the page that show one value (text, hidden, select)
        self._options: set[tuple[str, str]] = set()  # the (field, value) of its checkboxes and radio buttons

    def _note(self, name: str, label: str | None, value: str, saved: bool, sent: bool) -> None:
        if not self.draft or name.startswith("base-"):
            return
        shown, before, after = self._fields.setdefault(name, (label or name, set(), set()))
        if saved:
            before.add(value)
        if sent:
            after.add(value)

    @property
    def changes(self) -> list[tuple[str, str, str]]:
        """``(field, saved, in the draft)`` of every field the draft changes, in the page's order."""
        return [(label, ", ".join(sorted(before)) or "(none)", ", ".join(sorted(after)) or "(none)")
                for label, before, after in self._fields.values() if before != after]

    @property
    def message(self) -> str | None:
        return next(iter(self.errors.values()), None)

    @property
    def message_field(self) -> str | None:
        return next(iter(self.errors), None)

    def kept(self, max_chars: int) -> list[tuple[str, str]] | None:
        """What a draft of the sent form keeps, once the page has been rendered with it: the fields the page's
        form has (the last value of a text field, the values its checkboxes offer), in the order sent; None when a
        value is longer than ``max_chars`` (the longest a field of the page takes: not typed in this page)."""
        out, taken = [], set()
        for name, value in (self.sent or MultiDict()).multi_items():
            if name in self._values and name not in taken:
                value = self.sent.getlist(name)[-1]
                taken.add(name)
            elif (name, value) not in self._options:
                continue
            if len(value) > max_chars:
                return None
            out.append((name, value))
        return out

    def value(self, name: str, saved, label: str | None = None) -> str:
        self._values.add(name)
        saved = "" if saved is None else str(saved)
        if self.sent is not None and name in self.sent:
            sent = self.sent.getlist(name)[-1]
            self._note(name, label, saved, True, False)
            self._note(name, label, sent, False, True)
            return sent
        return saved

    def checked(self, name: str, value, saved: bool, label: str | None = None, text: str | None = None) -> bool:
        """Whether a checkbox or radio button is checked; ``label`` names the field and ``text`` the value in
        the list of a draft's changes."""
        self._options.add((name, str(value)))
        if self.sent is None:
            return bool(saved)
        sent = str(value) in self.sent.getlist(name)
        self._note(name, label, text or str(value), bool(saved), sent)
        return sent

    def base(self, name: str, version: int, shown: str) -> str:
        """The hidden ``base-NAME`` field: what the item was when the form was first shown."""
        return self.value(f"base-{name}", f"{version}:{shown}")

    def error(self, name: str) -> str:
        return self.errors.get(name, "")


class App:
    """The projects served, and the request handlers.

    ``passwords``: how passwords are hashed and checked (default Argon2id RFC 9106; test suites pass cheap
    parameters here, explicitly); ``throttle`` and ``gate``: the limits on sign-in attempts and on concurrent
    password hashes (:mod:`.auth`)."""

    def __init__(self, directories: list[str], secure_cookies: bool = False, passwords: auth.Passwords | None = None,
                 throttle: auth.LoginThrottle | None = None, gate: auth.HashGate | None = None):
        self.passwords = passwords or auth.Passwords()
        self.projects: dict[str, Store] = {}
        self.signers: dict[str, auth.Signer] = {}
        for d in directories:
            store = Store(d, self.passwords, check=True)
            if store.name in self.projects:
                raise InvalidInput(f"two projects are named {store.name!r}: {self.projects[store.name].directory} and {d}")
            self.projects[store.name] = store
            self.signers[store.name] = auth.Signer(store.secret())
            store.remove_stale_files()  # temporary files of a process killed while replacing a file
            store.write_nuggets_json()  # a file left behind by a crash between a commit and its rewrite
        self.secure = secure_cookies
        self.throttle = throttle or auth.LoginThrottle()
        self.gate = gate or auth.HashGate()

    # ------------------------------------------------------------------------------------- plumbing

    def store(self, request: Request) -> Store:
        store = self.projects.get(request.path_params["project"])
        if store is None:
            raise NotFound("no such project")
        return store

    def render(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        """A page. Its form gets a new form id and draft key for the user; a draft's page is rendered twice, the
        first time to find the fields the draft changes, which the second shows at the top."""
        store = self.projects.get(request.path_params.get("project", ""))
        base = f"/p/{store.name}" if store else ""
        state = context.setdefault("f", FormState())
        user = context.pop("user", None)
        if store is not None and user is not None:
            signer = self.signers[store.name]
            state.form_id = signer.form_id(user["id"])
            state.draft_key = f"{user['id']}.{signer.draft_key(request.cookies.get(BROWSER_COOKIE), user['id'])}"
        context = {"base": base, "project": store.name if store else None, "user": user, **context}
        if state.draft:
            templates.get_template(name).render({"request": request, **context})
        return templates.TemplateResponse(request, name, context, status_code=status)

    def error(self, request: Request, status: int, message: str, user: dict | None = None, back: str | None = None):
        return self.render(request, "error.html", status, user=user, message=message, back=back)

    async def server_error(self, request: Request, exc: Exception) -> Response:
        """A 500 (a bug): the error page, with the security headers like every response; the traceback goes to
        the server's log, never to the page."""
        try:
            return self.error(request, 500, "The server failed on this request (a bug in the tool). It may not have "
                              "been saved: open the page again to see what is saved, and tell the project manager "
                              "(the server's log has the details).")
        except Exception:  # the error page itself failed: a plain one
            logging.getLogger(__name__).exception("the error page failed")
            return PlainTextResponse("Internal server error (a bug in the tool): tell the project manager.", 500)

    def cookie(self, response: Response, store: Store, name: str, value: str, max_age: int | None) -> None:
        """Set a cookie of the project: HttpOnly, SameSite=Strict, scoped to ``/p/NAME/``, Secure with
        ``--secure-cookies``."""
        response.set_cookie(name, value, max_age=max_age, path=f"/p/{store.name}/", httponly=True, samesite="strict",
                            secure=self.secure)

    def end_cookie(self, response: Response, store: Store, name: str) -> None:
        """Delete a cookie of the project, with the same flags as it was set with (:meth:`cookie`)."""
        response.delete_cookie(name, path=f"/p/{store.name}/", httponly=True, samesite="strict", secure=self.secure)

    def browser_cookie(self, request: Request, response: Response, store: Store, user: dict) -> None:
        """A new browser token: this browser signed in as ``user`` (:meth:`.Store.issue_browser`); the token it
        held before ends."""
        store.end_browser(request.cookies.get(BROWSER_COOKIE))
        self.cookie(response, store, BROWSER_COOKIE, store.issue_browser(user), auth.BROWSER_SECONDS)

    def form_key(self, store: Store, user: dict, form: FormData) -> str:
        """The key a saved form is recorded under (``store.claim_form``): its form id, which this server must
        have issued to this user, and a digest of everything it sends. The same form sent twice has the same
        key (saved once); a changed form with the same id (browser Back, changed, sent again) has another key
        and is saved as a new submission, its items checked for conflicts like any other."""
        form_id = form.get("form_id")
        if not self.signers[store.name].valid_form_id(form_id, user["id"]):
            raise Refused("the form has no form id issued to you by this server (a page of an older version, "
                          "or not from this tool): check what you typed below and save again")
        fields = sorted((str(k), v) for k, v in form.multi_items() if isinstance(v, str) and k not in NOT_KEPT)
        digest = hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
        return f"{form_id}.{digest[:16]}"

    def page(self, view: Callable[..., Awaitable[Response]], save: Callable[..., Awaitable[Response]] | None = None,
             drafts: bool = True, page_of: Callable[[str], str] | None = None):
        """A signed-in page: GET shows ``view(request, store, user, state)``; POST checks the CSRF token and
        runs ``save(request, store, user, form)``. A refused form is shown again by ``view`` with what was sent
        and the message at its field; a form sent twice is recognised; a form sent after the session ended is
        kept as a draft over the sign-in (unless ``drafts`` is False: the password form is never kept), and the
        sign-in returns to the page (``page_of`` a form-only address: the page its form is on)."""

        @functools.wraps(view)
        async def endpoint(request: Request) -> Response:
            try:
                store = self.store(request)
            except NotFound:
                return self.error(request, 404, "No such project.")
            user = store.session(request.cookies.get(SESSION_COOKIE))
            if user is None:
                if request.method == "POST":
                    return await self.session_ended(request, store, view if drafts else None,
                                                    (page_of or str)(request.url.path))
                return RedirectResponse(f"/p/{store.name}/login?next={request.url.path}", 303)
            back = request.url.path
            try:
                if request.method == "GET":
                    draft = store.take_draft(user, request.url.path) if drafts else None
                    if draft is not None:
                        state = FormState(draft, notice="Your session had ended when you sent this form: here is "
                                          "what you typed, not saved yet. Check it and save.", draft=True)
                    else:
                        state = FormState(notice=NOTICES.get(request.query_params.get("notice", "")))
                    return await view(request, store, user, state)
                form = await request.form(max_fields=MAX_FIELDS)
                if not auth.same_token(form.get("csrf"), user["csrf"]):
                    return self.error(request, 403, "The form's security token is missing or wrong (CSRF): reload the "
                                      "page and submit it again.", user, back)
                try:
                    return await save(request, store, user, form)
                except Refused as e:
                    state = FormState(form.multi_items(), {e.field or "": f"Not saved: {e}."}, status=400)
                    return await view(request, store, user, state)
                except Duplicate:
                    return RedirectResponse(f"{request.url.path}?notice=duplicate", 303)
            except Forbidden as e:
                return self.error(request, 403, f"Not allowed: {e}.", user)
            except NotFound as e:
                return self.error(request, 404, f"Not found: {e}.", user)
            except Conflict as e:
                return self.render(request, "conflict.html", 409, user=user, conflict=e, back=back)
            except Refused as e:
                return self.error(request, 400, f"{e}.", user, back)
            except ValueError as e:
                return self.error(request, 400, f"Bad request: {e}.", user, back)
            except auth.Busy:
                return self.busy(request, user)
            except auth.Gone:
                return _gone_response()
            except sqlite3.DatabaseError as e:  # where the database is, and why, is for the manager's eyes only
                logging.getLogger(__name__).error("%s: the project database could not be read or written: %s",
                                                  store.path, e)
                return self.error(request, 500, "The project's database could not be read or written: tell the "
                                  "project manager (the server's log has the details).", user)
        return endpoint

    def busy(self, request: Request, user: dict | None = None) -> Response:
        response = self.error(request, 503, "The server is busy checking other passwords: nothing was checked or "
                              "saved. Send the form again in a moment.", user)
        response.headers["Retry-After"] = RETRY_AFTER
        return response

    async def session_ended(self, request: Request, store: Store, view: Callable[..., Awaitable[Response]] | None,
                            page: str) -> Response:
        """A form sent without a valid session: the login page. The form is kept as its user's draft of ``page``
        (``view`` shows it; None: this page keeps no draft) only when the browser holds a live browser token, which
        is checked *before* the form is read (a form from anyone else is never parsed), and the form proves it came
        from that user's page in this browser (:meth:`draft_of`). Password fields are never kept."""
        holder = store.browser_user(request.cookies.get(BROWSER_COOKIE)) if view is not None else None
        kept = None
        if holder is not None:
            kept = await self.draft_of(request, store, view, holder, await request.form(max_fields=MAX_FIELDS))
        if kept:
            store.keep_draft(holder["id"], page, kept)
            message = ("Your session has ended: sign in again. What you typed is kept and shown again on its page "
                       "after you sign in (not saved yet).")
        else:
            message = "Your session has ended: sign in again. The form that was sent is not kept."
        return self.login_page(request, store, 401, message, next_path=_safe_next(store, page))

    async def draft_of(self, request: Request, store: Store, view: Callable[..., Awaitable[Response]], holder: dict,
                       form: FormData) -> list[tuple[str, str]] | None:
        """What of ``form`` is kept as the draft of ``holder`` (the user of the browser's live token), or None. Its
        draft key must be the one this browser's token gives for that user: the form came from the tool's own page
        in this browser (a page of another site posting here cannot know the key; the token is an HttpOnly
        cookie). The page must be one the user may open (it is rendered for them with the form, as after the
        sign-in), and only the fields of its form are kept, none longer than a field takes
        (:meth:`FormState.kept`): a draft is never larger than the page's real form."""
        user_id, _, mac = str(form.get("draft_key") or "").partition(".")
        browser = request.cookies.get(BROWSER_COOKIE)
        if user_id != str(holder["id"]) or not auth.same_token(mac, self.signers[store.name].draft_key(browser,
                                                                                                        holder["id"])):
            return None
        state = FormState([(k, v) for k, v in form.multi_items() if isinstance(v, str) and k not in NOT_KEPT],
                          draft=True)
        try:
            response = await view(request, store, {**holder, "csrf": ""}, state)
        except (Forbidden, NotFound, ValueError):  # not a page this user may open now (Refused is a ValueError)
            return None
        return state.kept(protocol.MAX_TEXT) if response.status_code == 200 else None

    # -------------------------------------------------------------------------------- login, logout

    async def index(self, request: Request) -> Response:
        return self.render(request, "index.html")

    async def login_form(self, request: Request) -> Response:
        try:
            store = self.store(request)
        except NotFound:
            return self.error(request, 404, "No such project.")
        return self.login_page(request, store, 200, None, _safe_next(store, request.query_params.get("next")))

    def admit(self, request: Request, store: Store, name: str) -> auth.Attempt:
        """Charge and rank a sign-in as ``name`` (auth.LoginThrottle): a browser whose live token is that enabled
        user's goes first, a few times in a window, and is exempt from the address's and the name's budgets."""
        token = request.cookies.get(BROWSER_COOKIE)
        holder = store.browser_user(token)
        known = token if holder is not None and holder["name"] == name else None
        return self.throttle.admit(store.name, _address(request), name, known)

    async def login(self, request: Request) -> Response:
        try:
            store = self.store(request)
        except NotFound:
            return self.error(request, 404, "No such project.")
        form = await request.form()
        next_path = _safe_next(store, form.get("next"))
        if not auth.same_token(form.get("csrf"), request.cookies.get(LOGIN_COOKIE)):
            return self.error(request, 403, "The login form's security token is missing or wrong (CSRF): reload the "
                              "login page.")
        name, password = str(form.get("name", "")), str(form.get("password", ""))
        failed = "Unknown user, wrong password, or a disabled account."
        if len(name) > auth.MAX_NAME or len(password) > auth.MAX_PASSWORD:  # no such user or password can exist
            return self.login_page(request, store, 401, failed, next_path)
        attempt = self.admit(request, store, name)  # charged before the (slow) check
        if attempt.wait > 0:
            return self.login_page(request, store, 429, f"Too many failed sign-ins for this name from here: try "
                                   f"again in {int(attempt.wait // 60) + 1} minutes, or ask the project manager to "
                                   "set a new password.", next_path)
        try:
            user = await self.gate.run(store.authenticate, name, password, rank=attempt.rank, gone=_client_gone(request))
        except auth.Busy:  # never checked: it costs nothing, and may be sent again at once
            self.throttle.turned_away(attempt)
            response = self.login_page(request, store, 503, "The server is busy checking other sign-ins: yours was "
                                       "not checked and counts for nothing. Sign in again in a moment.", next_path)
            response.headers["Retry-After"] = RETRY_AFTER
            return response
        except auth.Gone:
            self.throttle.turned_away(attempt)
            return _gone_response()
        if user is None:
            return self.login_page(request, store, 401, failed, next_path)
        self.throttle.succeeded(attempt)
        response = RedirectResponse(next_path or f"/p/{store.name}/", 303)
        self.cookie(response, store, SESSION_COOKIE, store.create_session(user), auth.SESSION_SECONDS)
        self.browser_cookie(request, response, store, user)
        self.end_cookie(response, store, LOGIN_COOKIE)
        return response

    def login_page(self, request: Request, store: Store, status: int, error: str | None,
                   next_path: str | None = None) -> Response:
        """The login page, with ``error`` if any and a fresh login-form token (in the form and a cookie)."""
        token = auth.new_token()
        response = self.render(request, "login.html", status, login_csrf=token, error=error, next_path=next_path or "")
        self.cookie(response, store, LOGIN_COOKIE, token, 3600)
        return response

    async def logout(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        """End the session and the browser's token: the browser keeps nothing of the user (its sign-ins no longer
        go first, forms of its pages are no longer kept as drafts), as on a shared computer."""
        store.end_session(request.cookies.get(SESSION_COOKIE, ""), user["name"])
        store.end_browser(request.cookies.get(BROWSER_COOKIE))
        response = RedirectResponse(f"/p/{store.name}/login", 303)
        self.end_cookie(response, store, SESSION_COOKIE)
        self.end_cookie(response, store, BROWSER_COOKIE)
        return response

    async def account(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        return self.render(request, "account.html", state.status, user=user, f=state)

    async def change_password(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        """Change one's own password: the current one is checked like a sign-in (counted, through the gate). Every
        other session and every browser token of the user end; this browser gets a new token."""
        current, new, again = (str(form.get(k, "")) for k in ("current", "new", "again"))
        if new != again:
            raise Refused("the two new passwords differ", "again")
        try:
            auth.check_password_strength(new)
        except ValueError as e:
            raise Refused(str(e), "new") from None
        attempt = self.admit(request, store, user["name"])
        if attempt.wait > 0:
            raise Refused(f"too many wrong passwords: try again in {int(attempt.wait // 60) + 1} minutes", "current")
        try:
            ok = len(current) <= auth.MAX_PASSWORD and await self.gate.run(
                store.authenticate, user["name"], current, rank=attempt.rank, gone=_client_gone(request))
        except (auth.Busy, auth.Gone):
            self.throttle.turned_away(attempt)
            raise
        if not ok:
            raise Refused("the current password is wrong", "current")
        self.throttle.succeeded(attempt)
        await self.gate.run(store.set_password, user["name"], new, user["name"], rank=(0, 0))
        response = RedirectResponse(f"/p/{store.name}/?notice=password", 303)
        self.cookie(response, store, SESSION_COOKIE, store.create_session(user), auth.SESSION_SECONDS)
        self.browser_cookie(request, response, store, user)
        return response

    # ------------------------------------------------------------------------------------- dashboard

    async def dashboard(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        return self.render(request, "dashboard.html", user=user, topics=protocol.overview(store, user), meta=store.meta,
                           f=state)

    async def users(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        _manager(user)
        with store.read() as c:
            topics = [r["qid"] for r in c.execute("SELECT qid FROM topics ORDER BY position")]
        people = [{**u, "fingerprint": fingerprint(frozenset(u["topics"]), u["disabled"])} for u in store.users()]
        return self.render(request, "users.html", state.status, user=user, users=people, topics=topics, f=state)

    async def save_users(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        _manager(user)
        changes = []
        for u in store.users():
            key = f"user-{u['id']}"
            if f"base-{key}" not in form:
                continue  # added after the page was loaded
            version, shown = _base(form, key)
            changes.append(Edit(key, u["name"], version, shown, (frozenset(map(str, form.getlist(f"topics-{u['id']}"))),
                                                                  bool(form.get(f"disabled-{u['id']}")))))
        protocol.save_users(store, user, self.form_key(store, user, form), changes)
        return RedirectResponse(f"/p/{store.name}/users?notice=users", 303)

    async def audit(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        _manager(user)
        before = request.query_params.get("before")
        before_id = _int(before) if before else None
        rows = store.audit_rows(before_id)
        older = rows[-1]["id"] if len(rows) == AUDIT_PAGE and rows[-1]["id"] > 1 else None
        return self.render(request, "audit.html", user=user, rows=rows, older=older, newest=before_id is not None,
                           total=store.audit_count(), f=state)

    async def missing(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        return self.render(request, "missing.html", state.status, user=user, flags=protocol.missing_view(store, user),
                           f=state)

    async def save_missing(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        reviews = []
        for key in form.getlist("flag"):
            rid, j = (_int(x) for x in str(key).split("-", 1))
            version, shown = _base(form, f"missing-{key}")
            reviews.append(Edit(f"missing-{key}", (rid, j), version, shown,
                                (str(form.get(f"question-{key}", "")), str(form.get(f"status-{key}", "")),
                                 str(form.get(f"note-{key}", "")))))
        protocol.save_missing_reviews(store, user, self.form_key(store, user, form), reviews)
        return RedirectResponse(f"/p/{store.name}/missing?notice=saved", 303)

    # ------------------------------------------------------------------------------ stages 1 and 3

    async def next_doc(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        t, stage = request.path_params["t"], _stage(request, (1, 3))
        d = protocol.next_document(store, user, t, stage)
        if d is None:
            return self.render(request, "stage_done.html", user=user, stage=stage, t=t)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s{stage}/d/{d}", 303)

    async def document(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        t, stage = request.path_params["t"], _stage(request, (1, 3))
        view = protocol.document_view(store, user, t, stage, request.path_params["d"])
        scale = list(SCALES[store.meta["support_scale"]])
        return self.render(request, f"stage{stage}.html", state.status, user=user, t=t, v=view, scale=scale,
                           show_prefill=store.meta["show_support_prefill"], f=state)

    async def save_document(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        """The document page's one form (stages 1 and 3), saved in one transaction."""
        t, stage, d = request.path_params["t"], _stage(request, (1, 3)), request.path_params["d"]
        doc = protocol.DocumentForm(form_id=self.form_key(store, user, form), done=form.get("action") == "done",
                                    seen=_ints(form.getlist("seen")), links=_ints(form.getlist("link")))
        for key, value in form.multi_items():
            key, value = str(key), str(value)
            if key.startswith("qtext-"):
                doc.question_edits.append(_edit(form, key, _int(key[6:]), (value,)))
            elif key.startswith("atext-"):
                doc.answer_edits.append(_edit(form, key, _int(key[6:]), (value,)))
            elif key.startswith("adelete-"):
                doc.answer_deletes.append(_delete(form, key))
            elif key.startswith("answer-") and value.strip():
                doc.new_answers.append((key, _int(key[7:]), value))
        for item in form.getlist("labels"):
            rid, j, k = (_int(x) for x in str(item).split("-"))
            label = form.get(f"label-{item}")
            doc.labels.append(_edit(form, f"label-{item}", (rid, j, k), (str(label) if label else None,)))
        if stage == 1:
            question, answer = str(form.get("question", "")), str(form.get("qanswer", ""))
            if question.strip() or answer.strip():
                doc.new_nugget = (question, answer)
            if "base-relevance" in form:
                grade = form.get("relevance")
                doc.relevance = _edit(form, "relevance", d, (_int(grade) if grade not in (None, "") else None,))
        protocol.save_document(store, user, t, stage, d, doc)
        if doc.done:
            return RedirectResponse(f"/p/{store.name}/t/{t}/s{stage}", 303)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s{stage}/d/{d}?notice=saved", 303)

    # ------------------------------------------------------------------------------------- stage 2

    async def revision(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        t = request.path_params["t"]
        return self.render(request, "stage2.html", state.status, user=user, t=t,
                           v=protocol.revision_view(store, user, t), f=state)

    async def save_revision(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        t = request.path_params["t"]
        if form.get("review"):  # "go back and change" on the confirmation page: the form again, as it was sent
            return await self.revision(request, store, user, FormState(form.multi_items()))
        rev = protocol.RevisionForm(form_id=self.form_key(store, user, form), freeze=form.get("action") == "freeze",
                                    restores=[(f"restore-{n}", n) for n in _ints(form.getlist("restore"))])
        for key in form.getlist("nugget"):
            n = _int(key)
            version, shown = _base(form, f"n-{n}")
            importance = form.get(f"importance-{n}")
            action, into = str(form.get(f"action-{n}") or "keep"), None
            if action.startswith("merge-"):  # "merge-ID": merge into nugget ID
                action, into = "merge", _int(action[len("merge-"):])
            rev.nuggets.append(protocol.NuggetChange(
                f"n-{n}", n, version, shown, str(form.get(f"text-{n}", "")), str(importance) if importance else None,
                action, into))
        for key, value in form.multi_items():
            key = str(key)
            if key.startswith("atext-"):
                rev.answer_edits.append(_edit(form, key, _int(key[6:]), (str(value),)))
            elif key.startswith("adelete-"):
                rev.answer_deletes.append(_delete(form, key))
        if not form.get("confirmed"):
            weighty = protocol.save_revision(store, user, t, rev, dry_run=True)
            if weighty:
                return self.confirm(request, store, user, form, weighty, f"/p/{store.name}/t/{t}/s2")
        protocol.save_revision(store, user, t, rev)
        if rev.freeze:
            return RedirectResponse(f"/p/{store.name}/?notice=saved", 303)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s2?notice=saved", 303)

    async def unfreeze(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        t = request.path_params["t"]
        if form.get("review"):
            return RedirectResponse(f"/p/{store.name}/t/{t}/s2", 303)
        form_id = self.form_key(store, user, form)
        if not form.get("confirmed"):
            weighty = protocol.unfreeze(store, user, t, form_id, dry_run=True)
            return self.confirm(request, store, user, form, weighty, f"/p/{store.name}/t/{t}/s2/unfreeze")
        protocol.unfreeze(store, user, t, form_id)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s2?notice=saved", 303)

    def confirm(self, request: Request, store: Store, user: dict, form: FormData, weighty: list[str],
                action: str) -> Response:
        """The confirmation page of a form that deletes, merges, freezes or unfreezes: what it will do, and the
        form again (hidden) to confirm or to go back and change."""
        kept = [(k, v) for k, v in form.multi_items() if isinstance(v, str) and k not in ("csrf", "confirmed", "review")]
        return self.render(request, "confirm.html", user=user, weighty=weighty, kept=kept, action=action)

    # ------------------------------------------------------------------------------------- stage 4

    async def next_report(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        t = request.path_params["t"]
        r = protocol.next_report(store, user, t)
        if r is None:
            return self.render(request, "stage_done.html", user=user, stage=4, t=t)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s4/r/{r}", 303)

    async def report(self, request: Request, store: Store, user: dict, state: FormState) -> Response:
        t = request.path_params["t"]
        view = protocol.report_view(store, user, t, request.path_params["r"])
        return self.render(request, "stage4.html", state.status, user=user, t=t, v=view, contents=protocol.CONTENTS,
                           f=state)

    async def align(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        t, r = request.path_params["t"], request.path_params["r"]
        alignment = protocol.AlignmentForm(self.form_key(store, user, form), done=form.get("action") == "done")
        for j in _ints(form.getlist("sentence")):
            content = form.get(f"content-{j}")
            version, shown = _base(form, f"sentence-{j}")
            alignment.rows[j] = (str(content) if content else None, _ints(form.getlist(f"nugget-{j}")),
                                 str(form.get(f"missing-{j}", "")), version, shown)
        protocol.save_alignment(store, user, t, r, alignment)
        if alignment.done:
            return RedirectResponse(f"/p/{store.name}/t/{t}/s4", 303)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s4/r/{r}?notice=saved", 303)

    # ---------------------------------------------------------------------------------------- routes

    def routes(self) -> list:
        p, page = "/p/{project}", self.page
        both = ["GET", "POST"]
        return [
            Route("/", self.index),
            Mount("/static", StaticFiles(directory=str(_package / "static")), name="static"),
            Route(p + "/login", self.login_form, methods=["GET"]),
            Route(p + "/login", self.login, methods=["POST"]),
            Route(p + "/logout", page(_no_page, self.logout, drafts=False,
                                            page_of=lambda path: path.removesuffix("logout")),
                  methods=["POST"]),
            Route(p + "/", page(self.dashboard)),
            Route(p + "/account", page(self.account, self.change_password, drafts=False), methods=both),
            Route(p + "/users", page(self.users, self.save_users), methods=both),
            Route(p + "/audit", page(self.audit)),
            Route(p + "/missing", page(self.missing, self.save_missing), methods=both),
            Route(p + "/t/{t:pnid}/s2", page(self.revision, self.save_revision), methods=both),
            Route(p + "/t/{t:pnid}/s2/unfreeze", page(self.revision, self.unfreeze, drafts=False,
                                                      page_of=lambda path: path.removesuffix("/unfreeze")),
                  methods=["POST"]),
            Route(p + "/t/{t:pnid}/s4", page(self.next_report)),
            Route(p + "/t/{t:pnid}/s4/r/{r:pnid}", page(self.report, self.align), methods=both),
            Route(p + "/t/{t:pnid}/s{stage:pnid}", page(self.next_doc)),
            Route(p + "/t/{t:pnid}/s{stage:pnid}/d/{d:pnid}", page(self.document, self.save_document), methods=both),
        ]


async def _no_page(request, store, user, state):
    raise NotFound("this address takes a form only")


def _manager(user: dict) -> None:
    if user["role"] != "manager":
        raise Forbidden("this page is the manager's")


def _stage(request: Request, allowed: tuple[int, ...]) -> int:
    stage = request.path_params["stage"]
    if stage not in allowed:
        raise NotFound(f"stage {stage} has no such page")
    return stage


def _int(value) -> int:
    """A number of a form or query: an id, a version, a grade (0 to 2^63 - 1), else a ValueError (HTTP 400)."""
    text = str(value)
    if not text.isascii() or not text.isdigit() or int(text) > MAX_ID:
        raise InvalidInput(f"expected a number from 0 to 2^63 - 1, got {text[:24]!r}")
    return int(text)


def _ints(values) -> set[int]:
    return {_int(v) for v in values}


def _base(form: FormData, name: str) -> tuple[int, str]:
    """The version and fingerprint a form's item was shown with (its hidden ``base-NAME`` field)."""
    value = str(form.get(f"base-{name}", ""))
    version, _, shown = value.partition(":")
    if not shown:
        raise InvalidInput(f"the form lacks base-{name}: reload the page")
    return _int(version), shown


def _edit(form: FormData, name: str, item, values: tuple) -> Edit:
    version, shown = _base(form, name)
    return Edit(name, item, version, shown, values)


def _delete(form: FormData, name: str) -> tuple[str, int, int]:
    """An answer's "delete" box (``adelete-ID``): the field, the answer, and its version the page showed."""
    answer = _int(name[len("adelete-"):])
    return name, answer, _base(form, f"atext-{answer}")[0]


def _client_gone(request: Request) -> Callable[[], Awaitable[None]]:
    """What ends when the request's client closes its connection (its body has been read: the server's next
    message is the disconnect), for a sign-in waiting for its check (auth.HashGate)."""
    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
    return gone


def _gone_response() -> Response:
    return PlainTextResponse("The connection was closed before the sign-in was checked: nothing was checked.", 400)


def _safe_next(store: Store, value) -> str | None:
    """A page of this project to go to after signing in, or None (never another site or project)."""
    if not isinstance(value, str) or not _NEXT.fullmatch(value) or "//" in value:
        return None
    return value if value.startswith(f"/p/{store.name}/") and not value.endswith("/login") else None


def _address(request: Request) -> str:
    """The client's address as the sign-in limits count it (auth.client_key): the connection's peer, or the
    address the trusted proxy saw (:class:`TrustedProxies`)."""
    return auth.client_key(request.client.host) if request.client else ""


def make_app(directories: list[str], secure_cookies: bool = False, forwarded_allow_ips: str | list[str] | None = None,
             passwords: auth.Passwords | None = None, throttle: auth.LoginThrottle | None = None,
             gate: auth.HashGate | None = None, max_body: int = MAX_BODY):
    """The ASGI application serving the projects in ``directories``.

    ``forwarded_allow_ips``: the addresses of trusted reverse proxies (comma-separated addresses or networks,
    or ``*``); requests from them are taken to come from the address the proxy saw, the rightmost untrusted
    entry of their ``X-Forwarded-For`` (:class:`TrustedProxies`), and their ``X-Forwarded-Proto`` scheme. A
    trusted network must hold no client: a client that reaches the server from it writes its own address.
    Without it, those headers are ignored: a client cannot claim another address to dodge the sign-in
    throttle. ``passwords``, ``throttle``, ``gate``: see :class:`App`. The :class:`App` is
    ``app.state.annotate``."""
    annotate_app = App(directories, secure_cookies, passwords, throttle, gate)
    starlette = Starlette(routes=annotate_app.routes(), middleware=[Middleware(BodyLimit, max_bytes=max_body)],
                          exception_handlers={500: annotate_app.server_error})
    starlette.state.annotate = annotate_app
    app = SecurityHeaders(starlette)  # outside Starlette's error middleware: its 500s get the headers too
    if forwarded_allow_ips:
        app = TrustedProxies(app, forwarded_allow_ips)
    app.state = starlette.state
    return app


def server_config(app, host: str, port: int, log_level: str = "info"):
    """uvicorn's configuration of the server: uvicorn's own proxy-header handling is off (its default trusts
    127.0.0.1); trusted proxies are :func:`make_app`'s ``forwarded_allow_ips`` only."""
    import uvicorn
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, proxy_headers=False, server_header=False)


def serve(directories: list[str], host: str = "127.0.0.1", port: int = 8000, secure_cookies: bool = False,
          forwarded_allow_ips: str | None = None) -> None:
    """Serve the projects with uvicorn (one process; SQLite in WAL mode serialises the writes), on a socket bound here:
    a port in use is one line naming it (:class:`~pyterrier_nuggets.ports.PortInUse`), and ``port`` 0 takes any free
    one; the address is printed first."""
    import uvicorn

    from pyterrier_nuggets.ports import listening_socket
    for d in directories:
        if not os.path.isdir(d):
            raise FileNotFoundError(f"{d} is not a directory")
    sock = listening_socket(host, port, "annotate serve")
    try:
        app = make_app(directories, secure_cookies, forwarded_allow_ips)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        print(f"annotate serve: http://{shown}:{bound}/ (each project at /p/NAME/; Ctrl-C stops it)", flush=True)
        try:
            uvicorn.Server(server_config(app, host, bound)).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn hands Ctrl-C on once it has shut down: the way to stop it, not a failure
            print("annotate serve stopped", flush=True)
    finally:
        sock.close()
