"""The web application of the annotation tool: Starlette, server-rendered Jinja2 templates (autoescaped:
documents are web text), no JavaScript. Served by uvicorn (:func:`serve`).

Every project is mounted under ``/p/NAME/`` and has its own users: a session cookie (HttpOnly,
SameSite=Strict, path ``/p/NAME/``) opens one project only, and every page checks that the user may see
the topic it names. Every form carries the session's CSRF token (the login form a cookie-bound one).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from importlib import resources

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.annotate import auth, protocol
from pyterrier_nuggets.annotate.config import SCALE_NAMES, SCALES
from pyterrier_nuggets.annotate.protocol import Forbidden, NotFound
from pyterrier_nuggets.annotate.store import Conflict, Refused, Store

SESSION_COOKIE = "pn_session"
LOGIN_COOKIE = "pn_login"
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

_package = resources.files("pyterrier_nuggets.annotate")
templates = Jinja2Templates(env=jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(_package / "templates")), autoescape=True, undefined=jinja2.StrictUndefined))
templates.env.globals.update(scale_names=SCALE_NAMES, content_names=CONTENT_NAMES, ids=ids)


class SecurityHeaders(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        response = await call_next(request)
        for k, v in HEADERS.items():
            response.headers.setdefault(k, v)
        return response


class App:
    """The projects served, and the request handlers."""

    def __init__(self, directories: list[str], secure_cookies: bool = False):
        self.projects: dict[str, Store] = {}
        for d in directories:
            store = Store(d)
            if store.name in self.projects:
                raise InvalidInput(f"two projects are named {store.name!r}: {self.projects[store.name].directory} and {d}")
            self.projects[store.name] = store
        self.secure = secure_cookies
        self.throttle = auth.LoginThrottle()

    # ------------------------------------------------------------------------------------- plumbing

    def store(self, request: Request) -> Store:
        store = self.projects.get(request.path_params["project"])
        if store is None:
            raise NotFound("no such project")
        return store

    def render(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        store = self.projects.get(request.path_params.get("project", ""))
        base = f"/p/{store.name}" if store else ""
        return templates.TemplateResponse(request, name, {"base": base, "project": store.name if store else None,
                                                          "user": context.pop("user", None), **context},
                                          status_code=status)

    def cookie(self, response: Response, store: Store, name: str, value: str, max_age: int | None) -> None:
        response.set_cookie(name, value, max_age=max_age, path=f"/p/{store.name}/", httponly=True, samesite="strict",
                            secure=self.secure)

    def page(self, handler: Callable[..., Awaitable[Response]], post: bool = False):
        """A signed-in page: the project, its user (else the login page), the CSRF check of a form, and the
        protocol's refusals as pages."""

        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            try:
                store = self.store(request)
            except NotFound:
                return self.render(request, "error.html", 404, message="No such project.")
            user = store.session(request.cookies.get(SESSION_COOKIE))
            if user is None:
                if post:
                    return self.render(request, "error.html", 403, message="Your session has ended: sign in again.")
                return RedirectResponse(f"/p/{store.name}/login", 303)
            form = None
            if post:
                form = await request.form()
                if not auth.same_token(form.get("csrf"), user["csrf"]):
                    return self.render(request, "error.html", 403, user=user, message="The form's security token "
                                       "is missing or wrong (CSRF): reload the page and submit it again.")
            try:
                return await handler(request, store, user, form) if post else await handler(request, store, user)
            except Forbidden as e:
                return self.render(request, "error.html", 403, user=user, message=f"Not allowed: {e}.")
            except NotFound as e:
                return self.render(request, "error.html", 404, user=user, message=f"Not found: {e}.")
            except Conflict as e:
                return self.render(request, "conflict.html", 409, user=user, conflict=e,
                                   back=_back(request, store))
            except Refused as e:
                return self.render(request, "error.html", 400, user=user, message=str(e), back=_back(request, store))
            except ValueError as e:
                return self.render(request, "error.html", 400, user=user, message=f"Bad request: {e}",
                                   back=_back(request, store))
        return endpoint

    # -------------------------------------------------------------------------------- login, logout

    async def index(self, request: Request) -> Response:
        return self.render(request, "index.html", projects=sorted(self.projects))

    async def login_form(self, request: Request) -> Response:
        try:
            store = self.store(request)
        except NotFound:
            return self.render(request, "error.html", 404, message="No such project.")
        return self.login_page(request, store, 200, None)

    async def login(self, request: Request) -> Response:
        try:
            store = self.store(request)
        except NotFound:
            return self.render(request, "error.html", 404, message="No such project.")
        form = await request.form()
        if not auth.same_token(form.get("csrf"), request.cookies.get(LOGIN_COOKIE)):
            return self.render(request, "error.html", 403, message="The login form's security token is missing or "
                               "wrong (CSRF): reload the login page.")
        name, password = str(form.get("name", "")), str(form.get("password", ""))
        key = (store.name, request.client.host if request.client else "", name)
        wait = self.throttle.wait(key)
        if wait > 0:
            return self.login_page(request, store, 429, f"Too many failed sign-ins for this name from here: try "
                                    f"again in {int(wait // 60) + 1} minutes, or ask the project manager to set a "
                                    "new password.")
        user = await run_in_threadpool(store.authenticate, name, password)
        if user is None:
            self.throttle.failed(key)
            return self.login_page(request, store, 401, "Unknown user or wrong password.")
        self.throttle.succeeded(key)
        session = store.create_session(user)
        response = RedirectResponse(f"/p/{store.name}/", 303)
        self.cookie(response, store, SESSION_COOKIE, session, auth.SESSION_SECONDS)
        response.delete_cookie(LOGIN_COOKIE, path=f"/p/{store.name}/")
        return response

    def login_page(self, request: Request, store: Store, status: int, error: str | None) -> Response:
        """The login page, with ``error`` if any and a fresh login-form token (in the form and a cookie)."""
        token = auth.new_token()
        response = self.render(request, "login.html", status, login_csrf=token, error=error)
        self.cookie(response, store, LOGIN_COOKIE, token, 3600)
        return response

    async def logout(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        store.end_session(request.cookies.get(SESSION_COOKIE, ""), user["name"])
        response = RedirectResponse(f"/p/{store.name}/login", 303)
        response.delete_cookie(SESSION_COOKIE, path=f"/p/{store.name}/")
        return response

    # ------------------------------------------------------------------------------------- dashboard

    async def dashboard(self, request: Request, store: Store, user: dict) -> Response:
        return self.render(request, "dashboard.html", user=user, topics=protocol.overview(store, user), meta=store.meta)

    async def users(self, request: Request, store: Store, user: dict) -> Response:
        _manager(user)
        with store.read() as c:
            topics = [r["qid"] for r in c.execute("SELECT qid FROM topics ORDER BY position")]
        return self.render(request, "users.html", user=user, users=store.users(), topics=topics)

    async def assign(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        _manager(user)
        store.assign_topics(str(form.get("name", "")), [str(q) for q in form.getlist("topics")], by=user["name"])
        return RedirectResponse(f"/p/{store.name}/users", 303)

    async def audit(self, request: Request, store: Store, user: dict) -> Response:
        _manager(user)
        return self.render(request, "audit.html", user=user, rows=store.audit_rows())

    # ------------------------------------------------------------------------------ stages 1 and 3

    async def next_doc(self, request: Request, store: Store, user: dict) -> Response:
        t, stage = request.path_params["t"], _stage(request, (1, 3))
        d = protocol.next_document(store, user, t, stage)
        if d is None:
            return self.render(request, "stage_done.html", user=user, stage=stage, t=t)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s{stage}/d/{d}", 303)

    async def document(self, request: Request, store: Store, user: dict) -> Response:
        t, stage = request.path_params["t"], _stage(request, (1, 3))
        view = protocol.document_view(store, user, t, stage, request.path_params["d"])
        scale = list(SCALES[store.meta["support_scale"]])
        return self.render(request, f"stage{stage}.html", user=user, t=t, v=view, scale=scale,
                           show_prefill=store.meta["show_support_prefill"])

    async def save(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        """The document page's one form (stages 1 and 3): support labels (stage 3), links of the document to
        answers, new answers, a new nugget (stage 1), and "done with this document"."""
        t, stage, d = request.path_params["t"], _stage(request, (1, 3)), request.path_params["d"]
        if stage == 3:
            labels = {}
            for key in form.getlist("item"):
                rid, j, k = (_int(x) for x in str(key).split("-"))
                label = form.get(f"label-{key}")
                if label:
                    labels[rid, j, k] = (str(label), _int(form.get(f"version-{key}")), form.get(f"shown-{key}") or None)
            protocol.save_labels(store, user, t, d, labels)
        protocol.set_links(store, user, t, stage, d, _ints(form.getlist("seen")), _ints(form.getlist("link")))
        for key, value in form.multi_items():
            if key.startswith("answer-") and str(value).strip():
                protocol.add_answer(store, user, t, stage, d, _int(key[len("answer-"):]), str(value))
        question, answer = str(form.get("question", "")).strip(), str(form.get("qanswer", "")).strip()
        if stage == 1 and (question or answer):
            protocol.add_nugget(store, user, t, d, question, answer)
        if form.get("action") == "done":
            protocol.mark_document_done(store, user, t, stage, d)
            return RedirectResponse(f"/p/{store.name}/t/{t}/s{stage}", 303)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s{stage}/d/{d}", 303)

    async def edit(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        """Reword a nugget (stage 1), or reword it and set its importance (stage 2)."""
        t, stage, n = request.path_params["t"], _stage(request, (1, 2)), request.path_params["n"]
        importance = form.get("importance") if stage == 2 else None
        protocol.edit_nugget(store, user, t, stage, n, _int(form.get("version")), str(form.get("text", "")),
                             str(importance) if importance else None)
        back = f"/p/{store.name}/t/{t}/s2" if stage == 2 else f"/p/{store.name}/t/{t}/s1/d/{_int(form.get('d'))}"
        return RedirectResponse(back, 303)

    # ------------------------------------------------------------------------------------- stage 2

    async def revision(self, request: Request, store: Store, user: dict) -> Response:
        t = request.path_params["t"]
        return self.render(request, "stage2.html", user=user, t=t, v=protocol.revision_view(store, user, t))

    async def remove(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        t, n = request.path_params["t"], request.path_params["n"]
        target = form.get("into")
        protocol.remove_nugget(store, user, t, n, _int(form.get("version")), _int(target) if target else None)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s2", 303)

    async def freeze(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        t = request.path_params["t"]
        protocol.freeze(store, user, t)
        return RedirectResponse(f"/p/{store.name}/", 303)

    # ------------------------------------------------------------------------------------- stage 4

    async def next_report(self, request: Request, store: Store, user: dict) -> Response:
        t = request.path_params["t"]
        r = protocol.next_report(store, user, t)
        if r is None:
            return self.render(request, "stage_done.html", user=user, stage=4, t=t)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s4/r/{r}", 303)

    async def report(self, request: Request, store: Store, user: dict) -> Response:
        t = request.path_params["t"]
        view = protocol.report_view(store, user, t, request.path_params["r"])
        return self.render(request, "stage4.html", user=user, t=t, v=view, contents=protocol.CONTENTS)

    async def align(self, request: Request, store: Store, user: dict, form: FormData) -> Response:
        t, r = request.path_params["t"], request.path_params["r"]
        rows = {}
        for j in _ints(form.getlist("sentence")):
            content = form.get(f"content-{j}")
            rows[j] = (str(content) if content else None, _ints(form.getlist(f"nugget-{j}")),
                       str(form.get(f"missing-{j}", "")), _int(form.get(f"version-{j}")), str(form.get(f"shown-{j}", "")))
        protocol.save_alignment(store, user, t, r, rows, bool(form.get("done")))
        if form.get("done"):
            return RedirectResponse(f"/p/{store.name}/t/{t}/s4", 303)
        return RedirectResponse(f"/p/{store.name}/t/{t}/s4/r/{r}", 303)

    # ---------------------------------------------------------------------------------------- routes

    def routes(self) -> list:
        p, post = "/p/{project}", functools.partial(self.page, post=True)
        doc = p + "/t/{t:int}/s{stage:int}/d/{d:int}"
        return [
            Route("/", self.index),
            Mount("/static", StaticFiles(directory=str(_package / "static")), name="static"),
            Route(p + "/login", self.login_form, methods=["GET"]),
            Route(p + "/login", self.login, methods=["POST"]),
            Route(p + "/logout", post(self.logout), methods=["POST"]),
            Route(p + "/", self.page(self.dashboard)),
            Route(p + "/users", self.page(self.users)),
            Route(p + "/users/assign", post(self.assign), methods=["POST"]),
            Route(p + "/audit", self.page(self.audit)),
            Route(p + "/t/{t:int}/s2", self.page(self.revision)),
            Route(p + "/t/{t:int}/s2/freeze", post(self.freeze), methods=["POST"]),
            Route(p + "/t/{t:int}/s2/nugget/{n:int}/remove", post(self.remove), methods=["POST"]),
            Route(p + "/t/{t:int}/s{stage:int}/nugget/{n:int}/edit", post(self.edit), methods=["POST"]),
            Route(p + "/t/{t:int}/s4", self.page(self.next_report)),
            Route(p + "/t/{t:int}/s4/r/{r:int}", self.page(self.report), methods=["GET"]),
            Route(p + "/t/{t:int}/s4/r/{r:int}", post(self.align), methods=["POST"]),
            Route(p + "/t/{t:int}/s{stage:int}", self.page(self.next_doc)),
            Route(doc, self.page(self.document), methods=["GET"]),
            Route(doc + "/save", post(self.save), methods=["POST"]),
        ]


def _manager(user: dict) -> None:
    if user["role"] != "manager":
        raise Forbidden("this page is the manager's")


def _stage(request: Request, allowed: tuple[int, ...]) -> int:
    stage = request.path_params["stage"]
    if stage not in allowed:
        raise NotFound(f"stage {stage} has no such page")
    return stage


def _int(value) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        raise InvalidInput(f"expected a number, got {str(value)[:20]!r}") from None


def _ints(values) -> set[int]:
    return {_int(v) for v in values}


def _back(request: Request, store: Store) -> str:
    """Where a refused form returns to: the page it was posted from (same project), else the dashboard."""
    path = request.url.path
    for suffix in ("/save", "/freeze"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    if "/nugget/" in path:
        return path.split("/nugget/")[0]
    if request.method == "POST" and "/s4/r/" in path:
        return path
    return f"/p/{store.name}/"


def make_app(directories: list[str], secure_cookies: bool = False) -> Starlette:
    """The ASGI application serving the projects in ``directories``."""
    app = App(directories, secure_cookies)
    return Starlette(routes=app.routes(), middleware=[Middleware(SecurityHeaders)])


def serve(directories: list[str], host: str = "127.0.0.1", port: int = 8000, secure_cookies: bool = False) -> None:
    """Serve the projects with uvicorn (one process; SQLite in WAL mode serialises the writes)."""
    import uvicorn
    for d in directories:
        if not os.path.isdir(d):
            raise FileNotFoundError(f"{d} is not a directory")
    uvicorn.run(make_app(directories, secure_cookies), host=host, port=port, log_level="info",
                proxy_headers=False, server_header=False)
