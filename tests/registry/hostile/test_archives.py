"""Hostile archives, trees and PDFs: each is refused with what and where, stores nothing, never answers 500, and
costs bounded time and memory.

Every malicious input is built here: a zip with a bad CRC, a file and a folder of the same name, a truncated
.tar.gz, a small .tar.gz that inflates beyond the bound, member names that are not UTF-8, a systems JSON nested
200,000 deep, NUL in a string, links out of the tree and a link loop (results/x -> .), and a signed PDF whose
incremental update points its attachment at 512 MiB of deflated zeros.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from registry.importers import mlperf
from registry.importers.archives import ArchiveError, unpack
from registry.models import AuditEntry, Submission
from registry.storage import uploads_storage
from tests.conftest import ROOT, SHARED

pytestmark = pytest.mark.django_db
SAMPLE = SHARED / "data" / "mlperf" / "inference_sample1_AMD_v5.1"
URL = "/admin/registry/submission/import-mlperf/"
SYSTEM = "8xMI300X_2xEPYC_9575F"


@pytest.fixture(autouse=True)
def _uploads_in_tmp(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    from django.core.files.storage import storages

    settings.STORAGES = {
        **settings.STORAGES,
        "uploads": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path_factory.mktemp("uploads"))},
        },
    }
    storages._storages.pop("uploads", None)  # the handler caches backends: the next use reads the setting above
    yield
    storages._storages.pop("uploads", None)


@pytest.fixture
def admin_client(client: Any, django_user_model: Any) -> Any:
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-for-tests-only"))
    return client


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    if not SAMPLE.exists():
        pytest.skip("the shared MLPerf sample tree is not beside this checkout")
    return Path(shutil.copytree(SAMPLE, tmp_path / "inference_results_v5.1" / "closed" / "AMD"))


def kept_uploads() -> list[str]:
    storage = uploads_storage()
    return storage.listdir("mlperf")[1] if storage.exists("mlperf") else []


def counts() -> tuple[int, int, int]:
    return Submission.objects.count(), AuditEntry.objects.count(), len(kept_uploads())


def post(client: Any, data: bytes, name: str) -> tuple[Any, str, float]:
    upload = io.BytesIO(data)
    upload.name = name
    started = time.perf_counter()
    response = client.post(URL, {"archive": upload, "round": ""})
    return response, response.content.decode(), time.perf_counter() - started


def assert_refused(client: Any, data: bytes, name: str, *words: str, within: float = 20.0) -> str:
    before = counts()
    response, text, took = post(client, data, name)
    assert response.status_code == 200, text[:500]
    assert all(w in text for w in words), (words, text[text.find("errornote") - 200 :][:800])
    assert counts() == before  # no run, no audit entry, no kept archive
    assert took < within
    return text


def tar_bytes(members: list[tuple[str, bytes | None]], *, mode: str = "w:gz", **options: Any) -> bytes:
    """A tar of (name, data) members; data None makes a folder."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode, **options) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tree_tarball(root: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(root, arcname="mlperf")
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------ the admin upload


def test_a_zip_with_a_bad_crc_is_refused_naming_the_member(admin_client: Any) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("mlperf/systems/a.json", b'{"system_name": "x"}' * 50)
    data = bytearray(buffer.getvalue())
    data[data.index(b'{"system_name"') + 5] ^= 0x01  # stored data changed, its CRC not
    assert_refused(admin_client, bytes(data), "bad-crc.zip", "mlperf/systems/a.json", "CRC")


@pytest.mark.parametrize(
    "members",
    [
        [("t/a", b"file"), ("t/a/b", b"under a file")],
        [("t/a/b", b"x"), ("t/a", b"a file where a folder is")],
        [("t/a", b"x"), ("t/a", None)],
        [("t/a", b"x"), ("t/a", b"again")],
    ],
)
@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_a_file_and_a_folder_of_the_same_name_are_refused(admin_client: Any, members: Any, kind: str) -> None:
    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in members:
                with warnings.catch_warnings():  # zipfile warns of the duplicate this test is about
                    warnings.simplefilter("ignore")
                    archive.writestr(name + "/" if data is None else name, data or b"")
        data_bytes = buffer.getvalue()
    else:
        data_bytes = tar_bytes(members)
    text = assert_refused(admin_client, data_bytes, f"same-name.{kind}", "t/a")
    assert "cannot also be" in text or "twice" in text or "same name" in text


