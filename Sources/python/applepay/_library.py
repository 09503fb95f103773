"""The library behind the binding: the C ABI's constants and structures, libapplepay.so found and loaded (its
ABI version checked), code names, configuration errors and the ownership of a library handle."""
import ctypes
import os
from ctypes import POINTER, c_char, c_char_p, c_int32, c_int64, c_size_t, c_uint8, c_uint32, c_void_p

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
WALLET_NONE = 0
WALLET_APPLE_PAY = 1
WALLET_GOOGLE_PAY = 2
WALLET_SAMSUNG_PAY = 3
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
        "ap_config_add_merchant_spec": (c_int32, [c_void_p, c_char_p, err]),
        "ap_config_add_google_merchant_key_spec": (c_int32, [c_void_p, c_char_p, err]),
        "ap_config_add_google_protocol_version": (c_int32, [c_void_p, c_char_p, err]),
        "ap_config_add_samsung_key_spec": (c_int32, [c_void_p, c_char_p, err]),
        "ap_decryptor_new": (c_int32, [c_void_p, POINTER(c_void_p), err]),
        "ap_decryptor_free": (c_int32, [c_void_p]),
        "ap_decrypt": (c_int32, [c_void_p, c_char_p, c_size_t, c_int64, POINTER(c_void_p)]),
        "ap_decrypt_expecting": (c_int32, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, POINTER(c_void_p), err]),
        "ap_decrypt_batch": (c_int32, [c_void_p, POINTER(c_char_p), POINTER(c_size_t), c_size_t, c_int64, c_uint32, POINTER(c_void_p)]),
        "ap_result_code": (c_int32, [c_void_p]),
        "ap_result_message": (c_char_p, [c_void_p]),
        "ap_result_field": (c_char_p, [c_void_p]),
        "ap_result_transaction_id": (c_char_p, [c_void_p]),
        "ap_result_wallet": (c_int32, [c_void_p]),
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
        "ap_batch_result_wallets": (c_void_p, [c_void_p]),
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
