"""The job's first pass, on the executors: each split read once, decrypted a call at a time and its engine
lines staged in OUT (only the split's replay keys and summary go to Spark), and the staged files themselves."""
import json
import os
import stat
import sys
import time

import applepay
from applepay.spark.engine import _TIMING, _binary_array, _decrypt_arrow, _engine_seconds
from applepay.spark.splits import _check_unchanged, _owned_segments


# Tokens handed to the engine per call: thousands, so the call's fixed cost is nothing per token.
_CALL_TOKENS = 4096
# Item order keys of the job: split << 40 | item within the split, increasing in input order.
_ITEM_BITS = 40


def _split_keys(options, mask_pan, plan, staging, buckets, numbers):
    """mapPartitions over split numbers (into `plan`): each split read once, its items decrypted a call at a time,
    their lines staged in `staging` (see _Staging), never handed to Spark.

    Yields (bucket, record) pairs for the key shuffle: per split, one ("keys", bytes) record per bucket holding the
    split's replay keys (16 bytes each, a token's two when they differ, see _key_pairs) that fall in it, and one ("summary", JSON) record
    (the split's line and item counts and its staging attempt), in bucket 0."""
    import numpy as np
    import pyarrow as pa

    decryptor = options.decryptor()
    try:
        for number in numbers:
            keys = []
            for part in _decrypt_split(decryptor, options, mask_pan, plan[number], staging, pa):
                if isinstance(part, dict):
                    summary = part
                else:
                    keys.append(part)
            keys = np.concatenate(keys) if keys else np.zeros((0, 16), np.uint8)
            # Replay keys are digests: their first eight bytes spread them evenly.
            bucket = keys[:, :8].copy().view("<u8").ravel() % np.uint64(buckets) if len(keys) else np.zeros(0, np.uint64)
            for b in range(buckets):
                chosen = keys[bucket == b]
                if len(chosen):
                    yield b, ("keys", chosen.tobytes())
            yield 0, ("summary", json.dumps(summary))
    finally:
        decryptor.free()


def _repeated_keys(records):
    """mapPartitions over one bucket of the key shuffle: the summaries as they came, and each key held more than
    once, found by sorting the bucket's keys (numpy): ("summary", JSON) and ("key", bytes) records."""
    import numpy as np

    blobs = []
    for _, (kind, value) in records:
        if kind == "summary":
            yield kind, value
        else:
            blobs.append(value)
    if blobs:
        keys = np.frombuffer(b"".join(blobs), np.uint8).reshape(-1, 16).copy().view("V16").ravel()
        distinct, counts = np.unique(keys, return_counts=True)
        for key in distinct[counts > 1]:
            yield "key", key.tobytes()


def _decrypt_split(decryptor, options, mask_pan, split, staging, pa):
    path, start, end = split["path"], split["start"], split["end"]
    started = time.time()
    _check_unchanged(split)
    tokens, numbers, first = [], [], 0
    items = lines = 0
    stage = _Staging(staging, split["s"], pa)

    def flush():
        for batch in _item_batch(decryptor, options, mask_pan, split["s"], tokens, numbers, first, pa):
            yield _key_pairs(stage.write(batch), 0)[1]
        tokens.clear()
        numbers.clear()

    try:
        for segment in _owned_segments(path, start, end, options.max_item_bytes):
            if segment[0] == "end":
                lines = segment[1]
            elif segment[0] == "oversized":
                # An oversized line: the CLI's line for it, without the line itself ever held whole.
                if tokens:
                    yield from flush()
                stage.write(_oversized_batch(options, split["s"], items, segment[1], pa))
                items += 1
                first = items
            else:
                _, run_numbers, run_contents = segment
                at = 0
                while at < len(run_contents):
                    if not tokens:
                        first = items
                    take = min(_CALL_TOKENS - len(tokens), len(run_contents) - at)
                    tokens.extend(run_contents[at:at + take])
                    numbers.extend(run_numbers[at:at + take])
                    items += take
                    at += take
                    if len(tokens) == _CALL_TOKENS:
                        yield from flush()
        if tokens:
            yield from flush()
        _check_unchanged(split)
        stage.close()
    finally:
        stage.discard()
    if _TIMING:
        print(f"applepay.spark: timing split {split['s']}: {items} items, {time.time() - started:.2f} s in the task "
              f"(engine calls {_engine_seconds[0]:.2f} s so far in this worker)", file=sys.stderr)
    yield {"s": split["s"], "n": lines, "items": items, "staged": stage.attempt}


def _item_batch(decryptor, options, mask_pan, s, tokens, numbers, first, pa):
    """Yields one record batch (i, n, line, code, tid, keys, wallet) over the library's own column buffers (no copy). They
    are not freed here: the library's memory is wiped and freed when the last array over it is dropped
    (BatchColumns), so the batch stays whole however long its reader holds it."""
    # first_index = the split's item number: every line's head then carries its item number (see _head_length).
    columns = _decrypt_arrow(decryptor, options, _binary_array(tokens, pa), first, mask_pan)
    n = len(tokens)
    yield pa.RecordBatch.from_arrays(
        [pa.array(range(first, first + n), pa.int64()), pa.array(numbers, pa.int64()), columns.lines, columns.codes,
         columns.transaction_ids, columns.replay_keys, columns.wallets], _STAGED_COLUMNS)


