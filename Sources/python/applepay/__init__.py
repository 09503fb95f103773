"""Python binding of libapplepay (the C ABI in Sources/ApplePayC/include/applepay.h), standard library ctypes only.

Install with `pip install ./Sources/python`, or use it from a checkout with PYTHONPATH=Sources/python.
libapplepay.so is looked up in $APPLEPAY_LIBRARY, then beside this file (the package directory), then in
the checkout's .build/release/ and .build/debug/ (when this file is Sources/python/applepay/__init__.py).

From the checkout's root, on a bundled test token (CI runs this example with doctest):

    >>> import applepay
    >>> read = lambda path: open(path, "rb").read()
    >>> merchant = applepay.Merchant.certificate(read("Vectors/merchants/ec.cert.pem"), read("Vectors/merchants/ec.key.pem"))
    >>> with applepay.Decryptor([merchant], insecure_test_root_pem=read("Vectors/trust/test-root.pem")) as d:
    ...     code, result = d.decrypt(read("Vectors/tokens/ec-3dsecure.json"), 1772366460)  # 2026-03-01T12:01:00Z
    ...     if code == applepay.OK:
    ...         payment = result.payment_json()  # bytes: copy only what you need
    ...     if result is not None:  # None only for misuse codes (an empty token, a freed handle)
    ...         _ = result.free()  # wipes the library's copy of the payment JSON
    >>> applepay.code_name(code)  # a rejected token raises nothing: its code says why
    'ok'
    >>> b"applicationPrimaryAccountNumber" in payment
    True

Every call returns a code; misuse (empty tokens, raw stale handles) gives INVALID_ARGUMENT or INVALID_HANDLE
as in C, never a crash. Config errors raise ConfigurationError (code and message). free() on a Result, Decryptor
or Config clears its handle: a second free() does nothing, the finalizer frees only what is still held, and
any other method called after free() raises FreedError.
"""
import ctypes
import os
import threading
from ctypes import POINTER, byref, c_char, c_char_p, c_int32, c_int64, c_size_t, c_uint8, c_uint32, c_void_p

ABI_VERSION = 6
OK = 0
MALFORMED_TOKEN = 1
UNSUPPORTED_VERSION = 2
INVALID_SIGNATURE = 3
UNTRUSTED_CERTIFICATE_CHAIN = 4
SIGNING_TIME_OUT_OF_RANGE = 5
UNKNOWN_MERCHANT_KEY = 6
DECRYPTION_FAILED = 7
INVALID_PAYLOAD = 8
REPLAYED_TRANSACTION = 9
PAYMENT_REQUEST_MISMATCH = 10
INTERMEDIATE_KEY_EXPIRED = 11
MESSAGE_EXPIRED = 12
INVALID_ARGUMENT = 100
INVALID_HANDLE = 101
INVALID_CONFIGURATION = 102
INTERNAL_ERROR = 103
INVALID_PAYMENT_REQUEST = 104
BUFFER_TOO_SMALL = 105
NO_REPLAY_KEYS = 106

LINE_MASK_PAN = 1
LINE_VERIFIED_AT_SIGNING_TIME = 2
BATCH_UNJUDGED = 4
DEFAULT_MAX_ITEM_BYTES = 1 << 20

REFERENCE_NOW = -(2 ** 63)
REFERENCE_SIGNING_TIME = -(2 ** 63) + 1
REFERENCE_SECONDS = 0
REFERENCE_MILLISECONDS = 1
MAX_TOKEN_LENGTH = 1 << 20


class _Error(ctypes.Structure):
    _fields_ = [("code", c_int32), ("message", c_char * 256)]


class _BatchColumns(ctypes.Structure):
    _fields_ = [("count", c_size_t), ("line_offsets", c_void_p), ("lines", c_void_p), ("codes", c_void_p),
                ("replay_keys", c_void_p), ("has_replay_keys", c_void_p), ("transaction_id_offsets", c_void_p),
                ("transaction_ids", c_void_p), ("has_transaction_id", c_void_p)]


_EMPTY = ctypes.c_uint8(0)
LIBRARY_NAME = "libapplepay.so"


