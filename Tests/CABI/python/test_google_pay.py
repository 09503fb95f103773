# Google Pay through the C ABI (ctypes): the shared Google vectors with their expected outcomes, and
# factory tokens (mint-tokens google) decrypting, refused with their documented codes, batched with
# Apple Pay tokens and judged as replays. APPLEPAY_GOOGLE_MINTED names a `mint-tokens google` directory
# and APPLEPAY_MINTED a `mint-tokens` one (Tests/CABI/run-tests.sh sets both).
import json
import os
import subprocess
from pathlib import Path

import pytest

import applepay

ROOT = Path(__file__).resolve().parents[3]
GOOGLE = Path(os.environ.get("APPLEPAY_GOOGLE_VECTORS", ROOT / ".." / "shared" / "vectors" / "google"))

# Without ../shared (a public clone) the tests that read it are skipped, naming what is missing;
# APPLEPAY_REQUIRE_SHARED=1 (set by CI) makes its absence a failure instead.
def needs_shared(folder, what):
    return pytest.mark.skipif(not folder.is_dir() and os.environ.get("APPLEPAY_REQUIRE_SHARED") != "1",
                              reason=f"{what} missing at {folder} (set APPLEPAY_REQUIRE_SHARED=1 to fail instead)")
needs_google = needs_shared(GOOGLE, "the shared Google Pay vectors")
MINTED = os.environ.get("APPLEPAY_GOOGLE_MINTED")
APPLE_MINTED = os.environ.get("APPLEPAY_MINTED")
# The factory's clock (mint-tokens google): 2026-03-01T12:00:00Z; messages expire an hour later.
NOW = 1772366400
RECIPIENT = "merchant:12345678901234567890"
# The shared vectors' expected outcomes, as ABI codes. Their "ok" messages are not payments (Tink's
# "plaintext", "blah"): ap_decrypt verifies and decrypts them, then refuses them as INVALID_PAYLOAD.
OUTCOMES = {"ok": [applepay.INVALID_PAYLOAD], "malformed": [applepay.MALFORMED_TOKEN],
            "invalidSignature": [applepay.INVALID_SIGNATURE],
            "decryptionFailed": [applepay.DECRYPTION_FAILED, applepay.UNKNOWN_MERCHANT_KEY]}
VECTOR_NAMES = sorted(p.name for p in GOOGLE.iterdir() if (p / "token.json").exists()) if GOOGLE.is_dir() else []


def vector_decryptor(folder, recipient_id=None):
    meta = json.loads((folder / "meta.json").read_text())
    keys = [(folder / name).read_bytes() for name in sorted(os.listdir(folder)) if name.startswith("merchant_key")]
    decryptor = applepay.Decryptor(google_root_keys=(folder / "root_keys.json").read_bytes(),
                                   google_recipient_ids=[recipient_id or meta["recipientId"]], google_merchant_keys=keys)
    return decryptor, meta["now"] // 1000


@needs_google
def test_the_shared_google_vectors_are_there():
    assert len(VECTOR_NAMES) >= 9, f"expected the shared Google vectors in {GOOGLE}"


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_each_shared_vector_gives_its_expected_outcome(name):
    folder = GOOGLE / name
    expected = json.loads((folder / "expected.json").read_text())
    decryptor, now = vector_decryptor(folder)
    with decryptor:
        code, result = decryptor.decrypt((folder / "token.json").read_bytes(), now)
        assert code in OUTCOMES[expected["outcome"]], (name, applepay.code_name(code), result.message)
        if expected["outcome"] == "ok":
            # Verified and decrypted: only the payment reading refused it.
            assert result.message.startswith("the decrypted message"), result.message
        assert result.payment_json() is None
        result.free()


