"""One token's outcome (Result), the lines the engine writes for a caller that judges replays itself, and a
batch's results as Arrow columns over library memory (BatchColumns)."""
import ctypes
import threading
from ctypes import POINTER, byref, c_size_t, c_uint8, c_void_p

from applepay._library import (WALLET_APPLE_PAY, WALLET_GOOGLE_PAY, WALLET_SAMSUNG_PAY, BUFFER_TOO_SMALL, DEFAULT_MAX_ITEM_BYTES, LINE_MASK_PAN, LINE_VERIFIED_AT_SIGNING_TIME,
                               NO_REPLAY_KEYS, OK, _BatchColumns, _Handle, code_name, lib)


class Result(_Handle):
    """One token's outcome. The payment JSON lives in library memory that free() wipes.

    Safe to share between threads: each method copies what it reads out of library memory under the
    result's lock, and free() takes the same lock, so a free() in one thread can never release the
    memory another thread is copying (ctypes releases the GIL during every library call)."""

    def __init__(self, handle):
        self._lock = threading.RLock()
        self.handle = handle if handle is not None and getattr(handle, "value", handle) else None

    @staticmethod
    def _free(handle):
        return lib.ap_result_free(handle)

    def free(self):
        with self._lock:
            return super().free()

    @property
    def code(self):
        with self._lock:
            return lib.ap_result_code(self._live())

    @property
    def ok(self):
        return self.code == OK

    @property
    def code_name(self):
        return code_name(self.code)

    def _text(self, fn):
        with self._lock:
            value = fn(self._live())  # c_char_p: copied into bytes before the lock is released
        return None if value is None else value.decode()

    @property
    def message(self):
        return self._text(lib.ap_result_message)

    @property
    def field(self):
        return self._text(lib.ap_result_field)

    @property
    def transaction_id(self):
        return self._text(lib.ap_result_transaction_id)

    @property
    def wallet(self):
        """WALLET_APPLE_PAY, WALLET_GOOGLE_PAY or WALLET_SAMSUNG_PAY: the wallet the token was read as (by its shape), whose field
        a replay names; WALLET_NONE for a result that is ABI misuse."""
        with self._lock:
            return lib.ap_result_wallet(self._live())

    def payment_json_address(self):
        """(address, length) of the library-owned payment JSON, without copying it: valid only until free(),
        so a caller that shares this Result between threads must not free it while using the address."""
        length = c_size_t(0)
        pointer = lib.ap_result_payment_json(self._live(), byref(length))
        return (ctypes.cast(pointer, c_void_p).value if pointer else None), length.value

    def payment_json(self):
        """A copy of the payment JSON as bytes (Python cannot wipe it: copy only when you must), or None."""
        with self._lock:
            address, length = self.payment_json_address()
            return None if address is None else ctypes.string_at(address, length)

    @property
    def replay_keys(self):
        """(transaction_key, content_key), 16 bytes each, when the token verified and decrypted (also when a
        batch judged it REPLAYED_TRANSACTION); None otherwise. Deduplicate exactly as the engine does: in input
        order, a verified token is a replay of claims.get(transaction_key, claims.get(content_key)) when that
        is set; otherwise it claims both keys (setdefault to its index)."""
        transaction_key, content_key = (c_uint8 * 16)(), (c_uint8 * 16)()
        with self._lock:
            code = lib.ap_result_replay_keys(self._live(), transaction_key, content_key)
        if code == NO_REPLAY_KEYS:
            return None
        if code != OK:
            raise ValueError(f"ap_result_replay_keys: {code_name(code)}")
        return bytes(transaction_key), bytes(content_key)

    def line(self, index, source, mask_pan=False, at_signing_time=False, replay_of=None):
        """This result as `applepay-decrypt batch` writes its line (bytes, newline included), by the engine's
        own writer: index is the item's 0-based position in the whole input, source its label ("PATH:LINE").
        replay_of=N writes the replayedTransaction line of a verified token whose keys item N claimed (no
        payment). The line holds card data unless mask_pan: the ctypes buffer is wiped, the returned bytes
        cannot be."""
        # ctypes wraps out-of-range integers silently (replay_of=2**64-1 would pass -1 and write the payment,
        # index=2**64 would write index 0): refuse them here, as the library refuses them in range.
        if not isinstance(index, int) or not 0 <= index < 2 ** 63:
            raise ValueError(f"index must be an int in [0, 2**63), not {index!r}")
        if replay_of is not None and (not isinstance(replay_of, int) or not 0 <= replay_of < index):
            raise ValueError(f"replay_of must be None or an int in [0, index), not {replay_of!r}")
        source = source.encode() if isinstance(source, str) else source
        flags = (LINE_MASK_PAN if mask_pan else 0) | (LINE_VERIFIED_AT_SIGNING_TIME if at_signing_time else 0)
        replay = -1 if replay_of is None else replay_of
        length, capacity = c_size_t(0), 4096
        while True:
            buffer = (c_uint8 * capacity)()
            try:
                with self._lock:
                    code = lib.ap_result_line(self._live(), index, source, len(source), flags, replay, buffer, capacity, byref(length))
                if code == OK:
                    return bytes(buffer[:length.value])
            finally:
                ctypes.memset(buffer, 0, capacity)
            if code != BUFFER_TOO_SMALL:
                raise ValueError(f"ap_result_line: {code_name(code)}")
            capacity = length.value


