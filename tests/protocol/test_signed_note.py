"""Signed notes and checkpoints: Go sumdb/note vectors, C2SP examples, round trips and tampering."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.signed_note import (
    AmbiguousKeyError,
    Checkpoint,
    InvalidSignatureError,
    MalformedKeyError,
    MalformedNoteError,
    NoteError,
    UnknownKeyError,
    key_id,
    open_note,
    parse_signer_key,
    parse_verifier_key,
    sign_note,
    signer_key,
    verifier_key,
    verify_note,
)
from protocol.transparency import MerkleTree, leaf_hash

V: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "signed_note_vectors.json").read_text())
PETER_VKEY: str = V["peter_verifier_key"]
PETER_SKEY: str = V["peter_signer_key"]
ENOCH_VKEY: str = V["enoch_verifier_key"]
TEXT: str = V["text"]
PETER_SIG: str = V["peter_signature_line"]
ENOCH_SIG: str = V["enoch_signature_line"]
GO_NOTE = (TEXT + "\n" + PETER_SIG).encode()

# A fixed key for our own checkpoints, so failures reproduce.
LOG_NAME = "benchreg.example/audit"
LOG_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"benchreg test log key").digest())
LOG_VKEY = verifier_key(LOG_NAME, LOG_KEY.public_key())
WITNESS_NAME = "witness.example/w1"
WITNESS_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"benchreg test witness key").digest())


def checkpoint_of(size: int) -> Checkpoint:
    tree = MerkleTree([leaf_hash(str(i).encode()) for i in range(size)])
    return Checkpoint(LOG_NAME, size, tree.root())


def signed_checkpoint(size: int = 5) -> bytes:
    return sign_note(checkpoint_of(size).body(), LOG_NAME, LOG_KEY)


# -- keys: Go's published vectors ----------------------------------------------------------------------------------


def test_the_go_keys_parse_and_re_encode_byte_for_byte() -> None:
    verifier = parse_verifier_key(PETER_VKEY)
    signer = parse_signer_key(PETER_SKEY)
    assert verifier.name == signer.name == "PeterNeumann"
    assert verifier.key_id == signer.key_id == int(V["peter_key_id"], 16)
    assert key_id("PeterNeumann", verifier.public_key) == 0xC74F20A3
    assert verifier_key("PeterNeumann", verifier.public_key) == PETER_VKEY
    assert verifier_key("PeterNeumann", signer.private_key.public_key()) == PETER_VKEY
    assert signer_key("PeterNeumann", signer.private_key) == PETER_SKEY
    assert parse_verifier_key(ENOCH_VKEY).key_id == int(V["enoch_key_id"], 16)


def test_the_key_id_is_the_truncated_hash_of_name_newline_algorithm_and_key() -> None:
    public = parse_verifier_key(PETER_VKEY).public_key.public_bytes_raw()
    digest = hashlib.sha256(b"PeterNeumann\n\x01" + public).digest()
    assert key_id("PeterNeumann", parse_verifier_key(PETER_VKEY).public_key) == int.from_bytes(digest[:4], "big")


def _manglings(key: str) -> list[str]:
    """Every proper substring and every one-character increment, as Go's TestNewVerifier/TestNewSigner try."""
    out = [key[i:j] for i in range(len(key) + 1) for j in range(i + 1, len(key) + 1) if (i, j) != (0, len(key))]
    out += [key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :] for i in range(len(key))]
    return out


def test_every_mangled_verifier_key_is_refused() -> None:
    for bad in [*_manglings(PETER_VKEY), *V["bad_verifier_keys"]]:
        with pytest.raises(MalformedKeyError):
            parse_verifier_key(bad)


def test_every_mangled_signer_key_is_refused() -> None:
    for bad in _manglings(PETER_SKEY):
        with pytest.raises(MalformedKeyError):
            parse_signer_key(bad)


def test_key_names_with_spaces_or_plus_are_refused() -> None:
    for name in ["", "a b", "a+b", "tab\there", "nbsp\u00a0"]:
        with pytest.raises(MalformedKeyError):
            verifier_key(name, LOG_KEY.public_key())
        with pytest.raises(MalformedKeyError):
            signer_key(name, LOG_KEY)


def test_generated_keys_round_trip_through_their_strings() -> None:
    private = Ed25519PrivateKey.generate()
    signer = parse_signer_key(signer_key("example.com/log", private))
    verifier = parse_verifier_key(verifier_key("example.com/log", private.public_key()))
    assert signer.key_id == verifier.key_id
    assert verifier.verify(b"hi\n", signer.private_key.sign(b"hi\n"))


# -- notes: Go's published vectors ---------------------------------------------------------------------------------


def test_signing_the_go_text_reproduces_the_go_note_byte_for_byte() -> None:
    signer = parse_signer_key(PETER_SKEY)
    assert sign_note(TEXT.encode(), signer.name, signer.private_key) == GO_NOTE


