"""Apache Spark: verify and decrypt Apple Pay tokens on executors, with the CLI's replay verdicts.

Two uses (see README.md, "Spark"):

* a library function, ``decrypt_tokens(df, merchants, ...)``: a DataFrame with a token column and an order
  column in; a DataFrame with ``index``, ``transactionId``, ``code``, ``message``, ``field`` and ``payment``
  (the payment JSON, or null) out. One decryptor per partition, made from the merchant specs on the executor.
  Replays are judged as ``applepay-decrypt batch`` judges them, in the order column's order, with Spark's own
  operators (``resolve_replays``: windows over each replay key, iterated until no verdict changes).
* a job, ``python3 -m applepay.spark INPUT... --out DIR --merchant SPEC ...`` (or ``spark-submit`` this file):
  reads JSONL archives and writes DIR as Spark part files whose concatenation in name order is byte for byte
  what ``applepay-decrypt batch`` writes for the same inputs.

The output holds card data. The job writes it with mode 0600 in a directory only the user can read (0700);
decrypted rows are cached in executor memory only (never spilled to disk) and only replay keys are shuffled.
"""
import argparse
import datetime
import os
import sys
import time

import applepay

_OK = "ok"
_REPLAY_FIELD = "header.transactionId"
_REPLAY_MESSAGE = "this token's transactionId or signed contents were already claimed by item "
# The replay line is rendered by the engine with this stand-in claimer; the real one is put in its place
# once Spark has judged the replays (the needle cannot occur inside an escaped JSON string).
_PLACEHOLDER_CLAIM = 0
_PLACEHOLDER_NEEDLE = b'already claimed by item 0"'
# Tokens handed to the engine per call; within-call replays are decrypted again alone (see _decrypt_partition).
_CHUNK = 256
DEFAULT_MAX_ITEM_BYTES = 1 << 20
DEFAULT_SPLIT_BYTES = 64 << 20


# ---- merchant specs and engine options (what the CLI accepts) -------------------------------------------

class EngineOptions:
    """The CLI's engine options, picklable: specs and paths travel to executors, never key bytes."""

    def __init__(self, merchants, trust_root=None, now=None, at_signing_time=False, window=None):
        if not merchants:
            raise ValueError("at least one merchant spec is required")
        if now is not None and at_signing_time:
            raise ValueError("now and at_signing_time exclude each other")
        if window is not None and window < 0:
            raise ValueError("the window must not be negative")
        self.merchants = [parse_merchant_spec(spec) and spec for spec in merchants]
        self.trust_root = trust_root
        self.at_signing_time = at_signing_time
        # One reference time for every executor: the CLI reads the clock as it goes, a cluster's clocks differ.
        if at_signing_time:
            self.reference = applepay.REFERENCE_SIGNING_TIME
        elif now is not None:
            self.reference = parse_time(now)
        else:
            self.reference = int(time.time())
        self.window = window

    def decryptor(self):
        merchants = [load_merchant(spec) for spec in self.merchants]
        root = None
        if self.trust_root is not None:
            with open(self.trust_root, "rb") as f:
                root = f.read()
        return applepay.Decryptor(merchants=merchants, insecure_test_root_pem=root, signing_time_window=self.window)


def parse_time(text):
    """Unix seconds of an ISO 8601 time with a zone (2026-03-01T12:01:00Z), as the CLI's --now."""
    if isinstance(text, datetime.datetime):
        moment = text
    else:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"--now '{text}' has no time zone; give e.g. 2026-03-01T12:01:00Z")
    return int(moment.timestamp())


_SPEC_FIELDS = ["cert", "key", "id", "p12", "password-env", "key-password-env"]


