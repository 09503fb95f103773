"""applepay.spark with Google Pay tokens (issue 36) against the real CLI: archives that mix both wallets give the
CLI's result file byte for byte, replays judged across both wallets and across partitions; the shared Google
vectors give the CLI's lines with Google Pay keys alone (no --merchant); --now counts milliseconds.

Needs what test_spark.py needs, plus `mint-tokens` ($APPLEPAY_MINT_TOKENS, or beside the CLI, or the checkout's
.build) or a `mint-tokens google` folder ($APPLEPAY_GOOGLE_MINTED), and ../shared/vectors/google
($APPLEPAY_GOOGLE_VECTORS).
"""
import base64
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_spark import (CLI, LIMIT, MERCHANTS, NOW, ROOT, TRUST_ROOT, assert_same_lines, concatenated, job,
                        make_archives, write)

GOOGLE_VECTORS = Path(os.environ.get("APPLEPAY_GOOGLE_VECTORS", os.path.join(ROOT, "..", "shared", "vectors", "google")))
VECTOR_NAMES = sorted(p.name for p in GOOGLE_VECTORS.iterdir() if (p / "token.json").exists()) \
    if GOOGLE_VECTORS.is_dir() else []
# Without ../shared (a public clone) the tests that read it are skipped, naming what is missing;
# APPLEPAY_REQUIRE_SHARED=1 (set by CI) makes its absence a failure instead.
def needs_shared(folder, what):
    return pytest.mark.skipif(not folder.is_dir() and os.environ.get("APPLEPAY_REQUIRE_SHARED") != "1",
                              reason=f"{what} missing at {folder} (set APPLEPAY_REQUIRE_SHARED=1 to fail instead)")
needs_google = needs_shared(GOOGLE_VECTORS, "the shared Google Pay vectors")

# mint-tokens google: tokens sent at 2026-03-01T12:00:00Z for this recipient, messages expiring an hour later.
RECIPIENT = "merchant:12345678901234567890"
# A reference time with milliseconds, inside the Apple archive's signing-time window and the Google messages' life.
MIXED_NOW = "2026-03-01T12:01:00.250Z"


@pytest.fixture(scope="session")
def minted(tmp_path_factory):
    if os.environ.get("APPLEPAY_GOOGLE_MINTED"):
        return Path(os.environ["APPLEPAY_GOOGLE_MINTED"])
    candidates = [os.environ.get("APPLEPAY_MINT_TOKENS"), os.path.join(os.path.dirname(CLI), "mint-tokens"),
                  os.path.join(ROOT, ".build", "release", "mint-tokens"), os.path.join(ROOT, ".build", "debug", "mint-tokens")]
    tool = next((path for path in candidates if path and os.path.exists(path)), None)
    assert tool, f"mint-tokens not found (build it: swift build -c release --product mint-tokens); looked in {candidates}"
    directory = tmp_path_factory.mktemp("google") / "minted"
    subprocess.run([tool, "google", str(directory), "12"], check=True, capture_output=True)
    return directory


def google_options(directory, recipient=RECIPIENT):
    """EngineOptions' Google Pay arguments: two recipient ids (a token needs one), the factory's root and key."""
    return {"google_root_keys": str(directory / "root_keys.json"),
            "google_recipient_ids": ["gateway:someone-else", recipient],
            "google_merchant_keys": [str(directory / "merchant_key.pem")]}


def cli_flags(google=None, apple=True):
    """The CLI's options for the same keys (the job's own command line takes the same)."""
    flags = [arg for spec in MERCHANTS for arg in ("--merchant", spec)] + ["--trust-root", TRUST_ROOT] if apple else []
    if google:
        flags += ["--google-root-keys", google["google_root_keys"]]
        flags += [arg for value in google["google_recipient_ids"] for arg in ("--google-recipient-id", value)]
        flags += [arg for value in google["google_merchant_keys"] for arg in ("--google-merchant-key", value)]
    return flags


def run_cli(inputs, out, flags):
    subprocess.run([CLI, "batch", *map(str, inputs), "--out", str(out), "--quiet", "--lanes", "2", *flags],
                   check=True, capture_output=True)
    return Path(out).read_bytes()


