"""Decision reports: evidence JSON, HTML/PDF rendering and PAdES signing, inside the registry.

Verification lives outside, in the standalone `verifier` package (plain Python, no Django), so a report can be
checked anywhere with the registry's published certificate and log key alone; its names are shared from there.
"""

from verifier import ATTACHMENT_NAME, CERTIFICATE_FILE, EVIDENCE_KIND, REASON_PREFIX

__all__ = ["ATTACHMENT_NAME", "CERTIFICATE_FILE", "EVIDENCE_KIND", "REASON_PREFIX"]
