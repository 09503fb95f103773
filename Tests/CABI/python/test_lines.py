# The ABI's result lines against `applepay-decrypt batch`, byte for byte, on Vectors/archive.jsonl (plus a
# blank line and an oversized line): through ap_decrypt_batch's own verdicts, and through single
# ap_decrypt calls whose replays are judged here from Result.replay_keys (replay_of), for the CLI's
# reference times and line options. APPLEPAY_CLI names the applepay-decrypt binary (run-tests.sh sets it).
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import applepay

ROOT = Path(__file__).resolve().parents[3]
VECTORS = ROOT / "Vectors"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text())
CLI = os.environ.get("APPLEPAY_CLI")
LIMIT = 1 << 20
AGE = re.compile(rb"\d+ s (before|after) the reference time [0-9TZ:-]+")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """archive.jsonl with a blank line, CRLF, a whitespace-only line and an oversized line mixed in."""
    lines = (VECTORS / "archive.jsonl").read_bytes().split(b"\n")
    lines = [l for l in lines if l]
    mixed = lines[:3] + [b"", lines[3] + b"\r", b"  \t", b"x" * (LIMIT + 1)] + lines[4:]
    path = tmp_path_factory.mktemp("lines") / "archive.jsonl"
    path.write_bytes(b"\n".join(mixed) + b"\n")
    return path


def cli_lines(archive, options, tmp_path):
    assert CLI and Path(CLI).exists(), "set APPLEPAY_CLI to an applepay-decrypt binary (Tests/CABI/run-tests.sh does)"
    merchants = [a for k in ("ec", "rsa") for a in
                 ("--merchant", f"cert={VECTORS}/merchants/{k}.cert.pem,key={VECTORS}/merchants/{k}.key.pem")]
    out = tmp_path / "cli.jsonl"
    subprocess.run([CLI, "batch", str(archive), "--out", str(out), "--quiet", "--trust-root", str(VECTORS / MANIFEST["trustRoot"]),
                    *merchants, *options], check=True, capture_output=True)
    return out.read_bytes().splitlines(keepends=True)


def items(archive):
    """(index, source, token or None for an oversized line) as the CLI numbers and labels them."""
    index = 0
    for number, raw in enumerate(archive.read_bytes().split(b"\n")[:-1], start=1):
        if len(raw) > LIMIT:
            yield index, f"{archive}:{number}", None
        else:
            token = raw.strip(b" \t\r")
            if not token:
                continue
            yield index, f"{archive}:{number}", token
        index += 1


def decryptor(window=None):
    merchants = [applepay.Merchant.certificate((VECTORS / f"merchants/{k}.cert.pem").read_bytes(),
                                               (VECTORS / f"merchants/{k}.key.pem").read_bytes()) for k in ("ec", "rsa")]
    return applepay.Decryptor(merchants, insecure_test_root_pem=(VECTORS / MANIFEST["trustRoot"]).read_bytes(),
                              signing_time_window=window)


