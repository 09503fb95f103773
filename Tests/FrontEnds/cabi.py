"""The C ABI called directly (ctypes over applepay.h's ap_* functions, not through the applepay package): one
decryptor per manifest group, ap_decrypt per case, ap_decrypt_batch of one token per case and of a token twice."""
import ctypes
from ctypes import POINTER, byref, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_void_p

AP_REFERENCE_MILLISECONDS = 1


class _Error(ctypes.Structure):
    _fields_ = [("code", c_int32), ("message", ctypes.c_char * 256)]


class CABI:
    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        sigs = {
            "ap_code_name": ([c_int32], c_char_p),
            "ap_config_new": ([POINTER(c_void_p)], c_int32),
            "ap_config_free": ([c_void_p], c_int32),
            "ap_config_add_merchant_certificate": (
                [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_char_p, POINTER(_Error)], c_int32),
            "ap_config_add_merchant_identifier": (
                [c_void_p, c_char_p, c_char_p, c_size_t, c_char_p, POINTER(_Error)], c_int32),
            "ap_config_set_insecure_test_root_pem": ([c_void_p, c_char_p, c_size_t, POINTER(_Error)], c_int32),
            "ap_config_set_reference_unit": ([c_void_p, c_uint32, POINTER(_Error)], c_int32),
            "ap_config_set_google_root_keys": ([c_void_p, c_char_p, c_size_t, POINTER(_Error)], c_int32),
            "ap_config_add_google_recipient_id": ([c_void_p, c_char_p, POINTER(_Error)], c_int32),
            "ap_config_add_google_merchant_key": (
                [c_void_p, c_char_p, c_size_t, c_char_p, POINTER(_Error)], c_int32),
            "ap_config_add_samsung_key_spec": ([c_void_p, c_char_p, POINTER(_Error)], c_int32),
            "ap_decryptor_new": ([c_void_p, POINTER(c_void_p), POINTER(_Error)], c_int32),
            "ap_decryptor_free": ([c_void_p], c_int32),
            "ap_decrypt": ([c_void_p, c_char_p, c_size_t, c_int64, POINTER(c_void_p)], c_int32),
            "ap_decrypt_batch": (
                [c_void_p, POINTER(c_char_p), POINTER(c_size_t), c_size_t, c_int64, c_uint32, POINTER(c_void_p)],
                c_int32),
            "ap_result_code": ([c_void_p], c_int32),
            "ap_result_field": ([c_void_p], c_char_p),
            "ap_result_free": ([c_void_p], c_int32),
        }
        for name, (args, restype) in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, restype
        self.lib = lib

    def name(self, code):
        return self.lib.ap_code_name(code).decode()

    def _check(self, code, error, what):
        assert code == 0, f"{what}: {self.name(code)}: {error.message.decode(errors='replace')}"

    def decryptor(self, group):
        """A decryptor for the group's options (reference in milliseconds). Free it with free_decryptor."""
        lib, error, config = self.lib, _Error(), c_void_p()
        assert lib.ap_config_new(byref(config)) == 0
        try:
            for merchant in group["merchantFiles"]:
                key = open(merchant["key"], "rb").read()
                if merchant["cert"]:
                    cert = open(merchant["cert"], "rb").read()
                    code = lib.ap_config_add_merchant_certificate(config, cert, len(cert), key, len(key), None, None,
                                                                  byref(error))
                else:
                    code = lib.ap_config_add_merchant_identifier(config, merchant["id"].encode(), key, len(key), None,
                                                                 byref(error))
                self._check(code, error, "merchant")
            if group["trustRoot"]:
                pem = open(group["trustRoot"], "rb").read()
                self._check(lib.ap_config_set_insecure_test_root_pem(config, pem, len(pem), byref(error)), error, "root")
            google = group["google"]
            if google:
                keys = open(google["rootKeys"], "rb").read()
                self._check(lib.ap_config_set_google_root_keys(config, keys, len(keys), byref(error)), error, "roots")
                for recipient in google["recipientIds"]:
                    self._check(lib.ap_config_add_google_recipient_id(config, recipient.encode(), byref(error)), error,
                                "recipient id")
                for path in google["merchantKeys"]:
                    key = open(path, "rb").read()
                    self._check(lib.ap_config_add_google_merchant_key(config, key, len(key), None, byref(error)),
                                error, "Google Pay merchant key")
            for spec in group["samsung"]:
                self._check(lib.ap_config_add_samsung_key_spec(config, spec.encode(), byref(error)), error,
                            "Samsung Pay key")
            self._check(lib.ap_config_set_reference_unit(config, AP_REFERENCE_MILLISECONDS, byref(error)), error,
                        "reference unit")
            decryptor = c_void_p()
            self._check(lib.ap_decryptor_new(config, byref(decryptor), byref(error)), error, "decryptor")
            return decryptor
        finally:
            lib.ap_config_free(config)

    def free_decryptor(self, decryptor):
        assert self.lib.ap_decryptor_free(decryptor) == 0

    def _outcome(self, result):
        field = self.lib.ap_result_field(result)
        outcome = (self.name(self.lib.ap_result_code(result)), field.decode() if field is not None else None)
        assert self.lib.ap_result_free(result) == 0
        return outcome

    def decrypt(self, decryptor, token, now_ms):
        result = c_void_p()
        code = self.lib.ap_decrypt(decryptor, token, len(token), now_ms, byref(result))
        assert code < 100 and result.value, f"ap_decrypt: {self.name(code)}"
        outcome = self._outcome(result)
        assert outcome[0] == self.name(code)
        return outcome

    def decrypt_batch(self, decryptor, tokens, now_ms):
        count = len(tokens)
        array = (c_char_p * count)(*tokens)
        lengths = (c_size_t * count)(*map(len, tokens))
        results = (c_void_p * count)()
        code = self.lib.ap_decrypt_batch(decryptor, array, lengths, count, now_ms, 1, results)
        assert code == 0, f"ap_decrypt_batch: {self.name(code)}"
        return [self._outcome(c_void_p(r)) for r in results]
