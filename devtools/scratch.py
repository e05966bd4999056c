"""Scratch PostgreSQL databases for benchmarks: created fresh, dropped afterwards, never real data."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg


def database_url(url: str, name: str) -> str:
    """`url` pointing at database `name` on the same server."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def recreate(admin_url: str, name: str) -> str:
    """Drop `name` if it exists, create it empty, and return its URL."""
    drop(admin_url, name)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return database_url(admin_url, name)


def drop(admin_url: str, name: str) -> None:
    """Drop `name`, disconnecting anyone still using it."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
