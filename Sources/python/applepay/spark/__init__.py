"""Apache Spark: verify and decrypt Apple Pay and Google Pay tokens on executors, with the CLI's replay verdicts.

Two uses (see the Spark article):

* a library function, ``decrypt_tokens(df, merchants, ...)``: a DataFrame with a token column and a unique order
  column in; a DataFrame with ``index``, ``transactionId``, ``code``, ``message``, ``field`` and ``payment``
  (the payment JSON, or null) out.
* a job, ``python3 -m applepay.spark INPUT... --out DIR --merchant SPEC ...`` (or ``spark-submit`` this file):
  reads JSONL archives and writes DIR as Spark part files whose concatenation in name order is byte for byte
  what ``applepay-decrypt batch`` writes for the same inputs; ``--format parquet`` writes the same rows typed.

How: tokens reach the engine a whole Arrow batch at a time (``ap_decrypt_batch_arrow`` takes the batch's offsets
and data buffers by address and returns the lines, codes and replay keys as Arrow columns, every line written by
the engine's own writer). The library function gets its batches from Spark (``mapInArrow``) and judges replays
with Spark's operators alone (``resolve_replays``). The job runs plain RDD tasks and reads each input once, in two
jobs, and a third only when a replay key repeats. In the first, each task reads its split (newlines found with
numpy), decrypts it 4,096 tokens a call and stages the engine's lines in OUT (an Arrow stream per split); only
the split's line and item counts and its tokens' replay keys go to Spark, which shuffles the keys once, and the
driver gets the counts and the keys held more than once. Only if there are any, a pass over the staged keys
finds their holders, and the driver judges replays as the CLI does (a verified token is a replay when an earlier
token that verified, decrypted and was not itself a replay claimed its transactionId or signed contents). In the
last job, each task writes part files from the staged lines with each line's final head (its index in the whole
input and its ``PATH:LINE``) and the replays' lines.

The output holds card data. The job writes it, and the staged lines, with mode 0600 in OUT, a directory only the
user can read (0700); the staged lines are removed when the part files are written, and OUT is removed whole
if the job fails. Only order numbers and replay keys are shuffled.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import stat
import sys
import time

import applepay

_OK = "ok"
_REPLAY_FIELD = "header.transactionId"
_REPLAY_MESSAGE = "this token's transactionId or signed contents were already claimed by item "
DEFAULT_MAX_ITEM_BYTES = 1 << 20
DEFAULT_SPLIT_BYTES = 256 << 20


# ---- merchant specs and engine options (what the CLI accepts) -------------------------------------------

class EngineOptions:
    """The CLI's engine options, picklable: specs and paths travel to executors, never key bytes.

    merchants: Apple Pay --merchant specs; google_root_keys (a keys document's path), google_recipient_ids and
    google_merchant_keys (--google-merchant-key specs): Google Pay's, as the CLI takes them. Either wallet's
    keys, or both; Google Pay needs the root keys and a recipient id."""

    def __init__(self, merchants=(), trust_root=None, now=None, at_signing_time=False, window=None,
                 google_root_keys=None, google_recipient_ids=(), google_merchant_keys=()):
        google = google_root_keys is not None or bool(google_recipient_ids) or bool(google_merchant_keys)
        if not merchants and not google:
            raise ValueError("at least one merchant spec (or the Google Pay options) is required")
        if google and google_root_keys is None:
            raise ValueError("Google Pay options need the root keys (--google-root-keys)")
        if google and not google_recipient_ids:
            raise ValueError("Google Pay options need a recipient id (--google-recipient-id)")
        if now is not None and at_signing_time:
            raise ValueError("now and at_signing_time exclude each other")
        if window is not None and window < 0:
            raise ValueError("the window must not be negative")
        self.merchants = [parse_merchant_spec(spec) and spec for spec in merchants]
        self.google_root_keys = google_root_keys
        self.google_recipient_ids = list(google_recipient_ids)
        self.google_merchant_keys = [parse_google_key_spec(spec) and spec for spec in google_merchant_keys]
        self.trust_root = trust_root
        self.at_signing_time = at_signing_time
        # One reference time for every executor, in milliseconds (Google Pay keys and messages expire to the
        # millisecond): the CLI reads the clock as it goes, a cluster's clocks differ.
        if at_signing_time:
            self.reference = applepay.REFERENCE_SIGNING_TIME
        elif now is not None:
            self.reference = parse_time(now)
        else:
            self.reference = time.time_ns() // 1_000_000
        self.window = window

    def decryptor(self):
        merchants = [load_merchant(spec) for spec in self.merchants]
        root = google_root = None
        if self.trust_root is not None:
            with open(self.trust_root, "rb") as f:
                root = f.read()
        if self.google_root_keys is not None:
            with open(self.google_root_keys, "rb") as f:
                google_root = f.read()
        # The job's reference is in milliseconds (self.reference), as the CLI's --now counts them.
        config = applepay.Config(merchants, insecure_test_root_pem=root, signing_time_window=self.window,
                                 google_root_keys=google_root, google_recipient_ids=self.google_recipient_ids,
                                 reference_unit=applepay.REFERENCE_MILLISECONDS)
        try:
            for spec in self.google_merchant_keys:
                add_google_merchant_key(config, spec)
            return applepay.Decryptor(config=config)
        finally:
            config.free()


def parse_time(text):
    """Unix milliseconds of an ISO 8601 time with a zone (2026-03-01T12:01:00Z, 2026-03-01T12:01:00.123Z), as
    the CLI's --now: fractional seconds count to the millisecond (further digits are dropped)."""
    if isinstance(text, datetime.datetime):
        moment = text
    else:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"--now '{text}' has no time zone; give e.g. 2026-03-01T12:01:00Z")
    # Exact integer arithmetic: timestamp() is a float, which can land a microsecond below a millisecond.
    since = moment - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (since.days * 86_400 + since.seconds) * 1000 + since.microseconds // 1000


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


_GOOGLE_SPEC_FIELDS = ["key", "key-password-env", "p12", "password-env", "pkcs11", "pub", "cert"]