def parse_merchant_spec(text):
    """cert=PATH,key=PATH | id=MERCHANT_ID,key=PATH | p12=PATH[,password-env=VAR] (+ key-password-env=VAR)."""
    values = {}
    for part in (p for p in text.split(",") if p):
        name, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"--merchant '{text}': '{part}' is not key=value")
        if name not in _SPEC_FIELDS:
            raise ValueError(f"--merchant '{text}': unknown field '{name}' ({', '.join(_SPEC_FIELDS)})")
        if name in values:
            raise ValueError(f"--merchant '{text}': '{name}' given twice")
        values[name] = value
    if "p12" in values:
        if "cert" in values or "key" in values:
            raise ValueError(f"--merchant '{text}': p12= excludes cert= and key=")
    elif "key" not in values:
        raise ValueError(f"--merchant '{text}': key=PATH is required (or p12=PATH)")
    elif "cert" not in values and "id" not in values:
        raise ValueError(f"--merchant '{text}': give cert=PATH or id=MERCHANT_ID with key=PATH")
    return values


def load_merchant(text):
    """An applepay.Merchant from a spec; files and password variables are read where this runs (the executor)."""
    values = parse_merchant_spec(text)

    def secret(field):
        variable = values.get(field)
        if variable is None:
            return None
        if variable not in os.environ:
            raise ValueError(f"--merchant '{text}': environment variable {variable} is not set")
        return os.environ[variable]

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    if "p12" in values:
        return applepay.Merchant.pkcs12(read(values["p12"]), secret("password-env") or "", values.get("id"))
    key = read(values["key"])
    if "cert" in values:
        return applepay.Merchant.certificate(read(values["cert"]), key, secret("key-password-env"), values.get("id"))
    return applepay.Merchant.identifier(values["id"], key, secret("key-password-env"))


# ---- decryption on the executors --------------------------------------------------------------------------

def _decrypt_all(decryptor, tokens, reference):
    """Unjudged results for `tokens`, in order: a token the engine judged a replay of another token in the same
    call is decrypted again alone, so that only Spark's global judgement decides replays."""
    code, results = decryptor.decrypt_batch(tokens, reference=reference, lanes=1)
    if code != applepay.OK:
        raise RuntimeError(f"ap_decrypt_batch failed: {applepay.code_name(code)}")
    for i, result in enumerate(results):
        if result.code == applepay.REPLAYED_TRANSACTION:
            result.free()
            code, alone = decryptor.decrypt_batch([tokens[i]], reference=reference, lanes=1)
            if code != applepay.OK:
                raise RuntimeError(f"ap_decrypt_batch failed: {applepay.code_name(code)}")
            results[i] = alone[0]
    return results


def _decrypted_rows(options, items, mask_pan, with_fields):
    """For each (index, source, token) item: the row the later stages need. `token` None is an oversized line.

    Row: (index, transaction key, content key, line, replay line, transactionId, code, message, field, payment);
    the keys are None unless the token verified and decrypted; the last five only when `with_fields`."""
    decryptor = options.decryptor()
    try:
        chunk = []
        for item in items:
            chunk.append(item)
            if len(chunk) == _CHUNK:
                yield from _render(decryptor, options, chunk, mask_pan, with_fields)
                chunk = []
        if chunk:
            yield from _render(decryptor, options, chunk, mask_pan, with_fields)
    finally:
        decryptor.free()


def _render(decryptor, options, chunk, mask_pan, with_fields):
    readable = [item for item in chunk if item[2] is not None]
    results = iter(_decrypt_all(decryptor, [item[2] for item in readable], options.reference) if readable else [])
    for index, source, token in chunk:
        if token is None:
            yield _oversized_row(index, source, options, with_fields)
            continue
        result = next(results)
        try:
            keys = result.replay_keys if result.code == applepay.OK else None
            if with_fields:
                # The library's rows: the fields, and the payment as the engine writes it (no line kept).
                payment = None
                if result.code == applepay.OK:
                    payment = _payment_of(result.line(0, "", mask_pan=mask_pan))
                yield (index, keys[0] if keys else None, keys[1] if keys else None, None, None, result.transaction_id,
                       result.code_name, result.message or None, result.field, payment)
                continue
            line = result.line(index, source, mask_pan=mask_pan, at_signing_time=options.at_signing_time)
            # Item 0 cannot be a replay; any other verified item gets its replay line, claimer to be filled in.
            replay = None
            if keys is not None and index > _PLACEHOLDER_CLAIM:
                replay = result.line(index, source, mask_pan=mask_pan, at_signing_time=options.at_signing_time,
                                     replay_of=_PLACEHOLDER_CLAIM)
            yield (index, keys[0] if keys else None, keys[1] if keys else None, line, replay) + (None,) * 5
        finally:
            result.free()