@pytest.mark.parametrize("name", [n for n in VECTOR_NAMES if n.startswith("dotnet-ecv2")])
def test_an_ecv2_vector_for_another_recipient_is_an_invalid_signature(name):
    decryptor, now = vector_decryptor(GOOGLE / name, recipient_id="merchant:not-the-recipient")
    with decryptor:
        code, result = decryptor.decrypt((GOOGLE / name / "token.json").read_bytes(), now)
        assert code == applepay.INVALID_SIGNATURE, result.message
        result.free()


@pytest.fixture(scope="module")
def minted():
    assert MINTED, "set APPLEPAY_GOOGLE_MINTED to a directory made by `mint-tokens google DIR N` (run-tests.sh does)"
    directory = Path(MINTED)
    tokens = [line for line in (directory / "tokens.jsonl").read_bytes().split(b"\n") if line]
    return directory, tokens


def google_decryptor(directory, recipient_id=RECIPIENT, merchants=(), root=None, reference_unit=None):
    return applepay.Decryptor(merchants, insecure_test_root_pem=root,
                              google_root_keys=(directory / "root_keys.json").read_bytes(),
                              google_recipient_ids=["gateway:someone-else", recipient_id],
                              google_merchant_keys=[(directory / "merchant_key.pem").read_bytes()],
                              reference_unit=reference_unit)


def test_the_abi_version_and_the_new_codes():
    assert applepay.version() == applepay.ABI_VERSION == 6
    assert applepay.code_name(applepay.INTERMEDIATE_KEY_EXPIRED) == "intermediateKeyExpired"
    assert applepay.code_name(applepay.MESSAGE_EXPIRED) == "messageExpired"


def test_factory_tokens_decrypt_with_google_keys_alone(minted):
    directory, tokens = minted
    with google_decryptor(directory) as d:
        for i, token in enumerate(tokens[:50]):
            code, result = d.decrypt(token, NOW)
            assert code == applepay.OK, result.message
            payment = json.loads(result.payment_json())
            assert payment["messageId"] == result.transaction_id == f"google-cabi-{i}"
            assert payment["paymentMethodDetails"]["pan"] == "41110000" + f"{i:08d}"
            assert payment["paymentMethodDetails"]["authMethod"] == "CRYPTOGRAM_3DS"
            result.free()


@pytest.mark.parametrize("file, code, field", [
    ("expired-intermediate.json", applepay.INTERMEDIATE_KEY_EXPIRED, "intermediateSigningKey.signedKey.keyExpiration"),
    ("expired-message.json", applepay.MESSAGE_EXPIRED, "messageExpiration"),
    ("bad-tag.json", applepay.DECRYPTION_FAILED, None),
])
def test_a_broken_factory_token_gets_its_documented_code(minted, file, code, field):
    directory, _ = minted
    with google_decryptor(directory) as d:
        got, result = d.decrypt((directory / file).read_bytes(), NOW)
        assert got == code, (applepay.code_name(got), result.message)
        if field is not None:
            assert result.field == field
        assert result.payment_json() is None
        result.free()


def test_a_token_for_another_recipient_id_is_an_invalid_signature(minted):
    directory, tokens = minted
    with google_decryptor(directory, recipient_id="merchant:99999") as d:
        code, result = d.decrypt(tokens[0], NOW)
        assert code == applepay.INVALID_SIGNATURE, result.message
        result.free()


def test_an_expired_message_is_judged_at_the_reference_time(minted):
    directory, tokens = minted
    with google_decryptor(directory) as d:
        code, result = d.decrypt(tokens[0], NOW + 3601)
        assert code == applepay.MESSAGE_EXPIRED, result.message
        result.free()


def test_without_google_keys_a_google_token_is_an_unknown_merchant_key(minted):
    directory, tokens = minted
    assert APPLE_MINTED, "set APPLEPAY_MINTED (run-tests.sh does)"
    apple = Path(APPLE_MINTED)
    merchant = applepay.Merchant.pkcs12((apple / "merchant.p12").read_bytes(), "insecure-test-password")
    with applepay.Decryptor([merchant], insecure_test_root_pem=(apple / "insecure-test-root.pem").read_bytes()) as d:
        code, result = d.decrypt(tokens[0], NOW)
        assert code == applepay.UNKNOWN_MERCHANT_KEY and "Google Pay" in result.message
        result.free()


