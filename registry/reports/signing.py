"""The key that signs decision reports, and the PAdES certification signature itself.

Where the signing key comes from, first match wins:
  * settings.BENCHREG_REPORT_PKCS12: a PKCS#12 file (key, certificate and chain), password in
    BENCHREG_REPORT_PKCS12_PASSWORD;
  * settings.BENCHREG_REPORT_KEY + BENCHREG_REPORT_CERT: a PEM private key (BENCHREG_REPORT_KEY_PASSWORD if
    encrypted) and a PEM file holding the signing certificate first, then its issuers;
  * `<DATA_DIR>/keys/report-signing.pem`, generated on first use (mode 0600): a local CA issues an ECDSA P-256
    signing certificate and an RSA timestamp-authority certificate; the CA's private key is then discarded, so
    nothing can issue further certificates under it.

Timestamps come from a local timestamp authority (pyHanko's DummyTimeStamper with the generated TSA key): no network
and no third party, so the token proves only that the registry's clock said so, which is what a self-contained
registry can offer. Its key is RSA because that timestamper signs with RSA only; the document signature itself is
ECDSA P-256. BENCHREG_REPORT_TIMESTAMP=0 leaves the timestamp out.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asn1crypto import keys as asn1_keys
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from registry.keyfiles import check_private, create_once

if TYPE_CHECKING:
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import signers
    from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper

GENERATED_FILE = "report-signing.pem"
SIGNATURE_FIELD = "BenchregReportSignature"
_PEM_KEY = re.compile(rb"-----BEGIN PRIVATE KEY-----.+?-----END PRIVATE KEY-----\n?", re.S)
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class SigningIdentity:
    """The report signing key with its certificate and issuers, and the optional timestamp authority."""

    key: PrivateKey
    certificate: x509.Certificate
    chain: tuple[x509.Certificate, ...]
    tsa_key: rsa.RSAPrivateKey | None = None
    tsa_certificate: x509.Certificate | None = None
    tsa_chain: tuple[x509.Certificate, ...] = ()

    def public_certificates(self) -> list[x509.Certificate]:
        """What a verifier needs to trust: the signing certificate first, then every issuer (deduplicated)."""
        out: list[x509.Certificate] = []
        for cert in (self.certificate, *self.chain, *self.tsa_chain):
            if cert not in out:
                out.append(cert)
        return out

    def public_pem(self) -> bytes:
        """The public bundle served at /api/v1/reports/certificate and given to `benchreg verify --cert`."""
        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.public_certificates())

    def fingerprint(self) -> str:
        """SHA-256 of the signing certificate (DER), hex with colons, as printed in reports."""
        return self.certificate.fingerprint(hashes.SHA256()).hex(":").upper()


def signing_identity() -> SigningIdentity:
    """The configured or generated identity. Raises ImproperlyConfigured for an unusable setting."""

    def setting(name: str) -> str:
        return str(getattr(settings, name, "") or "")

    return _load(
        setting("BENCHREG_REPORT_PKCS12"),
        setting("BENCHREG_REPORT_KEY"),
        setting("BENCHREG_REPORT_CERT"),
        bool(getattr(settings, "BENCHREG_REPORT_TIMESTAMP", True)),
        Path(settings.DATA_DIR),
    )


def identity_is_stored() -> bool:
    """Whether loading the identity would only read files, with none to generate: what a server's warm-up may load
    (generating one takes a second or two, and is left to the first report)."""
    configured = bool(getattr(settings, "BENCHREG_REPORT_PKCS12", "") or getattr(settings, "BENCHREG_REPORT_KEY", ""))
    if configured and not getattr(settings, "BENCHREG_REPORT_TIMESTAMP", True):
        return True
    return (Path(settings.DATA_DIR) / "keys" / GENERATED_FILE).exists()


def trusted_certificates() -> list[x509.Certificate]:
    """Certificates a report may be signed under: the current identity's bundle, plus the PEM bundles listed in
    settings.BENCHREG_REPORT_TRUSTED_CERTS (earlier identities, kept so reports signed before a rotation verify)."""
    certs = signing_identity().public_certificates()
    for path in getattr(settings, "BENCHREG_REPORT_TRUSTED_CERTS", []) or []:
        try:
            certs += [c for c in x509.load_pem_x509_certificates(Path(path).read_bytes()) if c not in certs]
        except (OSError, ValueError) as exc:
            raise ImproperlyConfigured(f"BENCHREG_REPORT_TRUSTED_CERTS {path}: {exc}") from None
    return certs


def sign_pdf(pdf: bytes, *, identity: SigningIdentity, reason: str, name: str = "benchreg registry") -> bytes:
    """Add one PAdES (ETSI.CAdES.detached) certification signature that forbids any later change (DocMDP P=1).

    The signature is an incremental update over `pdf`; its /Reason is `reason` (covered by the signature), which
    is where the report records the evidence digest for verifiers. Timestamped when the identity has a TSA.
    """
    # pyHanko (~0.7 s to import) is loaded here, when a report is signed, and not with this module: the identity
    # (health checks, the certificate endpoint, `benchreg demo`) and every process importing the reports code
    # would pay for it otherwise.
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    signer, timestamper = _signer(identity), _timestamper(identity)
    meta = _signature_metadata(reason, name)
    writer = IncrementalPdfFileWriter(io.BytesIO(pdf), strict=False)
    _tidy_metadata(writer)
    out = _pdf17_signer_class()(meta, signer=signer, timestamper=timestamper).sign_pdf(writer)
    return bytes(out.getbuffer())


def _signer(identity: SigningIdentity) -> signers.SimpleSigner:
    from pyhanko.sign import signers
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    return signers.SimpleSigner(
        signing_cert=_asn1_cert(identity.certificate),
        signing_key=_asn1_key(identity.key),
        cert_registry=SimpleCertificateStore.from_certs(  # type: ignore[no-untyped-call]  # unannotated upstream
            [_asn1_cert(c) for c in identity.chain]
        ),
    )


def _timestamper(identity: SigningIdentity) -> DummyTimeStamper | None:
    """The identity's TSA as a timestamper; None when it has none."""
    from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    if identity.tsa_key is None or identity.tsa_certificate is None:
        return None
    return DummyTimeStamper(
        tsa_cert=_asn1_cert(identity.tsa_certificate),
        tsa_key=_asn1_key(identity.tsa_key),
        certs_to_embed=SimpleCertificateStore.from_certs(  # type: ignore[no-untyped-call]  # unannotated upstream
            [_asn1_cert(c) for c in identity.tsa_chain]
        ),
    )