def _payment_of(line):
    """The payment JSON inside a result line (the first unescaped ',"payment":' is the member itself)."""
    start = line.index(b',"payment":') + len(b',"payment":')
    return line[start:-2].decode()


def _oversized_row(index, source, options, with_fields):
    # The reader turns a line over max_item_bytes into this item without reading it whole, as the CLI's does.
    result = applepay.oversized_line_result(options.max_item_bytes)
    try:
        line = result.line(index, source, at_signing_time=options.at_signing_time)
        fields = (None, result.code_name, result.message, result.field, None) if with_fields else (None,) * 5
        return (index, None, None, line, None) + fields
    finally:
        result.free()


def _replay_line(template, claimed_by):
    at = template.rindex(_PLACEHOLDER_NEEDLE)
    prefix = len(b"already claimed by item ")
    return template[:at + prefix] + str(claimed_by).encode() + template[at + prefix + 1:]


# ---- replays, with Spark's operators ----------------------------------------------------------------------

def resolve_replays(keys):
    """Replay verdicts for a DataFrame (o: long, t: binary, c: binary) of the tokens that verified and decrypted
    (o their order, t and c their transaction and content keys). Returns a DataFrame (o, claimed_by) holding the
    replays only, claimed_by being the order of the item that had claimed t, else c (the CLI's firstClaim).

    The rule: a token is a replay iff one of its keys was claimed by an earlier token that was not itself a
    replay; the two keys share one namespace, as in the CLI's ledger. Each round looks at every key's window
    (the least order among tokens still alive, and among those known to claim) and decides a token as soon
    as it can: a replay when an earlier claimer holds one of its keys, a claimer when it comes first in every
    window of its keys. The earliest undecided token is always decided, so the rounds end; in practice after
    two or three, since only tokens that share a key with another take part after the first count."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    undecided, claims, replay = 0, 1, 2
    rows = keys.select("o", F.posexplode(F.array_distinct(F.array("t", "c"))).alias("role", "k"))
    by_key, by_token = Window.partitionBy("k"), Window.partitionBy("o")
    # Tokens whose keys no other token holds are claimers outright; only the rest is iterated.
    rows = rows.withColumn("holders", F.count(F.lit(1)).over(by_key)).withColumn("shared", F.max("holders").over(by_token))
    state = rows.filter("shared > 1").select("o", "role", "k", F.lit(undecided).alias("s")).localCheckpoint()
    while state.filter(F.col("s") == undecided).limit(1).count() > 0:
        alive = F.min(F.when(F.col("s") != replay, F.col("o"))).over(by_key)
        claimer = F.min(F.when(F.col("s") == claims, F.col("o"))).over(by_key)
        state = state.withColumn("alive", alive).withColumn("claimer", claimer)
        earlier_claim = F.max(F.when(F.col("claimer") < F.col("o"), 1).otherwise(0)).over(by_token)
        first_everywhere = F.min(F.when(F.col("alive") == F.col("o"), 1).otherwise(0)).over(by_token)
        state = state.select("o", "role", "k", F.when(F.col("s") != undecided, F.col("s"))
                             .when(earlier_claim == 1, replay)
                             .when(first_everywhere == 1, claims)
                             .otherwise(undecided).alias("s")).localCheckpoint()
    claimer = F.min(F.when(F.col("s") == claims, F.col("o"))).over(by_key)
    judged = state.withColumn("claimer", claimer).filter(F.col("s") == replay)
    # Only a claim made before the replay counts (a later token may claim a key a replay did not).
    earlier = F.when(F.col("claimer") < F.col("o"), F.col("claimer"))
    return (judged.groupBy("o")
            .agg(F.max(F.when(F.col("role") == 0, earlier)).alias("by_t"), F.max(F.when(F.col("role") == 1, earlier)).alias("by_c"))
            .select("o", F.coalesce("by_t", "by_c").alias("claimed_by")))


# ---- the library function ---------------------------------------------------------------------------------

def decrypt_tokens(df, merchants, token="token", order="order", *, trust_root=None, now=None,
                   at_signing_time=False, window=None, mask_pan=False):
    """Decrypts df[token] (binary or string, one token or {"paymentToken", "paymentRequest"} item per row),
    replays judged in df[order]'s order (a unique long per row; the CLI uses the item index).

    merchants: the CLI's --merchant specs (files are read on each executor); trust_root: TESTING ONLY, a PEM
    path replacing Apple Root CA - G3; now: ISO 8601 reference time (default: when this is called);
    at_signing_time: skip the freshness check; window: the signing-time window in seconds.

    Returns a DataFrame: index (the order value), transactionId, code ("ok" or an error code), message, field,
    payment (JSON text, null unless code is "ok"). The payment is card data: decrypted rows are cached in
    executor memory (MEMORY_ONLY: recomputed, never spilled), and replay verdicts are broadcast to them, so
    no payment crosses a shuffle here; what the caller does next is the caller's."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    options = EngineOptions(merchants, trust_root, now, at_signing_time, window)
    options.max_item_bytes = DEFAULT_MAX_ITEM_BYTES
    items = df.select(F.col(order).cast("long"), F.col(token).cast("binary")).rdd.map(
        lambda row: (row[0], "", bytes(row[1]) if row[1] is not None else b""))
    decrypted = items.mapPartitions(lambda part: _decrypted_rows(options, part, mask_pan, True))
    decrypted.persist(StorageLevel.MEMORY_ONLY)
    spark = df.sparkSession
    replays = _collect_replays(spark, decrypted)
    verdicts = spark.sparkContext.broadcast(replays)

    def judged(rows):
        claims = verdicts.value
        for row in rows:
            index, tid, code, message, field, payment = row[0], row[5], row[6], row[7], row[8], row[9]
            if index in claims:
                code, message, field, payment = "replayedTransaction", _REPLAY_MESSAGE + str(claims[index]), _REPLAY_FIELD, None
            yield (index, tid, code, message, field, payment)

    schema = T.StructType([T.StructField("index", T.LongType()), T.StructField("transactionId", T.StringType()),
                           T.StructField("code", T.StringType()), T.StructField("message", T.StringType()),
                           T.StructField("field", T.StringType()), T.StructField("payment", T.StringType())])
    return spark.createDataFrame(decrypted.mapPartitions(judged), schema)