def replay_line(index, source, transaction_id, claimed_by, source_line=None, at_signing_time=False,
                wallet=WALLET_APPLE_PAY):
    """The replayedTransaction line (bytes, newline included) of item `index`, a verified token whose keys item
    `claimed_by` claimed: written by the engine's writer, for a caller that judges replays itself (Spark).
    `wallet` is the replayed token's (Result.wallet, BatchColumns.wallets), whose field the line names."""
    if not isinstance(index, int) or not isinstance(claimed_by, int) or not 0 <= claimed_by < index < 2 ** 63:
        raise ValueError(f"need 0 <= claimed_by < index < 2**63, not {claimed_by!r}, {index!r}")
    source = source.encode() if isinstance(source, str) else source
    tid = transaction_id.encode() if isinstance(transaction_id, str) else transaction_id
    if wallet not in (WALLET_APPLE_PAY, WALLET_GOOGLE_PAY, WALLET_SAMSUNG_PAY):
        raise ValueError(f"wallet must be WALLET_APPLE_PAY, WALLET_GOOGLE_PAY or WALLET_SAMSUNG_PAY, not {wallet!r}")
    flags = (LINE_VERIFIED_AT_SIGNING_TIME if at_signing_time else 0) | (wallet << 8)
    line_no = -1 if source_line is None else source_line
    length, capacity = c_size_t(0), 1024
    while True:
        buffer = (c_uint8 * capacity)()
        code = lib.ap_replay_line(index, source, len(source), line_no, tid, claimed_by, flags, buffer, capacity,
                                  byref(length))
        if code == OK:
            return bytes(buffer[:length.value])
        if code != BUFFER_TOO_SMALL:
            raise ValueError(f"ap_replay_line: {code_name(code)}")
        capacity = length.value


class _BatchMemory(_Handle):
    """The ap_batch_result behind a BatchColumns' arrays: every Arrow buffer over its memory holds this object
    (and nothing else does, so no reference cycle keeps it), so the result is freed, its lines wiped, as soon
    as the last array, slice or record batch over it is dropped, and never while one is still in use."""

    def __init__(self, handle):
        self.handle = handle

    @staticmethod
    def _free(handle):
        return lib.ap_batch_result_free(handle)


