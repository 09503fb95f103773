"""Python binding of libapplepay (the C ABI in Sources/ApplePayC/include/applepay.h), standard library ctypes only.

The library is looked up in $APPLEPAY_LIBRARY, then in the package's .build/release/.

    import applepay
    with applepay.Decryptor(merchants=[applepay.Merchant.certificate(cert_pem, key_pem)]) as d:
        result = d.decrypt(token_bytes)          # raises nothing for a bad token: see result.code
        if result.ok:
            payment = result.payment_json()      # bytes: copy only what you need, then result.free()
        result.free()

Every call returns a code; misuse (None handles, empty tokens, freed results) gives INVALID_ARGUMENT or
INVALID_HANDLE as in C, never a crash. Config errors raise ConfigurationError (code and message).
"""
import ctypes
import os
from ctypes import POINTER, byref, c_char, c_char_p, c_int32, c_int64, c_size_t, c_uint8, c_uint32, c_void_p

ABI_VERSION = 1
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
INVALID_ARGUMENT = 100
INVALID_HANDLE = 101
INVALID_CONFIGURATION = 102
INTERNAL_ERROR = 103
INVALID_PAYMENT_REQUEST = 104

REFERENCE_NOW = -(2 ** 63)
REFERENCE_SIGNING_TIME = -(2 ** 63) + 1
MAX_TOKEN_LENGTH = 1 << 20


class _Error(ctypes.Structure):
    _fields_ = [("code", c_int32), ("message", c_char * 256)]


def _load():
    path = os.environ.get("APPLEPAY_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".build", "release", "libapplepay.so")
    lib = ctypes.CDLL(path)
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
    }
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


class Result:
    """One token's outcome. The payment JSON lives in library memory that free() wipes."""

    def __init__(self, handle):
        self.handle = handle

    @property
    def code(self):
        return lib.ap_result_code(self.handle)

    @property
    def ok(self):
        return self.code == OK

    @property
    def code_name(self):
        return code_name(self.code)

    def _text(self, fn):
        value = fn(self.handle)
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
        """(address, length) of the library-owned payment JSON, without copying it."""
        length = c_size_t(0)
        pointer = lib.ap_result_payment_json(self.handle, byref(length))
        return (ctypes.cast(pointer, c_void_p).value if pointer else None), length.value

    def payment_json(self):
        """A copy of the payment JSON as bytes (Python cannot wipe it: copy only when you must), or None."""
        address, length = self.payment_json_address()
        return None if address is None else ctypes.string_at(address, length)

    def free(self):
        """Wipes and frees the result; returns the code (INVALID_HANDLE the second time)."""
        return lib.ap_result_free(self.handle)


class Decryptor:
    def __init__(self, merchants, insecure_test_root_pem=None, signing_time_window=None):
        config, error = c_void_p(), _Error()
        _check(lib.ap_config_new(byref(config)))
        try:
            for merchant in merchants:
                _check(merchant._add(config, error), error)
            if signing_time_window is not None:
                _check(lib.ap_config_set_signing_time_window(config, signing_time_window, byref(error)), error)
            if insecure_test_root_pem is not None:
                _check(lib.ap_config_set_insecure_test_root_pem(config, insecure_test_root_pem, len(insecure_test_root_pem),
                                                                byref(error)), error)
            handle = c_void_p()
            _check(lib.ap_decryptor_new(config, byref(handle), byref(error)), error)
            self.handle = handle
        finally:
            lib.ap_config_free(config)

    def decrypt(self, token, reference=REFERENCE_NOW):
        """Returns (code, Result or None): a Result for AP_OK and token errors, None for misuse codes."""
        result = c_void_p()
        code = lib.ap_decrypt(self.handle, token, len(token) if token is not None else 0, reference, byref(result))
        return code, (Result(result) if result.value else None)

    def decrypt_expecting(self, token, payment_request, reference=REFERENCE_NOW):
        """Decrypts and checks the token against payment_request (ApplePayPaymentRequest JSON bytes).
        Returns (code, Result or None, message): PAYMENT_REQUEST_MISMATCH names the member in result.field;
        INVALID_PAYMENT_REQUEST (no Result) has "member: reason" in message."""
        result, error = c_void_p(), _Error()
        code = lib.ap_decrypt_expecting(self.handle, token, len(token) if token is not None else 0, payment_request,
                                        len(payment_request) if payment_request is not None else 0, reference,
                                        byref(result), byref(error))
        return code, (Result(result) if result.value else None), error.message.decode(errors="replace")

    def decrypt_batch(self, tokens, reference=REFERENCE_NOW, lanes=0):
        """Returns (code, [Result]) in input order; replays within the batch are REPLAYED_TRANSACTION."""
        count = len(tokens)
        array = (c_char_p * count)(*tokens)
        lengths = (c_size_t * count)(*(len(t) if t is not None else 0 for t in tokens))
        results = (c_void_p * count)()
        code = lib.ap_decrypt_batch(self.handle, array, lengths, count, reference, lanes, results)
        return code, [Result(c_void_p(r)) for r in results] if code == OK else []

    def free(self):
        return lib.ap_decryptor_free(self.handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