def test_a_partial_google_configuration_is_refused():
    with pytest.raises(applepay.ConfigurationError) as raised:
        applepay.Decryptor(google_recipient_ids=[RECIPIENT])
    assert raised.value.code == applepay.INVALID_CONFIGURATION
    with pytest.raises(applepay.ConfigurationError) as raised:
        applepay.Decryptor(google_root_keys=b'{"keys": "not a list"}', google_recipient_ids=[RECIPIENT])
    assert raised.value.code == applepay.INVALID_CONFIGURATION


def test_a_batch_mixes_both_wallets_and_judges_replays_across_them(minted):
    directory, tokens = minted
    apple = Path(APPLE_MINTED)
    apple_tokens = [line for line in (apple / "tokens.jsonl").read_bytes().split(b"\n") if line][:3]
    merchant = applepay.Merchant.pkcs12((apple / "merchant.p12").read_bytes(), "insecure-test-password")
    batch = [tokens[0], apple_tokens[0], tokens[1], apple_tokens[1], tokens[0], apple_tokens[0],
             (directory / "expired-message.json").read_bytes()]
    with google_decryptor(directory, merchants=[merchant], root=(apple / "insecure-test-root.pem").read_bytes()) as d:
        code, results = d.decrypt_batch(batch, NOW, lanes=2)
        try:
            check_mixed_batch(code, results)
        finally:
            for r in results:
                r.free()


def check_mixed_batch(code, results):
    """The mixed batch's verdicts, lines and replay keys (the caller frees the results)."""
    assert code == applepay.OK
    codes = [r.code for r in results]
    assert codes == [0, 0, 0, 0, applepay.REPLAYED_TRANSACTION, applepay.REPLAYED_TRANSACTION,
                     applepay.MESSAGE_EXPIRED]
    assert results[0].transaction_id == "google-cabi-0"
    assert b"41110000" in results[2].payment_json()
    # The line is the engine writer's, as `applepay-decrypt batch` prints it.
    line = json.loads(results[0].line(0, "in.jsonl:1", mask_pan=True))
    assert line["transactionId"] == "google-cabi-0"
    masked = line["payment"]["paymentMethodDetails"]["pan"]
    assert masked.startswith("4111") and masked.endswith("0000") and "*" in masked and len(masked) == 16
    replay = json.loads(results[0].line(4, "in.jsonl:5", replay_of=0))
    assert replay["error"] == "replayedTransaction" and "payment" not in replay
    # Each replay names its own wallet's field (one front door): messageId for Google Pay, Apple Pay's own.
    assert [r.wallet for r in results] == [applepay.WALLET_GOOGLE_PAY, applepay.WALLET_APPLE_PAY] * 3 + [
        applepay.WALLET_GOOGLE_PAY]
    assert replay["field"] == "messageId" and results[4].field == "messageId"
    assert results[5].field == "header.transactionId"
    for wallet, field in ((applepay.WALLET_GOOGLE_PAY, "messageId"), (applepay.WALLET_APPLE_PAY, "header.transactionId")):
        line = json.loads(applepay.replay_line(4, "in.jsonl", "an-id", 0, source_line=5, wallet=wallet))
        assert line["field"] == field and line["transactionId"] == "an-id"
    assert applepay.replay_line(4, "in.jsonl", results[0].transaction_id, 0, wallet=results[4].wallet) == results[0].line(
        4, "in.jsonl", replay_of=0)
    google_keys = results[0].replay_keys
    assert google_keys is not None and google_keys == results[4].replay_keys