def _collect_replays(spark, decrypted):
    """{order: claimed_by} for every replay among `decrypted` rows (only keys leave the executors)."""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("o", T.LongType(), False), T.StructField("t", T.BinaryType(), False),
                           T.StructField("c", T.BinaryType(), False)])
    keys = spark.createDataFrame(decrypted.filter(lambda row: row[1] is not None).map(lambda row: (row[0], row[1], row[2])), schema)
    return {row.o: row.claimed_by for row in resolve_replays(keys).collect()}


# ---- the job: JSONL archives in, the CLI's result file out ------------------------------------------------

def _lines(path, begin, limit, chunk_size=1 << 20):
    """(start offset, content or None when longer than `limit`) of each line starting at or after `begin`,
    as the CLI's reader splits them: on "\\n" only, the last line with or without one. An oversized line
    is skipped without being held whole."""
    with open(path, "rb") as f:
        f.seek(begin)
        buf, off, buf_at = b"", 0, begin  # buf[off:] is unread; buf[0] is at file offset buf_at
        line_start, skipping = begin, False
        while True:
            nl = buf.find(b"\n", off)
            if nl >= 0:
                if skipping or nl - off > limit:
                    yield line_start, None
                else:
                    yield line_start, buf[off:nl]
                skipping = False
                off = nl + 1
                line_start = buf_at + off
                continue
            data = f.read(chunk_size)
            if not data:
                if skipping or len(buf) - off > limit:
                    yield line_start, None
                elif len(buf) > off:
                    yield line_start, buf[off:]
                return
            if len(buf) - off > limit:
                skipping = True
            if skipping:
                buf_at += len(buf)
                buf, off = data, 0
            else:
                buf_at += off
                buf, off = buf[off:] + data, 0


