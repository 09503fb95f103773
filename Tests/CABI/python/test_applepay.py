# The C ABI through ctypes: the bundled and Apple vectors, every code, misuse, and 10,000 factory tokens
# in one batch and across threads. Needs APPLEPAY_MINTED (a mint-tokens directory); run-tests.sh sets it.
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

import applepay

ROOT = Path(__file__).resolve().parents[3]
VECTORS = ROOT / "Vectors"
APPLE = Path(os.environ.get("APPLEPAY_SHARED_VECTORS", ROOT / ".." / "shared" / "vectors" / "apple"))

# Without ../shared (a public clone) the tests that read it are skipped, naming what is missing;
# APPLEPAY_REQUIRE_SHARED=1 (set by CI) makes its absence a failure instead.
def needs_shared(folder, what):
    return pytest.mark.skipif(not folder.is_dir() and os.environ.get("APPLEPAY_REQUIRE_SHARED") != "1",
                              reason=f"{what} missing at {folder} (set APPLEPAY_REQUIRE_SHARED=1 to fail instead)")
needs_apple = needs_shared(APPLE, "the shared Apple vectors")
MINTED = os.environ.get("APPLEPAY_MINTED")
MANIFEST = json.loads((VECTORS / "manifest.json").read_text())
NOW = int(datetime.fromisoformat(MANIFEST["now"].replace("Z", "+00:00")).timestamp())
ARCHIVE = [line for line in (VECTORS / "archive.jsonl").read_bytes().split(b"\n") if line]
CODES = {applepay.code_name(c): c for c in list(range(10)) + [100, 101, 102, 103]}


@pytest.fixture(scope="module")
def bundled():
    merchants = [applepay.Merchant.certificate((VECTORS / f"merchants/{k}.cert.pem").read_bytes(),
                                               (VECTORS / f"merchants/{k}.key.pem").read_bytes()) for k in ("ec", "rsa")]
    with applepay.Decryptor(merchants, insecure_test_root_pem=(VECTORS / MANIFEST["trustRoot"]).read_bytes()) as d:
        yield d


@pytest.fixture(scope="module")
def minted():
    assert MINTED, "set APPLEPAY_MINTED to a directory made by `mint-tokens DIR 10000` (Tests/CABI/run-tests.sh does)"
    directory = Path(MINTED)
    tokens = [line for line in (directory / "tokens.jsonl").read_bytes().split(b"\n") if line]
    merchant = applepay.Merchant.pkcs12((directory / "merchant.p12").read_bytes(), "insecure-test-password")
    with applepay.Decryptor([merchant], insecure_test_root_pem=(directory / "insecure-test-root.pem").read_bytes()) as d:
        yield d, tokens


def decrypt(decryptor, token, reference):
    code, result = decryptor.decrypt(token, reference)
    assert result is not None and result.code == code
    try:
        return code, result.payment_json(), result.transaction_id, result.message, result.field
    finally:
        assert result.free() == applepay.OK


def test_library_reports_the_abi_version_of_this_binding():
    assert applepay.version() == applepay.ABI_VERSION


@pytest.mark.parametrize("path", sorted(MANIFEST["tokens"]))
def test_each_bundled_single_token_gives_the_manifest_code(bundled, path):
    code, payment, transaction_id, message, field = decrypt(bundled, (VECTORS / path).read_bytes(), NOW)
    assert applepay.code_name(code) == MANIFEST["tokens"][path], message
    if code == applepay.OK:
        assert json.loads(payment)["applicationPrimaryAccountNumber"]
        assert transaction_id and message == "" and field is None


def test_each_archive_line_alone_gives_the_manifest_code_and_replays_only_count_within_a_batch(bundled):
    expect = MANIFEST["archive"]["expect"]
    assert len(ARCHIVE) == len(expect)
    for token, want in zip(ARCHIVE, expect):
        code, payment, _, message, _ = decrypt(bundled, token, NOW)
        assert applepay.code_name(code) == ("ok" if want == "replayedTransaction" else want), message
        assert (payment is not None) == (code == applepay.OK)


@pytest.mark.parametrize("lanes", [1, 2, 0])
def test_a_batch_returns_results_in_input_order_with_replays_flagged(bundled, lanes):
    code, results = bundled.decrypt_batch(ARCHIVE, NOW, lanes)
    assert code == applepay.OK and len(results) == len(ARCHIVE)
    try:
        assert [r.code_name for r in results] == MANIFEST["archive"]["expect"]
        replays = [r for r in results if r.code == applepay.REPLAYED_TRANSACTION]
        assert replays and all(r.field == "header.transactionId" for r in replays)
    finally:
        for r in results:
            assert r.free() == applepay.OK


def test_every_stable_code_is_produced(bundled):
    _, results = bundled.decrypt_batch(ARCHIVE, NOW, 1)
    seen = {r.code for r in results}
    for r in results:
        r.free()
    assert seen == set(range(10))


APPLE_VECTORS = sorted(p.name for p in APPLE.iterdir()) if APPLE.is_dir() else []