def library_path():
    """Where libapplepay.so is loaded from: $APPLEPAY_LIBRARY, beside this package, or the checkout's build."""
    if os.environ.get("APPLEPAY_LIBRARY"):
        return os.environ["APPLEPAY_LIBRARY"]
    here = os.path.dirname(os.path.abspath(__file__))
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    candidates = [os.path.join(here, LIBRARY_NAME)] + [
        os.path.join(checkout, ".build", kind, LIBRARY_NAME) for kind in ("release", "debug")]
    for path in candidates:
        if os.path.exists(path):
            return path
    raise OSError(f"{LIBRARY_NAME} not found: set APPLEPAY_LIBRARY, put it beside {here}, or build it in the checkout "
                  f"(swift build -c release --product applepay); looked in {', '.join(candidates)}")


def _load():
    lib = ctypes.CDLL(library_path())
    u8p, err = POINTER(c_uint8), POINTER(_Error)
    sig = {
        "ap_code_name": (c_char_p, [c_int32]),
        "ap_version": (c_uint32, []),
        "ap_config_new": (c_int32, [POINTER(c_void_p)]),
        "ap_config_free": (c_int32, [c_void_p]),
        "ap_config_add_merchant_certificate": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_char_p, err]),
        "ap_config_add_merchant_identifier": (c_int32, [c_void_p, c_char_p, c_char_p, c_size_t, c_char_p, err]),
        "ap_config_add_merchant_pkcs12": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, c_char_p, err]),
        "ap_config_add_merchant_pkcs11": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, c_char_p, err]),
        "ap_config_set_signing_time_window": (c_int32, [c_void_p, c_int64, err]),
        "ap_config_set_insecure_test_root_pem": (c_int32, [c_void_p, c_char_p, c_size_t, err]),
        "ap_config_set_reference_unit": (c_int32, [c_void_p, c_uint32, err]),
        "ap_config_set_google_root_keys": (c_int32, [c_void_p, c_char_p, c_size_t, err]),
        "ap_config_add_google_recipient_id": (c_int32, [c_void_p, c_char_p, err]),
        "ap_config_add_google_merchant_key": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, err]),
        "ap_config_add_google_merchant_pkcs11": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, err]),
        "ap_decryptor_new": (c_int32, [c_void_p, POINTER(c_void_p), err]),
        "ap_decryptor_free": (c_int32, [c_void_p]),
        "ap_decrypt": (c_int32, [c_void_p, c_char_p, c_size_t, c_int64, POINTER(c_void_p)]),
        "ap_decrypt_expecting": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, POINTER(c_void_p), err]),
        "ap_decrypt_batch": (c_int32, [c_void_p, POINTER(c_char_p), POINTER(c_size_t), c_size_t, c_int64, c_uint32, POINTER(c_void_p)]),
        "ap_result_code": (c_int32, [c_void_p]),
        "ap_result_message": (c_char_p, [c_void_p]),
        "ap_result_field": (c_char_p, [c_void_p]),
        "ap_result_transaction_id": (c_char_p, [c_void_p]),
        "ap_result_payment_json": (u8p, [c_void_p, POINTER(c_size_t)]),
        "ap_result_free": (c_int32, [c_void_p]),
        "ap_results_free": (c_int32, [POINTER(c_void_p), c_size_t]),
        "ap_result_replay_keys": (c_int32, [c_void_p, u8p, u8p]),
        "ap_result_line": (c_int32, [c_void_p, ctypes.c_uint64, c_char_p, c_size_t, c_uint32, c_int64, u8p, c_size_t, POINTER(c_size_t)]),
        "ap_result_new_oversized_line": (c_int32, [ctypes.c_uint64, POINTER(c_void_p)]),
        "ap_decrypt_batch_arrow": (c_int32, [c_void_p, c_void_p, c_uint32, c_void_p, c_size_t, ctypes.c_uint64, c_char_p,
                                             c_size_t, c_int64, c_uint32, c_uint32, POINTER(c_void_p)]),
        "ap_batch_result_columns": (c_int32, [c_void_p, POINTER(_BatchColumns)]),
        "ap_batch_result_free": (c_int32, [c_void_p]),
        "ap_replay_line": (c_int32, [ctypes.c_uint64, c_char_p, c_size_t, c_int64, c_char_p, ctypes.c_uint64, c_uint32, u8p,
                                     c_size_t, POINTER(c_size_t)]),
    }
    lib.ap_version.restype, lib.ap_version.argtypes = c_uint32, []
    # A library of another ABI version may lack a function or answer differently (applepay.h): refuse it
    # here, naming both versions and the file, rather than fail later in a call.
    if lib.ap_version() != ABI_VERSION:
        raise OSError(f"{lib._name} has ABI version {lib.ap_version()}, this package needs {ABI_VERSION}: "
                      f"install the matching library, or set APPLEPAY_LIBRARY to it")
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


