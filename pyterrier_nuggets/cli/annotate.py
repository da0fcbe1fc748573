"""``pyterrier-nuggets annotate``: the human annotation tool of [nugget-annotation] (docs/annotation.md).

    annotate init CONFIG.json DIR            create a project (one SQLite database) from a configuration
    annotate users DIR add NAME --role manager|annotator [--topics QID ...] [--password-stdin]
    annotate users DIR passwd NAME [--password-stdin] | assign NAME --topics QID ... | disable NAME | enable NAME
    annotate users DIR list
    annotate serve DIR [DIR ...] [--host 127.0.0.1] [--port 8000] [--secure-cookies] [--forwarded-allow-ips IPS]
    annotate export DIR --out OUT_DIR [--finished-only] [--overwrite]
"""
from __future__ import annotations

import getpass
import sys

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.cli.errors import port


def add_parser(sub) -> None:
    p = sub.add_parser("annotate", help="human nugget annotation in the browser: nuggets, their revision, support and alignment, by several annotators", description="The human annotation tool (the four-stage protocol of Yang et al., SIGIR 2025: docs/annotation.md): a project (one SQLite database) made from a configuration, its users, a web server for the four stages (nugget creation, revision, support, alignment) and the export of the annotations in the package's file formats. Example: pyterrier-nuggets annotate init project.json proj/ (docs/annotation.md)")
    cmds = p.add_subparsers(dest="annotate_command", required=True)
    q = cmds.add_parser("init", help="create a project from a JSON configuration", description="Create a project directory (its SQLite database) from a JSON configuration naming the topics, answers, documents and pool. Example: pyterrier-nuggets annotate init project.json proj/")
    q.add_argument("config", metavar="FILE", help="the project configuration (JSON; docs/annotation.md), e.g. project.json")
    q.add_argument("directory", metavar="DIR", help="the new project directory (must not exist, or be empty), e.g. proj/")
    q = cmds.add_parser("serve", help="serve projects in the browser (uvicorn)", description="Serve one or more projects in the browser (uvicorn), on this machine only unless --host says otherwise. Example: pyterrier-nuggets annotate serve proj/ --port 8080")
    q.add_argument("directories", nargs="+", metavar="DIR", help="the project directories to serve, e.g. proj/ other_proj/")
    q.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only), e.g. --host 0.0.0.0")
    q.add_argument("--port", type=port, default=8000, help="the port to listen on (default 8000; 0: any free one, "
                   "printed), e.g. --port 8080")
    q.add_argument("--secure-cookies", action="store_true", help="mark cookies Secure (behind an HTTPS proxy)")
    q.add_argument("--forwarded-allow-ips", metavar="IPS",
                   help="addresses of trusted reverse proxies (comma-separated addresses or networks): their "
                        "X-Forwarded-For gives the client's address (the sign-in throttle counts per client); "
                        "without it those headers are ignored, e.g. --forwarded-allow-ips 10.0.0.5")
    q = cmds.add_parser("export", help="annotations -> nugget, assignment, support files and evaluation runs", description="Write a project's annotations as nugget, assignment and support files and evaluation runs in the package's formats. Example: pyterrier-nuggets annotate export proj/ --out out/manual")
    q.add_argument("directory", metavar="DIR", help="the project directory, e.g. proj/")
    q.add_argument("--out", required=True, metavar="DIR", help="output directory, e.g. --out out/manual")
    q.add_argument("--finished-only", action="store_true", help="export the finished topics, name the others")
    from pyterrier_nuggets.cli.options import add_overwrite
    add_overwrite(q)
    q = cmds.add_parser("users", help="add users, set passwords, assign topics, list", description="Manage a project's users: add one, set a password, assign topics, disable or enable, list. Example: pyterrier-nuggets annotate users proj/ add alice --role annotator --topics t1 t2")
    q.add_argument("directory", metavar="DIR", help="the project directory, e.g. proj/")
    users = q.add_subparsers(dest="users_command", required=True)
    u = users.add_parser("add", description="Add a user with a role (managers see every topic, annotators their assigned ones); the password is asked for, or read from stdin. Example: pyterrier-nuggets annotate users proj/ add alice --role annotator --topics t1 t2")
    u.add_argument("name", help="the user's sign-in name, e.g. alice")
    u.add_argument("--role", choices=("manager", "annotator"), required=True, help="manager (every topic, the review pages) or annotator (assigned topics), e.g. --role annotator")
    u.add_argument("--topics", nargs="*", default=[], metavar="QID", help="topics of an annotator (managers see all), e.g. --topics t1 t2")
    u.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    u = users.add_parser("passwd", description="Set a user's password (asked for twice, or read from stdin). Example: pyterrier-nuggets annotate users proj/ passwd alice")
    u.add_argument("name", help="the user's sign-in name, e.g. alice")
    u.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    u = users.add_parser("assign", description="Give an annotator these topics (instead of those assigned before). Example: pyterrier-nuggets annotate users proj/ assign alice --topics t1 t3")
    u.add_argument("name", help="the user's sign-in name, e.g. alice")
    u.add_argument("--topics", nargs="+", required=True, metavar="QID", help="the topics the annotator works on, e.g. --topics t1 t3")
    u = users.add_parser("disable", help="the user can no longer sign in (their sessions end; their work is kept)", description="The user can no longer sign in (their sessions end; their work is kept). Example: pyterrier-nuggets annotate users proj/ disable alice")
    u.add_argument("name", help="the user's sign-in name, e.g. alice")
    u = users.add_parser("enable", help="a disabled user can sign in again", description="A disabled user can sign in again. Example: pyterrier-nuggets annotate users proj/ enable alice")
    u.add_argument("name", help="the user's sign-in name, e.g. alice")
    users.add_parser("list", description="List the project's users with their roles, topics and whether they are enabled. Example: pyterrier-nuggets annotate users proj/ list")
    p.set_defaults(func=run)