@needs_apple
def test_the_apple_vectors_are_present():
    assert len(APPLE_VECTORS) >= 9, f"the Apple vectors are missing at {APPLE}"


@pytest.mark.parametrize("name", APPLE_VECTORS)
def test_each_apple_vector_gives_its_expected_result_at_its_signing_time(name):
    directory = APPLE / name
    meta = json.loads((directory / "meta.json").read_text())
    key = (directory / meta["keyFile"]).read_bytes()
    if meta.get("certFile"):
        merchant = applepay.Merchant.certificate((directory / meta["certFile"]).read_bytes(), key)
    else:
        merchant = applepay.Merchant.identifier(meta["merchantIdentifier"], key)
    at = int(datetime.fromisoformat(meta["signingTime"].replace("Z", "+00:00")).timestamp())
    with applepay.Decryptor([merchant]) as d:
        code, payment, _, message, _ = decrypt(d, (directory / "token.json").read_bytes(), at)
    assert applepay.code_name(code) == meta["expect"], message
    if code == applepay.OK:
        assert json.loads(payment) == json.loads((directory / "expected.json").read_text())


def test_identifier_and_key_merchant_decrypts_and_the_window_applies():
    key = (VECTORS / "merchants/ec.key.pem").read_bytes()
    merchant = applepay.Merchant.identifier("merchant.com.example.vectors", key)
    token = (VECTORS / "tokens/ec-3dsecure.json").read_bytes()
    with applepay.Decryptor([merchant], insecure_test_root_pem=(VECTORS / "trust/test-root.pem").read_bytes(),
                            signing_time_window=60) as d:
        assert decrypt(d, token, NOW)[0] == applepay.OK
        assert decrypt(d, token, NOW + 61)[0] == applepay.SIGNING_TIME_OUT_OF_RANGE
        assert decrypt(d, token, applepay.REFERENCE_SIGNING_TIME)[0] == applepay.OK


def test_wrong_calls_return_error_codes_not_crashes(bundled):
    token = ARCHIVE[0]
    lib = applepay.lib
    from ctypes import byref, c_void_p
    out = c_void_p()
    assert lib.ap_decrypt(None, token, len(token), applepay.REFERENCE_NOW, byref(out)) == applepay.INVALID_HANDLE
    assert out.value is None
    assert bundled.decrypt(b"")[0] == applepay.INVALID_ARGUMENT
    assert bundled.decrypt(None)[0] == applepay.INVALID_ARGUMENT
    assert lib.ap_decrypt(bundled.handle, token, 2 ** 64 - 1, applepay.REFERENCE_NOW, byref(out)) == applepay.INVALID_ARGUMENT
    assert lib.ap_decrypt(bundled.handle, token, len(token), applepay.REFERENCE_NOW, None) == applepay.INVALID_ARGUMENT
    code, result = bundled.decrypt(token, NOW)
    assert code == applepay.OK and result.free() == applepay.OK
    assert result.free() == applepay.OK and result.handle is None  # a second free() does nothing
    for method in (lambda: result.code, result.payment_json, lambda: result.message):
        with pytest.raises(applepay.FreedError):
            method()
    with pytest.raises(applepay.FreedError):
        applepay.Result(None).code
    assert bundled.decrypt_batch([])[0] == applepay.INVALID_ARGUMENT
    code, results = bundled.decrypt_batch([token, b"", None], applepay.REFERENCE_SIGNING_TIME, 1)
    assert code == applepay.OK and [r.code for r in results] == [applepay.OK, applepay.INVALID_ARGUMENT, applepay.INVALID_ARGUMENT]
    assert all(r.free() == applepay.OK for r in results)
    assert lib.ap_decryptor_free(None) == applepay.INVALID_HANDLE


def test_a_freed_decryptor_is_an_invalid_handle():
    key = (VECTORS / "merchants/ec.key.pem").read_bytes()
    d = applepay.Decryptor([applepay.Merchant.identifier("merchant.x", key)])
    handle = d.handle
    assert d.free() == applepay.OK and d.handle is None
    with pytest.raises(applepay.FreedError):
        d.decrypt(ARCHIVE[0])
    assert d.free() == applepay.OK
    assert applepay.lib.ap_decryptor_free(handle) == applepay.INVALID_HANDLE


def test_bad_configuration_raises_with_the_code_and_message():
    with pytest.raises(applepay.ConfigurationError) as e:
        applepay.Decryptor([])
    assert e.value.code == applepay.INVALID_CONFIGURATION and "merchant" in e.value.message
    with pytest.raises(applepay.ConfigurationError) as e:
        applepay.Decryptor([applepay.Merchant.identifier("merchant.x", b"not a key")])
    assert e.value.code == applepay.INVALID_CONFIGURATION
    with pytest.raises(applepay.ConfigurationError) as e:
        applepay.Decryptor([applepay.Merchant.identifier("merchant.x", b"")])
    assert e.value.code == applepay.INVALID_ARGUMENT


