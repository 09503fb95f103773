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
# Every name this module had before it was split, public and private, ctypes' included (callers and tests use them).
import ctypes  # noqa: F401
import os  # noqa: F401
import threading  # noqa: F401
from ctypes import (POINTER, byref, c_char, c_char_p, c_int32, c_int64, c_size_t, c_uint8, c_uint32,  # noqa: F401
                    c_void_p)
from applepay._library import (ABI_VERSION, OK, MALFORMED_TOKEN, UNSUPPORTED_VERSION, INVALID_SIGNATURE,  # noqa: F401
                               UNTRUSTED_CERTIFICATE_CHAIN, SIGNING_TIME_OUT_OF_RANGE, UNKNOWN_MERCHANT_KEY,
                               DECRYPTION_FAILED, INVALID_PAYLOAD, REPLAYED_TRANSACTION, PAYMENT_REQUEST_MISMATCH,
                               INTERMEDIATE_KEY_EXPIRED, MESSAGE_EXPIRED, INVALID_ARGUMENT, INVALID_HANDLE,
                               INVALID_CONFIGURATION, INTERNAL_ERROR, INVALID_PAYMENT_REQUEST, BUFFER_TOO_SMALL,
                               NO_REPLAY_KEYS, LINE_MASK_PAN, LINE_VERIFIED_AT_SIGNING_TIME, BATCH_UNJUDGED,
                               WALLET_NONE, WALLET_APPLE_PAY, WALLET_GOOGLE_PAY, WALLET_SAMSUNG_PAY,
                               DEFAULT_MAX_ITEM_BYTES, REFERENCE_NOW, REFERENCE_SIGNING_TIME, REFERENCE_SECONDS,
                               REFERENCE_MILLISECONDS, MAX_TOKEN_LENGTH, _Error, _BatchColumns, _EMPTY,
                               LIBRARY_NAME, library_path, _load, lib, code_name, version, ConfigurationError,
                               _check, FreedError, _Handle)
from applepay._results import (Result, replay_line, _BatchMemory, BatchColumns, _check_abi,  # noqa: F401
                               oversized_line_result)
from applepay._decryptor import (Merchant, _utf8, Config, Decryptor)  # noqa: F401
