"""``pyterrier-nuggets annotate``: the human annotation tool of seed 002 (docs/annotation.md).

    annotate init CONFIG.json DIR            create a project (one SQLite database) from a configuration
    annotate users DIR add NAME --role manager|annotator [--topics QID ...] [--password-stdin]
    annotate users DIR passwd NAME [--password-stdin] | assign NAME --topics QID ... | list
    annotate serve DIR [DIR ...] [--host 127.0.0.1] [--port 8000] [--secure-cookies]
    annotate export DIR --out OUT_DIR [--finished-only]
"""
from __future__ import annotations

import getpass
import sys

from ir_measures_ext.errors import InvalidInput


def add_parser(sub) -> None:
    p = sub.add_parser("annotate", help="human nugget annotation: the four-stage web tool of seed 002")
    cmds = p.add_subparsers(dest="annotate_command", required=True)
    q = cmds.add_parser("init", help="create a project from a JSON configuration")
    q.add_argument("config")
    q.add_argument("directory", help="the new project directory (must not exist, or be empty)")
    q = cmds.add_parser("serve", help="serve projects in the browser (uvicorn)")
    q.add_argument("directories", nargs="+")
    q.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    q.add_argument("--port", type=int, default=8000)
    q.add_argument("--secure-cookies", action="store_true", help="mark cookies Secure (behind an HTTPS proxy)")
    q = cmds.add_parser("export", help="annotations -> nugget, assignment, support files and evaluation runs")
    q.add_argument("directory")
    q.add_argument("--out", required=True, help="output directory")
    q.add_argument("--finished-only", action="store_true", help="export the finished topics, name the others")
    q = cmds.add_parser("users", help="add users, set passwords, assign topics, list")
    q.add_argument("directory")
    users = q.add_subparsers(dest="users_command", required=True)
    u = users.add_parser("add")
    u.add_argument("name")
    u.add_argument("--role", choices=("manager", "annotator"), required=True)
    u.add_argument("--topics", nargs="*", default=[], help="topics of an annotator (managers see all)")
    u.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    u = users.add_parser("passwd")
    u.add_argument("name")
    u.add_argument("--password-stdin", action="store_true")
    u = users.add_parser("assign")
    u.add_argument("name")
    u.add_argument("--topics", nargs="+", required=True)
    users.add_parser("list")
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
        serve(args.directories, args.host, args.port, args.secure_cookies)
        return 0
    if cmd == "export":
        exp = annotate.Export(annotate.Store(args.directory), args.finished_only)
        files = exp.write(args.out)
        if exp.skipped:
            print(f"note: unfinished topics left out: {exp.skipped}", file=sys.stderr)
        print(f"{len(exp.topics)} topics, {len(exp.reports)} answers, {len(exp.nuggets)} nuggets -> {args.out} "
              f"({len(files)} files)")
        return 0
    store = annotate.Store(args.directory)
    if args.users_command == "list":
        for u in store.users():
            print(f"{u['name']}\t{u['role']}\t{' '.join(u['topics']) if u['role'] == 'annotator' else 'all'}")
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
    return 0
