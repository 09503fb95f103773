"""applepay.spark on real Spark (local[2]) against the real CLI: the job's part files, concatenated, must be
byte for byte `applepay-decrypt batch`'s result file; the library function must give the CLI's verdicts.

Needs: pyspark and Java 17, libapplepay.so ($APPLEPAY_LIBRARY or .build/release), the CLI ($APPLEPAY_CLI or
.build/release/applepay-decrypt). One SparkSession for the whole run (conftest.py); few, small jobs.
"""
import base64
import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACKAGE = os.path.join(ROOT, "Sources", "python")
sys.path.insert(0, PACKAGE)
# Spark's Python workers are other processes: they find the package through PYTHONPATH, which the JVM
# (started from this process) passes on to them. On a cluster, the package is installed on every
# executor instead (the Spark article, Spark.md).
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE, os.environ.get("PYTHONPATH")]))
if "APPLEPAY_LIBRARY" not in os.environ:
    os.environ["APPLEPAY_LIBRARY"] = os.path.join(ROOT, ".build", "release", "libapplepay.so")

from applepay import spark as job  # noqa: E402

CLI = os.environ.get("APPLEPAY_CLI", os.path.join(ROOT, ".build", "release", "applepay-decrypt"))
VECTORS = os.path.join(ROOT, "Vectors")
MANIFEST = json.load(open(os.path.join(VECTORS, "manifest.json")))
MERCHANTS = [",".join(f"{part.split('=')[0]}={os.path.join(VECTORS, part.split('=')[1])}" for part in spec.split(","))
             for spec in MANIFEST["merchants"]]
TRUST_ROOT = os.path.join(VECTORS, MANIFEST["trustRoot"])
NOW = MANIFEST["now"]
LIMIT = 16384  # --max-item-bytes where a test wants an oversized line without a 1 MiB file
REQUEST = {"countryCode": "US", "currencyCode": "USD", "supportedNetworks": ["visa", "masterCard"],
           "merchantCapabilities": ["supports3DS"], "total": {"label": "Example Shop", "amount": "999.99"}}


def archive_lines():
    with open(os.path.join(VECTORS, "archive.jsonl"), "rb") as f:
        return f.read().splitlines()


def upper_cased(line):
    token = json.loads(line)
    token["header"]["transactionId"] = token["header"]["transactionId"].upper()
    return json.dumps(token).encode()


def junk_with_genuine_id(line):
    # A genuine token's transactionId on a token whose ciphertext is garbage: it fails, so it must claim nothing.
    token = json.loads(line)
    token["data"] = base64.b64encode(b"\x00" * 96).decode()
    return json.dumps(token).encode()


def wrapped(line, request):
    return json.dumps({"paymentToken": json.loads(line), "paymentRequest": request}).encode()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


@pytest.fixture(scope="session")
def archives(tmp_path_factory):
    return make_archives(tmp_path_factory.mktemp("archives"))


def make_archives(base):
    """Two JSONL files holding every error code, reader edge cases, and replays across files and partitions."""
    lines = archive_lines()
    oks = [line for line in lines if b'"header"' in line][:7]
    first = b"\n".join(lines) + b"\n"
    # Blank and white-space lines (counted, no item), CRLF, invalid UTF-8, an oversized line, a replay of
    # item 0 with its transactionId upper-cased, junk carrying genuine transactionIds before their tokens' replays.
    first += b"\n  \t \n" + oks[1] + b"\r\n" + b'{"version":"EC_v1","data":"\xff\xfe"}\n' + b"x" * (LIMIT + 1) + b"\n"
    first += upper_cased(oks[0]) + b"\n" + junk_with_genuine_id(oks[2]) + b"\n\r\n"
    first += wrapped(oks[3], REQUEST) + b"\n" + wrapped(oks[4], {"countryCode": "US"}) + b"\n"
    second = b"\n".join([junk_with_genuine_id(oks[5]), oks[5], oks[2], upper_cased(oks[6]), oks[6], oks[3], oks[0],
                         oks[4], b"   ", oks[1]])  # no newline at the end
    return [write(base / "first.jsonl", first), write(base / "second.jsonl", second)]