def _oversized_batch(options, s, item, number, pa):
    result = applepay.oversized_line_result(options.max_item_bytes)
    try:
        line = result.line(item, "", at_signing_time=options.at_signing_time)
        code = result.code
        wallet = result.wallet
    finally:
        result.free()
    return pa.RecordBatch.from_arrays(
        [pa.array([item], pa.int64()), pa.array([number], pa.int64()), pa.array([line], pa.large_binary()),
         pa.array([code], pa.int32()), pa.nulls(1, pa.large_string()), pa.nulls(1, pa.binary(32)),
         pa.array([wallet], pa.uint8())],
        schema=_staged_schema(pa))


class _Staging:
    """One split's engine lines, staged between the pass that decrypts them and the one that writes them with their
    final heads: an Arrow stream (_staged_schema) in the job's staging directory, which only the user can enter
    (0700, inside OUT), written under a temporary name and renamed when whole to split-S-ATTEMPT.arrow, ATTEMPT
    being random and this attempt's own. The split's summary row names the attempt, and the writing pass reads
    that attempt's file: the lines written are always those the driver's numbering counted, even when a task
    ran twice (a lost executor, a speculative copy) over input that changed in between."""

    def __init__(self, directory, s, pa):
        self.directory, self.s, self.pa = directory, s, pa
        self.attempt = os.urandom(16).hex()
        self.temporary = os.path.join(directory, f".split-{s:05d}-{self.attempt}")
        self.sink = open(_new_private_file(self.temporary), "wb", buffering=0)
        self.writer = pa.ipc.new_stream(self.sink, _staged_schema(pa))

    def write(self, batch):
        """Stages the engine lines of `batch` (a _staged_schema batch with a `keys` column); returns the batch."""
        self.writer.write_batch(self.pa.RecordBatch.from_arrays(
            [batch.column(name) for name in _STAGED_COLUMNS], schema=_staged_schema(self.pa)))
        return batch

    def close(self):
        self.writer.close()
        self.sink.close()
        os.replace(self.temporary, _staged_path(self.directory, self.s, self.attempt))
        self.temporary = None

    def discard(self):
        if self.temporary is not None:
            self.sink.close()
            os.unlink(self.temporary)


def _staged_path(directory, s, attempt):
    if not (len(attempt) == 32 and all(c in "0123456789abcdef" for c in attempt)):
        raise ValueError(f"split {s}: not a staging attempt: {attempt!r}")
    return os.path.join(directory, f"split-{s:05d}-{attempt}.arrow")


_STAGED_COLUMNS = ["i", "n", "line", "code", "tid", "keys", "wallet"]


def _staged_schema(pa):
    """A staged split: per item, its number within the split (i), its line's number (n), the engine's line written
    with index i and no source, its code, transactionId, replay keys (transaction key ‖ content key) and wallet
    (applepay.WALLET_*, whose field a replay names)."""
    return pa.schema([("i", pa.int64()), ("n", pa.int64()), ("line", pa.large_binary()), ("code", pa.int32()),
                      ("tid", pa.large_string()), ("keys", pa.binary(32)), ("wallet", pa.uint8())])


def _key_pairs(batch, s):
    """The replay keys of a staged batch (or an engine call's): one per distinct key of each token that holds keys
    (its transaction key, and its content key when that differs), as numpy arrays: values (order << 1) | role,
    the order being (s << _ITEM_BITS) | i and the role 0 for the transaction key, 1 for the content key; and
    the keys, 16 bytes each (an (m, 16) uint8 array)."""
    import numpy as np

    keys = batch.column("keys")
    n = len(keys)
    validity, data = keys.buffers()
    held = (np.ones(n, bool) if validity is None
            else np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:n].astype(bool))
    pairs = np.frombuffer(data, np.uint8, 32 * n).reshape(n, 2, 16)[held]
    orders = (np.int64(s) << _ITEM_BITS) | np.frombuffer(batch.column("i").buffers()[1], np.int64, n)[held]
    distinct = (pairs[:, 0] != pairs[:, 1]).any(axis=1)
    return (np.concatenate([orders << 1, (orders[distinct] << 1) | 1]),
            np.concatenate([pairs[:, 0], pairs[distinct, 1]]))


def _staged_stream(staging, s, attempt, path, pa):
    """A split's staged stream, mapped: opened without following a link, and only a regular file of this user's
    (the staging folder is 0700 in OUT; this holds even if OUT's parent lets others swap names)."""
    import mmap

    try:
        descriptor = os.open(_staged_path(staging, s, attempt),
                             os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO must not block
    except FileNotFoundError:
        raise RuntimeError(f"the staged lines of split {s} of {path} are gone (removed while the job ran): "
                           "refused") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise RuntimeError(f"the staged lines of split {s} of {path} are not this job's file: refused")
        mapped = mmap.mmap(descriptor, 0, prot=mmap.PROT_READ) if info.st_size else b""
    finally:
        os.close(descriptor)
    return pa.BufferReader(pa.py_buffer(mapped))


def _new_private_file(path):
    """A descriptor of a new file only its user can read (0600 whatever the umask): never an existing name, never
    through a link. Every file the job writes (staged lines, part files, _SUCCESS) is made here."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _created(path):
    os.close(_new_private_file(path))