def _owned_lines(split, limit):
    """The lines that start inside the split's byte range: (content or None) in order, blank ones included."""
    path, start, end = split[0], split[1], split[2]
    for at, content in _lines(path, max(0, start - 1), limit):
        if at >= end:
            return
        if at >= start:
            yield content


def _blank(content):
    return content is not None and not content.strip(b" \t\r")


def _count_split(split, limit):
    lines = items = 0
    for content in _owned_lines(split, limit):
        lines += 1
        items += not _blank(content)
    return lines, items


def _split_items(split, limit):
    """(index, "PATH:LINE", token bytes or None) for the split's items; blank lines give none."""
    path, label, first_line, first_index = split[0], split[3], split[4], split[5]
    index = first_index
    for number, content in enumerate(_owned_lines(split, limit), start=first_line):
        if _blank(content):
            continue
        yield index, f"{label}:{number}", (content.strip(b" \t\r") if content is not None else None)
        index += 1


def plan_splits(inputs, split_bytes):
    """Byte ranges of the inputs, in input order: (path, start, end, label). Each becomes one partition."""
    splits = []
    for path in inputs:
        if path == "-" or os.path.isdir(path) or path.lower().endswith(".zip"):
            raise ValueError(f"input {path}: the Spark job reads JSONL files (stdin, directories and .zip archives: use the CLI)")
        size = os.stat(path).st_size
        starts = list(range(0, size, split_bytes)) or [0]
        splits += [(path, s, min(size, s + split_bytes) if size else 0, path) for s in starts]
    return splits