def test_the_go_note_verifies_with_the_go_key() -> None:
    assert verify_note(GO_NOTE, [PETER_VKEY]) == (TEXT.encode(), ["PeterNeumann"])
    assert verify_note(GO_NOTE, [parse_verifier_key(PETER_VKEY)]) == (TEXT.encode(), ["PeterNeumann"])


def test_signatures_by_unknown_keys_are_ignored_and_known_ones_all_count() -> None:
    both = (TEXT + "\n" + PETER_SIG + ENOCH_SIG).encode()
    assert verify_note(both, [PETER_VKEY])[1] == ["PeterNeumann"]
    assert verify_note(both, [ENOCH_VKEY])[1] == ["EnochRoot"]
    assert verify_note(both, [PETER_VKEY, ENOCH_VKEY])[1] == ["PeterNeumann", "EnochRoot"]


def test_a_note_with_no_known_signer_reports_who_signed_it() -> None:
    both = (TEXT + "\n" + PETER_SIG + ENOCH_SIG + ENOCH_SIG).encode()
    with pytest.raises(UnknownKeyError) as caught:
        verify_note(both, [])
    assert caught.value.signers == [("PeterNeumann", 0xC74F20A3), ("EnochRoot", 0xAF0CFE78)]
    assert "PeterNeumann+c74f20a3" in str(caught.value)


def test_a_failed_signature_by_a_known_key_rejects_the_note() -> None:
    corrupted = (TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]).encode()
    with pytest.raises(InvalidSignatureError, match=r"PeterNeumann\+c74f20a3"):
        verify_note(corrupted, [PETER_VKEY])


def test_a_tampered_text_fails_the_go_signature() -> None:
    tampered = GO_NOTE.replace(b"cryptography", b"cryptographY")
    with pytest.raises(InvalidSignatureError):
        verify_note(tampered, [PETER_VKEY])


def test_repeated_signatures_by_one_key_count_once() -> None:
    note = (TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG).encode()
    assert verify_note(note, [PETER_VKEY])[1] == ["PeterNeumann"]


def test_two_verifier_keys_with_one_name_and_id_are_ambiguous_when_used() -> None:
    with pytest.raises(AmbiguousKeyError, match=r"EnochRoot\+af0cfe78"):
        verify_note((TEXT + "\n" + ENOCH_SIG).encode(), [ENOCH_VKEY, PETER_VKEY, ENOCH_VKEY])
    assert verify_note(GO_NOTE, [ENOCH_VKEY, PETER_VKEY, ENOCH_VKEY])[1] == ["PeterNeumann"]


@pytest.mark.parametrize(
    "message",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "Bad Name")[:-1],
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        TEXT + "\n" + PETER_SIG * 101,
        TEXT + "\n" + PETER_SIG.replace("—", "-"),
        TEXT + "\n" + "— PeterNeumann AAAA\n",  # fewer than 4 + 1 signature bytes
        TEXT + "\n" + "— PeterNeumann not*base64\n",
    ],
)
def test_malformed_notes_are_refused(message: str) -> None:
    with pytest.raises(MalformedNoteError):
        verify_note(message.encode(), [PETER_VKEY])


def test_a_note_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(MalformedNoteError):
        verify_note(b"\xff" + GO_NOTE, [PETER_VKEY])


def test_sign_refuses_texts_that_cannot_be_notes() -> None:
    for body in [b"abc", b"", b"tab\there\n", b"\xff\n"]:
        with pytest.raises(MalformedNoteError):
            sign_note(body, LOG_NAME, LOG_KEY)


# -- checkpoints ---------------------------------------------------------------------------------------------------


def test_the_c2sp_example_checkpoint_parses_and_is_reported_as_unknown() -> None:
    note = V["c2sp_checkpoint"].encode()
    checkpoint = Checkpoint.parse(note.split(b"\n\n")[0] + b"\n")
    assert checkpoint.origin == "example.com/behind-the-sofa"
    assert checkpoint.size == 20852163
    assert checkpoint.root_hash == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert checkpoint.extensions == ()
    with pytest.raises(UnknownKeyError) as caught:
        open_note(note, [LOG_VKEY])
    assert [name for name, _ in caught.value.signers] == ["example.com/behind-the-sofa"]


def test_a_checkpoint_body_is_origin_size_and_base64_root_each_on_a_line() -> None:
    checkpoint = Checkpoint("example.com/log", 20852163, bytes(range(32)), ("ext one", "ext two"))
    expected = f"example.com/log\n20852163\n{base64.b64encode(bytes(range(32))).decode()}\next one\next two\n"
    assert checkpoint.body() == expected.encode()
    assert Checkpoint.parse(checkpoint.body()) == checkpoint


def test_a_signed_checkpoint_opens_to_the_same_checkpoint() -> None:
    note = signed_checkpoint(5)
    assert open_note(note, [LOG_VKEY]) == (checkpoint_of(5), [LOG_NAME])
    assert note.decode().splitlines()[-1].startswith(f"— {LOG_NAME} ")