def parse_google_key_spec(text):
    """--google-merchant-key: PATH | key=PATH[,key-password-env=VAR] | pkcs11=URI,pub=PATH | pkcs11=URI,cert=PATH
    (the CLI's forms; p12= is the CLI's only: the C ABI takes a Google Pay key as PEM or DER)."""
    if text.startswith("pkcs11:"):
        raise ValueError(f"--google-merchant-key '{text}': a PKCS#11 Google Pay key is written pkcs11=URI,pub=PATH")
    if "=" not in text:
        return {"key": text}
    values = {}
    for part in (p for p in text.split(",") if p):
        name, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"--google-merchant-key '{text}': '{part}' is not key=value")
        if name not in _GOOGLE_SPEC_FIELDS:
            raise ValueError(f"--google-merchant-key '{text}': unknown field '{name}' ({', '.join(_GOOGLE_SPEC_FIELDS)})")
        if name in values:
            raise ValueError(f"--google-merchant-key '{text}': '{name}' given twice")
        values[name] = value
    if "p12" in values:
        raise ValueError(f"--google-merchant-key '{text}': p12= is not supported by the Spark job (give the key as "
                         "PEM or DER: key=PATH)")
    if "pkcs11" in values:
        if ("pub" in values) == ("cert" in values) or "key" in values:
            raise ValueError(f"--google-merchant-key '{text}': pkcs11=URI takes pub=PATH or cert=PATH, and excludes key=")
    elif "key" not in values:
        raise ValueError(f"--google-merchant-key '{text}': give PATH, key=PATH or pkcs11=URI,pub=PATH")
    return values


def add_google_merchant_key(config, text):
    """Adds a --google-merchant-key spec's key to an applepay.Config (files read where this runs)."""
    values = parse_google_key_spec(text)
    if "pkcs11" in values:
        with open(values.get("pub") or values["cert"], "rb") as f:
            config.add_google_merchant_pkcs11(f.read(), values["pkcs11"])
        return
    password = None
    if "key-password-env" in values:
        variable = values["key-password-env"]
        if variable not in os.environ:
            raise ValueError(f"--google-merchant-key '{text}': environment variable {variable} is not set")
        password = os.environ[variable]
    with open(values["key"], "rb") as f:
        config.add_google_merchant_key(f.read(), password)


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


# ---- decryption on the executors: Arrow batches through ap_decrypt_batch_arrow --------------------------------

# Tokens handed to the engine per call: thousands, so the call's fixed cost is nothing per token.
_CALL_TOKENS = 4096
# Item order keys of the job: split << 40 | item within the split, increasing in input order.
_ITEM_BITS = 40


def _head_length(local_index):
    """Length of the head `{"index":N,"source":"",` the engine writes for a line rendered with index N and no
    source; the job writes each line's final head (global index, "PATH:LINE") in its place when it knows them."""
    return len('{"index":,"source":"",') + len(str(local_index))


_TIMING = bool(os.environ.get("APPLEPAY_SPARK_TIMING"))
_engine_seconds = [0.0]


def _decrypt_arrow(decryptor, options, tokens, first_index, mask_pan):
    """BatchColumns of one call: unjudged (Spark judges every replay, across all partitions)."""
    started = time.time()
    columns = decryptor.decrypt_arrow(tokens, reference=options.reference, lanes=1, first_index=first_index,
                                      mask_pan=mask_pan, at_signing_time=options.at_signing_time, unjudged=True)
    _engine_seconds[0] += time.time() - started
    return columns


def _keys_array(columns, pa):
    """The replay keys (fixed_size_binary(32)) as a binary column over the same data: offsets 0, 32, 64, ..."""
    import numpy as np

    keys = columns.replay_keys
    validity, data = keys.buffers()
    offsets = np.arange(0, 32 * (len(keys) + 1), 32, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), len(keys), [validity, pa.py_buffer(offsets), data])


def _narrowed(array, type_, pa):
    """A large_binary or large_string column of BatchColumns as binary or string (32-bit offsets) over the same
    data: what Array.cast does, without importing pyarrow.compute (which costs a new Python worker a second)."""
    import numpy as np

    validity, offsets, data = array.buffers()
    wide = np.frombuffer(offsets, np.int64, len(array) + 1)
    # 32-bit offsets cannot reach past 2 GiB: refuse rather than let them wrap (Spark would read out of bounds).
    if len(array) and int(wide[-1]) > 2**31 - 1:
        raise ValueError(f"one engine call wrote {int(wide[-1])} bytes of {type_} (over 2 GiB): lower the batch size")
    return pa.Array.from_buffers(type_, len(array), [validity, pa.py_buffer(wide.astype(np.int32)), data])


def _split_keys(options, mask_pan, plan, staging, buckets, numbers):
    """mapPartitions over split numbers (into `plan`): each split read once, its items decrypted a call at a time,
    their lines staged in `staging` (see _Staging), never handed to Spark.

    Yields (bucket, record) pairs for the key shuffle: per split, one ("keys", bytes) record per bucket holding the
    split's replay keys (16 bytes each, a token's two when they differ, see _key_pairs) that fall in it, and one ("summary", JSON) record
    (the split's line and item counts and its staging attempt), in bucket 0."""
    import numpy as np
    import pyarrow as pa

    decryptor = options.decryptor()
    try:
        for number in numbers:
            keys = []
            for part in _decrypt_split(decryptor, options, mask_pan, plan[number], staging, pa):
                if isinstance(part, dict):
                    summary = part
                else:
                    keys.append(part)
            keys = np.concatenate(keys) if keys else np.zeros((0, 16), np.uint8)
            # Replay keys are digests: their first eight bytes spread them evenly.
            bucket = keys[:, :8].copy().view("<u8").ravel() % np.uint64(buckets) if len(keys) else np.zeros(0, np.uint64)
            for b in range(buckets):
                chosen = keys[bucket == b]
                if len(chosen):
                    yield b, ("keys", chosen.tobytes())
            yield 0, ("summary", json.dumps(summary))
    finally:
        decryptor.free()


def _repeated_keys(records):
    """mapPartitions over one bucket of the key shuffle: the summaries as they came, and each key held more than
    once, found by sorting the bucket's keys (numpy): ("summary", JSON) and ("key", bytes) records."""
    import numpy as np

    blobs = []
    for _, (kind, value) in records:
        if kind == "summary":
            yield kind, value
        else:
            blobs.append(value)
    if blobs:
        keys = np.frombuffer(b"".join(blobs), np.uint8).reshape(-1, 16).copy().view("V16").ravel()
        distinct, counts = np.unique(keys, return_counts=True)
        for key in distinct[counts > 1]:
            yield "key", key.tobytes()


