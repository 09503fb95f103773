"""The engine in Arrow batches (ap_decrypt_batch_arrow): one call's columns, the head of the lines it writes,
the typed row of a line, and binary columns built and read without copies."""
import json
import os
import time

import applepay

_OK = "ok"


def _head_length(local_index):
    """Length of the head `{"index":N,"source":"",` the engine writes for a line rendered with index N and no
    source; the job writes each line's final head (global index, "PATH:LINE") in its place when it knows them."""
    return len('{"index":,"source":"",') + len(str(local_index))


_TIMING = bool(os.environ.get("APPLEPAY_SPARK_TIMING"))
_engine_seconds = [0.0]


def _decrypt_arrow(decryptor, options, tokens, first_index, mask_pan):
    """BatchColumns of one call: unjudged (Spark judges every replay, across all partitions)."""
    started = time.time()
    columns = decryptor.decrypt_arrow(tokens, reference=options.reference, lanes=1, first_index=first_index,
                                      mask_pan=mask_pan, at_signing_time=options.at_signing_time, unjudged=True)
    _engine_seconds[0] += time.time() - started
    return columns


def _keys_array(columns, pa):
    """The replay keys (fixed_size_binary(32)) as a binary column over the same data: offsets 0, 32, 64, ..."""
    import numpy as np

    keys = columns.replay_keys
    validity, data = keys.buffers()
    offsets = np.arange(0, 32 * (len(keys) + 1), 32, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), len(keys), [validity, pa.py_buffer(offsets), data])


def _narrowed(array, type_, pa):
    """A large_binary or large_string column of BatchColumns as binary or string (32-bit offsets) over the same
    data: what Array.cast does, without importing pyarrow.compute (which costs a new Python worker a second)."""
    import numpy as np

    validity, offsets, data = array.buffers()
    wide = np.frombuffer(offsets, np.int64, len(array) + 1)
    # 32-bit offsets cannot reach past 2 GiB: refuse rather than let them wrap (Spark would read out of bounds).
    if len(array) and int(wide[-1]) > 2**31 - 1:
        raise ValueError(f"one engine call wrote {int(wide[-1])} bytes of {type_} (over 2 GiB): lower the batch size")
    return pa.Array.from_buffers(type_, len(array), [validity, pa.py_buffer(wide.astype(np.int32)), data])


def _typed_row(line, head, code, tid):
    """(transactionId, code, message, field, payment) of one engine line; `head` is where its head ends."""
    line = bytes(line)
    if code == applepay.OK:
        start = line.index(b',"payment":', head) + len(b',"payment":')
        return tid, _OK, None, None, bytes(line[start:len(line) - 2]).decode()
    if code >= 100:
        return tid, applepay.code_name(code), "NULL token, empty or over AP_MAX_TOKEN_LENGTH", None, None
    member = json.loads(b"{" + bytes(line[head:]))
    return member.get("transactionId"), member["error"], member["message"], member.get("field"), None


def _replay_row(tid, claimed_by, wallet):
    """(transactionId, code, message, field, payment) of a verified token of `wallet` judged a replay of item
    claimed_by: read from the engine's own replay line, whose message and field are its wallet's."""
    index = claimed_by + 1
    line = applepay.replay_line(index, b"", tid, claimed_by, wallet=wallet)
    return _typed_row(line, _head_length(index), applepay.REPLAYED_TRANSACTION, tid)


# The most bytes a binary (32-bit offsets) array built here holds; more is a large_binary array.
_BINARY_LIMIT = (1 << 31) - 1


def _binary_array(values, pa):
    """A binary array of `values` (bytes-like) built from one join and their lengths: pa.array() over Python
    bytes costs several times more per value. Over _BINARY_LIMIT bytes in all, a large_binary array (64-bit
    offsets), passed on as it is: a cast to binary would fail."""
    import numpy as np

    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, values), np.int64, len(values)), out=offsets[1:])
    if offsets[-1] > _BINARY_LIMIT:
        return pa.Array.from_buffers(pa.large_binary(), len(values), [None, pa.py_buffer(offsets),
                                                                       pa.py_buffer(b"".join(values))])
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                            pa.py_buffer(b"".join(values))])


def _binary_views(column):
    """k -> memoryview of a binary column's value k (no copy)."""
    import numpy as np

    _, offsets, data = column.buffers()
    at = np.frombuffer(offsets, dtype=np.int32, count=len(column) + 1 + column.offset)[column.offset:]
    view = memoryview(data) if data is not None else memoryview(b"")
    return lambda k: view[at[k]:at[k + 1]]
