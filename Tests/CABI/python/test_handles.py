# Issue 22 from Python: a freed handle never comes back to life. Raw stale handles are refused after
# a new object of the same type was made (on the old code, glibc gave it the freed address and the stale
# handle answered as live); free() clears the binding's handle, finalizers never free twice, and methods
# called after free() raise.
import gc
import threading
from ctypes import byref, c_void_p
from pathlib import Path

import pytest

import applepay

VECTORS = Path(__file__).resolve().parents[3] / "Vectors"
KEY = (VECTORS / "merchants/ec.key.pem").read_bytes()
ROOT_PEM = (VECTORS / "trust/test-root.pem").read_bytes()
TOKEN = (VECTORS / "tokens/ec-3dsecure.json").read_bytes()
MERCHANT = applepay.Merchant.identifier("merchant.com.example.vectors", KEY)
lib = applepay.lib


def new_decryptor():
    return applepay.Decryptor([MERCHANT], insecure_test_root_pem=ROOT_PEM)


def test_a_stale_result_handle_is_refused_after_the_next_result_is_made_50_rounds():
    with new_decryptor() as d:
        for round in range(50):
            code, a = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)
            assert code == applepay.OK
            stale = a.handle.value
            assert a.free() == applepay.OK
            code, b = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)
            assert code == applepay.OK
            length = applepay.c_size_t(7)
            assert lib.ap_result_code(stale) == applepay.INVALID_HANDLE, f"round {round}: the stale result answered"
            assert not lib.ap_result_payment_json(stale, byref(length))
            assert length.value == 0 and lib.ap_result_message(stale) is None
            assert lib.ap_result_free(stale) == applepay.INVALID_HANDLE
            assert b.code == applepay.OK, f"round {round}: freeing the stale handle freed the live result"
            b.free()


def test_every_freed_decryptor_handle_stays_refused_over_50_rounds():
    # A new decryptor rarely lands on the one just freed (making the engine allocates first) but often on
    # an earlier one: each round checks every decryptor handle freed so far.
    config = applepay.Config([MERCHANT], insecure_test_root_pem=ROOT_PEM)
    stale = []
    for round in range(50):
        d = applepay.Decryptor(config=config)
        for i, handle in enumerate(stale):
            out = c_void_p()
            assert lib.ap_decrypt(handle, TOKEN, len(TOKEN), applepay.REFERENCE_SIGNING_TIME, byref(out)) == applepay.INVALID_HANDLE, \
                f"round {round}: the decryptor freed in round {i} answered as live"
            assert out.value is None
            assert lib.ap_decryptor_free(handle) == applepay.INVALID_HANDLE
        # A token that fails at once shows d is live without the first decryption's set-up cost.
        code, result = d.decrypt(b"{}", applepay.REFERENCE_SIGNING_TIME)
        assert code == applepay.MALFORMED_TOKEN, f"round {round}: freeing a stale handle freed the live decryptor"
        result.free()
        stale.append(d.handle.value)
        d.free()
    config.free()


def test_a_stale_config_handle_is_refused_after_the_next_config_is_made_50_rounds():
    for round in range(50):
        # An empty config: one with a merchant frees so many blocks of the box's size that the next box
        # rarely lands on the freed one.
        a = applepay.Config(signing_time_window=30)
        stale = a.handle.value
        a.free()
        b = applepay.Config()
        assert lib.ap_config_set_signing_time_window(stale, 60, None) == applepay.INVALID_HANDLE, f"round {round}"
        assert lib.ap_config_add_merchant_identifier(stale, b"merchant.x", KEY, len(KEY), None, None) == applepay.INVALID_HANDLE
        assert lib.ap_config_free(stale) == applepay.INVALID_HANDLE
        # b is live and still empty: nothing reached it through the stale handle.
        with pytest.raises(applepay.ConfigurationError) as e:
            applepay.Decryptor(config=b)
        assert e.value.code == applepay.INVALID_CONFIGURATION
        assert b.free() == applepay.OK


@pytest.mark.parametrize("make", ["result", "decryptor", "config"])
def test_free_clears_the_handle_a_second_free_is_a_no_op_and_methods_then_raise(make):
    d = new_decryptor()
    if make == "result":
        obj = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)[1]
        calls = [lambda: obj.code, obj.payment_json, lambda: obj.transaction_id]
    elif make == "decryptor":
        obj, d = d, None
        calls = [lambda: obj.decrypt(TOKEN), lambda: obj.decrypt_batch([TOKEN])]
    else:
        obj = applepay.Config([MERCHANT])
        calls = [lambda: obj.set_signing_time_window(5), lambda: applepay.Decryptor(config=obj)]
    raw = obj.handle.value
    assert obj.free() == applepay.OK and obj.handle is None
    assert obj.free() == applepay.OK  # no call reaches the library
    for call in calls:
        with pytest.raises(applepay.FreedError):
            call()
    free = {"result": lib.ap_result_free, "decryptor": lib.ap_decryptor_free, "config": lib.ap_config_free}[make]
    assert free(raw) == applepay.INVALID_HANDLE
    if d is not None:
        d.free()


def test_finalizers_free_what_is_held_and_never_twice(monkeypatch):
    calls = []
    real = lib.ap_result_free
    monkeypatch.setattr(applepay.Result, "_free", staticmethod(lambda h: calls.append(h.value) or real(h)))
    with new_decryptor() as d:
        kept = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)[1]
        dropped = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)[1]
        dropped_handle = dropped.handle.value
        kept.free()
        del kept, dropped
        gc.collect()
    assert sorted(calls) == sorted(set(calls)) and dropped_handle in calls and len(calls) == 2
    assert lib.ap_result_code(dropped_handle) == applepay.INVALID_HANDLE


def test_threads_freeing_and_using_one_result_see_only_live_or_freed():
    with new_decryptor() as d:
        for _ in range(20):
            result = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)[1]
            seen = []

            def use():
                for _ in range(200):
                    try:
                        seen.append(result.code)
                    except applepay.FreedError:
                        seen.append("freed")
            threads = [threading.Thread(target=use) for _ in range(3)] + [threading.Thread(target=result.free)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert set(seen) <= {applepay.OK, applepay.INVALID_HANDLE, "freed"}
            assert result.handle is None


def test_a_free_in_one_thread_never_hands_another_thread_freed_memory():
    # Before the result's lock, ctypes released the GIL inside ap_result_free while another thread sat
    # between ap_result_payment_json and string_at: most of 300 rounds copied freed (wiped or reused) memory.
    with new_decryptor() as d:
        expected = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)[1]
        payment = expected.payment_json()
        expected.free()
        wrong = []
        for round in range(300):
            result = d.decrypt(TOKEN, applepay.REFERENCE_SIGNING_TIME)[1]

            def read():
                while True:
                    try:
                        seen = result.payment_json()
                    except applepay.FreedError:
                        return
                    if seen != payment:
                        wrong.append((round, seen[:32] if seen else seen))
            threads = [threading.Thread(target=read) for _ in range(2)]
            for t in threads:
                t.start()
            result.free()
            for t in threads:
                t.join()
        assert not wrong, f"{len(wrong)} reads saw freed memory, e.g. {wrong[:3]}"