def _signature_metadata(reason: str, name: str) -> signers.PdfSignatureMetadata:
    from pyhanko.sign import fields, signers

    return signers.PdfSignatureMetadata(
        field_name=SIGNATURE_FIELD,
        certify=True,
        docmdp_permissions=fields.MDPPerm.NO_CHANGES,
        subfilter=fields.SigSeedSubFilter.PADES,
        md_algorithm="sha256",
        reason=reason,
        name=name,
        location="benchreg",
    )


def _tidy_metadata(writer: IncrementalPdfFileWriter) -> None:
    """In the signed revision itself: list each associated file once in the catalog's /AF (WeasyPrint's PDF/A
    path adds the evidence twice), and name the producer as pyHanko will write it into the XMP packet, so the
    Info dictionary and XMP agree (WeasyPrint is named in Creator/CreatorTool, from the template)."""
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.metadata import model as metadata_model

    root = writer.root
    if "/AF" in root:
        seen, unique = set(), generic.ArrayObject()
        for ref in root["/AF"]:
            key = (ref.idnum, ref.generation) if isinstance(ref, generic.IndirectObject) else id(ref)
            if key not in seen:
                seen.add(key)
                unique.append(ref)
        root["/AF"] = unique
        writer.update_root()  # type: ignore[no-untyped-call]  # pyHanko leaves it unannotated
    info_ref = writer.prev.trailer_view.raw_get("/Info") if "/Info" in writer.prev.trailer_view else None
    if isinstance(info_ref, generic.IndirectObject):
        info = info_ref.get_object()  # type: ignore[no-untyped-call]  # pyHanko leaves it unannotated
        info["/Producer"] = generic.TextStringObject(metadata_model.VENDOR)
        writer.mark_update(info_ref)


@functools.cache
def _pdf17_signer_class() -> type[signers.PdfSigner]:
    """A PdfSigner that registers only the ESIC (PAdES) extension, keeping the file at PDF 1.7 as PDF/A-3 requires.
    Made on first use, as it subclasses pyHanko's.

    pyHanko would also declare ISO 32002 for ECDSA on P-256, which bumps the catalog's /Version to 2.0 and so makes
    the PDF/A-3b file non-conformant; ECDSA signatures in CMS are valid PAdES on PDF 1.7 without that declaration.
    """
    from pyhanko.sign import signers
    from pyhanko.sign.signers.constants import ESIC_EXTENSION_1

    class Pdf17Signer(signers.PdfSigner):
        def register_extensions(self, pdf_out: Any, *, md_algorithm: str) -> None:
            pdf_out.ensure_output_version(version=(1, 7))
            pdf_out.register_extension(ESIC_EXTENSION_1)

    return Pdf17Signer


# ------------------------------------------------------------------------------------------ loading