def run_cli(inputs, out, *options):
    subprocess.run([CLI, "batch", *map(str, inputs), "--out", str(out), "--quiet", "--lanes", "2",
                    *[arg for spec in MERCHANTS for arg in ("--merchant", spec)], "--trust-root", TRUST_ROOT, *options],
                   check=True, capture_output=True)
    with open(out, "rb") as f:
        return f.read()


def concatenated(directory):
    """The part files of a finished job, in name order. OUT must hold them and _SUCCESS, nothing else: no staged
    lines, no half-written copy (card data) left behind."""
    names = sorted(name for name in os.listdir(directory) if name.startswith("part-"))
    assert names, f"no part files in {directory}"
    assert sorted(os.listdir(directory)) == sorted(names + ["_SUCCESS"]), os.listdir(directory)
    data = b""
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            data += f.read()
    return data


def assert_same_lines(spark_output, cli_output):
    assert spark_output.count(b"\n") == cli_output.count(b"\n")
    for number, (got, want) in enumerate(zip(spark_output.split(b"\n"), cli_output.split(b"\n"))):
        assert got == want, f"line {number} differs"
    assert spark_output == cli_output


def test_job_output_is_the_cli_result_file_byte_for_byte(spark, archives, tmp_path):
    cli = run_cli(archives, tmp_path / "cli.jsonl", "--now", NOW, "--max-item-bytes", str(LIMIT))
    codes = {json.loads(line).get("error", "ok") for line in cli.splitlines()}
    assert codes == {"ok", "malformedToken", "unsupportedVersion", "invalidSignature", "untrustedCertificateChain",
                     "signingTimeOutOfRange", "unknownMerchantKey", "decryptionFailed", "invalidPayload",
                     "replayedTransaction", "paymentRequestMismatch"}
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, NOW)
    # 8 KiB splits: a partition holds two or three tokens, so the replays cross partitions.
    count = job.run_job(spark, [str(p) for p in archives], str(tmp_path / "out"), engine, max_item_bytes=LIMIT, split_bytes=8192)
    assert count == cli.count(b"\n")
    assert len([n for n in os.listdir(tmp_path / "out") if n.startswith("part-")]) > 10
    assert b"longer than the limit of 16384 bytes" in cli
    assert_same_lines(concatenated(tmp_path / "out"), cli)
    replays = [json.loads(line) for line in cli.splitlines() if b"replayedTransaction" in line]
    assert len(replays) >= 8


def test_job_at_signing_time_with_masked_pans_is_the_cli_result_file(spark, archives, tmp_path):
    cli = run_cli(archives, tmp_path / "cli.jsonl", "--at-signing-time", "--mask-pan")
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, at_signing_time=True)
    job.run_job(spark, [str(p) for p in archives], str(tmp_path / "out"), engine, mask_pan=True, split_bytes=65536)
    assert_same_lines(concatenated(tmp_path / "out"), cli)


def test_library_function_gives_the_cli_verdicts_in_the_order_columns_order(spark, archives, tmp_path):
    cli = run_cli(archives, tmp_path / "cli.jsonl", "--now", NOW)
    expected = [json.loads(line) for line in cli.splitlines()]
    tokens = [line.strip(b" \t\r") for path in archives for line in open(path, "rb").read().split(b"\n")
              if line.strip(b" \t\r") and len(line) <= 1 << 20]
    oversized = [i for i, line in enumerate(expected) if line.get("field") == "$" and "longer than" in line["message"]]
    for i in oversized:
        tokens.insert(i, None)
    assert len(tokens) == len(expected)
    # Rows shuffled and spread over partitions: the order column alone gives the order.
    rows = [(i * 10 + 7, token) for i, token in enumerate(tokens) if token is not None]
    random.Random(18).shuffle(rows)
    df = spark.createDataFrame(rows, "order long, token binary").repartition(3)
    result = job.decrypt_tokens(df, MERCHANTS, trust_root=TRUST_ROOT, now=NOW)
    assert result.columns == ["index", "transactionId", "code", "message", "field", "payment"]
    got = {row["index"]: row for row in result.collect()}  # row.index would be tuple.index
    for i, want in enumerate(expected):
        if i in oversized:
            continue
        row = got[i * 10 + 7]
        assert row.transactionId == want["transactionId"]
        assert row.code == want.get("error", "ok")
        if row.code == "replayedTransaction":
            claimed = int(want["message"].rsplit(" ", 1)[1])
            assert row.message == want["message"].rsplit(" ", 1)[0] + f" {claimed * 10 + 7}"
        else:
            assert row.message == want.get("message")
        assert row.field == want.get("field")
        assert (json.loads(row.payment) if row.payment else None) == want.get("payment")


