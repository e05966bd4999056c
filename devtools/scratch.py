"""Scratch PostgreSQL databases for benchmarks: created fresh, dropped afterwards, never real data.

BENCH_SCRATCH_TEMPLATE names a database to copy instead of starting empty (CREATE DATABASE ... TEMPLATE): the
benches' CI test migrates one such template per session, so each bench's own `migrate` finds its work done instead
of paying for the migrations again. Each bench still runs `migrate`, so a template behind the code is brought up to
date, never trusted blindly.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import psycopg

TEMPLATE_ENV = "BENCH_SCRATCH_TEMPLATE"


def database_url(url: str, name: str) -> str:
    """`url` pointing at database `name` on the same server."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def recreate(admin_url: str, name: str) -> str:
    """Drop `name` if it exists, create it (empty, or a copy of $BENCH_SCRATCH_TEMPLATE), and return its URL."""
    drop(admin_url, name)
    template = os.environ.get(TEMPLATE_ENV, "")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    return database_url(admin_url, name)


def drop(admin_url: str, name: str) -> None:
    """Drop `name`, disconnecting anyone still using it."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