def _password(args) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(f"password for {args.name}: ")
    if first != getpass.getpass("again: "):
        raise InvalidInput("the two passwords differ")
    return first


def run(args) -> int:
    try:
        from pyterrier_nuggets import annotate
    except ImportError as e:
        print(f"error: the annotation tool needs its extra ({e.name} is missing): "
              "pip install 'pyterrier-nuggets[annotate]'", file=sys.stderr)
        return 1
    try:
        return _run(annotate, args)
    except (OSError, annotate.store.Refused) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _run(annotate, args) -> int:
    cmd = args.annotate_command
    if cmd == "init":
        inp = annotate.load_config(args.config)
        store = annotate.create_project(inp, args.directory)
        print(f"project {inp.name} in {store.directory}: {len(inp.topics)} topics, {len(inp.reports)} answers of "
              f"{len({a.run_id for a in inp.reports})} runs, {len(inp.documents)} pooled documents, "
              f"{len(inp.nuggets)} pre-populated nuggets, {len(inp.support)} pre-filled support labels")
        for note in inp.notes:
            print(f"note: {note}")
        print(f"next: pyterrier-nuggets annotate users {args.directory} add NAME --role manager")
        return 0
    if cmd == "serve":
        from pyterrier_nuggets.annotate.web import serve
        serve(args.directories, args.host, args.port, args.secure_cookies, args.forwarded_allow_ips)
        return 0
    if cmd == "export":
        exp = annotate.Export(annotate.Store(args.directory), args.finished_only)
        files = exp.write(args.out, args.overwrite)
        if exp.skipped:
            print(f"note: unfinished topics left out: {exp.skipped}", file=sys.stderr)
        print(f"{len(exp.topics)} topics, {len(exp.reports)} answers, {len(exp.nuggets)} nuggets -> {args.out} "
              f"({len(files)} files)")
        return 0
    store = annotate.Store(args.directory)
    if args.users_command == "list":
        for u in store.users():
            topics = ' '.join(u['topics']) if u['role'] == 'annotator' else 'all'
            print(f"{u['name']}\t{u['role']}\t{topics}" + ("\tdisabled" if u["disabled"] else ""))
    elif args.users_command == "add":
        store.add_user(args.name, args.role, _password(args))
        if args.topics:
            store.assign_topics(args.name, args.topics)
        print(f"user {args.name} ({args.role}) added to {store.name}")
    elif args.users_command == "passwd":
        store.set_password(args.name, _password(args))
        print(f"password of {args.name} set; their sessions are closed")
    elif args.users_command == "assign":
        store.assign_topics(args.name, args.topics)
        print(f"{args.name}: topics {' '.join(args.topics)}")
    elif args.users_command in ("disable", "enable"):
        store.set_disabled(args.name, args.users_command == "disable")
        print(f"{args.name} is {args.users_command}d" + ("; their sessions are closed" if args.users_command ==
                                                         "disable" else ""))
    return 0