def ledger(tokens):
    """The CLI's ReplayLedger, sequentially: {order: claimed_by} for the replays."""
    first, replays = {}, {}
    for order, t, c in sorted(tokens):
        claimer = first.get(t, first.get(c))
        if claimer is not None:
            replays[order] = claimer
        else:
            first.setdefault(t, order)
            first.setdefault(c, order)
    return replays


def test_replay_resolution_matches_the_sequential_ledger_on_chains_and_shared_keys(spark):
    # Keys drawn from a small pool so chains form (a replay's other key claimed later, a transaction key equal
    # to another token's content key): verdicts that need several rounds.
    rng = random.Random(7)
    pool = [bytes([k]) * 16 for k in range(40)]
    tokens = [(order, rng.choice(pool), rng.choice(pool)) for order in rng.sample(range(10_000), 300)]
    tokens += [(20_000 + i, bytes([100 + i]) * 16, bytes([100 + i]) * 16) for i in range(5)]  # t == c
    expected = ledger(tokens)
    assert 50 < len(expected) < 300
    df = spark.createDataFrame(tokens, "o long, t binary, c binary").repartition(4)
    got = {row.o: row.claimed_by for row in job.resolve_replays(df).collect()}
    assert got == expected
    # The job's way (_first_claims): only the keys held more than once reach the driver, with their holders.
    holders = {}
    for order, t, c in tokens:
        for role, key in enumerate(dict.fromkeys([t, c])):
            holders.setdefault(key, []).append((order << 1) | role)
    repeated = [values for values in holders.values() if len(values) > 1]
    assert len(repeated) < len(holders)
    assert job._first_claims(repeated) == expected


def test_module_refuses_an_existing_output_directory_and_bad_specs_before_spark_starts(tmp_path, archives):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "Sources", "python"), os.environ.get("PYTHONPATH")])))
    existing = tmp_path / "exists"
    existing.mkdir()
    run = subprocess.run([sys.executable, "-m", "applepay.spark", str(archives[0]), "--out", str(existing),
                          "--merchant", MERCHANTS[0]], capture_output=True, env=env, text=True)
    assert run.returncode == 2 and "exists" in run.stderr
    run = subprocess.run([sys.executable, "-m", "applepay.spark", str(archives[0]), "--out", str(tmp_path / "new"),
                          "--merchant", "cert=/nonexistent,key=/nonexistent"], capture_output=True, env=env, text=True)
    assert run.returncode == 2 and "nonexistent" in run.stderr
    assert not (tmp_path / "new").exists()


