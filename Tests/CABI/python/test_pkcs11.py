# ap_config_add_merchant_pkcs11 through ctypes: real Apple vectors (EC_v1 and RSA_v1) decrypt with their
# keys imported into a private SoftHSM2 token; a wrong PIN and a missing object are configuration errors; a
# Google Pay factory token (APPLEPAY_GOOGLE_MINTED) decrypts with its merchant key in the token.
import json
import os
import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

import pytest

import applepay

ROOT = Path(__file__).resolve().parents[3]
APPLE = Path(os.environ.get("APPLEPAY_SHARED_VECTORS", ROOT / ".." / "shared" / "vectors" / "apple"))
MODULE = next((p for p in ("/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so")
               if os.path.exists(p)), "/usr/lib/softhsm/libsofthsm2.so")
PIN = "482910"
VECTORS = {"basistheory-2023-ec-new": "--usage-derive", "basistheory-2024-rsa": "--usage-decrypt"}
GOOGLE_MINTED = Path(os.environ.get("APPLEPAY_GOOGLE_MINTED", "/nonexistent"))

# Without ../shared (a public clone) the tests that read it are skipped, naming what is missing;
# APPLEPAY_REQUIRE_SHARED=1 (set by CI) makes its absence a failure instead.
def needs_shared(folder, what):
    return pytest.mark.skipif(not folder.is_dir() and os.environ.get("APPLEPAY_REQUIRE_SHARED") != "1",
                              reason=f"{what} missing at {folder} (set APPLEPAY_REQUIRE_SHARED=1 to fail instead)")
needs_apple = needs_shared(APPLE, "the shared Apple vectors")
APPLE_RUNS = APPLE.is_dir() or os.environ.get("APPLEPAY_REQUIRE_SHARED") == "1"


@pytest.fixture(scope="module")
def token():
    directory = Path(tempfile.mkdtemp(prefix="applepay-softhsm-"))
    (directory / "tokens").mkdir()
    conf = directory / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {directory / 'tokens'}\nobjectstore.backend = file\nlog.level = ERROR\n")
    # Read by SoftHSM at C_Initialize, which the library calls on the first PKCS#11 merchant.
    os.environ["SOFTHSM2_CONF"] = str(conf)
    (directory / "pin").write_text(PIN + "\n")
    subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", "cabi", "--pin", PIN, "--so-pin", "112233"],
                   check=True, capture_output=True)
    for name, usage in (VECTORS.items() if APPLE_RUNS else ()):
        subprocess.run(["pkcs11-tool", "--module", MODULE, "--token-label", "cabi", "--login", "--pin", PIN, "--write-object",
                        str(APPLE / name / "merchant_key.pem"), "--type", "privkey", "--label", name, usage],
                       check=True, capture_output=True)
    # The Google Pay factory's merchant key (mint-tokens google), for ap_config_add_google_merchant_pkcs11.
    subprocess.run(["pkcs11-tool", "--module", MODULE, "--token-label", "cabi", "--login", "--pin", PIN, "--write-object",
                    str(GOOGLE_MINTED / "merchant_key.pem"), "--type", "privkey", "--label", "google", "--usage-derive"],
                   check=True, capture_output=True)
    yield directory
    shutil.rmtree(directory)


def uri(object_label, pin_query):
    return f"pkcs11:token=cabi;object={object_label};type=private?module-path={MODULE}&{pin_query}"


@needs_apple
@pytest.mark.parametrize("name", sorted(VECTORS))
def test_apple_vector_decrypts_with_its_key_in_the_token(token, name):
    folder = APPLE / name
    meta = json.loads((folder / "meta.json").read_text())
    merchant = applepay.Merchant.pkcs11((folder / "merchant_cert.pem").read_bytes(), uri(name, f"pin-source=file:{token / 'pin'}"))
    # RSA_v1 too: SoftHSM2 2.6.1 (Debian 12) implements RSA-OAEP with SHA-1 only, so the engine takes the raw
    # RSA operation from the token and decodes OAEP (SHA-256) itself.
    with applepay.Decryptor([merchant]) as decryptor:
        signing = int(datetime.fromisoformat(meta["signingTime"].replace("Z", "+00:00")).timestamp())
        code, result = decryptor.decrypt((folder / "token.json").read_bytes(), signing)
        try:
            assert code == applepay.OK, result.message
            assert json.loads(result.payment_json()) == json.loads((folder / "expected.json").read_text())
        finally:
            result.free()


@needs_apple
def test_wrong_pin_and_missing_object_are_configuration_errors(token):
    cert = (APPLE / "basistheory-2023-ec-new" / "merchant_cert.pem").read_bytes()
    with pytest.raises(applepay.ConfigurationError) as missing:
        applepay.Decryptor([applepay.Merchant.pkcs11(cert, uri("no-such-key", f"pin-source={token / 'pin'}"))])
    assert "no private key" in str(missing.value)
    with pytest.raises(applepay.ConfigurationError) as unusable:
        applepay.Decryptor([applepay.Merchant.pkcs11(cert, uri("basistheory-2023-ec-new", "pin-source=/nonexistent/pin"))])
    assert "/nonexistent/pin" in str(unusable.value)


def test_a_google_pay_token_decrypts_with_its_merchant_key_in_the_token(token):
    public_key = subprocess.run(["openssl", "pkey", "-in", str(GOOGLE_MINTED / "merchant_key.pem"), "-pubout"],
                                check=True, capture_output=True).stdout
    first = (GOOGLE_MINTED / "tokens.jsonl").read_bytes().split(b"\n")[0]
    config = applepay.Config(google_root_keys=(GOOGLE_MINTED / "root_keys.json").read_bytes(),
                             google_recipient_ids=["merchant:12345678901234567890"])
    with pytest.raises(applepay.ConfigurationError):
        config.add_google_merchant_pkcs11(public_key, uri("google", "pin-env=APPLEPAY_NO_SUCH_PIN_VARIABLE"))
    config.add_google_merchant_pkcs11(public_key, uri("google", f"pin-source=file:{token / 'pin'}"))
    with applepay.Decryptor(config=config) as decryptor:
        config.free()
        code, result = decryptor.decrypt(first, 1772366400)  # the factory's clock, 2026-03-01T12:00:00Z
        try:
            assert code == applepay.OK, result.message
            assert json.loads(result.payment_json())["messageId"] == "google-cabi-0"
        finally:
            result.free()
