"""benchreg protocol: the versioned submission schema, semantic checks, canonical form and digest.

Plain Python: imports nothing from registry/ or runners/ and never reads Django settings.
"""

from .canonical import canonicalize, digest, digest_of
from .errors import Error, Invalid
from .parsing import parse_json
from .rules import PROTOCOL_NAME, PROTOCOL_VERSION
from .schema import submission_schema
from .summary import RunSummary, summarize
from .validate import Checked, check, errors

__all__ = [
    "PROTOCOL_NAME", "PROTOCOL_VERSION", "Checked", "Error", "Invalid", "RunSummary", "canonicalize",
    "check", "digest", "digest_of", "errors", "parse_json", "submission_schema", "summarize",
]
