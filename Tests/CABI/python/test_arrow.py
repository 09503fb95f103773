# ap_decrypt_batch_arrow through Decryptor.decrypt_arrow: an Arrow column in by address, Arrow columns out. Each
# row's line is ap_result_line's for ap_decrypt_batch's result of the same token (so the CLI's: test_lines.py);
# unjudged, a replay keeps its own verdict and keys; replay_line writes Result.line(replay_of=...)'s bytes.
import ctypes
import datetime
import json
from pathlib import Path

import pyarrow as pa
import pytest

import applepay

ROOT = Path(__file__).resolve().parents[3]
VECTORS = ROOT / "Vectors"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text())
NOW = int(datetime.datetime.fromisoformat(MANIFEST["now"].replace("Z", "+00:00")).timestamp())


@pytest.fixture(scope="module")
def decryptor():
    merchants = [applepay.Merchant.certificate((VECTORS / f"merchants/{k}.cert.pem").read_bytes(),
                                               (VECTORS / f"merchants/{k}.key.pem").read_bytes()) for k in ("ec", "rsa")]
    with applepay.Decryptor(merchants, insecure_test_root_pem=(VECTORS / MANIFEST["trustRoot"]).read_bytes()) as d:
        yield d


@pytest.fixture(scope="module")
def tokens():
    lines = [line for line in (VECTORS / "archive.jsonl").read_bytes().split(b"\n") if line]
    return lines[:4] + [None, b""] + lines[4:]  # a null and an empty item: INVALID_ARGUMENT, no line


@pytest.fixture(scope="module")
def reference(decryptor, tokens):
    code, results = decryptor.decrypt_batch(tokens, reference=NOW, lanes=1)
    assert code == applepay.OK
    yield results
    for result in results:
        result.free()


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary(), pa.string()])
@pytest.mark.parametrize("mask_pan", [False, True])
def test_each_row_is_the_batch_line_of_its_token_in_either_offset_width(decryptor, tokens, reference, kind, mask_pan):
    values = [t.decode() if t is not None and kind == pa.string() else t for t in tokens]
    with decryptor.decrypt_arrow(pa.array(values, kind), reference=NOW, lanes=2, first_index=70, source="a.jsonl",
                                 mask_pan=mask_pan) as columns:
        assert columns.count == len(tokens)
        for i, result in enumerate(reference):
            assert columns.codes[i].as_py() == result.code
            if result.code == applepay.INVALID_ARGUMENT:
                assert columns.lines[i].as_py() == b"" and not columns.replay_keys[i].is_valid
                continue
            assert columns.lines[i].as_py() == result.line(70 + i, "a.jsonl", mask_pan=mask_pan)
            keys = result.replay_keys
            assert columns.replay_keys[i].as_py() == (keys[0] + keys[1] if keys else None)
            assert columns.transaction_ids[i].as_py() == result.transaction_id


def test_a_slice_starts_at_its_own_first_token(decryptor, tokens, reference):
    with decryptor.decrypt_arrow(pa.array(tokens, pa.binary()).slice(6, 5), reference=NOW, first_index=6) as columns:
        assert [line.as_py() for line in columns.lines] == [reference[6 + k].line(6 + k, "") for k in range(5)]


def test_unjudged_every_verified_token_keeps_its_payment_and_replay_line_writes_the_verdict(decryptor, tokens, reference):
    replays = [i for i, result in enumerate(reference) if result.code == applepay.REPLAYED_TRANSACTION]
    assert replays
    with decryptor.decrypt_arrow(pa.array(tokens, pa.binary()), reference=NOW, unjudged=True) as columns:
        for i in replays:
            assert columns.codes[i].as_py() == applepay.OK and b'"payment":{' in columns.lines[i].as_py()
            claimed = int(reference[i].message.rsplit(" ", 1)[1])
            assert applepay.replay_line(i, "a.jsonl", columns.transaction_ids[i].as_py(), claimed, source_line=3) == \
                reference[i].line(i, "a.jsonl:3")


def test_misuse_is_refused_and_a_freed_result_is_gone(decryptor, tokens):
    with pytest.raises(TypeError):
        decryptor.decrypt_arrow(pa.array([1, 2]))
    with pytest.raises(ValueError, match="invalidArgument"):
        decryptor.decrypt_arrow(pa.array([], pa.binary()))
    with pytest.raises(ValueError):
        applepay.replay_line(3, "a", None, 3)
    columns = decryptor.decrypt_arrow(pa.array(tokens[:2], pa.binary()), reference=NOW)
    handle = columns.handle
    assert columns.free() == applepay.OK and columns.free() == applepay.OK
    assert applepay.lib.ap_batch_result_free(handle) == applepay.INVALID_HANDLE


def test_an_array_kept_past_free_reads_zeros_never_freed_memory(decryptor, tokens):
    # A with-block's free() while the caller still holds an array: the lines are wiped at once and the memory
    # stays until that array goes (it read freed memory before: garbage, or a crash).
    with decryptor.decrypt_arrow(pa.array(tokens[:3], pa.binary()), reference=NOW) as columns:
        lines = columns.lines
        handle = columns.handle
        assert any(b"applicationPrimaryAccountNumber" in line for line in lines.to_pylist())
    assert columns.handle is None
    for line in lines.to_pylist():
        assert line == bytes(len(line))
    view = applepay._BatchColumns()
    assert applepay.lib.ap_batch_result_columns(handle, ctypes.byref(view)) == applepay.OK  # still live
    del lines
    assert applepay.lib.ap_batch_result_columns(handle, ctypes.byref(view)) == applepay.INVALID_HANDLE  # freed
