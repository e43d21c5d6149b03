"""`python -m bench` (what `make bench` runs). See bench/README.md.

Creates (or recreates) the bench database next to the app's, migrates
it, loads the data set, measures every section in one run, prints one table
and writes bench/results/latest.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import sys
import time
from pathlib import Path

from .database import BenchError, bench_database, ensure_database
from .scale import Scale

SECTIONS = ("store", "freshness", "api", "console", "deletion", "langgraph", "agents")
# Measured only when named in --only.
EXTRA_SECTIONS = ("binding", "routing", "notifications")  # notifications: aiosmtpd
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Stateroom benchmarks on PostgreSQL (see bench/README.md).",
    )
    parser.add_argument(
        "--scale",
        default="default",
        help="default (100 tenants, 1M items, ...), small (1/100) or a fraction like 0.1",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the bench database if it already holds a data set of this scale",
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to measure (of {', '.join(SECTIONS + EXTRA_SECTIONS)};"
        f" default all but {', '.join(EXTRA_SECTIONS)})",
    )
    parser.add_argument(
        "--deletion-items",
        type=int,
        default=None,
        help="items in the session the deletion section deletes (default: the timeline's)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes draining the notifications section's outbox (default: one per core;"
        " 1: in the bench's process)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="where results go")
    parser.add_argument("--no-write", action="store_true", help="print only, write no files")
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.only) - set(SECTIONS + EXTRA_SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    return args


def configure_django(database) -> None:
    """Production settings (DEBUG off, persistent connections), on the bench database.

    Only what a loopback benchmark cannot have is changed: no TLS redirect (no
    proxy in front), `testserver` allowed for the in-process console client,
    and Celery tasks go to an in-memory broker (the deletion job is run and
    timed directly).
    """
    os.environ["DATABASE_URL"] = database.url
    os.environ["DATABASE_OWNER_URL"] = database.owner_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "stateroom.settings"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost,testserver"
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ["CELERY_BROKER_URL"] = "memory://"
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scale = Scale.parse(args.scale)
    if args.deletion_items:
        scale = dataclasses.replace(scale, deletion_items=args.deletion_items)
    database = bench_database()
    url = database.url
    log(f"scale {scale.name}: {scale.totals()}")
    log(f"bench database: {database.name}")
    created = ensure_database(database, recreate=not args.reuse)
    configure_django(database)

    from django.core.management import call_command

    from . import generate, report, runner

    call_command("migrate", verbosity=0, interactive=False)
    dataset = runner.dataset_marker(url)
    if created or dataset is None or dataset.get("scale") != scale.name:
        if not created:
            log("the bench database holds another data set: recreating it")
            from django.db import connections

            connections.close_all()
            ensure_database(database, recreate=True)
            call_command("migrate", verbosity=0, interactive=False)
        info = generate.generate(url, scale, log, owner_url=database.owner_url)
        info["rows"] = generate.row_counts(url)
        # The app role may not create tables (it owns none): the owner records the data set.
        runner.write_marker(database.owner_url, scale, info)
        dataset = runner.dataset_marker(url)
        log(f"data set loaded in {info['load_seconds']} s: {info['rows']}")
    else:
        log(f"reusing the data set loaded at {dataset.get('created_at')}")

    results = runner.run(url, scale, dataset, args.only, log, workers=args.workers)
    table = report.render_markdown(results)
    print(report.render_console(results))
    if not args.no_write:
        paths = report.write(results, table, args.out)
        log("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(exc.code, file=sys.stderr)
        sys.exit(2)