def test_with_google_keys_alone_an_apple_token_is_an_unknown_merchant_key(minted):
    directory, _ = minted
    apple_token = (Path(APPLE_MINTED) / "tokens.jsonl").read_bytes().split(b"\n")[0]
    # Still verified under the configured anchor: the chain first, then no merchant key for it.
    with google_decryptor(directory) as d:
        code, result = d.decrypt(apple_token, NOW)
        assert code == applepay.UNTRUSTED_CERTIFICATE_CHAIN, result.message
        result.free()
    with google_decryptor(directory, root=(Path(APPLE_MINTED) / "insecure-test-root.pem").read_bytes()) as d:
        code, result = d.decrypt(apple_token, NOW)
        assert code == applepay.UNKNOWN_MERCHANT_KEY, result.message
        result.free()


@pytest.mark.parametrize("mask_pan", [False, True])
def test_google_batch_lines_equal_the_cli_byte_for_byte(minted, mask_pan, tmp_path):
    """Google Pay keys alone, as `applepay-decrypt batch --google-*` without --merchant: payments, a replay,
    and the refusals, each line from the engine's one writer."""
    directory, tokens = minted
    cli = os.environ.get("APPLEPAY_CLI")
    assert cli and Path(cli).exists(), "set APPLEPAY_CLI to an applepay-decrypt binary (run-tests.sh does)"
    archive = tokens[:4] + [tokens[1]] + [(directory / f).read_bytes() for f in
                                          ("expired-message.json", "bad-tag.json", "expired-intermediate.json")]
    path = tmp_path / "google.jsonl"
    path.write_bytes(b"\n".join(archive) + b"\n")
    out = tmp_path / "cli.jsonl"
    subprocess.run([cli, "batch", str(path), "--out", str(out), "--quiet", "--now", "2026-03-01T12:00:00Z",
                    "--google-root-keys", str(directory / "root_keys.json"), "--google-recipient-id", RECIPIENT,
                    "--google-merchant-key", str(directory / "merchant_key.pem"), *(["--mask-pan"] if mask_pan else [])],
                   check=True, capture_output=True)
    expected = out.read_bytes().splitlines(keepends=True)
    with google_decryptor(directory) as d:
        code, results = d.decrypt_batch(archive, NOW, lanes=2)
        assert code == applepay.OK
        got = [r.line(i, f"{path}:{i + 1}", mask_pan=mask_pan) for i, r in enumerate(results)]
        for r in results:
            r.free()
    assert got == expected
    codes = [json.loads(line).get("error", "ok") for line in got]
    assert codes == ["ok"] * 4 + ["replayedTransaction", "messageExpired", "decryptionFailed", "intermediateKeyExpired"]


def test_a_reference_in_milliseconds_judges_expiry_to_the_millisecond(minted):
    # ABI 5: a message expiring at T ms is good at T - 1 and expired at T, through every call that takes a
    # reference; in seconds (the default) the same token needs whole seconds.
    directory, tokens = minted
    with google_decryptor(directory) as d:
        code, result = d.decrypt(tokens[0], NOW)
        assert code == applepay.OK, result.message
        expiry = int(json.loads(result.payment_json())["messageExpiration"])
        result.free()
    with google_decryptor(directory, reference_unit=applepay.REFERENCE_MILLISECONDS) as d:
        for reference, want in ((expiry - 1, applepay.OK), (expiry, applepay.MESSAGE_EXPIRED)):
            code, result = d.decrypt(tokens[0], reference)
            assert code == want, (reference, applepay.code_name(code), result.message)
            result.free()
            code, results = d.decrypt_batch([tokens[0]], reference, lanes=1)
            assert code == applepay.OK and results[0].code == want, (reference, applepay.code_name(results[0].code))
            for r in results:
                r.free()
        # NOW in milliseconds is the factory's clock, an hour before the expiry.
        code, result = d.decrypt(tokens[0], NOW * 1000)
        assert code == applepay.OK, result.message
        result.free()


