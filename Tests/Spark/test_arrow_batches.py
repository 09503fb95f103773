"""The job's Arrow batches without Spark (the functions mapInArrow runs, driven by hand): a batch over the library's
memory stays whole for as long as anyone holds it, whatever the consumer does between batches, and is wiped and
freed once dropped; a token column too large for 32-bit offsets goes to the engine as large_binary.
"""
import json
import os

import pyarrow as pa
import pytest

from test_spark import MERCHANTS, TRUST_ROOT, VECTORS, archive_lines, job  # puts the package on sys.path

import applepay  # noqa: E402  (after test_spark)


@pytest.fixture
def options():
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, at_signing_time=True)
    engine.max_item_bytes = job.DEFAULT_MAX_ITEM_BYTES
    return engine


@pytest.fixture
def handles(monkeypatch):
    """Every ap_batch_result the job's functions make, by handle value."""
    made = []
    decrypt_arrow = applepay.Decryptor.decrypt_arrow

    def recording(self, *args, **kwargs):
        columns = decrypt_arrow(self, *args, **kwargs)
        made.append(columns.handle.value)
        return columns

    monkeypatch.setattr(applepay.Decryptor, "decrypt_arrow", recording)
    return made


def expected_lines(options, tokens):
    """Each token's line as its own call writes it, copied out at once."""
    with options.decryptor() as decryptor:
        columns = decryptor.decrypt_arrow(pa.array(tokens, pa.binary()), reference=applepay.REFERENCE_SIGNING_TIME,
                                          lanes=1, unjudged=True, at_signing_time=True)
        lines = columns.lines.to_pylist()
        columns.free()
    return lines


def test_batches_stay_whole_while_held_past_the_next_one_and_are_freed_when_dropped(options, handles):
    # mapInArrow's consumer wrote each batch before pulling the next; one that pulls several first (list())
    # found the earlier batches' library memory wiped and freed.
    tokens = archive_lines()
    chunks = [tokens[k:k + 4] for k in range(0, len(tokens), 4)]
    batches = [pa.RecordBatch.from_arrays([pa.array(range(k, k + len(chunk)), pa.int64()), pa.array(chunk, pa.binary())],
                                          ["o", "t"]) for k, chunk in zip(range(0, len(tokens), 4), chunks)]
    held = list(job._token_batches(options, False, iter(batches)))
    assert len(held) == len(chunks) >= 3 and len(handles) == len(chunks)
    for batch, chunk in zip(held, chunks):
        assert batch.column("line").to_pylist() == expected_lines(options, chunk)
    assert b"applicationPrimaryAccountNumber" in b"".join(held[0].column("line").to_pylist())
    # Dropped: every result freed (its lines wiped) at once, by reference counting alone (no cycle to collect).
    del held, batch
    for handle in handles:
        assert applepay.lib.ap_batch_result_free(handle) == applepay.INVALID_HANDLE


def test_a_split_is_staged_whole_and_only_its_keys_reach_spark(options, handles, monkeypatch, tmp_path):
    # The job's own pass (_split_keys): calls of 3 tokens. Its lines go to the staged file (mode 0600), never to
    # Spark, which gets the split's replay keys in their buckets and its summary alone.
    monkeypatch.setattr(job.staging, "_CALL_TOKENS", 3)  # read where _decrypt_split runs
    plan = job.plan_splits([os.path.join(VECTORS, "archive.jsonl")], 1 << 30)
    records = list(job._split_keys(options, False, plan, str(tmp_path), 3, iter([0])))
    summary, = [json.loads(value) for _, (kind, value) in records if kind == "summary"]
    tokens = [line.strip(b" \t\r") for line in archive_lines() if line.strip(b" \t\r")]
    assert summary["items"] == len(tokens) and len(handles) == -(-len(tokens) // 3)
    blobs = [(bucket, value) for bucket, (kind, value) in records if kind == "keys"]
    keys = [value[k:k + 16] for _, value in blobs for k in range(0, len(value), 16)]
    assert 0 < len(keys) < 2 * len(tokens)
    assert all(int.from_bytes(value[k:k + 8], "little") % 3 == bucket
               for bucket, value in blobs for k in range(0, len(value), 16))
    # One bucket's reduce finds the keys held twice, and only those.
    assert list(job._repeated_keys([(0, ("keys", keys[0] + keys[1])), (0, ("keys", keys[1]))])) == [("key", keys[1])]
    staged, = os.listdir(tmp_path)
    assert staged == f"split-00000-{summary['staged']}.arrow"
    assert os.stat(tmp_path / staged).st_mode & 0o077 == 0
    with pa.memory_map(str(tmp_path / staged)) as source:
        items = [row for batch in pa.ipc.open_stream(source) for row in batch.to_pylist()]
    assert len(items) == len(tokens)
    for k, row in enumerate(items):
        want = expected_lines(options, [tokens[k]])[0]
        # The job writes index i with no source; only the head differs from a one-token call's line.
        assert row["i"] == k and row["line"][job._head_length(k):] == want[job._head_length(0):], f"item {k}"


def test_a_token_column_over_32_bit_offsets_is_large_binary_and_decrypts_alike(options, monkeypatch):
    tokens = archive_lines()[:5]
    assert pa.types.is_binary(job._binary_array(tokens, pa).type)
    # The type is what matters: the limit lowered, a few tokens make the column that 2 GiB would.
    monkeypatch.setattr(job.engine, "_BINARY_LIMIT", 100)  # read where _binary_array runs
    column = job._binary_array(tokens, pa)
    assert pa.types.is_large_binary(column.type) and column.to_pylist() == tokens
    with options.decryptor() as decryptor:
        batch, = job._item_batch(decryptor, options, False, 0, tokens, list(range(1, 6)), 0, pa)
        lines = batch.column("line").to_pylist()
        del batch
    assert lines == expected_lines(options, tokens)
    assert [json.loads(line).get("error", "ok") for line in lines].count("ok") >= 3


def test_lines_past_32_bit_offsets_are_refused_never_wrapped():
    # Spark's binary column has 32-bit offsets: a large_binary column whose last offset is past 2 GiB must not be
    # narrowed into wrapped offsets (out-of-bounds reads). The 2 GiB data buffer is allocated, never touched.
    offsets = pa.array([0, 2**31], pa.int64()).buffers()[1]
    wide = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, pa.allocate_buffer(2**31)])
    with pytest.raises(ValueError, match="over 2 GiB"):
        job._narrowed(wide, pa.binary(), pa)