lib = _load()


def code_name(code):
    return lib.ap_code_name(code).decode()


def version():
    return lib.ap_version()


class ConfigurationError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code_name(code)}: {message}")
        self.code, self.message = code, message


def _check(code, error=None):
    if code != OK:
        raise ConfigurationError(code, error.message.decode(errors="replace") if error is not None else "")


class Merchant:
    """A merchant's key material as bytes; loaded (and the library's copies wiped) when a Decryptor is made."""

    def __init__(self, kind, **fields):
        self.kind, self.fields = kind, fields

    @classmethod
    def certificate(cls, certificate, private_key, key_password=None, merchant_identifier=None):
        return cls("certificate", certificate=certificate, private_key=private_key, key_password=key_password,
                   merchant_identifier=merchant_identifier)

    @classmethod
    def identifier(cls, merchant_identifier, private_key, key_password=None):
        return cls("identifier", merchant_identifier=merchant_identifier, private_key=private_key, key_password=key_password)

    @classmethod
    def pkcs12(cls, pkcs12, password, merchant_identifier=None):
        return cls("pkcs12", pkcs12=pkcs12, password=password, merchant_identifier=merchant_identifier)

    @classmethod
    def pkcs11(cls, certificate, uri, merchant_identifier=None):
        """The private key stays in a PKCS#11 token: uri is an RFC 7512 URI with module-path= and pin-source= or pin-env=."""
        return cls("pkcs11", certificate=certificate, uri=uri, merchant_identifier=merchant_identifier)

    def _add(self, config, error):
        f = self.fields
        text = lambda s: s.encode() if isinstance(s, str) else s
        if self.kind == "certificate":
            return lib.ap_config_add_merchant_certificate(config, f["certificate"], len(f["certificate"]), f["private_key"],
                                                          len(f["private_key"]), text(f["key_password"]),
                                                          text(f["merchant_identifier"]), byref(error))
        if self.kind == "pkcs11":
            return lib.ap_config_add_merchant_pkcs11(config, f["certificate"], len(f["certificate"]), text(f["uri"]),
                                                     text(f["merchant_identifier"]), byref(error))
        if self.kind == "identifier":
            return lib.ap_config_add_merchant_identifier(config, text(f["merchant_identifier"]), f["private_key"],
                                                         len(f["private_key"]), text(f["key_password"]), byref(error))
        return lib.ap_config_add_merchant_pkcs12(config, f["pkcs12"], len(f["pkcs12"]), text(f["password"]),
                                                 text(f["merchant_identifier"]), byref(error))


class FreedError(ValueError):
    """A method was called on a Result, Decryptor or Config after its free()."""


class _Handle:
    """Owns one library handle: free() clears it (a second free() is a no-op), the finalizer frees what
    is still held, and methods called after free() raise FreedError instead of passing a stale handle."""

    _free = None
    handle = None

    def _live(self):
        handle = self.handle
        if handle is None:
            raise FreedError(f"this {type(self).__name__} has been freed")
        return handle

    def free(self):
        """Frees the handle; returns the library's code (OK), or OK without a call when already freed."""
        handle, self.handle = self.handle, None
        return OK if handle is None else type(self)._free(handle)

    def __del__(self):
        # At interpreter exit the module's globals may already be gone: then the process frees everything.
        try:
            self.free()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()


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


def replay_line(index, source, transaction_id, claimed_by, source_line=None, at_signing_time=False):
    """The replayedTransaction line (bytes, newline included) of item `index`, a verified token whose keys item
    `claimed_by` claimed: written by the engine's writer, for a caller that judges replays itself (Spark)."""
    if not isinstance(index, int) or not isinstance(claimed_by, int) or not 0 <= claimed_by < index < 2 ** 63:
        raise ValueError(f"need 0 <= claimed_by < index < 2**63, not {claimed_by!r}, {index!r}")
    source = source.encode() if isinstance(source, str) else source
    tid = transaction_id.encode() if isinstance(transaction_id, str) else transaction_id
    flags = LINE_VERIFIED_AT_SIGNING_TIME if at_signing_time else 0
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
    verified and decrypted), `transaction_ids` (large_string, null where none).

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
        self.lines = self.codes = self.replay_keys = self.transaction_ids = None
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