def test_an_unknown_reference_unit_is_an_invalid_argument():
    with pytest.raises(applepay.ConfigurationError) as refused:
        applepay.Config(reference_unit=2)
    assert refused.value.code == applepay.INVALID_ARGUMENT


@needs_google
def test_an_arrow_batch_takes_its_reference_in_the_configured_unit():
    # dotnet-ecv2-gateway-ariane's intermediate key expires at 1542394027316 ms: in seconds, 1542394027 is before
    # it; in milliseconds (a decryptor made with REFERENCE_MILLISECONDS) ...315 is before and ...316 is not.
    import pyarrow as pa

    folder = GOOGLE / "dotnet-ecv2-gateway-ariane"
    meta = json.loads((folder / "meta.json").read_text())
    keys = [(folder / name).read_bytes() for name in sorted(os.listdir(folder)) if name.startswith("merchant_key")]
    tokens = pa.array([(folder / "token.json").read_bytes()], pa.binary())
    for unit, reference, code in [(applepay.REFERENCE_SECONDS, 1542394027, applepay.INVALID_PAYLOAD),
                                  (applepay.REFERENCE_MILLISECONDS, 1542394027315, applepay.INVALID_PAYLOAD),
                                  (applepay.REFERENCE_MILLISECONDS, 1542394027316, applepay.INTERMEDIATE_KEY_EXPIRED),
                                  (applepay.REFERENCE_SECONDS, 1542394028, applepay.INTERMEDIATE_KEY_EXPIRED)]:
        milliseconds = unit == applepay.REFERENCE_MILLISECONDS
        with applepay.Decryptor(google_root_keys=(folder / "root_keys.json").read_bytes(),
                                google_recipient_ids=[meta["recipientId"]], google_merchant_keys=keys,
                                reference_unit=unit) as decryptor:
            with decryptor.decrypt_arrow(tokens, reference, lanes=1) as columns:
                assert columns.codes.to_pylist() == [code], (reference, columns.lines.to_pylist())
                if code == applepay.INTERMEDIATE_KEY_EXPIRED:
                    assert f"before the reference time {reference * (1 if milliseconds else 1000)} ms".encode() \
                        in columns.lines.to_pylist()[0]


def cases_decryptor(directory, root_keys="root_keys.json"):
    return applepay.Decryptor(google_root_keys=(directory / root_keys).read_bytes(), google_recipient_ids=[RECIPIENT],
                              google_merchant_keys=[(directory / "merchant_key.pem").read_bytes(),
                                                    (directory / "merchant_key_2.pem").read_bytes()])


def test_every_rule_of_the_format_gives_its_code_through_the_abi(minted):
    # mint-tokens google's cases.jsonl: one token per rule (each signature broken alone, expiries, another
    # recipient id, one of several intermediate signatures, a leading-zero secret, the second merchant key, an
    # off-curve ephemeral key, a bad tag, duplicate members inside signedMessage and signedKey), token by token
    # and in one batch.
    directory, _ = minted
    cases = json.loads((directory / "cases.json").read_text())
    tokens = [line for line in (directory / "cases.jsonl").read_bytes().split(b"\n") if line]
    assert len(tokens) == len(cases) >= 16
    with cases_decryptor(directory) as d:
        for case, token in zip(cases, tokens):
            code, result = d.decrypt(token, NOW)
            assert applepay.code_name(code) == case["code"], (case["name"], result.message)
            result.free()
        code, results = d.decrypt_batch(tokens, NOW, lanes=2)
        assert code == applepay.OK
        assert [r.code_name for r in results] == [case["code"] for case in cases]
        for r in results:
            r.free()