def test_ten_thousand_factory_tokens_decrypt_in_one_batch_in_input_order(minted):
    decryptor, tokens = minted
    assert len(tokens) >= 10_000
    code, results = decryptor.decrypt_batch(tokens, applepay.REFERENCE_SIGNING_TIME, 0)
    assert code == applepay.OK
    try:
        assert all(r.code == applepay.OK for r in results)
        assert [r.transaction_id for r in results] == [json.loads(t)["header"]["transactionId"] for t in tokens]
        pans = [json.loads(results[i].payment_json())["applicationPrimaryAccountNumber"] for i in (0, 4321, len(tokens) - 1)]
        assert pans == ["4761%012d" % i for i in (0, 4321, len(tokens) - 1)]
    finally:
        assert applepay.lib.ap_results_free((applepay.c_void_p * len(results))(*(r.handle.value for r in results)),
                                            len(results)) == applepay.OK


def test_ten_thousand_factory_tokens_decrypt_on_four_threads_sharing_one_decryptor(minted):
    decryptor, tokens = minted
    wrong, lock = [], threading.Lock()

    def work(part):
        for i in range(part, len(tokens), 4):
            code, result = decryptor.decrypt(tokens[i], applepay.REFERENCE_SIGNING_TIME)
            if code != applepay.OK or result.free() != applepay.OK:
                with lock:
                    wrong.append(i)

    threads = [threading.Thread(target=work, args=(p,)) for p in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_the_same_tokens_twice_in_one_batch_are_replays_the_second_time(minted):
    decryptor, tokens = minted
    sample = tokens[:50]
    code, results = decryptor.decrypt_batch(sample + sample, applepay.REFERENCE_SIGNING_TIME, 2)
    codes = [r.code for r in results]
    for r in results:
        r.free()
    assert code == applepay.OK and codes == [applepay.OK] * 50 + [applepay.REPLAYED_TRANSACTION] * 50


# Payment-request binding: mint-tokens' tokens are USD 10.00, 3DSecure, for merchant.com.example.cabi.
def payment_request(amount="10.00", **extra):
    request = {"countryCode": "US", "currencyCode": "USD", "supportedNetworks": ["visa"],
               "merchantCapabilities": ["supports3DS"], "total": {"label": "Shop", "amount": amount}}
    request.update(extra)
    return json.dumps(request).encode()


def test_a_token_bound_to_its_request_decrypts_and_against_another_is_a_mismatch_naming_the_member(minted):
    decryptor, tokens = minted
    code, result, _ = decryptor.decrypt_expecting(tokens[0], payment_request(), applepay.REFERENCE_SIGNING_TIME)
    assert code == applepay.OK and json.loads(result.payment_json())["transactionAmount"] == 1000
    assert result.free() == applepay.OK
    for request, field in [(payment_request("900.00"), "total.amount"), (payment_request(currencyCode="EUR"), "currencyCode"),
                           (payment_request(merchantCapabilities=["supportsEMV"]), "merchantCapabilities"),
                           (payment_request(applicationData="b3JkZXItMQ=="), "applicationData"),
                           (payment_request(multiTokenContexts=[{"merchantIdentifier": "merchant.com.example.cabi", "externalIdentifier": "a",
                                                                 "merchantName": "A", "merchantDomain": "a.example", "amount": "5.00"}]),
                            "multiTokenContexts[0].amount")]:
        code, result, _ = decryptor.decrypt_expecting(tokens[0], request, applepay.REFERENCE_SIGNING_TIME)
        assert code == applepay.PAYMENT_REQUEST_MISMATCH and applepay.code_name(code) == "paymentRequestMismatch"
        assert result.field == field and result.payment_json() is None
        assert result.free() == applepay.OK


def test_a_request_that_breaks_the_schema_is_invalid_payment_request_naming_the_member(minted):
    decryptor, tokens = minted
    for request, member in [(payment_request("1.000"), "total.amount"), (payment_request(currencyCode="usd"), "currencyCode"),
                            (b'{"countryCode":"US"}', "currencyCode"), (b"not json", "$")]:
        code, result, message = decryptor.decrypt_expecting(tokens[0], request, applepay.REFERENCE_SIGNING_TIME)
        assert code == applepay.INVALID_PAYMENT_REQUEST and result is None and message.startswith(member + ": "), message
    code, result, _ = decryptor.decrypt_expecting(tokens[0], None, applepay.REFERENCE_SIGNING_TIME)
    assert code == applepay.INVALID_ARGUMENT and result is None


def test_a_batch_envelope_that_mismatches_claims_nothing(minted):
    decryptor, tokens = minted
    envelope = b'{"paymentToken":' + tokens[1] + b',"paymentRequest":' + payment_request("900.00") + b"}"
    bound = b'{"paymentToken":' + tokens[1] + b',"paymentRequest":' + payment_request() + b"}"
    code, results = decryptor.decrypt_batch([envelope, bound, tokens[1]], applepay.REFERENCE_SIGNING_TIME)
    codes = [r.code for r in results]
    fields = [r.field for r in results]
    assert all(r.free() == applepay.OK for r in results)
    assert code == applepay.OK
    assert codes == [applepay.PAYMENT_REQUEST_MISMATCH, applepay.OK, applepay.REPLAYED_TRANSACTION]
    assert fields[0] == "total.amount"
