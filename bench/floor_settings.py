"""The product's settings, unchanged, routed through bench/floor.py (which adds the floor endpoint)."""

from registry.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor"