def _utf8(s):
    return s.encode() if isinstance(s, str) else s


class Config(_Handle):
    """An ap_config: merchants, trust anchor and window, and Google Pay's root keys, recipient ids and
    merchant keys (private key bytes, PEM or DER), from which Decryptors are made."""

    def __init__(self, merchants=(), insecure_test_root_pem=None, signing_time_window=None,
                 google_root_keys=None, google_recipient_ids=(), google_merchant_keys=(), reference_unit=None):
        handle = c_void_p()
        _check(lib.ap_config_new(byref(handle)))
        self.handle = handle
        try:
            for merchant in merchants:
                self.add_merchant(merchant)
            if google_root_keys is not None:
                self.set_google_root_keys(google_root_keys)
            for recipient_id in google_recipient_ids:
                self.add_google_recipient_id(recipient_id)
            for key in google_merchant_keys:
                self.add_google_merchant_key(key)
            if signing_time_window is not None:
                self.set_signing_time_window(signing_time_window)
            if insecure_test_root_pem is not None:
                self.set_insecure_test_root_pem(insecure_test_root_pem)
            if reference_unit is not None:
                self.set_reference_unit(reference_unit)
        except BaseException:
            self.free()
            raise

    @staticmethod
    def _free(handle):
        return lib.ap_config_free(handle)

    def add_merchant(self, merchant):
        error = _Error()
        _check(merchant._add(self._live(), error), error)

    def set_signing_time_window(self, seconds):
        error = _Error()
        _check(lib.ap_config_set_signing_time_window(self._live(), seconds, byref(error)), error)

    def set_reference_unit(self, unit):
        """What the decrypt calls' `reference` counts for Decryptors made afterwards: REFERENCE_SECONDS (the
        default) or REFERENCE_MILLISECONDS (Google Pay keys and messages expire to the millisecond)."""
        error = _Error()
        _check(lib.ap_config_set_reference_unit(self._live(), unit, byref(error)), error)

    def set_insecure_test_root_pem(self, pem):
        """TESTS ONLY: trusts this PEM root instead of Apple Root CA - G3."""
        error = _Error()
        _check(lib.ap_config_set_insecure_test_root_pem(self._live(), pem, len(pem), byref(error)), error)

    def set_google_root_keys(self, keys_json):
        """Google's root signing keys document (bytes of {"keys": [...]}), replacing any set before."""
        error = _Error()
        _check(lib.ap_config_set_google_root_keys(self._live(), keys_json, len(keys_json), byref(error)), error)

    def add_google_recipient_id(self, recipient_id):
        """A recipient id Google Pay tokens are accepted for: "merchant:ID" or "gateway:ID"."""
        error = _Error()
        _check(lib.ap_config_add_google_recipient_id(self._live(), _utf8(recipient_id), byref(error)), error)

    def add_google_merchant_key(self, private_key, key_password=None):
        """A Google Pay merchant private key (P-256, PEM or DER bytes), tried in the order added."""
        error = _Error()
        _check(lib.ap_config_add_google_merchant_key(self._live(), private_key, len(private_key), _utf8(key_password),
                                                     byref(error)), error)

    def add_google_merchant_pkcs11(self, public_key, uri):
        """A Google Pay merchant key in a PKCS#11 token: its public key (or certificate) and RFC 7512 URI."""
        error = _Error()
        _check(lib.ap_config_add_google_merchant_pkcs11(self._live(), public_key, len(public_key), _utf8(uri),
                                                        byref(error)), error)


