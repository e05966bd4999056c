"""Decision reports: evidence JSON, HTML/PDF rendering, PAdES signing and verification.

`verify` is plain Python (no Django), so a report can be checked anywhere with the registry's certificate and
log key alone; the other modules run inside the registry.
"""

EVIDENCE_KIND = "benchreg.report-evidence/1"
ATTACHMENT_NAME = "benchreg-evidence.json"
# The signature's /Reason names the evidence digest, so the digest is covered by the signature itself.
REASON_PREFIX = "benchreg decision report; evidence "