def test_the_same_input_given_twice_is_numbered_per_input(spark, archives, tmp_path):
    # Review finding 5b: `a.jsonl a.jsonl` numbered the second copy's lines on from the first (a.jsonl:12 where
    # the CLI writes a.jsonl:1).
    inputs = [str(archives[1]), str(archives[1])]
    cli = run_cli(inputs, tmp_path / "cli.jsonl", "--now", NOW)
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, NOW)
    job.run_job(spark, inputs, str(tmp_path / "out"), engine, split_bytes=4096)
    assert f'"source":"{inputs[0]}:1"'.encode() in cli.splitlines()[len(cli.splitlines()) // 2]
    assert_same_lines(concatenated(tmp_path / "out"), cli)


def test_a_file_replaced_after_planning_is_refused_never_numbered_twice(spark, tmp_path):
    # Review finding 5a: the file was replaced between the counting and the decrypting pass (ten tokens of equal
    # length, T5 written twice); two items got index 5 and the token was written as a payment twice, exit 0.
    token = archive_lines()[0]
    tokens = [token.replace(b'"transactionId":"', b'"transactionId":"%d' % k, 1) for k in range(10)]
    path = write(tmp_path / "a.jsonl", b"\n".join(tokens) + b"\n")
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, NOW)
    plan = job.plan_splits([str(path)], len(tokens[0]) * 5 + 5)
    assert len(plan) == 2
    time.sleep(0.05)  # a new modification time, as a replaced file has
    replaced = tokens[:4] + [b"{}" + b" " * (len(tokens[4]) - 2), tokens[5], tokens[5]] + tokens[7:]
    write(path, b"\n".join(replaced) + b"\n")
    with pytest.raises(Exception, match="changed while the job ran"):
        job.run_job(spark, [str(path)], str(tmp_path / "out"), engine, plan=plan)
    assert not (tmp_path / "out").exists()  # removed whole


def test_library_function_refuses_an_order_column_that_is_not_unique(spark):
    # Review finding 5a: (0,T0) (1,T1) (1,T1) (2,T2) gave two payments for order 1: a merchant's order number,
    # which a retried payment shares, is not an item order.
    tokens = archive_lines()
    df = spark.createDataFrame([(0, tokens[0]), (1, tokens[1]), (1, tokens[1]), (2, tokens[2])], "order long, token binary")
    with pytest.raises(ValueError, match="unique"):
        job.decrypt_tokens(df, MERCHANTS, trust_root=TRUST_ROOT, now=NOW).collect()
    nulls = spark.createDataFrame([(0, tokens[0]), (None, tokens[1])], "order long, token binary")
    with pytest.raises(ValueError, match="null"):
        job.decrypt_tokens(nulls, MERCHANTS, trust_root=TRUST_ROOT, now=NOW).collect()


def test_library_function_refuses_an_order_column_that_is_not_of_an_integer_type(spark):
    # Issue 44, item 1: uniqueness was checked before the cast to long, so orders 1.2 and 1.7 (or "1" and "01")
    # passed it, both became order 1, and a token present twice came back as two ok payments.
    token = archive_lines()[0]
    for rows, ddl in [([(1.2, token), (1.7, token)], "order double, token binary"),
                      ([("1", token), ("01", token)], "order string, token binary")]:
        with pytest.raises(ValueError, match="not an integer type"):
            job.decrypt_tokens(spark.createDataFrame(rows, ddl), MERCHANTS, trust_root=TRUST_ROOT, now=NOW).collect()
    # Whole numbers in an integer column: the second is the replay (the control).
    df = spark.createDataFrame([(1, token), (2, token)], "order int, token binary")
    rows = job.decrypt_tokens(df, MERCHANTS, trust_root=TRUST_ROOT, now=NOW).orderBy("index").collect()
    assert [row.code for row in rows] == ["ok", "replayedTransaction"]