class Decryptor(_Handle):
    """An ap_decryptor, made from merchants (and options, Google Pay's included) or from a Config. It takes
    Apple Pay and Google Pay tokens alike, told apart by shape."""

    def __init__(self, merchants=(), insecure_test_root_pem=None, signing_time_window=None, config=None,
                 google_root_keys=None, google_recipient_ids=(), google_merchant_keys=(), reference_unit=None):
        owned = config is None
        if owned:
            config = Config(merchants, insecure_test_root_pem, signing_time_window, google_root_keys,
                            google_recipient_ids, google_merchant_keys, reference_unit)
        try:
            handle, error = c_void_p(), _Error()
            _check(lib.ap_decryptor_new(config._live(), byref(handle), byref(error)), error)
            self.handle = handle
        finally:
            if owned:
                config.free()

    @staticmethod
    def _free(handle):
        return lib.ap_decryptor_free(handle)

    def decrypt(self, token, reference=REFERENCE_NOW):
        """Returns (code, Result or None): a Result for AP_OK and token errors, None for misuse codes."""
        result = c_void_p()
        code = lib.ap_decrypt(self._live(), token, len(token) if token is not None else 0, reference, byref(result))
        return code, (Result(result) if result.value else None)

    def decrypt_expecting(self, token, payment_request, reference=REFERENCE_NOW):
        """Decrypts and checks the token against payment_request (ApplePayPaymentRequest JSON bytes).
        Returns (code, Result or None, message): PAYMENT_REQUEST_MISMATCH names the member in result.field;
        INVALID_PAYMENT_REQUEST (no Result) has "member: reason" in message."""
        result, error = c_void_p(), _Error()
        code = lib.ap_decrypt_expecting(self._live(), token, len(token) if token is not None else 0, payment_request,
                                        len(payment_request) if payment_request is not None else 0, reference,
                                        byref(result), byref(error))
        return code, (Result(result) if result.value else None), error.message.decode(errors="replace")

    def decrypt_arrow(self, tokens, reference=REFERENCE_NOW, lanes=0, first_index=0, source=b"", mask_pan=False,
                      at_signing_time=False, unjudged=False):
        """Decrypts a pyarrow binary or large_binary array (a null or empty token: INVALID_ARGUMENT, no line) in
        one ap_decrypt_batch_arrow call, its buffers passed by address. Returns BatchColumns (free() it).
        Lines are written with index first_index + i and `source`; unjudged=True leaves replays to the caller
        (every verified token keeps its payment; judge from replay_keys, write replays with replay_line).
        `reference` counts seconds, or milliseconds for a decryptor made with reference_unit=REFERENCE_MILLISECONDS."""
        import pyarrow as pa

        if pa.types.is_string(tokens.type) or pa.types.is_large_string(tokens.type):
            tokens = tokens.view(pa.binary() if pa.types.is_string(tokens.type) else pa.large_binary())
        if pa.types.is_binary(tokens.type):
            width = 4
        elif pa.types.is_large_binary(tokens.type):
            width = 8
        else:
            raise TypeError(f"tokens must be a binary or large_binary array, not {tokens.type}")
        if tokens.null_count:
            import pyarrow.compute as pc  # only here: its import costs about a second in a new process

            tokens = pc.if_else(tokens.is_null(), pa.scalar(b"", tokens.type), tokens)
        # The library trusts the offsets (it has no length of the data buffer): pyarrow checks the last one against
        # it (arrays made in Python are checked when made; one imported through the C data interface is not).
        tokens.validate()
        _, offsets, data = tokens.buffers()
        # An array slice shares its parent's offsets buffer: start at the slice's first offset.
        offsets_address = offsets.address + tokens.offset * width
        data_address = data.address if data is not None and data.size else ctypes.addressof(_EMPTY)
        source = source.encode() if isinstance(source, str) else source
        flags = ((LINE_MASK_PAN if mask_pan else 0) | (LINE_VERIFIED_AT_SIGNING_TIME if at_signing_time else 0)
                 | (BATCH_UNJUDGED if unjudged else 0))
        handle = c_void_p()
        code = lib.ap_decrypt_batch_arrow(self._live(), offsets_address, width, data_address, len(tokens), first_index,
                                          source, len(source), reference, lanes, flags, byref(handle))
        _check_abi(code, "ap_decrypt_batch_arrow")
        return BatchColumns(handle)

    def decrypt_batch(self, tokens, reference=REFERENCE_NOW, lanes=0):
        """Returns (code, [Result]) in input order; replays within the batch are REPLAYED_TRANSACTION."""
        count = len(tokens)
        array = (c_char_p * count)(*tokens)
        lengths = (c_size_t * count)(*(len(t) if t is not None else 0 for t in tokens))
        results = (c_void_p * count)()
        code = lib.ap_decrypt_batch(self._live(), array, lengths, count, reference, lanes, results)
        return code, [Result(c_void_p(r)) for r in results] if code == OK else []