NOW = int(__import__("datetime").datetime.fromisoformat(MANIFEST["now"].replace("Z", "+00:00")).timestamp())
# case: (CLI options, reference, window, line options, codes the lines must include)
CASES = {
    "now": (["--now", MANIFEST["now"]], NOW, None, {}, {"ok", "replayedTransaction"}),
    "mask-pan": (["--now", MANIFEST["now"], "--mask-pan"], NOW, None, {"mask_pan": True}, {"ok", "replayedTransaction"}),
    "at-signing-time": (["--at-signing-time"], applepay.REFERENCE_SIGNING_TIME, None, {"at_signing_time": True}, {"ok"}),
    "window": (["--now", "2026-03-01T12:00:20Z", "--window", "30"], NOW - 40, 30, {}, {"ok"}),
    "window too short": (["--now", MANIFEST["now"], "--window", "30"], NOW, 30, {}, {"signingTimeOutOfRange"}),
    "current time": ([], applepay.REFERENCE_NOW, None, {}, {"signingTimeOutOfRange"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batch_lines_equal_the_cli_byte_for_byte(case, archive, tmp_path):
    options, reference, window, line_options, must = CASES[case]
    expected = cli_lines(archive, options, tmp_path)
    listed = list(items(archive))
    with decryptor(window) as d:
        tokens = [t for _, _, t in listed if t is not None]
        code, results = d.decrypt_batch(tokens, reference, 2)
        assert code == applepay.OK
        results = iter(results)
        got = []
        for index, source, token in listed:
            result = next(results) if token is not None else applepay.oversized_line_result(LIMIT)
            got.append(result.line(index, source, **line_options))
            result.free()
    assert len(got) == len(expected) > 10
    if case == "current time":
        # The CLI ran a moment earlier: only the distance to "now" in the messages may differ.
        got, expected = [[AGE.sub(b"AGE", l) for l in ls] for ls in (got, expected)]
    for g, e in zip(got, expected):
        assert g == e
    codes = {json.loads(l).get("error", "ok") for l in expected}
    assert {"malformedToken"} | must <= codes, codes


@pytest.mark.parametrize("case", ["now", "mask-pan", "at-signing-time"])
def test_partitioned_batches_with_replays_judged_from_replay_keys_equal_the_cli(case, archive, tmp_path):
    """A caller that decrypts the archive in partitions (one ap_decrypt_batch each, as a Spark job does)
    and judges replays across them from the keys, in input order, writes the CLI's lines. A partition's
    own replay verdict names a partition-local item: replay_of rewrites it with the global one."""
    options, reference, window, line_options, _ = CASES[case]
    expected = cli_lines(archive, options, tmp_path)
    listed = list(items(archive))
    claimed, got = {}, []
    with decryptor(window) as d:
        results = []
        for start in range(0, len(listed), 5):
            part = [t for _, _, t in listed[start:start + 5] if t is not None]
            code, part_results = d.decrypt_batch(part, reference, 1) if part else (applepay.OK, [])
            assert code == applepay.OK
            part_results = iter(part_results)
            results += [next(part_results) if t is not None else applepay.oversized_line_result(LIMIT)
                        for _, _, t in listed[start:start + 5]]
        for (index, source, _), result in zip(listed, results):
            keys = result.replay_keys
            assert (keys is not None) == (result.code in (applepay.OK, applepay.REPLAYED_TRANSACTION))
            replay_of = None
            if keys is not None:
                # The engine's ReplayLedger: the transaction key's first claim, else the content key's.
                replay_of = claimed.get(keys[0], claimed.get(keys[1]))
                if replay_of is None:
                    for k in keys:
                        claimed.setdefault(k, index)
            got.append(result.line(index, source, replay_of=replay_of, **line_options))
            result.free()
    assert got == expected
    assert any(b"replayedTransaction" in l for l in expected) or case == "at-signing-time"


def test_replay_keys_are_those_of_the_item_claimed_and_a_batch_replay_still_has_them(archive):
    tokens = [t for _, _, t in items(archive) if t is not None]
    with decryptor() as d:
        code, results = d.decrypt_batch(tokens, NOW, 1)
        replays = [r for r in results if r.code == applepay.REPLAYED_TRANSACTION]
        assert replays
        for r in results:
            keys = r.replay_keys
            if r.code in (applepay.OK, applepay.REPLAYED_TRANSACTION):
                assert keys is not None and len(keys[0]) == len(keys[1]) == 16
            else:
                assert keys is None
        for r in replays:
            first = int(r.message.rsplit(" ", 1)[1])
            assert set(r.replay_keys) & set(results[first].replay_keys), "a replay shares a key with the item it names"
        for r in results:
            r.free()


def test_line_misuse_is_an_error(archive):
    with decryptor() as d:
        token = next(t for _, _, t in items(archive) if t is not None)
        ok = d.decrypt(token, NOW)[1]
        bad = d.decrypt(b"{}", NOW)[1]
        lib, length = applepay.lib, applepay.c_size_t(0)
        assert lib.ap_result_line(ok.handle, 0, b"s", 1, 4, -1, None, 0, applepay.byref(length)) == applepay.INVALID_ARGUMENT
        assert lib.ap_result_line(ok.handle, 0, b"s", 1, 0, -2, None, 0, applepay.byref(length)) == applepay.INVALID_ARGUMENT
        assert lib.ap_result_line(ok.handle, 3, b"s", 1, 0, 3, None, 0, applepay.byref(length)) == applepay.INVALID_ARGUMENT
        assert lib.ap_result_line(ok.handle, 3, b"s", 1, 0, -1, None, 0, None) == applepay.INVALID_ARGUMENT
        assert lib.ap_result_line(bad.handle, 3, b"s", 1, 0, 1, None, 0, applepay.byref(length)) == applepay.INVALID_ARGUMENT
        # Too small: the size needed, nothing written.
        assert lib.ap_result_line(ok.handle, 3, b"s", 1, 0, -1, None, 0, applepay.byref(length)) == applepay.BUFFER_TOO_SMALL
        needed = length.value
        buffer = (applepay.c_uint8 * (needed - 1))()
        assert lib.ap_result_line(ok.handle, 3, b"s", 1, 0, -1, buffer, needed - 1, applepay.byref(length)) == applepay.BUFFER_TOO_SMALL
        assert length.value == needed and bytes(buffer) == bytes(needed - 1)
        assert len(ok.line(3, "s")) == needed and ok.line(3, "s").endswith(b"}\n")
        # A replay line carries no payment.
        replay = json.loads(ok.line(3, "s", replay_of=1))
        assert replay["error"] == "replayedTransaction" and "payment" not in replay and replay["field"] == "header.transactionId"
        assert bad.replay_keys is None
        with pytest.raises(ValueError):
            applepay.oversized_line_result(0)
        ok.free()
        bad.free()
        with pytest.raises(applepay.FreedError):
            ok.line(0, "s")