def test_parquet_output_holds_the_cli_rows_typed(spark, archives, tmp_path):
    cli = [json.loads(line) for line in run_cli(archives, tmp_path / "cli.jsonl", "--now", NOW, "--max-item-bytes",
                                                str(LIMIT)).splitlines()]
    engine = job.EngineOptions(MERCHANTS, TRUST_ROOT, NOW)
    job.run_job(spark, [str(p) for p in archives], str(tmp_path / "out"), engine, max_item_bytes=LIMIT, split_bytes=8192,
                output_format="parquet")
    table = spark.read.parquet(str(tmp_path / "out"))
    assert [(f.name, f.dataType.simpleString()) for f in table.schema.fields] == [
        ("index", "bigint"), ("source", "string"), ("transactionId", "string"), ("code", "string"),
        ("message", "string"), ("field", "string"), ("payment", "string")]
    rows = table.orderBy("index").collect()
    assert len(rows) == len(cli)
    for row, want in zip(rows, cli):
        assert (row["index"], row.source, row.transactionId) == (want["index"], want["source"], want["transactionId"])
        assert (row.code, row.message, row.field) == (want.get("error", "ok"), want.get("message"), want.get("field"))
        assert (json.loads(row.payment) if row.payment is not None else None) == want.get("payment")
    for name in os.listdir(tmp_path / "out"):
        assert stat.S_IMODE(os.stat(tmp_path / "out" / name).st_mode) & 0o077 == 0


# ---- failures leave no card data behind (findings of an outside attack on the staged job) -------------------

def test_a_failed_job_removes_out_even_while_a_late_task_still_writes_into_it(spark, tmp_path):
    # A task Spark has not stopped yet renamed a part file into OUT after the removal had listed it: OUT stayed,
    # with whole part files, and the failure said nothing. The removal now waits and retries until OUT is gone.
    out = tmp_path / "out"
    (out / "_staging").mkdir(parents=True)
    write(out / "part-00000", b'{"payment": "card data"}\n')
    stop = time.time() + 1.0

    def late_task():
        n = 0
        while time.time() < stop:
            try:
                write(out / f"part-{n % 7:05d}", b"card data\n")
            except OSError:  # OUT is gone: the task's rename fails, as a worker's does
                return
            n += 1

    writer = threading.Thread(target=late_task)
    writer.start()
    time.sleep(0.05)
    job._remove_after_failure(spark.sparkContext, str(out), "no-such-group")
    writer.join()
    assert not out.exists()


def test_sigterm_twice_on_the_driver_removes_out_and_its_staged_card_data(tmp_path):
    # A scheduler's SIGTERM killed the driver with the staged lines (decrypted, card data) left in OUT/_staging.
    path = write(tmp_path / "many.jsonl", b"\n".join(archive_lines() * 60) + b"\n")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [PACKAGE, os.environ.get("PYTHONPATH")])))
    driver = subprocess.Popen([sys.executable, "-m", "applepay.spark", str(path), "--out", str(out), "--master",
                               "local[2]", "--split-bytes", "4096", "--merchant", MERCHANTS[0], "--trust-root",
                               TRUST_ROOT, "--now", NOW], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 120
    while time.time() < deadline and driver.poll() is None:
        if (out / "_staging").is_dir() and any(name.startswith("split-") for name in os.listdir(out / "_staging")):
            break
        time.sleep(0.02)
    assert driver.poll() is None, "the job ended before anything was staged: give it more work"
    driver.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    driver.send_signal(signal.SIGTERM)  # a second one (an impatient scheduler) must not stop the removal half way
    _, stderr = driver.communicate(timeout=120)
    assert driver.returncode != 0
    assert not out.exists(), stderr.decode()[-2000:]


def test_inputs_that_are_not_regular_files_are_refused_by_name(tmp_path):
    fifo = tmp_path / "tokens.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="tokens.fifo: the Spark job reads regular files"):
        job.plan_splits([str(fifo)], 4096)


def test_part_names_sort_in_split_order_past_100000_splits():
    count = 100_001
    names = [job._part_name(s, count, False) for s in (0, 9, 99_999, 100_000)]
    assert names == sorted(names) == ["part-000000", "part-000009", "part-099999", "part-100000"]
    assert job._part_name(3, 4, True) == "part-00003.parquet"


def test_a_staged_file_replaced_by_a_link_is_refused(tmp_path):
    attempt = "0" * 32
    target = write(tmp_path / "elsewhere.arrow", b"not ours")
    os.symlink(target, job._staged_path(str(tmp_path), 0, attempt))
    with pytest.raises(OSError):
        job._staged_stream(str(tmp_path), 0, attempt, "a.jsonl", pa)