def _decrypt_split(decryptor, options, mask_pan, split, staging, pa):
    path, start, end = split["path"], split["start"], split["end"]
    started = time.time()
    _check_unchanged(split)
    tokens, numbers, first = [], [], 0
    items = lines = 0
    stage = _Staging(staging, split["s"], pa)

    def flush():
        for batch in _item_batch(decryptor, options, mask_pan, split["s"], tokens, numbers, first, pa):
            yield _key_pairs(stage.write(batch), 0)[1]
        tokens.clear()
        numbers.clear()

    try:
        for segment in _owned_segments(path, start, end, options.max_item_bytes):
            if segment[0] == "end":
                lines = segment[1]
            elif segment[0] == "oversized":
                # An oversized line: the CLI's line for it, without the line itself ever held whole.
                if tokens:
                    yield from flush()
                stage.write(_oversized_batch(options, split["s"], items, segment[1], pa))
                items += 1
                first = items
            else:
                _, run_numbers, run_contents = segment
                at = 0
                while at < len(run_contents):
                    if not tokens:
                        first = items
                    take = min(_CALL_TOKENS - len(tokens), len(run_contents) - at)
                    tokens.extend(run_contents[at:at + take])
                    numbers.extend(run_numbers[at:at + take])
                    items += take
                    at += take
                    if len(tokens) == _CALL_TOKENS:
                        yield from flush()
        if tokens:
            yield from flush()
        _check_unchanged(split)
        stage.close()
    finally:
        stage.discard()
    if _TIMING:
        print(f"applepay.spark: timing split {split['s']}: {items} items, {time.time() - started:.2f} s in the task "
              f"(engine calls {_engine_seconds[0]:.2f} s so far in this worker)", file=sys.stderr)
    yield {"s": split["s"], "n": lines, "items": items, "staged": stage.attempt}


class _Staging:
    """One split's engine lines, staged between the pass that decrypts them and the one that writes them with their
    final heads: an Arrow stream (_staged_schema) in the job's staging directory, which only the user can enter
    (0700, inside OUT), written under a temporary name and renamed when whole to split-S-ATTEMPT.arrow, ATTEMPT
    being random and this attempt's own. The split's summary row names the attempt, and the writing pass reads
    that attempt's file: the lines written are always those the driver's numbering counted, even when a task
    ran twice (a lost executor, a speculative copy) over input that changed in between."""

    def __init__(self, directory, s, pa):
        self.directory, self.s, self.pa = directory, s, pa
        self.attempt = os.urandom(16).hex()
        self.temporary = os.path.join(directory, f".split-{s:05d}-{self.attempt}")
        self.sink = open(_new_private_file(self.temporary), "wb", buffering=0)
        self.writer = pa.ipc.new_stream(self.sink, _staged_schema(pa))

    def write(self, batch):
        """Stages the engine lines of `batch` (a _staged_schema batch with a `keys` column); returns the batch."""
        self.writer.write_batch(self.pa.RecordBatch.from_arrays(
            [batch.column(name) for name in _STAGED_COLUMNS], schema=_staged_schema(self.pa)))
        return batch

    def close(self):
        self.writer.close()
        self.sink.close()
        os.replace(self.temporary, _staged_path(self.directory, self.s, self.attempt))
        self.temporary = None

    def discard(self):
        if self.temporary is not None:
            self.sink.close()
            os.unlink(self.temporary)


def _staged_path(directory, s, attempt):
    if not (len(attempt) == 32 and all(c in "0123456789abcdef" for c in attempt)):
        raise ValueError(f"split {s}: not a staging attempt: {attempt!r}")
    return os.path.join(directory, f"split-{s:05d}-{attempt}.arrow")


_STAGED_COLUMNS = ["i", "n", "line", "code", "tid", "keys"]


def _staged_schema(pa):
    """A staged split: per item, its number within the split (i), its line's number (n), the engine's line written
    with index i and no source, its code, transactionId and replay keys (transaction key ‖ content key)."""
    return pa.schema([("i", pa.int64()), ("n", pa.int64()), ("line", pa.large_binary()), ("code", pa.int32()),
                      ("tid", pa.large_string()), ("keys", pa.binary(32))])


def _key_pairs(batch, s):
    """The replay keys of a staged batch (or an engine call's): one per distinct key of each token that holds keys
    (its transaction key, and its content key when that differs), as numpy arrays: values (order << 1) | role,
    the order being (s << _ITEM_BITS) | i and the role 0 for the transaction key, 1 for the content key; and
    the keys, 16 bytes each (an (m, 16) uint8 array)."""
    import numpy as np

    keys = batch.column("keys")
    n = len(keys)
    validity, data = keys.buffers()
    held = (np.ones(n, bool) if validity is None
            else np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:n].astype(bool))
    pairs = np.frombuffer(data, np.uint8, 32 * n).reshape(n, 2, 16)[held]
    orders = (np.int64(s) << _ITEM_BITS) | np.frombuffer(batch.column("i").buffers()[1], np.int64, n)[held]
    distinct = (pairs[:, 0] != pairs[:, 1]).any(axis=1)
    return (np.concatenate([orders << 1, (orders[distinct] << 1) | 1]),
            np.concatenate([pairs[:, 0], pairs[distinct, 1]]))


def _check_unchanged(split):
    """A split whose file is not the one planned is refused, never numbered twice: another size, modification time,
    inode or change time (which no utime can set back, so `cp -p` or `rsync -t` over the file is seen too; not the
    device, which differs between a cluster's mounts of one shared file)."""
    info = os.stat(split["path"])
    if _identity(info) != split["identity"]:
        raise RuntimeError(f"input {split['path']} changed while the job ran (size, modification time, inode or "
                           "change time): refused")


def _identity(info):
    return [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]


def _item_batch(decryptor, options, mask_pan, s, tokens, numbers, first, pa):
    """Yields one record batch (i, n, line, code, tid, keys) over the library's own column buffers (no copy). They
    are not freed here: the library's memory is wiped and freed when the last array over it is dropped
    (BatchColumns), so the batch stays whole however long its reader holds it."""
    # first_index = the split's item number: every line's head then carries its item number (see _head_length).
    columns = _decrypt_arrow(decryptor, options, _binary_array(tokens, pa), first, mask_pan)
    n = len(tokens)
    yield pa.RecordBatch.from_arrays(
        [pa.array(range(first, first + n), pa.int64()), pa.array(numbers, pa.int64()), columns.lines, columns.codes,
         columns.transaction_ids, columns.replay_keys], ["i", "n", "line", "code", "tid", "keys"])


def _oversized_batch(options, s, item, number, pa):
    result = applepay.oversized_line_result(options.max_item_bytes)
    try:
        line = result.line(item, "", at_signing_time=options.at_signing_time)
        code = result.code
    finally:
        result.free()
    return pa.RecordBatch.from_arrays(
        [pa.array([item], pa.int64()), pa.array([number], pa.int64()), pa.array([line], pa.large_binary()),
         pa.array([code], pa.int32()), pa.nulls(1, pa.large_string()), pa.nulls(1, pa.binary(32))],
        schema=_staged_schema(pa))


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

_LIBRARY_DDL = "o long, line binary, code int, keys binary, tid string"