class BatchColumns:
    """The results of Decryptor.decrypt_arrow as Arrow arrays over library memory (no copy): `lines`
    (large_binary: each line as `applepay-decrypt batch` writes it, newline included; CARD DATA), `codes`
    (int32), `replay_keys` (fixed_size_binary(32): transaction key + content key, null unless the token
    verified and decrypted), `transaction_ids` (large_string, null where none), `wallets` (uint8: WALLET_*).

    Two ways to release them: free() (or the end of a `with` block) wipes the lines now and drops this object's
    arrays; the library memory is freed at once unless an array, slice or record batch over it is still held
    elsewhere, which then reads zero bytes where the lines were (never freed memory) and frees it when it goes.
    Or drop every reference to the arrays without calling free(): the memory is then wiped and freed when the
    last one goes, which is the way to hand the arrays to a consumer that may hold them for a while (Spark).
    Copy what must outlive free() (pyarrow cannot wipe copies)."""

    def __init__(self, handle):
        memory = self._memory = _BatchMemory(handle)
        view = _BatchColumns()
        _check_abi(lib.ap_batch_result_columns(handle, byref(view)), "ap_batch_result_columns")
        import pyarrow as pa

        n = self.count = view.count

        def buffer(address, size):
            return pa.foreign_buffer(address, size, base=memory) if size else pa.py_buffer(b"")

        def int64s(address):
            return ctypes.cast(address, POINTER(ctypes.c_int64))

        def validity(address):
            # An Arrow validity bitmap (bit i of byte i // 8, least significant first) of the 0/1 flag bytes,
            # without pyarrow.compute, whose import costs about a second in every new process (Spark's workers).
            flags = ctypes.string_at(address, n) if n else b""
            try:
                import numpy as np
            except ImportError:
                bits = bytearray((n + 7) // 8)
                for i, flag in enumerate(flags):
                    if flag:
                        bits[i >> 3] |= 1 << (i & 7)
                return pa.py_buffer(bytes(bits))
            return pa.py_buffer(np.packbits(np.frombuffer(flags, np.uint8) != 0, bitorder="little").tobytes())

        line_end = int64s(view.line_offsets)[n]
        self._wipe_lines = (view.lines, line_end)
        self.lines = pa.Array.from_buffers(pa.large_binary(), n, [None, buffer(view.line_offsets, 8 * (n + 1)),
                                                                   buffer(view.lines, line_end)])
        self.codes = pa.Array.from_buffers(pa.int32(), n, [None, buffer(view.codes, 4 * n)])
        self.replay_keys = pa.Array.from_buffers(pa.binary(32), n, [validity(view.has_replay_keys),
                                                                      buffer(view.replay_keys, 32 * n)])
        tid_end = int64s(view.transaction_id_offsets)[n]
        self.transaction_ids = pa.Array.from_buffers(
            pa.large_string(), n, [validity(view.has_transaction_id), buffer(view.transaction_id_offsets, 8 * (n + 1)),
                                   buffer(view.transaction_ids, tid_end)])
        self.wallets = pa.Array.from_buffers(pa.uint8(), n, [None, buffer(lib.ap_batch_result_wallets(handle), n)])

    @property
    def handle(self):
        return self._memory.handle if self._memory is not None else None

    def free(self):
        """Wipes the lines now and drops this object's arrays (OK; again: OK, nothing to do). The memory is freed
        with the last array over it, here at once unless one is held elsewhere (which then reads zeros)."""
        if self._memory is None:
            return OK
        address, size = self._wipe_lines
        if size:
            ctypes.memset(address, 0, size)
        self.lines = self.codes = self.replay_keys = self.transaction_ids = self.wallets = None
        self._memory = None
        return OK

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()


def _check_abi(code, what):
    if code != OK:
        raise ValueError(f"{what}: {code_name(code)}")


def oversized_line_result(max_item_bytes=DEFAULT_MAX_ITEM_BYTES):
    """The Result of a JSONL line longer than max_item_bytes (newline excluded), as `applepay-decrypt batch
    --max-item-bytes` reports it: MALFORMED_TOKEN, field "$". For a caller that reads archives itself and
    does not pass such a line to the library; write it with .line() like any other."""
    handle = c_void_p()
    code = lib.ap_result_new_oversized_line(max_item_bytes, byref(handle))
    if not handle.value:
        raise ValueError(f"ap_result_new_oversized_line: {code_name(code)}")
    return Result(handle)