@functools.lru_cache(maxsize=8)
def _load(p12: str, key_path: str, cert_path: str, timestamp: bool, data_dir: Path) -> SigningIdentity:
    # Cached per configuration: tests that point DATA_DIR elsewhere get their own identity.
    generated = (
        _read_generated(_generated(data_dir / "keys" / GENERATED_FILE)) if timestamp or not (p12 or key_path) else None
    )
    if p12:
        key, cert, chain = _from_pkcs12(Path(p12), getattr(settings, "BENCHREG_REPORT_PKCS12_PASSWORD", "") or "")
    elif key_path or cert_path:
        if not (key_path and cert_path):
            raise ImproperlyConfigured("BENCHREG_REPORT_KEY and BENCHREG_REPORT_CERT go together")
        key, cert, chain = _from_pem(Path(key_path), Path(cert_path))
    else:
        assert generated is not None
        key, cert, chain = generated.key, generated.certificate, generated.chain
    if not timestamp or generated is None:
        return SigningIdentity(key, cert, chain)
    return SigningIdentity(key, cert, chain, generated.tsa_key, generated.tsa_certificate, generated.tsa_chain)


def _from_pkcs12(path: Path, password: str) -> tuple[PrivateKey, x509.Certificate, tuple[x509.Certificate, ...]]:
    check_private(path, "report signing key (PKCS#12)")
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(path.read_bytes(), password.encode() or None)
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"BENCHREG_REPORT_PKCS12 {path}: {exc}") from None
    if key is None or cert is None or not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ImproperlyConfigured(f"{path} must hold an EC or RSA private key and its certificate")
    return key, cert, tuple(extra)


def _from_pem(key_path: Path, cert_path: Path) -> tuple[PrivateKey, x509.Certificate, tuple[x509.Certificate, ...]]:
    check_private(key_path, "report signing key")
    password = (getattr(settings, "BENCHREG_REPORT_KEY_PASSWORD", "") or "").encode() or None
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=password)
        certs = x509.load_pem_x509_certificates(cert_path.read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise ImproperlyConfigured(f"report signing key/certificate: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ImproperlyConfigured(f"{key_path} holds a {type(key).__name__}; reports need an EC or RSA key")
    if _spki(certs[0].public_key()) != _spki(key.public_key()):
        raise ImproperlyConfigured(f"the first certificate in {cert_path} is not the certificate of {key_path}")
    return key, certs[0], tuple(certs[1:])


def _read_generated(path: Path) -> SigningIdentity:
    raw = path.read_bytes()
    loaded = [serialization.load_pem_private_key(block, password=None) for block in _PEM_KEY.findall(raw)]
    certs = x509.load_pem_x509_certificates(raw)
    signer = next(k for k in loaded if isinstance(k, ec.EllipticCurvePrivateKey))
    tsa = next(k for k in loaded if isinstance(k, rsa.RSAPrivateKey))

    def cert_of(key: PrivateKey) -> x509.Certificate:
        return next(c for c in certs if _spki(c.public_key()) == _spki(key.public_key()))

    ca = tuple(c for c in certs if c not in (cert_of(signer), cert_of(tsa)))
    return SigningIdentity(signer, cert_of(signer), ca, tsa, cert_of(tsa), ca)


def _generated(path: Path) -> Path:
    """Create the identity file once; of two racing processes the first one's file wins and both use it."""
    return create_once(path, new_identity_pem)


def new_identity_pem() -> bytes:
    """A fresh local CA (key discarded), an ECDSA P-256 signing certificate and an RSA TSA certificate, as PEM."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"benchreg local report CA {secrets.token_hex(4)}")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now, years=30)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    signer_key = ec.generate_private_key(ec.SECP256R1())
    signer = _leaf_certificate("benchreg report signing", signer_key, ca_key, ca_name, now)
    tsa_key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    tsa = _leaf_certificate("benchreg local timestamp authority", tsa_key, ca_key, ca_name, now, timestamps=True)
    return _pem_bundle(signer_key, signer, tsa_key, tsa, ca)


def _leaf_certificate(
    common_name: str,
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    now: dt.datetime,
    *,
    timestamps: bool = False,
) -> x509.Certificate:
    """A 25-year end-entity certificate issued by the local CA; `timestamps` makes it a time-stamping authority."""
    builder = (
        _builder(_name(common_name), ca_name, key.public_key(), now, years=25)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
    )
    if timestamps:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
    return builder.add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
    ).sign(ca_key, hashes.SHA256())


def _pem_bundle(
    signer_key: ec.EllipticCurvePrivateKey,
    signer: x509.Certificate,
    tsa_key: rsa.RSAPrivateKey,
    tsa: x509.Certificate,
    ca: x509.Certificate,
) -> bytes:
    pem = serialization.Encoding.PEM
    return b"".join(
        [
            _private_pem(signer_key),
            signer.public_bytes(pem),
            _private_pem(tsa_key),
            tsa.public_bytes(pem),
            ca.public_bytes(pem),
        ]
    )


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "benchreg"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey,
    now: dt.datetime,
    *,
    years: int,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365 * years))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=not cert_sign,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _spki(public_key: Any) -> bytes:
    return bytes(public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


def _asn1_cert(cert: x509.Certificate) -> asn1_x509.Certificate:
    return asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


def _asn1_key(key: PrivateKey) -> asn1_keys.PrivateKeyInfo:
    return asn1_keys.PrivateKeyInfo.load(
        key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