def compact(token):
    return json.dumps(token, separators=(",", ":")).encode()


def flipped(signature):
    raw = bytearray(base64.b64decode(signature))
    raw[-1] ^= 1
    return base64.b64encode(bytes(raw)).decode()


def broken_signature(line):
    token = json.loads(line)
    token["signature"] = flipped(token["signature"])
    return compact(token)


def broken_intermediate_signature(line):
    token = json.loads(line)
    token["intermediateSigningKey"]["signatures"] = [flipped(s) for s in token["intermediateSigningKey"]["signatures"]]
    return compact(token)


def other_version(line):
    token = json.loads(line)
    token["protocolVersion"] = "ECv3"
    return compact(token)


def duplicate_member(line):
    # {"protocolVersion":..., ..., "signature":"x"}: strict reading refuses a member given twice.
    return line[:-1] + b',"signature":"x"}'


def reserialized(line):
    # The same signed strings in an outer JSON of other bytes: still the same payment, a replay.
    return json.dumps(json.loads(line), indent=1).replace("\n", "").encode()


def mixed_archives(base, minted):
    """Two JSONL files mixing both wallets: the Apple archives of test_spark (every Apple code, reader edge cases,
    Apple replays) with Google Pay payments, replays (exact and re-serialized) in the other file and other
    partitions, junk carrying a genuine messageId before its token, and each Google refusal the factory and a
    hand can make."""
    first, second = make_archives(base)
    google = [line for line in (minted / "tokens.jsonl").read_bytes().split(b"\n") if line]
    refused = [(minted / name).read_bytes().strip() for name in ("expired-message.json", "bad-tag.json",
                                                                  "expired-intermediate.json")]
    block_a = [google[0], google[1], broken_signature(google[2]), google[2], *refused, other_version(google[3]),
               duplicate_member(google[3]), broken_intermediate_signature(google[4]), google[3], google[5]]
    block_b = [google[6], reserialized(google[0]), google[7], google[1], google[8], google[2], google[6]]
    mixed_first = base / "mixed-first.jsonl"
    mixed_second = base / "mixed-second.jsonl"
    apple_first = Path(first).read_bytes().split(b"\n")
    # Google tokens among the Apple ones (the Apple file's lines stay in order, numbered anew).
    middle = len(apple_first) // 2
    write(mixed_first, b"\n".join(apple_first[:middle] + block_a[:5] + apple_first[middle:-1] + block_a[5:]) + b"\n")
    write(mixed_second, b"\n".join(block_b) + b"\n" + Path(second).read_bytes() + b"\n" + google[9] + b"\n" + google[5])
    return [mixed_first, mixed_second]


def codes_of(output):
    return [json.loads(line).get("error", "ok") for line in output.splitlines()]


def test_a_mixed_archive_is_the_cli_result_file_with_replays_across_wallets_and_partitions(spark, minted, tmp_path):
    inputs = mixed_archives(tmp_path, minted)
    google = google_options(minted)
    cli = run_cli(inputs, tmp_path / "cli.jsonl", cli_flags(google) + ["--now", MIXED_NOW, "--max-item-bytes", str(LIMIT)])
    lines = [json.loads(line) for line in cli.splitlines()]
    google_lines = [line for line in lines if str(line.get("transactionId")).startswith("google-cabi-")]
    # Google's refusals name no messageId: their messages tell them apart.
    messages = [line.get("message", "") for line in lines]
    for needle in ("expired at 1772366399999 ms", "the intermediate signing key expired", "merchant keys: wrong key",
                   "signature does not verify for any configured recipient id", 'protocolVersion "ECv3"',
                   'member "signature" appears more than once', "no intermediateSigningKey signature verifies"):
        assert any(needle in message for message in messages), needle
    assert {"messageExpired", "intermediateKeyExpired"} <= set(codes_of(cli))
    # Replays of Google payments 0 (re-serialized), 1 and 2 (after junk carrying its messageId) in the other file,
    # 6 in its own, 5 at the very end; every claim is made in another partition than its replay's.
    assert sorted(line["transactionId"] for line in google_lines if line.get("error") == "replayedTransaction") == [
        f"google-cabi-{k}" for k in (0, 1, 2, 5, 6)]
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, MIXED_NOW, **google)
    # 8 KiB splits: two to five tokens a partition, so every Google replay is in another partition than its claim.
    count = job.run_job(spark, [str(p) for p in inputs], str(tmp_path / "out"), engine, max_item_bytes=LIMIT,
                        split_bytes=8192)
    assert count == len(lines)
    assert_same_lines(concatenated(tmp_path / "out"), cli)


