"""`benchreg verify REPORT.pdf`: VALID or INVALID with reasons; exit 0 when valid, 1 when not, 2 when it cannot ask.

Runs without Django, the registry's settings or database: only the report and the registry's published public
material, which is either given on the command line or fetched from the registry's public API:

  benchreg verify report.pdf --cert benchreg-report-certificate.pem --log-key VKEY
        fully offline: signature, certificate, evidence and audit-log proofs (not whether runs were withdrawn since)
  benchreg verify report.pdf --server https://registry.example
        the certificate from /api/v1/reports/certificate and the log key from /api/v1/audit/public-key (unless
        given), and the registry's word on each run (exists, withdrawn since) from POST /api/v1/reports/verify
  benchreg verify report.pdf
        as --server with $BENCHREG_SERVER, else http://127.0.0.1:8000 (a local `benchreg demo`)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifier.verdict import Verdict

CERTIFICATE_PATH = "/api/v1/reports/certificate"
LOG_KEY_PATH = "/api/v1/audit/public-key"
VERIFY_PATH = "/api/v1/reports/verify"


class CannotAsk(Exception):
    """The published material could not be read or fetched; the message says which and why."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    # pyHanko logs what it tolerates in a damaged file; the verdict already says what matters.
    logging.getLogger("pyhanko").addHandler(logging.NullHandler())
    logging.getLogger("pyhanko").propagate = False
    try:
        pdf = args.file.read_bytes()
    except OSError as exc:
        print(f"benchreg verify: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        certificates, keys, lookup = _material(args, pdf)
    except CannotAsk as exc:
        print(f"benchreg verify: {exc}", file=sys.stderr)
        return 2
    from verifier.report import verify_report

    verdict = verify_report(pdf, certificates=certificates, log_keys=keys, registry=lookup)
    _print_verdict(verdict, as_json=args.json, consulted=lookup is not None)
    return 0 if verdict.valid else 1


def _print_verdict(verdict: Verdict, *, as_json: bool, consulted: bool) -> None:
    if as_json:
        print(json.dumps(verdict.as_dict(), indent=2, ensure_ascii=False))
        return
    if verdict.report.get("title"):
        print(f"report {verdict.report.get('id')}: {verdict.report.get('title')}")
    print("\n".join(verdict.lines()))
    if not consulted:
        print("  (no registry consulted: run existence and withdrawals were not checked)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchreg verify",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[4:]),
    )
    parser.add_argument("file", type=Path, help="the signed decision report (PDF)")
    parser.add_argument("--cert", type=Path, help="the registry's report certificate bundle (PEM)")
    parser.add_argument(
        "--log-key",
        action="append",
        default=[],
        type=log_key,
        metavar="VKEY",
        help="the audit log's verifier key (C2SP note verifier key); repeatable",
    )
    parser.add_argument(
        "--server",
        default=None,
        help="the registry to fetch missing public material from and "
        "to ask about the runs (default $BENCHREG_SERVER or "
        "http://127.0.0.1:8000 when --cert/--log-key are missing)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("BENCHREG_TOKEN"),
        help="API token for --server (shows withdrawal reasons); default $BENCHREG_TOKEN",
    )
    parser.add_argument("--offline", action="store_true", help="never contact a registry (needs --cert and --log-key)")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    return parser


def log_key(text: str) -> str:
    """A --log-key as given, once it parses as a note verifier key. A key that does not parse is a usage error
    (exit 2, saying what is wrong with it): checked against it, the report would be INVALID for the user's typo."""
    from protocol.signed_note import MalformedKeyError, parse_verifier_key

    try:
        parse_verifier_key(text)
    except MalformedKeyError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not an audit-log verifier key: {exc}") from None
    return text


def _material(args: argparse.Namespace, pdf: bytes) -> tuple[list[Any], list[str], Any]:
    """(certificates, log keys, run lookup or None) from the options, fetching what is missing from the server."""
    from cryptography import x509

    if args.offline and not (args.cert and args.log_key):
        raise CannotAsk("--offline needs the registry's published --cert and --log-key")
    server = args.server or (
        None
        if args.offline or (args.cert and args.log_key)
        else os.environ.get("BENCHREG_SERVER", "http://127.0.0.1:8000")
    )
    cert_pem = _read(args.cert) if args.cert else None
    keys = list(args.log_key)
    lookup = None
    if server and not args.offline:
        cert_pem, keys, lookup = _ask(server, args.token, pdf, cert_pem, keys)
    try:
        certificates = x509.load_pem_x509_certificates(cert_pem or b"")
    except ValueError as exc:
        raise CannotAsk(f"the report certificate bundle is not PEM certificates: {exc}") from None
    return certificates, keys, lookup


def _ask(
    server: str, token: str | None, pdf: bytes, cert_pem: bytes | None, keys: list[str]
) -> tuple[bytes, list[str], Any]:
    import httpx  # only when a registry is asked: it is not needed offline

    base = server.rstrip("/")
    headers = {"Authorization": f"Token {token}"} if token else {}
    try:
        with httpx.Client(timeout=60, headers=headers) as client:
            if cert_pem is None:
                cert_pem = _get(client, base + CERTIFICATE_PATH)
            if not keys:
                keys = [_published_log_key(str(json.loads(_get(client, base + LOG_KEY_PATH))["verifier_key"]))]
            answer = client.post(base + VERIFY_PATH, files={"file": ("report.pdf", pdf, "application/pdf")})
            answer.raise_for_status()
            runs = answer.json().get("runs") or []
    except (httpx.HTTPError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CannotAsk(f"cannot ask {server}: {exc}") from None
    return cert_pem, keys, _run_lookup(runs)


def _published_log_key(text: str) -> str:
    """The registry's published log key, once it parses: one that does not is the registry's fault, not the
    report's, so it cannot be asked (exit 2) rather than INVALID."""
    try:
        return log_key(text)
    except argparse.ArgumentTypeError as exc:
        raise CannotAsk(f"the registry's published log key {exc}") from None


def _run_lookup(runs: list[Any]) -> Callable[[Sequence[str]], Mapping[str, Mapping[str, Any]]]:
    """The registry's answer about each run, by digest, as verify_report's `registry` lookup."""
    statuses = {r["digest"]: r for r in runs if isinstance(r, dict) and "digest" in r}

    def lookup(digests: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        return {d: statuses[d] for d in digests if d in statuses}

    return lookup


def _get(client: Any, url: str) -> bytes:
    response = client.get(url)
    response.raise_for_status()
    return bytes(response.content)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CannotAsk(f"cannot read {path}: {exc.strerror}") from None


if __name__ == "__main__":
    sys.exit(main())