def _token_batches(options, mask_pan, batches):
    """mapInArrow over (o, t) batches: one ap_decrypt_batch_arrow call per batch, unjudged."""
    import pyarrow as pa

    schema = pa.schema([("o", pa.int64()), ("line", pa.binary()), ("code", pa.int32()), ("keys", pa.binary()),
                        ("tid", pa.string())])
    decryptor = options.decryptor()
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            # Not freed here: dropped with the last array over it (see _item_batch).
            columns = _decrypt_arrow(decryptor, options, batch.column(1), 0, mask_pan)
            yield pa.RecordBatch.from_arrays(
                [batch.column(0), _narrowed(columns.lines, pa.binary(), pa), columns.codes, _keys_array(columns, pa),
                 _narrowed(columns.transaction_ids, pa.string(), pa)], schema=schema)
    finally:
        decryptor.free()


def _typed_row(line, head, code, tid):
    """(transactionId, code, message, field, payment) of one engine line; `head` is where its head ends."""
    line = bytes(line)
    if code == applepay.OK:
        start = line.index(b',"payment":', head) + len(b',"payment":')
        return tid, _OK, None, None, bytes(line[start:len(line) - 2]).decode()
    if code >= 100:
        return tid, applepay.code_name(code), "NULL token, empty or over AP_MAX_TOKEN_LENGTH", None, None
    member = json.loads(b"{" + bytes(line[head:]))
    return member.get("transactionId"), member["error"], member["message"], member.get("field"), None


def _judged_library_rows(verdicts, batches):
    import pyarrow as pa

    claims = verdicts.value
    for batch in batches:
        orders = batch.column(0).to_pylist()
        codes = batch.column(2).to_pylist()
        tids = batch.column(4).to_pylist()
        lines = _binary_views(batch.column(1))
        rows = []
        for k, order in enumerate(orders):
            if order in claims:
                rows.append((order, tids[k], "replayedTransaction", _REPLAY_MESSAGE + str(claims[order]), _REPLAY_FIELD,
                             None))
            else:
                line = bytes(lines(k))
                rows.append((order,) + _typed_row(line, line.index(b',"transactionId":') + 1, codes[k], tids[k]))
        yield pa.RecordBatch.from_pylist(
            [dict(zip(_LIBRARY_COLUMNS, row)) for row in rows], schema=_library_schema(pa))


_LIBRARY_COLUMNS = ["index", "transactionId", "code", "message", "field", "payment"]


def _library_schema(pa):
    return pa.schema([("index", pa.int64()), ("transactionId", pa.string()), ("code", pa.string()),
                      ("message", pa.string()), ("field", pa.string()), ("payment", pa.string())])


# The most bytes a binary (32-bit offsets) array built here holds; more is a large_binary array.
_BINARY_LIMIT = (1 << 31) - 1


def _binary_array(values, pa):
    """A binary array of `values` (bytes-like) built from one join and their lengths: pa.array() over Python
    bytes costs several times more per value. Over _BINARY_LIMIT bytes in all, a large_binary array (64-bit
    offsets), passed on as it is: a cast to binary would fail."""
    import numpy as np

    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, values), np.int64, len(values)), out=offsets[1:])
    if offsets[-1] > _BINARY_LIMIT:
        return pa.Array.from_buffers(pa.large_binary(), len(values), [None, pa.py_buffer(offsets),
                                                                       pa.py_buffer(b"".join(values))])
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                            pa.py_buffer(b"".join(values))])


def _binary_views(column):
    """k -> memoryview of a binary column's value k (no copy)."""
    import numpy as np

    _, offsets, data = column.buffers()
    at = np.frombuffer(offsets, dtype=np.int32, count=len(column) + 1 + column.offset)[column.offset:]
    view = memoryview(data) if data is not None else memoryview(b"")
    return lambda k: view[at[k]:at[k + 1]]