def test_a_truncated_tar_gz_is_refused(admin_client: Any, tree: Path) -> None:
    whole = tree_tarball(tree)
    for cut in (len(whole) // 2, len(whole) - 30, 40):
        text = assert_refused(admin_client, whole[:cut], "truncated.tar.gz", "errornote")
        assert "damaged or truncated" in text or "not a readable tar file" in text
        assert "Traceback" not in text


def test_a_small_tar_gz_that_inflates_beyond_the_bound_stops_at_the_bound(admin_client: Any, settings: Any) -> None:
    settings.BENCHREG_IMPORT_MAX_UNPACKED_BYTES = 16 * 1024 * 1024
    bomb = tar_bytes([("t/zeros.bin", bytes(256 * 1024 * 1024))], compresslevel=9)
    assert len(bomb) < 512 * 1024  # a 256 MiB member in well under a megabyte
    assert_refused(admin_client, bomb, "bomb.tar.gz", "more than 16,777,216 bytes", within=5)


def test_a_pax_header_that_inflates_beyond_the_bound_is_refused(admin_client: Any, settings: Any) -> None:
    settings.BENCHREG_IMPORT_MAX_UNPACKED_BYTES = 8 * 1024 * 1024
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("t/a")
        info.pax_headers = {"comment": "x" * (64 * 1024 * 1024)}
        archive.addfile(info, io.BytesIO(b""))
    assert_refused(admin_client, buffer.getvalue(), "pax.tar.gz", "more than 8,388,608 bytes", within=5)


def test_too_many_members_are_refused_as_they_are_counted(admin_client: Any, settings: Any) -> None:
    settings.BENCHREG_IMPORT_MAX_MEMBERS = 50
    members: list[tuple[str, bytes | None]] = [(f"t/{n}.txt", b"") for n in range(500)]
    assert_refused(admin_client, tar_bytes(members), "many.tar.gz", "50 entries")


def test_a_member_name_that_is_not_utf8_is_refused_before_anything_is_imported(admin_client: Any, tree: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="latin-1") as archive:
        archive.add(tree, arcname="mlperf")
        info = tarfile.TarInfo(f"mlperf/results/{SYSTEM}/notes-café.txt")  # written as latin-1 bytes
        info.size = 2
        archive.addfile(info, io.BytesIO(b"hi"))
    text = assert_refused(admin_client, buffer.getvalue(), "latin1.tar.gz", "notes-caf\\xe9.txt", "UTF-8")
    assert "stored" not in text.split("errornote")[-1][:300]


def test_a_systems_json_nested_200000_deep_refuses_its_results_with_the_reason(admin_client: Any, tree: Path) -> None:
    (tree / "systems" / f"{SYSTEM}.json").write_text("[" * 200_000 + "]" * 200_000)
    before = counts()
    response, text, took = post(admin_client, tree_tarball(tree), "deep.tar.gz")
    assert response.status_code == 200 and took < 20
    assert f"systems/{SYSTEM}.json" in text and "nested deeper" in text
    runs, audit, uploads = counts()
    assert runs == before[0] and uploads == before[2]  # nothing stored, the archive not kept
    assert audit == before[1] + 1  # only the import's own record, that it stored nothing


def test_an_archive_is_stored_only_once_it_was_validated_and_imported(admin_client: Any, tree: Path) -> None:
    response, text, _ = post(admin_client, tree_tarball(tree), "good.tar.gz")
    assert response.status_code == 200 and "3 stored" in text
    assert len(kept_uploads()) == 1 and kept_uploads()[0].endswith("good.tar.gz")


# ------------------------------------------------------------------------------------------ unpack, directly


def test_unpack_counts_inflated_bytes_and_distrusts_declared_sizes(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("t/zeros.bin", bytes(64 * 1024 * 1024))
    with pytest.raises(ArchiveError, match="more than 1,048,576 bytes"):
        unpack(io.BytesIO(buffer.getvalue()), "zeros.zip", tmp_path / "a", max_bytes=1024 * 1024)
    assert (tmp_path / "a" / "t" / "zeros.bin").stat().st_size <= 1024 * 1024  # stopped at the bound
    raw = bytearray(buffer.getvalue())
    central = raw.rindex(b"PK\x01\x02")
    raw[central + 24 : central + 28] = (10).to_bytes(4, "little")  # the directory now claims 10 bytes
    with pytest.raises(ArchiveError, match=r"t/zeros\.bin: cannot be unpacked.*CRC"):
        unpack(io.BytesIO(bytes(raw)), "lying.zip", tmp_path / "b", max_bytes=1024 * 1024)


def test_unpack_refuses_garbage_with_a_reason(tmp_path: Path) -> None:
    for name, data in (
        ("x.zip", b"PK\x03\x04" + os.urandom(200)),
        ("x.tar.gz", gzip.compress(os.urandom(3000))),
        ("x.tgz", b"\x1f\x8b" + os.urandom(100)),
        ("x.tar", b""),
        ("x.tar.gz", zlib.compress(b"not gzip")),
    ):
        with pytest.raises(ArchiveError) as refused:
            unpack(io.BytesIO(data), name, tmp_path / name)
        assert str(refused.value)


# ------------------------------------------------------------------------------------------ the importer (CLI)


class _Deadline:
    """Fails the test instead of hanging it, should a walk loop."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        def expired(*_: Any) -> None:
            raise TimeoutError(f"still running after {self.seconds} s")

        signal.signal(signal.SIGALRM, expired)
        signal.alarm(self.seconds)

    def __exit__(self, *_: Any) -> None:
        signal.alarm(0)


def run_import(path: Path, capsys: Any) -> tuple[str, bool]:
    refused = False
    with _Deadline(120):
        try:
            call_command("import_results", "mlperf", str(path), "--no-progress", "--full")
        except CommandError:
            refused = True
    return capsys.readouterr().out, refused


def test_a_link_loop_in_results_ends_and_is_reported(tree: Path, capsys: Any) -> None:
    (tree / "results" / "x").symlink_to(".")
    (tree / "results" / SYSTEM / "loop").symlink_to("..")
    out, refused = run_import(tree, capsys)
    assert not refused and "3 stored" in out
    assert "results/x" in out and "not followed" in out
    assert Submission.objects.count() == 3


def test_links_out_of_the_tree_are_not_read(tree: Path, tmp_path: Path, capsys: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "system.json"
    shutil.copy(tree / "systems" / f"{SYSTEM}.json", secret)
    (tree / "systems" / f"{SYSTEM}.json").unlink()
    (tree / "systems" / f"{SYSTEM}.json").symlink_to(secret)
    (tree / "results" / SYSTEM / "etc").symlink_to("/etc")
    (tree / "notes.txt").symlink_to("/etc/hostname")
    out, refused = run_import(tree, capsys)
    assert refused and "leads out of the tree" in out
    assert "/etc" not in out.replace("results/" + SYSTEM + "/etc", "")  # nothing under /etc was listed or read
    assert Submission.objects.count() == 0
    files = {f.path for f in mlperf.parse_tree(tree).skipped}
    assert f"results/{SYSTEM}/etc" in files and "notes.txt" in files


def test_a_nul_in_an_imported_string_refuses_that_result_with_the_pointer(tree: Path, capsys: Any) -> None:
    path = tree / "systems" / f"{SYSTEM}.json"
    system = json.loads(path.read_text())
    system["system_name"] += "\u0000"
    system["sw_notes"] = "bad \ud800 surrogate"
    path.write_text(json.dumps(system))
    out, refused = run_import(tree, capsys)
    assert refused and "/system/name: holds a NUL character" in out and "lone surrogate" in out
    assert "Traceback" not in out and Submission.objects.count() == 0


@pytest.mark.postgres
def test_a_nul_in_an_imported_string_is_refused_on_postgresql(tree: Path, capsys: Any) -> None:
    test_a_nul_in_an_imported_string_refuses_that_result_with_the_pointer(tree, capsys)


def test_file_names_that_are_not_utf8_are_listed_escaped_not_crashed_on(tree: Path, capsys: Any) -> None:
    (tree / os.fsdecode(b"caf\xe9.txt")).write_text("x")
    (tree / "results" / os.fsdecode(b"sys\xff")).mkdir()
    out, refused = run_import(tree, capsys)
    assert not refused and "3 stored" in out
    assert "caf\\xe9.txt" in out and "sys\\xff" in out


# ------------------------------------------------------------------------------------------ report verification


def _deflated_zeros(size: int) -> bytes:
    packer, chunk = zlib.compressobj(9), bytes(1 << 20)
    return b"".join([*(packer.compress(chunk) for _ in range(size >> 20)), packer.flush()])


@pytest.fixture(scope="module")
def bomb_pdf(tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any) -> tuple[bytes, bytes, Path]:
    """(signed, bombed, certificate PEM path): a report-shaped PDF signed as the registry signs reports, then an
    incremental update pointing its evidence attachment at 512 MiB of deflated zeros (about 0.5 MB)."""
    from django.test import override_settings
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.embed import EmbeddedFileObject, FileSpec, embed_file
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    from registry.reports.signing import sign_pdf, signing_identity
    from verifier import ATTACHMENT_NAME, REASON_PREFIX

    data_dir = tmp_path_factory.mktemp("bomb-keys")
    body = (
        b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] "
        b"/Count 1 >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>\nendobj\n"
    )
    offsets = b"".join(b"%010d 00000 n \n" % body.index(b"%d 0 obj" % n) for n in (1, 2, 3))
    pdf = (
        body
        + b"xref\n0 4\n0000000000 65535 f \n"
        + offsets
        + b"trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % len(body)
    )
    writer = IncrementalPdfFileWriter(io.BytesIO(pdf), strict=False)
    embed_file(
        writer,
        FileSpec(
            file_spec_string=ATTACHMENT_NAME,
            embedded_data=EmbeddedFileObject.from_file_data(writer, data=b"{}", mime_type="application/json"),
        ),
    )
    out = io.BytesIO()
    writer.write(out)
    with override_settings(DATA_DIR=data_dir):
        identity = signing_identity()
        signed = sign_pdf(out.getvalue(), identity=identity, reason=f"{REASON_PREFIX}sha256:{'0' * 64}")
        cert = data_dir / "cert.pem"
        cert.write_bytes(identity.public_pem())
    writer = IncrementalPdfFileWriter(io.BytesIO(signed), strict=False)
    name = generic.NameObject
    stream = generic.StreamObject(
        {name("/Type"): name("/EmbeddedFile"), name("/Filter"): name("/FlateDecode")},
        encoded_data=_deflated_zeros(512 << 20),
    )
    spec = generic.DictionaryObject(
        {
            name("/Type"): name("/Filespec"),
            name("/F"): generic.TextStringObject(ATTACHMENT_NAME),
            name("/EF"): generic.DictionaryObject({name("/F"): writer.add_object(stream)}),
        }
    )
    writer.root[name("/Names")] = generic.DictionaryObject(
        {
            name("/EmbeddedFiles"): generic.DictionaryObject(
                {
                    name("/Names"): generic.ArrayObject(
                        [generic.TextStringObject(ATTACHMENT_NAME), writer.add_object(spec)]
                    )
                }
            )
        }
    )
    writer.update_root()
    out = io.BytesIO()
    writer.write(out)
    return signed, out.getvalue(), cert


PEAK = """
import sys, time, tracemalloc
from verifier.report import load_certificates, verify_report
pdf, certs = open(sys.argv[1], "rb").read(), load_certificates(open(sys.argv[2], "rb").read())
tracemalloc.start()
started = time.perf_counter()
verdict = verify_report(pdf, certificates=certs, log_keys=[])
print(tracemalloc.get_traced_memory()[1], time.perf_counter() - started, *sorted(c.code for c in verdict.reasons))
"""


@pytest.mark.slow  # run early: tests/conftest.py starts slow modules first
def test_a_flate_bomb_in_an_incremental_update_inflates_no_more_than_the_bound(bomb_pdf: Any, tmp_path: Path) -> None:
    _signed, bombed, cert = bomb_pdf
    assert len(bombed) < 1024 * 1024
    pdf = tmp_path / "bomb.pdf"
    pdf.write_bytes(bombed)
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(pdf), str(cert)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    peak, seconds, *codes = done.stdout.split()
    assert "within-bounds" in codes
    assert int(peak) < 100 * 1024 * 1024, f"peak {int(peak) / 2**20:.0f} MiB"  # was 513 MiB before the bound
    assert float(seconds) < 30


def test_the_verify_endpoint_refuses_a_flate_bomb_with_problem_json(bomb_pdf: Any, client: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    signed, bombed, _cert = bomb_pdf
    started = time.perf_counter()
    answer = client.post(
        "/api/v1/reports/verify", {"file": SimpleUploadedFile("r.pdf", bombed, content_type="application/pdf")}
    )
    assert time.perf_counter() - started < 30
    assert answer.status_code == 413, answer.content[:500]
    assert answer["Content-Type"].startswith("application/problem+json")
    body = answer.json()
    assert body["code"] == "inflated-too-large" and "inflates beyond" in body["detail"]
    assert body["errors"][0]["pointer"] == "/file"
    # the file without the bomb is verified as before (a verdict, not a refusal)
    plain = client.post(
        "/api/v1/reports/verify", {"file": SimpleUploadedFile("r.pdf", signed, content_type="application/pdf")}
    )
    assert plain.status_code == 200 and plain.json()["verdict"] == "INVALID"
