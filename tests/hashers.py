"""A password hasher for the tests: Django's PBKDF2-SHA256 at 1,000 iterations instead of its 1,000,000.

The tests create about a thousand users a pass; at the production cost each hash takes a third of a second on a
2-core machine. The hashes keep the 'pbkdf2_sha256' algorithm and state their iteration count, so a registry
process started by a test (a served registry, a CLI subprocess) checks them with its own default hasher.
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1000