def run_job(spark, inputs, out, engine, mask_pan=False, max_item_bytes=DEFAULT_MAX_ITEM_BYTES, split_bytes=None):
    """Writes OUT as part files whose concatenation is `applepay-decrypt batch`'s result file; returns the counts."""
    sc = spark.sparkContext
    engine.max_item_bytes = max_item_bytes
    if split_bytes is None:
        # Two partitions per core, but none under 1 MiB (each costs a task and a decryptor) or over 64 MiB.
        total = sum(os.stat(path).st_size for path in inputs)
        split_bytes = min(DEFAULT_SPLIT_BYTES, max(1 << 20, -(-total // (2 * sc.defaultParallelism))))
    splits = plan_splits(inputs, split_bytes)
    # First pass (reading only): each split's line and item counts give every item its line number and index.
    counts = sc.parallelize(splits, len(splits)).map(lambda split: _count_split(split, max_item_bytes)).collect()
    planned, lines_before, items_before, previous = [], 0, 0, None
    for split, (lines, items) in zip(splits, counts):
        if split[0] != previous:
            lines_before, previous = 0, split[0]
        planned.append(split + (lines_before + 1, items_before))
        lines_before += lines
        items_before += items

    decrypted = sc.parallelize(planned, len(planned)).mapPartitions(
        lambda part: _decrypted_rows(engine, (item for split in part for item in _split_items(split, max_item_bytes)),
                                     mask_pan, False))
    from pyspark import StorageLevel
    decrypted.persist(StorageLevel.MEMORY_ONLY)
    verdicts = sc.broadcast(_collect_replays(spark, decrypted))

    def lines(rows):
        claims = verdicts.value
        for row in rows:
            line = row[3] if row[0] not in claims else _replay_line(row[4], claims[row[0]])
            yield line[:-1]  # saveAsTextFile adds the newline

    decrypted.mapPartitions(lines).saveAsTextFile(out)
    decrypted.unpersist()
    return items_before


def _parser():
    parser = argparse.ArgumentParser(
        prog="python3 -m applepay.spark",
        description="Verify and decrypt JSONL archives of Apple Pay tokens on Apache Spark. OUT becomes a directory of "
                    "Spark part files (part-00000, part-00001, ...) whose concatenation in name order is byte for byte "
                    "the result file `applepay-decrypt batch` writes for the same inputs: one JSON line per token, in "
                    "input order, replays judged as the CLI judges them.",
        epilog="The output holds card data (PANs, cryptograms): it is written with mode 0600 in a directory of mode "
               "0700 (only you can read it), and decrypted rows stay in executor memory (never spilled to disk). "
               "Remove it when it is no longer needed. On a cluster every executor needs libapplepay.so "
               "(APPLEPAY_LIBRARY) and this package, the inputs and merchant files at the same paths, and the "
               "password variables (spark.executorEnv.VAR). Also: spark-submit [--master URL] applepay/spark.py ARGS.")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="JSONL files (one token per line), read in the order given")
    parser.add_argument("--out", required=True, metavar="DIR", help="the output directory (must not exist)")
    parser.add_argument("--merchant", action="append", default=[], metavar="SPEC", required=True,
                        help="a merchant key (repeatable): cert=PATH,key=PATH | id=MERCHANT_ID,key=PATH | p12=PATH[,password-env=VAR]")
    parser.add_argument("--trust-root", metavar="PATH",
                        help="TESTING ONLY: trust this root certificate (PEM) instead of the pinned Apple Root CA - G3")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--now", metavar="TIME", help="reference time, ISO 8601 (default: when the job starts)")
    when.add_argument("--at-signing-time", action="store_true", help="skip the freshness check (archives)")
    parser.add_argument("--window", type=int, metavar="SECONDS", help="allowed distance between signing and reference time")
    parser.add_argument("--mask-pan", action="store_true", help="mask each PAN as the CLI does")
    parser.add_argument("--max-item-bytes", type=int, default=DEFAULT_MAX_ITEM_BYTES, metavar="BYTES",
                        help="the largest line read (default and maximum 1048576); a longer one is malformedToken")
    parser.add_argument("--split-bytes", type=int, metavar="BYTES",
                        help="bytes of input per partition (default: two partitions per core, 1 to 64 MiB each)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default: spark-submit's, else local[*])")
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    if not 1 <= args.max_item_bytes <= applepay.MAX_TOKEN_LENGTH:
        _parser().error(f"--max-item-bytes must be between 1 and {applepay.MAX_TOKEN_LENGTH}")
    if args.split_bytes is not None and args.split_bytes < 1:
        _parser().error("--split-bytes must be positive")
    if os.path.lexists(args.out):
        _parser().error(f"--out {args.out} exists: give a new directory")
    try:
        engine = EngineOptions(args.merchant, args.trust_root, args.now, args.at_signing_time, args.window)
        plan_splits(args.inputs, args.split_bytes or DEFAULT_SPLIT_BYTES)
        engine.decryptor().free()  # refuse a bad configuration before Spark starts, as the CLI does
    except (ValueError, OSError, applepay.ConfigurationError) as error:
        print(f"applepay.spark: {error}", file=sys.stderr)
        return 2
    if args.trust_root:
        print(f"applepay.spark: WARNING: --trust-root replaces Apple Root CA - G3 with {args.trust_root}. "
              "Tokens accepted now are NOT proven to come from Apple. For testing only.", file=sys.stderr)

    # Card data: files 0600 and directories 0700, in this process (local mode) and through Hadoop (cluster).
    os.umask(0o077)
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName("applepay-decrypt").config("spark.hadoop.fs.permissions.umask-mode", "077")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    started = time.time()
    try:
        count = run_job(spark, args.inputs, args.out, engine, args.mask_pan, args.max_item_bytes, args.split_bytes)
    finally:
        spark.stop()
    elapsed = time.time() - started
    print(f"applepay.spark: {count} tokens in {elapsed:.2f} s ({count / elapsed if elapsed else 0:.0f} tokens/s) → {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    # Run as the module applepay.spark, not __main__, so executors import the functions instead of
    # receiving pickled copies of this file.
    from applepay.spark import main as _main

    sys.exit(_main())