def decrypt_tokens(df, merchants=(), token="token", order="order", *, trust_root=None, now=None,
                   at_signing_time=False, window=None, mask_pan=False, google_root_keys=None, google_recipient_ids=(),
                   google_merchant_keys=()):
    """Decrypts df[token] (binary or string, one token or {"paymentToken", "paymentRequest"} item per row),
    replays judged in df[order]'s order (a unique, non-null long per row; the CLI uses the item index: a
    repeated or null order is refused with ValueError, since a merchant's order number that a retried payment
    shares would make two tokens "first").

    merchants: the CLI's --merchant specs (files are read on each executor); trust_root: TESTING ONLY, a PEM
    path replacing Apple Root CA - G3; now: ISO 8601 reference time, fractional seconds counted to the
    millisecond (default: when this is called); at_signing_time: skip the freshness check; window: the
    signing-time window in seconds. Google Pay tokens (told apart by shape, in the same column): the CLI's
    google_root_keys (a keys document's path), google_recipient_ids and google_merchant_keys (specs); either
    wallet's keys may be given alone, and replays are judged across both.

    Returns a DataFrame: index (the order value), transactionId, code ("ok" or an error code), message, field,
    payment (JSON text, null unless code is "ok"). The payment is card data. Tokens reach the engine an Arrow
    batch at a time (mapInArrow, spark.sql.execution.arrow.maxRecordsPerBatch tokens per call); the decrypted
    batches are cached in executor memory (MEMORY_ONLY: recomputed, never spilled) and only order and replay
    keys are shuffled to judge replays; what the caller does with the result is the caller's."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    options = EngineOptions(merchants, trust_root, now, at_signing_time, window, google_root_keys,
                            google_recipient_ids, google_merchant_keys)
    options.max_item_bytes = DEFAULT_MAX_ITEM_BYTES
    repeated = (df.groupBy(F.col(order).alias("o")).count()
                .where((F.col("count") > 1) | F.col("o").isNull()).limit(1).collect())
    if repeated:
        which = "null" if repeated[0].o is None else f"{repeated[0].o} ({repeated[0]['count']} rows)"
        raise ValueError(f"the order column {order!r} must be unique and non-null: {which}; replays are judged in "
                         "its order, so each token needs an order of its own (an item number, not an order number)")
    items = df.select(F.col(order).cast("long").alias("o"), F.col(token).cast("binary").alias("t"))
    decrypted = _map_in_arrow(items, lambda batches: _token_batches(options, mask_pan, batches), _LIBRARY_DDL)
    decrypted = decrypted.persist(StorageLevel.MEMORY_ONLY)
    spark = df.sparkSession
    verdicts = spark.sparkContext.broadcast(_collect_replays(decrypted.select("o", "keys")))
    return _map_in_arrow(decrypted, lambda batches: _judged_library_rows(verdicts, batches),
                         "index long, transactionId string, code string, message string, field string, payment string")


def _map_in_arrow(df, function, schema):
    """df.mapInArrow(function, schema), without the pandas import DataFrame.mapInArrow makes in the driver (it
    goes through pandas_udf, which checks pandas' version; an Arrow function needs no pandas): about a second of
    the job's fixed cost. Where PySpark's internals are not the ones this was written against (another version,
    Spark Connect), the public call."""
    try:
        from pyspark.sql import DataFrame
        from pyspark.sql.udf import _create_udf
        from pyspark.sql.utils import is_remote
        from pyspark.util import PythonEvalType

        if is_remote() or not hasattr(df, "_jdf"):
            raise ImportError("Spark Connect")
    except ImportError:
        return df.mapInArrow(function, schema)
    try:
        udf = _create_udf(function, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
        column = udf(*[df[name] for name in df.columns])
        # Building the plan runs nothing yet: a JVM whose mapInArrow takes other arguments fails here (a Py4J
        # error), before any job, and the public call takes over.
        return DataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)
    except Exception:  # noqa: BLE001 (Py4JError and TypeError alike: another PySpark's internals)
        return df.mapInArrow(function, schema)


def _holders(staging, staged, repeated, numbers):
    """mapPartitions over split numbers, only when some key repeats: (values, keys) blobs of every holder of a
    repeated key (`repeated`: a broadcast list), read from the staged splits' keys (no token decrypted again):
    values (order << 1) | role as int64, keys 16 bytes each (see _key_pairs)."""
    import numpy as np
    import pyarrow as pa

    wanted = np.frombuffer(b"".join(repeated.value), np.uint8).reshape(-1, 16).copy().view("V16").ravel()
    for s in numbers:
        with _staged_stream(staging, s, staged.value[s], "", pa) as source:
            for batch in pa.ipc.open_stream(source):
                values, keys = _key_pairs(batch, s)
                chosen = np.isin(keys.copy().view("V16").ravel(), wanted)
                if chosen.any():
                    yield values[chosen].tobytes(), keys[chosen].tobytes()


def _first_claims(holders_by_key):
    """{order: claimed_by} over the holders of each repeated key (lists of (order << 1) | role), by the CLI's
    rule: in order, a token is a replay when a key of its was claimed by an earlier token that was not itself
    a replay (claimed_by: the claimer of its transaction key, else of its content key); else it claims its
    keys. Both keys share one namespace, as in the CLI's ledger."""
    keys_of = {}
    for key, values in enumerate(holders_by_key):
        for value in values:
            keys_of.setdefault(value >> 1, []).append((value & 1, key))
    claimed, replays = {}, {}
    for order in sorted(keys_of):
        earlier = sorted((role, claimed[key]) for role, key in keys_of[order] if key in claimed)
        if earlier:
            replays[order] = earlier[0][1]
        else:
            for _, key in keys_of[order]:
                claimed[key] = order
    return replays


def _collect_replays(rows, repeated=None):
    """{o: claimed_by} for every replay among rows (o, keys): only order numbers and keys leave the executors.
    repeated=True: a key is known to repeat (the check job is skipped)."""
    from pyspark.sql import functions as F

    keys = rows.where(F.col("keys").isNotNull()).select(
        "o", F.substring("keys", 1, 16).alias("t"), F.substring("keys", 17, 16).alias("c"))
    # Most archives have no replay at all: one shuffle of the keys says so, where the rounds take three jobs.
    each_key = keys.select(F.explode(F.array_distinct(F.array(F.col("t"), F.col("c")))).alias("k"))
    if not repeated and not each_key.groupBy("k").count().where(F.col("count") > 1).limit(1).collect():
        return {}
    return {row.o: row.claimed_by for row in resolve_replays(keys).collect()}


# ---- the job: JSONL archives in, the CLI's result file (or Parquet) out -------------------------------------

def _owned_segments(path, start, end, limit, chunk_size=8 << 20):
    """The lines that start in [start, end) of `path`, as the CLI's reader splits them (on "\\n" only, the last
    line with or without one; white space " \\t\\r" trimmed; a blank line counted, not an item; a line longer
    than `limit` one oversized item, never held whole), a chunk at a time. Yields ("items", numbers, contents):
    runs of items (their line numbers within the split, from 1; their trimmed bytes, views into the chunk),
    ("oversized", number) for each oversized line, in order, and last ("end", lines): the number of lines
    owned. Newlines are found with numpy, and only lines that need trimming are
    looked at one by one."""
    import numpy as np

    white = np.zeros(256, bool)
    white[[9, 13, 32]] = True
    lines = 0

    def single(content):
        """(kind, content) of a line looked at alone: oversized, blank, or an item."""
        if content is None or len(content) > limit:
            return "oversized", None
        content = bytes(content).strip(b" \t\r")
        return ("item", content) if content else ("blank", None)

    def run(data, view, first, last):
        """The lines data[first[k]:last[k]], all owned: their segments, in order."""
        nonlocal lines
        count = len(first)
        numbers = np.arange(lines + 1, lines + 1 + count)
        lines += count
        if not count:
            return
        lengths = last - first
        arr = np.frombuffer(data, np.uint8)
        end_byte = arr[np.maximum(last - 1, 0)]
        special = (lengths == 0) | (lengths > limit) | white[arr[np.minimum(first, len(arr) - 1)]] | white[end_byte]
        contents = [view[a:b] for a, b in zip(first.tolist(), last.tolist())]
        numbers = numbers.tolist()
        if not special.any():
            yield "items", numbers, contents
            return
        at = 0
        for k in np.flatnonzero(special).tolist():
            if k > at:
                yield "items", numbers[at:k], contents[at:k]
            kind, content = single(contents[k] if lengths[k] <= limit else None)
            if kind == "oversized":
                yield "oversized", numbers[k]
            elif kind == "item":
                yield "items", [numbers[k]], [content]
            at = k + 1
        if at < count:
            yield "items", numbers[at:], contents[at:]

    def lone(content):
        """One line (the one a chunk boundary cut) as its segment."""
        nonlocal lines
        lines += 1
        kind, content = single(content)
        if kind == "oversized":
            yield "oversized", lines
        elif kind == "item":
            yield "items", [lines], [content]

    begin = max(0, start - 1)  # the byte before the split says whether a line starts at its first byte
    with open(path, "rb") as f:
        f.seek(begin)
        pending, pending_at, at = b"", begin, begin  # pending: an unended line (None: over the limit) from pending_at
        while True:
            data = f.read(chunk_size)
            if not data:
                if (pending is None or pending) and start <= pending_at < end:
                    yield from lone(pending)
                break
            arr = np.frombuffer(data, np.uint8)
            newlines = np.flatnonzero(arr == 10)
            if not len(newlines):
                if pending is not None:
                    pending = pending + data if len(pending) + len(data) <= limit else None
                at += len(data)
                continue
            if pending_at >= start:
                cut = newlines[0]
                yield from lone(None if pending is None or len(pending) + cut > limit else pending + data[:cut])
            first, last = newlines[:-1] + 1, newlines[1:]
            owned = np.searchsorted(first + at, end)  # lines starting at or past `end` are the next split's
            view = memoryview(data)
            low = np.searchsorted(first + at, start)
            yield from run(data, view, first[low:owned], last[low:owned])
            if owned < len(first):
                break
            pending_at = at + int(newlines[-1]) + 1
            if pending_at >= end:
                break
            tail = data[int(newlines[-1]) + 1:]
            pending = tail if len(tail) <= limit else None
            at += len(data)
    yield "end", lines


def _default_split_bytes(total, cores):
    """Equal splits, as many as a multiple of the cores (so every round of tasks keeps each core busy), none over
    DEFAULT_SPLIT_BYTES and none under 1 MiB. Few and large: each Python task costs Spark about 0.15 s beyond its
    work (measured on local[2]), while a split's memory no longer grows with its size (its lines are staged a
    call at a time)."""
    per_round = max(1, cores)
    count = -(-max(1, -(-total // DEFAULT_SPLIT_BYTES)) // per_round) * per_round
    return max(1 << 20, -(-total // count))


def plan_splits(inputs, split_bytes):
    """Byte ranges of the inputs, in input order: dicts with s (split number), input (its position among the
    inputs: the same file given twice is two inputs, numbered apart), path, start, end, and the file's identity
    (size, modification time, inode, change time: a split whose file no longer has it is refused). Each becomes
    one partition."""
    splits = []
    for number, path in enumerate(inputs):
        if path == "-" or os.path.isdir(path) or path.lower().endswith(".zip"):
            raise ValueError(f"input {path}: the Spark job reads JSONL files (stdin, directories and .zip archives: use the CLI)")
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"input {path}: the Spark job reads regular files, which its tasks read by byte range "
                             "(a pipe or device: use the CLI)")
        size = info.st_size
        starts = list(range(0, size, split_bytes)) or [0]
        for start in starts:
            splits.append({"s": len(splits), "input": number, "path": path, "start": start,
                           "end": min(size, start + split_bytes) if size else 0, "identity": _identity(info)})
    return splits


def _escaped_source(path):
    """The JSON string of `path` as the engine's writer writes a source, without its closing quote."""
    line = applepay.replay_line(1, path, None, 0, source_line=1)
    start = len(b'{"index":1,"source":')
    return line[start:line.index(b':1","transactionId"', start)]


class _Layout:
    """What the writing stage needs of the whole input: per split, the index of its first item and the number
    of the line before it in its input; the replay verdicts by item key; the attempt whose staged lines the
    summary counted."""

    def __init__(self, splits, summaries, replays):
        by_split = {row["s"]: row for row in summaries}
        self.item_base, self.line_base, self.staged, self.path = {}, {}, {}, {}
        items = lines = 0
        previous_input = None
        for split in splits:
            s = split["s"]
            if split["input"] != previous_input:
                lines, previous_input = 0, split["input"]  # numbered per input, not per change of path
            self.item_base[s], self.line_base[s] = items, lines
            self.staged[s], self.path[s] = by_split[s]["staged"], split["path"]
            items += by_split[s]["items"]
            lines += by_split[s]["n"]
        self.count = items
        self.replays = {o: self.global_index(claimed) for o, claimed in replays.items()}
        self.sources = {path: _escaped_source(path) for path in set(self.path.values())}

    def global_index(self, o):
        return self.item_base[o >> _ITEM_BITS] + (o & ((1 << _ITEM_BITS) - 1))


def _written_splits(layout, options, parquet, staging, out, numbers):
    """mapPartitions over split numbers: each split's staged lines with their final heads (global index,
    "PATH:LINE") and each replay's line, or the typed rows, written to OUT as part-S (mode 0600, under a name of
    its own first, renamed when whole). Yields (s, items written) per split."""
    import pyarrow as pa

    layout = layout.value
    for s in numbers:
        yield s, _write_split(layout, options, parquet, staging, out, s, pa)


def _write_split(layout, options, parquet, staging, out, s, pa):
    name = _part_name(s, len(layout.path), parquet)
    # Written in the staging folder and renamed into OUT when whole: a copy a killed task leaves half written
    # goes with the staging folder.
    temporary = os.path.join(staging, f".{name}.{os.getpid()}.{os.urandom(8).hex()}")
    descriptor = _new_private_file(temporary)
    written = 0
    try:
        with open(descriptor, "wb") as sink, _staged_stream(staging, s, layout.staged[s], layout.path[s], pa) as source:
            reader = pa.ipc.open_stream(source)
            if parquet:
                import pyarrow.parquet as pq

                writer = pq.ParquetWriter(sink, _parquet_schema(pa))
                for batch in reader:
                    writer.write_batch(pa.RecordBatch.from_pydict(_typed_rows(layout, s, batch),
                                                                  schema=_parquet_schema(pa)))
                    written += batch.num_rows
                writer.close()
            else:
                for batch in reader:
                    sink.write(_final_lines(layout, options, s, batch))
                    written += batch.num_rows
        os.replace(temporary, os.path.join(out, name))
        temporary = None
    finally:
        if temporary is not None:
            os.unlink(temporary)
    return written


def _part_name(s, count, parquet):
    """part-S, S as wide as the largest split number needs (at least 5 digits, Spark's width): name order is
    split order however many splits there are."""
    return f"part-{s:0{max(5, len(str(count - 1)))}d}" + (".parquet" if parquet else "")


def _staged_stream(staging, s, attempt, path, pa):
    """A split's staged stream, mapped: opened without following a link, and only a regular file of this user's
    (the staging folder is 0700 in OUT; this holds even if OUT's parent lets others swap names)."""
    import mmap

    try:
        descriptor = os.open(_staged_path(staging, s, attempt),
                             os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO must not block
    except FileNotFoundError:
        raise RuntimeError(f"the staged lines of split {s} of {path} are gone (removed while the job ran): "
                           "refused") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise RuntimeError(f"the staged lines of split {s} of {path} are not this job's file: refused")
        mapped = mmap.mmap(descriptor, 0, prot=mmap.PROT_READ) if info.st_size else b""
    finally:
        os.close(descriptor)
    return pa.BufferReader(pa.py_buffer(mapped))


def _final_lines(layout, options, s, batch):
    """The bytes of a staged batch's lines, each with its final head, replays rewritten: the CLI's lines."""
    import numpy as np

    items, numbers, tids = (batch.column(name).to_pylist() for name in ("i", "n", "tid"))
    line = batch.column("line")
    _, offsets, data = line.buffers()
    at = np.frombuffer(offsets, np.int64, len(line) + 1 + line.offset)[line.offset:].tolist()
    view = memoryview(data) if data is not None else memoryview(b"")
    item_base, line_base, source = layout.item_base[s], layout.line_base[s], layout.sources[layout.path[s]]
    replays = layout.replays
    key_base = s << _ITEM_BITS
    pieces = []
    for k, i in enumerate(items):
        index = item_base + i
        claimed = replays.get(key_base | i) if replays else None
        if claimed is not None:
            pieces.append(applepay.replay_line(index, layout.path[s], tids[k], claimed, source_line=line_base + numbers[k],
                                               at_signing_time=options.at_signing_time))
        else:
            pieces.append(b'{"index":%d,"source":%s:%d",' % (index, source, line_base + numbers[k]))
            pieces.append(view[at[k] + _head_length(i):at[k + 1]])
    return b"".join(pieces)


def _typed_rows(layout, s, batch):
    items, numbers, codes, tids = (batch.column(name).to_pylist() for name in ("i", "n", "code", "tid"))
    line = batch.column("line")
    out = {name: [] for name in _PARQUET_COLUMNS}
    for k, i in enumerate(items):
        index = layout.item_base[s] + i
        number = layout.line_base[s] + numbers[k]
        claimed = layout.replays.get((s << _ITEM_BITS) | i)
        _typed(out, layout, s, i, index, number, claimed, line[k].as_py(), codes[k], tids[k])
    return out


_PARQUET_COLUMNS = ["index", "source", "transactionId", "code", "message", "field", "payment"]
_PARQUET_DDL = ("index long, source string, transactionId string, code string, message string, field string, "
                "payment string")


def _parquet_schema(pa):
    return pa.schema([("index", pa.int64()), ("source", pa.string()), ("transactionId", pa.string()),
                      ("code", pa.string()), ("message", pa.string()), ("field", pa.string()),
                      ("payment", pa.string())])


def _typed(out, layout, s, i, index, number, claimed, line, code, tid):
    if claimed is not None:
        row = (tid, "replayedTransaction", _REPLAY_MESSAGE + str(claimed), _REPLAY_FIELD, None)
    else:
        row = _typed_row(line, _head_length(i), code, tid)
    for name, value in zip(_PARQUET_COLUMNS, (index, f"{layout.path[s]}:{number}") + row):
        out[name].append(value)


def run_job(spark, inputs, out, engine, mask_pan=False, max_item_bytes=DEFAULT_MAX_ITEM_BYTES, split_bytes=None,
            output_format="jsonl", plan=None):
    """Writes OUT (a new directory, mode 0700) as part files whose concatenation in name order is `applepay-decrypt
    batch`'s result file (or, with output_format "parquet", the same rows typed); returns the number of items.
    `plan` (plan_splits' answer) may be made earlier: a file that changed since is refused. On any failure OUT is
    removed whole: no partial output, no staged card data is left behind.

    Two jobs, and a third only when a key repeats. The first reads each split once, decrypts it and stages its
    lines in OUT (see _Staging); only the replay keys and each split's summary go to Spark, which shuffles the
    keys once to find any held twice; the third (_holders) finds who holds those. The last writes each split's part file from its staged lines, with the heads and replay verdicts the driver
    worked out in between. OUT must be a directory the executors share with the driver (as the inputs are)."""
    sc = spark.sparkContext
    timing = _Timing()
    engine.max_item_bytes = max_item_bytes
    if plan is None:
        if split_bytes is None:
            split_bytes = _default_split_bytes(sum(os.stat(path).st_size for path in inputs), sc.defaultParallelism)
        plan = plan_splits(inputs, split_bytes)
    out = os.path.abspath(out)
    os.mkdir(out, 0o700)  # refuses an existing OUT; 0700 whatever the umask allows
    os.chmod(out, 0o700)
    staging = os.path.join(out, "_staging")
    # This job's Spark jobs in a group of their own, so a failure cancels and waits for them alone, never the
    # caller's other jobs; the caller's group is put back after.
    properties = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    previous = {name: sc.getLocalProperty(name) for name in properties}
    group = f"applepay-spark-{os.urandom(8).hex()}"
    try:
        sc.setJobGroup(group, "applepay.spark: verify and decrypt", interruptOnCancel=True)
        os.mkdir(staging, 0o700)
        # Plain RDD tasks over split numbers: no token, line or DataFrame crosses the JVM (no SQL planning, no
        # Arrow in the JVM: a second or more of fixed cost), only key blobs and summaries. One partition a split.
        count = len(plan)
        buckets = max(1, sc.defaultParallelism)
        found = (sc.parallelize(range(count), count)
                 .mapPartitions(lambda numbers: _split_keys(engine, mask_pan, plan, staging, buckets, numbers))
                 .partitionBy(buckets, lambda bucket: bucket)
                 .mapPartitions(_repeated_keys).collect())
        summaries = [json.loads(value) for kind, value in found if kind == "summary"]
        repeated = sorted(value for kind, value in found if kind == "key")
        timing.lap(f"read, decrypt and stage (one pass), split summaries and repeated keys ({len(repeated)})")
        # Writing costs little next to decrypting, and each Python task some tenths of a second: one task per core.
        per_core = max(1, min(count, sc.defaultParallelism))
        replays = {}
        if repeated:
            # A second look at the staged keys, only now: who holds each repeated key, by the CLI's rule.
            staged = sc.broadcast({row["s"]: row["staged"] for row in summaries})
            wanted = sc.broadcast(repeated)
            holders = {}
            for values, keys in (sc.parallelize(range(count), per_core)
                                 .mapPartitions(lambda numbers: _holders(staging, staged, wanted, numbers)).collect()):
                for value, key in zip(_int64s(values), _chunks16(keys)):
                    holders.setdefault(key, []).append(value)
            replays = _first_claims(list(holders.values()))
            timing.lap(f"replays judged ({len(replays)})")
        layout = _Layout(plan, summaries, replays)
        shared = sc.broadcast(layout)
        parquet = output_format == "parquet"
        (sc.parallelize(range(count), per_core)
         .mapPartitions(lambda numbers: _written_splits(shared, engine, parquet, staging, out, numbers)).collect())
        shutil.rmtree(staging)
        _created(os.path.join(out, "_SUCCESS"))
        timing.lap("written")
    except BaseException:
        _remove_after_failure(sc, out, group)
        raise
    finally:
        for name, value in previous.items():
            sc.setLocalProperty(name, value)
    return layout.count


def _remove_after_failure(sc, out, group, patience=60.0):
    """Removes OUT whole after a failure. Spark stops the job's other tasks asynchronously, and a Python worker
    can still rename a part file into OUT after a first removal listed it (an outside attack showed it): remove
    OUT, cancel this job's group, wait until none of its stages runs a task (a worker whose task is killed is
    stopped within seconds), then remove OUT until it is gone. A second Ctrl-C or SIGTERM is ignored meanwhile
    (it would stop the removal half way). If OUT cannot be removed, say so loudly: it may hold card data."""
    ignored = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            ignored[number] = signal.signal(number, signal.SIG_IGN)
        except ValueError:  # not the main thread: signals go to the main thread anyway
            pass
    try:
        shutil.rmtree(out, ignore_errors=True)
        try:
            sc.cancelJobGroup(group)
            tracker = sc.statusTracker()
            deadline = time.time() + patience
            while time.time() < deadline and _tasks_running(tracker, group):
                time.sleep(0.1)
        except BaseException:  # noqa: BLE001 (a stopped context: nothing left running to wait for)
            pass
        for _ in range(50):
            shutil.rmtree(out, ignore_errors=True)
            if not os.path.lexists(out):
                return
            time.sleep(0.1)
        print(f"applepay.spark: WARNING: could not remove {out} after the failure: it may hold card data; remove it",
              file=sys.stderr)
    finally:
        for number, handler in ignored.items():
            signal.signal(number, handler)


def _tasks_running(tracker, group):
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        for stage_id in info.stageIds if info else ():
            stage = tracker.getStageInfo(stage_id)
            if stage and stage.numActiveTasks > 0:
                return True
    return False


def _int64s(blob):
    import numpy as np

    return np.frombuffer(blob, np.int64).tolist()


def _chunks16(blob):
    return [blob[k:k + 16] for k in range(0, len(blob), 16)]


def _new_private_file(path):
    """A descriptor of a new file only its user can read (0600 whatever the umask): never an existing name, never
    through a link. Every file the job writes (staged lines, part files, _SUCCESS) is made here."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _created(path):
    os.close(_new_private_file(path))


class _Timing:
    """Stage wall times on stderr when APPLEPAY_SPARK_TIMING is set (Benchmarks/spark-throughput.sh)."""

    def __init__(self):
        self.on = bool(os.environ.get("APPLEPAY_SPARK_TIMING"))
        self.last = time.time()

    def lap(self, what):
        if self.on:
            now = time.time()
            print(f"applepay.spark: timing {now - self.last:7.2f} s {what}", file=sys.stderr)
            self.last = now


def _parser():
    parser = argparse.ArgumentParser(
        prog="python3 -m applepay.spark",
        description="Verify and decrypt JSONL archives of Apple Pay and Google Pay tokens on Apache Spark. OUT becomes a directory of "
                    "Spark part files (part-00000, part-00001, ...) whose concatenation in name order is byte for byte "
                    "the result file `applepay-decrypt batch` writes for the same inputs: one JSON line per token, in "
                    "input order, replays judged as the CLI judges them.",
        epilog="The output holds card data (PANs, cryptograms): it is written with mode 0600 in a directory of mode "
               "0700 (only you can read it); the decrypted lines are staged there too until the part files are "
               "written, and OUT is removed whole if the job fails. Remove it when it is no longer needed. OUT must "
               "be a directory the driver and the executors share, as the inputs are. On a cluster every executor "
               "needs this package and "
               "libapplepay.so (e.g. PYSPARK_SUBMIT_ARGS='--py-files applepay.zip --files libapplepay.so --conf "
               "spark.executorEnv.APPLEPAY_LIBRARY=./libapplepay.so pyspark-shell'), pyarrow, the inputs and "
               "merchant files at the same paths, and the password variables (spark.executorEnv.VAR). "
               "Also: spark-submit [--master URL] applepay/spark.py ARGS.")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="JSONL files (one token per line), read in the order given")
    parser.add_argument("--out", required=True, metavar="DIR", help="the output directory (must not exist)")
    parser.add_argument("--merchant", action="append", default=[], metavar="SPEC",
                        help="an Apple Pay merchant key (repeatable; required unless the --google-* options are given): "
                             "cert=PATH,key=PATH | id=MERCHANT_ID,key=PATH | p12=PATH[,password-env=VAR]")
    parser.add_argument("--google-root-keys", metavar="FILE",
                        help="Google's root signing keys document (JSON, {\"keys\": [...]}) for Google Pay tokens")
    parser.add_argument("--google-recipient-id", action="append", default=[], metavar="ID",
                        help="a recipient id Google Pay tokens are accepted for (repeatable): merchant:MERCHANT_ID or "
                             "gateway:GATEWAY_ID")
    parser.add_argument("--google-merchant-key", action="append", default=[], metavar="SPEC",
                        help="a Google Pay merchant private key (repeatable, tried in order): PATH | "
                             "key=PATH[,key-password-env=VAR] | pkcs11=URI,pub=PATH | pkcs11=URI,cert=PATH")
    parser.add_argument("--trust-root", metavar="PATH",
                        help="TESTING ONLY: trust this root certificate (PEM) instead of the pinned Apple Root CA - G3")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--now", metavar="TIME",
                      help="reference time, ISO 8601, fractional seconds allowed (2026-03-01T12:01:00.123Z: Google Pay "
                           "keys and messages expire to the millisecond; default: when the job starts)")
    when.add_argument("--at-signing-time", action="store_true", help="skip the freshness check (archives)")
    parser.add_argument("--window", type=int, metavar="SECONDS", help="allowed distance between signing and reference time")
    parser.add_argument("--mask-pan", action="store_true", help="mask each PAN as the CLI does")
    parser.add_argument("--max-item-bytes", type=int, default=DEFAULT_MAX_ITEM_BYTES, metavar="BYTES",
                        help="the largest line read (default and maximum 1048576); a longer one is malformedToken")
    parser.add_argument("--split-bytes", type=int, metavar="BYTES",
                        help="bytes of input per partition (default: one partition per core per round, 1 to 256 MiB each)")
    parser.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl",
                        help="jsonl (default): the CLI's result file as part files; parquet: the same rows typed "
                             "(index, source, transactionId, code, message, field, payment)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default: spark-submit's, else local[*])")
    return parser


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None):
    args = _parser().parse_args(argv)
    if not 1 <= args.max_item_bytes <= applepay.MAX_TOKEN_LENGTH:
        _parser().error(f"--max-item-bytes must be between 1 and {applepay.MAX_TOKEN_LENGTH}")
    if args.split_bytes is not None and args.split_bytes < 1:
        _parser().error("--split-bytes must be positive")
    if os.path.lexists(args.out):
        _parser().error(f"--out {args.out} exists: give a new directory")
    try:
        engine = EngineOptions(args.merchant, args.trust_root, args.now, args.at_signing_time, args.window,
                               args.google_root_keys, args.google_recipient_id, args.google_merchant_key)
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
    # SIGTERM (a scheduler's stop) ends the job as Ctrl-C does, through run_job's removal of OUT: the staged lines
    # are card data, and nothing can resume from them.
    signal.signal(signal.SIGTERM, _terminated)
    started = time.time()
    try:
        count = run_job(spark, args.inputs, args.out, engine, args.mask_pan, args.max_item_bytes, args.split_bytes,
                        args.format)
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