def test_a_witness_cosignature_is_kept_and_verified_when_its_key_is_known() -> None:
    note = signed_checkpoint(5)
    body = checkpoint_of(5).body()
    cosigned = note + sign_note(body, WITNESS_NAME, WITNESS_KEY)[len(body) + 1 :]
    witness_vkey = verifier_key(WITNESS_NAME, WITNESS_KEY.public_key())
    assert open_note(cosigned, [LOG_VKEY])[1] == [LOG_NAME]
    assert open_note(cosigned, [LOG_VKEY, witness_vkey])[1] == [LOG_NAME, WITNESS_NAME]


def test_a_tampered_checkpoint_body_fails_its_signature() -> None:
    note = signed_checkpoint(5)
    for tampered in [note.replace(b"\n5\n", b"\n6\n", 1), note.replace(LOG_NAME.encode(), b"other.example/log", 1)]:
        with pytest.raises(InvalidSignatureError):
            open_note(tampered, [LOG_VKEY])


def test_a_flipped_bit_in_the_signature_fails() -> None:
    note = signed_checkpoint(5)
    head, _, encoded = note.rstrip(b"\n").rpartition(b" ")
    raw = bytearray(base64.b64decode(encoded))
    raw[10] ^= 0x01
    with pytest.raises(InvalidSignatureError):
        open_note(head + b" " + base64.b64encode(bytes(raw)) + b"\n", [LOG_VKEY])


def test_a_flipped_bit_in_the_key_id_makes_the_signer_unknown() -> None:
    note = signed_checkpoint(5)
    head, _, encoded = note.rstrip(b"\n").rpartition(b" ")
    raw = bytearray(base64.b64decode(encoded))
    raw[0] ^= 0x80
    with pytest.raises(UnknownKeyError):
        open_note(head + b" " + base64.b64encode(bytes(raw)) + b"\n", [LOG_VKEY])


def test_a_checkpoint_signed_by_another_key_is_unknown() -> None:
    note = sign_note(checkpoint_of(5).body(), LOG_NAME, WITNESS_KEY)
    with pytest.raises(UnknownKeyError):
        open_note(note, [LOG_VKEY])


def test_a_signed_note_that_is_not_a_checkpoint_is_malformed() -> None:
    note = sign_note(b"just one line\n", LOG_NAME, LOG_KEY)
    assert verify_note(note, [LOG_VKEY])[1] == [LOG_NAME]
    with pytest.raises(MalformedNoteError):
        open_note(note, [LOG_VKEY])


ROOT_B64 = base64.b64encode(bytes(32)).decode()


@pytest.mark.parametrize(
    "body",
    [
        f"log\n5\n{ROOT_B64}",  # no final newline
        "log\n5\n",
        f"\n5\n{ROOT_B64}\n",  # empty origin
        f"log\n05\n{ROOT_B64}\n",  # leading zero
        f"log\n-5\n{ROOT_B64}\n",
        f"log\n+5\n{ROOT_B64}\n",
        f"log\n 5\n{ROOT_B64}\n",
        f"log\n5.0\n{ROOT_B64}\n",
        f"log\n{2**64}\n{ROOT_B64}\n",
        f"log\n{'9' * 5000}\n{ROOT_B64}\n",
        f"log\n5\n{base64.b64encode(bytes(31)).decode()}\n",
        f"log\n5\n{ROOT_B64.rstrip('=')}\n",  # unpadded
        "log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n",  # non-canonical trailing bits
        f"log\n5\n{ROOT_B64}\n\n",  # empty extension line
        f"log\n5\n{ROOT_B64}\nbell\x07\n",
    ],
)
def test_malformed_checkpoint_bodies_are_refused(body: str) -> None:
    with pytest.raises(MalformedNoteError):
        Checkpoint.parse(body.encode())


def test_checkpoints_with_invalid_fields_cannot_be_built() -> None:
    for args in [("", 1, bytes(32)), ("a\nb", 1, bytes(32)), ("log", -1, bytes(32)), ("log", 1, bytes(31))]:
        with pytest.raises(MalformedNoteError):
            Checkpoint(*args)
    with pytest.raises(MalformedNoteError):
        Checkpoint("log", 1, bytes(32), ("",))


def test_every_error_is_a_note_error() -> None:
    for error in (MalformedNoteError, MalformedKeyError, InvalidSignatureError, UnknownKeyError, AmbiguousKeyError):
        assert issubclass(error, NoteError)
    assert issubclass(MalformedKeyError, ValueError)


line = st.text(st.characters(min_codepoint=0x20, exclude_categories=["Cs"]), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    origin=line,
    size=st.integers(0, 2**64 - 1),
    root_hash=st.binary(min_size=32, max_size=32),
    extensions=st.lists(line, max_size=3).map(tuple),
)
def test_any_checkpoint_round_trips_through_sign_and_open(
    origin: str, size: int, root_hash: bytes, extensions: tuple[str, ...]
) -> None:
    checkpoint = Checkpoint(origin, size, root_hash, extensions)
    assert Checkpoint.parse(checkpoint.body()) == checkpoint
    assert open_note(sign_note(checkpoint.body(), LOG_NAME, LOG_KEY), [LOG_VKEY]) == (checkpoint, [LOG_NAME])