def vector_options(name, recipient=None):
    folder = GOOGLE_VECTORS / name
    meta = json.loads((folder / "meta.json").read_text())
    keys = [str(folder / key) for key in sorted(os.listdir(folder)) if key.startswith("merchant_key")]
    return {"google_root_keys": str(folder / "root_keys.json"), "google_recipient_ids": [recipient or meta["recipientId"]],
            "google_merchant_keys": keys}, meta


def iso_milliseconds(milliseconds):
    """2018-11-15T22:09:53.000Z: an ISO 8601 time with milliseconds, as the CLI's --now takes it."""
    seconds, ms = divmod(milliseconds, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


@needs_google
def test_the_shared_google_vectors_are_there():
    assert len(VECTOR_NAMES) >= 9, f"expected the shared Google vectors in {GOOGLE_VECTORS}"


# The samples' "ok" messages are not payments (Tink's "plaintext"): verified and decrypted, then invalidPayload.
OUTCOMES = {"ok": "invalidPayload", "malformed": "malformedToken", "invalidSignature": "invalidSignature",
            "decryptionFailed": "decryptionFailed"}


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_each_shared_vector_gives_the_cli_line_with_google_keys_alone(spark, name, tmp_path):
    google, meta = vector_options(name)
    expected = json.loads((GOOGLE_VECTORS / name / "expected.json").read_text())
    # One line of JSONL: a vector written over several lines has its line breaks (white space) made spaces.
    token = (GOOGLE_VECTORS / name / "token.json").read_bytes().strip().replace(b"\r", b"").replace(b"\n", b" ")
    # Twice, in two partitions: a refused token claims nothing (not even one refused only for its payload), so
    # the copy is refused alike.
    path = write(tmp_path / "vector.jsonl", token + b"\n" + token + b"\n")
    now = iso_milliseconds(meta["now"])
    cli = run_cli([path], tmp_path / "cli.jsonl", cli_flags(google, apple=False) + ["--now", now])
    first, second = codes_of(cli)
    assert first == OUTCOMES[expected["outcome"]] or first in expected.get("accept", []), cli
    assert second == first
    engine = job.EngineOptions(now=now, **google)  # no Apple merchant
    job.run_job(spark, [str(path)], str(tmp_path / "out"), engine, split_bytes=len(token) + 1)
    assert len([n for n in os.listdir(tmp_path / "out") if n.startswith("part-")]) == 2
    assert_same_lines(concatenated(tmp_path / "out"), cli)


@needs_google
@pytest.mark.parametrize("now, code", [("2018-11-16T18:47:07.315Z", "invalidPayload"),
                                       ("2018-11-16T18:47:07.316Z", "intermediateKeyExpired")])
def test_now_counts_milliseconds_as_the_cli_does(spark, now, code, tmp_path):
    # dotnet-ecv2-gateway-ariane's intermediate key expires at 1542394027316 ms: a millisecond decides.
    google, _ = vector_options("dotnet-ecv2-gateway-ariane")
    path = write(tmp_path / "ariane.jsonl", (GOOGLE_VECTORS / "dotnet-ecv2-gateway-ariane" / "token.json").read_bytes())
    cli = run_cli([path], tmp_path / "cli.jsonl", cli_flags(google, apple=False) + ["--now", now])
    assert codes_of(cli) == [code]
    job.run_job(spark, [str(path)], str(tmp_path / "out"), job.EngineOptions(now=now, **google))
    assert_same_lines(concatenated(tmp_path / "out"), cli)


def test_the_command_line_takes_the_clis_google_options_and_needs_no_merchant_with_them(minted, tmp_path):
    google = google_options(minted)
    args = job._parser().parse_args(["in.jsonl", "--out", "o"] + cli_flags(google, apple=False))
    assert (args.merchant, args.google_root_keys) == ([], google["google_root_keys"])
    assert (args.google_recipient_id, args.google_merchant_key) == (google["google_recipient_ids"],
                                                                    google["google_merchant_keys"])
    # A partial Google configuration, or none at all, is refused before Spark starts (exit 2, as the CLI).
    path = write(tmp_path / "in.jsonl", b"{}\n")
    for flags, message in [(["--google-recipient-id", RECIPIENT], "--google-root-keys"),
                           (["--google-root-keys", google["google_root_keys"]], "--google-recipient-id"),
                           ([], "merchant")]:
        run = subprocess.run([sys.executable, "-m", "applepay.spark", str(path), "--out", str(tmp_path / "out"), *flags],
                             capture_output=True, text=True)
        assert run.returncode == 2 and message in run.stderr, run.stderr
        assert not (tmp_path / "out").exists()


def test_the_library_function_gives_the_cli_verdicts_on_both_wallets(spark, minted, tmp_path):
    inputs = mixed_archives(tmp_path, minted)
    google = google_options(minted)
    expected = [json.loads(line) for line in run_cli(inputs, tmp_path / "cli.jsonl", cli_flags(google) + ["--now", MIXED_NOW])
                .splitlines()]
    tokens = [line.strip(b" \t\r") for path in inputs for line in path.read_bytes().split(b"\n") if line.strip(b" \t\r")]
    assert len(tokens) == len(expected)
    rows = [(i * 10 + 7, token) for i, token in enumerate(tokens)]
    df = spark.createDataFrame(rows, "order long, token binary").repartition(3)
    got = {row["index"]: row for row in job.decrypt_tokens(df, MERCHANTS, trust_root=TRUST_ROOT, now=MIXED_NOW,
                                                            **google).collect()}
    for i, want in enumerate(expected):
        row = got[i * 10 + 7]
        assert (row.transactionId, row.code, row.field) == (want["transactionId"], want.get("error", "ok"), want.get("field"))
        if row.code == "replayedTransaction":
            claimed = int(want["message"].rsplit(" ", 1)[1])
            assert row.message == want["message"].rsplit(" ", 1)[0] + f" {claimed * 10 + 7}"
        else:
            assert row.message == want.get("message")
        assert (json.loads(row.payment) if row.payment else None) == want.get("payment")
    assert sum(1 for want in expected if "messageId" in json.dumps(want.get("payment"))) >= 9  # Google payments


def test_the_module_on_a_mixed_archive_writes_card_data_only_the_user_can_read_and_needs_no_pandas(minted, tmp_path):
    # The whole entry point with its own Spark (local[2]) and umask, as a data engineer runs it, on the mixed archive
    # with the CLI's options (the one test that starts a JVM of its own, so it checks all of this); pandas is hidden
    # from the driver and the workers (a package that fails to import first on their path): the job needs pyarrow
    # only, where pyspark's mapInArrow would import pandas in the driver.
    hidden = tmp_path / "hidden" / "pandas"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("pandas is hidden from this job")\n')
    inputs = mixed_archives(tmp_path, minted)
    flags = cli_flags(google_options(minted)) + ["--now", MIXED_NOW]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hidden.parent), os.environ["PYTHONPATH"]]))
    run = subprocess.run([sys.executable, "-m", "applepay.spark", *map(str, inputs), "--out", str(tmp_path / "out"),
                          "--master", "local[2]", "--split-bytes", "16384", *flags], capture_output=True, env=env, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tokens in" in run.stderr
    out = tmp_path / "out"
    assert_same_lines(concatenated(out), run_cli(inputs, tmp_path / "cli.jsonl", flags))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700
    for name in os.listdir(out):
        mode = stat.S_IMODE(os.stat(out / name).st_mode)
        assert mode & 0o077 == 0, f"{name} has mode {oct(mode)}"


def test_every_rule_of_the_format_gives_its_code_and_the_cli_line(spark, minted, tmp_path):
    # mint-tokens google's cases.jsonl: one token per rule (each signature broken alone, expiries, another recipient
    # id, one of several intermediate signatures, a leading-zero secret, the second merchant key, an off-curve
    # ephemeral key, a bad tag, duplicate members in signedMessage and signedKey), small splits.
    cases = json.loads((minted / "cases.json").read_text())
    google = dict(google_options(minted),
                  google_merchant_keys=[str(minted / "merchant_key.pem"), str(minted / "merchant_key_2.pem")])
    now = "2026-03-01T12:00:30.000Z"
    cli = run_cli([minted / "cases.jsonl"], tmp_path / "cli.jsonl", cli_flags(google, apple=False) + ["--now", now])
    assert codes_of(cli) == [case["code"] for case in cases]
    engine = job.EngineOptions([], None, now, **google)
    job.run_job(spark, [str(minted / "cases.jsonl")], str(tmp_path / "out"), engine, split_bytes=4096)
    assert_same_lines(concatenated(tmp_path / "out"), cli)


def test_google_protocol_versions_replace_the_default_in_the_job_and_the_library_as_in_the_cli(spark, minted, tmp_path):
    # Issue 44: by default ECv1 and ECv2, ECv2SigningOnly (card data signed, not encrypted) only when named; naming
    # versions replaces the default. The job's --google-protocol-version and decrypt_tokens(google_protocol_versions=)
    # give the CLI's lines, and a payment says its protocolVersion and the recipient id that verified it.
    cases = [case["name"] for case in json.loads((minted / "cases.json").read_text())]
    lines = (minted / "cases.jsonl").read_bytes().split(b"\n")
    names = ["ecv2", "ecv1", "ecv2-signing-only"]
    path = write(tmp_path / "versions.jsonl", b"".join(lines[cases.index(name)] + b"\n" for name in names))
    google = google_options(minted)
    now = "2026-03-01T12:00:30.000Z"
    named = ["--google-protocol-version", "ECv2SigningOnly"]
    assert codes_of(run_cli([path], tmp_path / "default.jsonl", cli_flags(google, apple=False) + ["--now", now])) \
        == ["ok", "ok", "unsupportedVersion"]
    cli = run_cli([path], tmp_path / "cli.jsonl", cli_flags(google, apple=False) + named + ["--now", now])
    assert codes_of(cli) == ["unsupportedVersion", "unsupportedVersion", "ok"]
    payment = json.loads(cli.splitlines()[2])["payment"]
    assert (payment["protocolVersion"], payment["recipientId"]) == ("ECv2SigningOnly", RECIPIENT)
    args = job._parser().parse_args([str(path), "--out", "o"] + cli_flags(google, apple=False) + named)
    assert args.google_protocol_version == ["ECv2SigningOnly"]
    engine = job.EngineOptions(now=now, google_protocol_versions=args.google_protocol_version, **google)
    job.run_job(spark, [str(path)], str(tmp_path / "out"), engine)
    assert_same_lines(concatenated(tmp_path / "out"), cli)
    df = spark.createDataFrame([(i, lines[cases.index(name)]) for i, name in enumerate(names)], "order long, token binary")
    rows = sorted(job.decrypt_tokens(df, now=now, google_protocol_versions=["ECv2SigningOnly"], **google).collect())
    expected = [json.loads(line) for line in cli.splitlines()]
    assert [(row.code, row.field) for row in rows] == [(want.get("error", "ok"), want.get("field")) for want in expected]
    assert json.loads(rows[2].payment) == payment
    with pytest.raises(ValueError):
        job.EngineOptions(now=now, google_protocol_versions=["ECv3"], **google)
    with pytest.raises(ValueError):  # an empty list names no version; leaving it out means ECv1 and ECv2
        job.EngineOptions(now=now, google_protocol_versions=[], **google)