@pytest.mark.parametrize("root_keys", ["root_keys_ecv1_only.json", "root_keys_expired.json"])
def test_a_root_key_of_another_version_or_expired_verifies_nothing(minted, root_keys):
    directory, _ = minted
    token = (directory / "cases.jsonl").read_bytes().split(b"\n")[0]
    with cases_decryptor(directory) as d:
        code, result = d.decrypt(token, NOW)
        assert code == applepay.OK, result.message
        result.free()
    with cases_decryptor(directory, root_keys) as d:
        code, result = d.decrypt(token, NOW)
        assert code == applepay.INVALID_SIGNATURE, (root_keys, result.message)
        result.free()


def minted_case(directory, name):
    cases = json.loads((directory / "cases.json").read_text())
    lines = (directory / "cases.jsonl").read_bytes().split(b"\n")
    return lines[[case["name"] for case in cases].index(name)]


def versions_decryptor(directory, versions):
    return applepay.Decryptor(google_root_keys=(directory / "root_keys.json").read_bytes(),
                              google_recipient_ids=[RECIPIENT],
                              google_merchant_keys=[(directory / "merchant_key.pem").read_bytes()],
                              google_protocol_versions=versions)


def test_by_default_ecv1_and_ecv2_are_accepted_and_signing_only_is_refused(minted):
    # Issue 44: ECv2SigningOnly (card data signed, not encrypted) only when named; every payment says its
    # protocolVersion and the recipient id that verified it.
    directory, _ = minted
    with versions_decryptor(directory, None) as d:
        for name, version in (("ecv1", "ECv1"), ("ecv2", "ECv2")):
            code, result = d.decrypt(minted_case(directory, name), NOW)
            assert code == applepay.OK, result.message
            payment = json.loads(result.payment_json())
            assert list(payment)[:2] == ["protocolVersion", "recipientId"]
            assert payment["protocolVersion"] == version and payment["recipientId"] == RECIPIENT
            result.free()
        code, result = d.decrypt(minted_case(directory, "ecv2-signing-only"), NOW)
        assert code == applepay.UNSUPPORTED_VERSION and result.field == "protocolVersion", result.message
        result.free()


def test_an_empty_version_list_a_nul_and_options_beside_a_config_are_refused(minted):
    # The attack review of issue 44 item 3: an empty list was read as the default (ECv1 and ECv2), a name with a
    # NUL as the name cut short there (ECv2SigningOnly accepted), and options given beside config= were dropped.
    directory, _ = minted
    with pytest.raises(applepay.ConfigurationError) as empty:
        versions_decryptor(directory, [])
    assert empty.value.code == applepay.INVALID_CONFIGURATION
    with pytest.raises(applepay.ConfigurationError) as nul:
        versions_decryptor(directory, ["ECv2SigningOnly\0off"])
    assert nul.value.code == applepay.INVALID_CONFIGURATION
    with pytest.raises(applepay.ConfigurationError):
        applepay.Config(google_root_keys=(directory / "root_keys.json").read_bytes(),
                        google_recipient_ids=[RECIPIENT + "\0other"])
    with applepay.Config(google_root_keys=(directory / "root_keys.json").read_bytes(),
                         google_recipient_ids=[RECIPIENT]) as config:
        with pytest.raises(TypeError):
            applepay.Decryptor(config=config, google_protocol_versions=["ECv2"])


def test_named_protocol_versions_replace_the_default(minted):
    directory, _ = minted
    signing_only = minted_case(directory, "ecv2-signing-only")
    with versions_decryptor(directory, ["ECv2SigningOnly"]) as d:
        code, result = d.decrypt(signing_only, NOW)
        assert code == applepay.OK, result.message
        assert json.loads(result.payment_json())["protocolVersion"] == "ECv2SigningOnly"
        result.free()
        code, results = d.decrypt_batch([signing_only, minted_case(directory, "ecv1")], NOW, lanes=1)
        assert [r.code_name for r in results] == ["ok", "unsupportedVersion"]
        assert results[1].field == "protocolVersion"
        for r in results:
            r.free()
    with pytest.raises(applepay.ConfigurationError):
        versions_decryptor(directory, ["ECv3"])
