"""The library function, decrypt_tokens(df, merchants, ...): a DataFrame of tokens in, one of verdicts out."""
from applepay.spark.engine import (_binary_views, _decrypt_arrow, _keys_array, _narrowed, _replay_row,
                                   _typed_row)
from applepay.spark.options import DEFAULT_MAX_ITEM_BYTES, EngineOptions
from applepay.spark.replays import _collect_replays


_LIBRARY_DDL = "o long, line binary, code int, keys binary, tid string, wallet int"


def _token_batches(options, mask_pan, batches):
    """mapInArrow over (o, t) batches: one ap_decrypt_batch_arrow call per batch, unjudged."""
    import pyarrow as pa

    import numpy as np

    schema = pa.schema([("o", pa.int64()), ("line", pa.binary()), ("code", pa.int32()), ("keys", pa.binary()),
                        ("tid", pa.string()), ("wallet", pa.int32())])
    decryptor = options.decryptor()
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            # Not freed here: dropped with the last array over it (see _item_batch).
            columns = _decrypt_arrow(decryptor, options, batch.column(1), 0, mask_pan)
            yield pa.RecordBatch.from_arrays(
                [batch.column(0), _narrowed(columns.lines, pa.binary(), pa), columns.codes, _keys_array(columns, pa),
                 _narrowed(columns.transaction_ids, pa.string(), pa),
                 pa.array(columns.wallets.to_numpy(zero_copy_only=False).astype(np.int32))], schema=schema)
    finally:
        decryptor.free()


def _judged_library_rows(verdicts, batches):
    import pyarrow as pa

    claims = verdicts.value
    for batch in batches:
        orders = batch.column(0).to_pylist()
        codes = batch.column(2).to_pylist()
        tids = batch.column(4).to_pylist()
        wallets = batch.column(5).to_pylist()
        lines = _binary_views(batch.column(1))
        rows = []
        for k, order in enumerate(orders):
            if order in claims:
                rows.append((order,) + _replay_row(tids[k], claims[order], wallets[k]))
            else:
                line = bytes(lines(k))
                rows.append((order,) + _typed_row(line, line.index(b',"transactionId":') + 1, codes[k], tids[k]))
        yield pa.RecordBatch.from_pylist(
            [dict(zip(_LIBRARY_COLUMNS, row)) for row in rows], schema=_library_schema(pa))


_LIBRARY_COLUMNS = ["index", "transactionId", "code", "message", "field", "payment"]


def _library_schema(pa):
    return pa.schema([("index", pa.int64()), ("transactionId", pa.string()), ("code", pa.string()),
                      ("message", pa.string()), ("field", pa.string()), ("payment", pa.string())])


def decrypt_tokens(df, merchants=(), token="token", order="order", *, trust_root=None, now=None,
                   at_signing_time=False, window=None, mask_pan=False, google_root_keys=None, google_recipient_ids=(),
                   google_merchant_keys=(), samsung_keys=(), google_protocol_versions=None):
    """Decrypts df[token] (binary or string, one token or {"paymentToken", "paymentRequest"} item per row),
    replays judged in df[order]'s order (a unique, non-null integer per row, in a column of an integer type; the
    CLI uses the item index: a repeated or null order is refused with ValueError, since a merchant's order number
    that a retried payment shares would make two tokens "first", and so is an order column of another type, whose
    values would be checked apart and then cast to one order).

    merchants: the CLI's --merchant specs (files are read on each executor); trust_root: TESTING ONLY, a PEM
    path replacing Apple Root CA - G3; now: ISO 8601 reference time, fractional seconds counted to the
    millisecond (default: when this is called); at_signing_time: skip the freshness check; window: the
    signing-time window in seconds. Google Pay tokens (told apart by shape, in the same column): the CLI's
    google_root_keys (a keys document's path), google_recipient_ids and google_merchant_keys (specs); either
    wallet's keys may be given alone, and replays are judged across both; google_protocol_versions: the
    versions accepted, as the CLI's --google-protocol-version (None: ECv1 and ECv2; an empty list is refused;
    ECv2SigningOnly only when named). Samsung Pay tokens: samsung_keys (the
    CLI's --samsung-key specs, read on each executor), judged in the same ledger.

    Returns a DataFrame: index (the order value), transactionId, code ("ok" or an error code), message, field,
    payment (JSON text, null unless code is "ok"). The payment is card data. Tokens reach the engine an Arrow
    batch at a time (mapInArrow, spark.sql.execution.arrow.maxRecordsPerBatch tokens per call); the decrypted
    batches are cached in executor memory (MEMORY_ONLY: recomputed, never spilled) and only order and replay
    keys are shuffled to judge replays; what the caller does with the result is the caller's."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    options = EngineOptions(merchants, trust_root, now, at_signing_time, window, google_root_keys,
                            google_recipient_ids, google_merchant_keys, samsung_keys, google_protocol_versions)
    options.max_item_bytes = DEFAULT_MAX_ITEM_BYTES
    # The check must see the values the job uses: cast to a long, 1.2 and 1.7 (or "1" and "01") would pass it
    # apart and become one order, and a token present twice would be two payments. Integer types only.
    kind = df.select(F.col(order)).schema.fields[0].dataType.typeName()
    if kind not in ("byte", "short", "integer", "long"):
        raise ValueError(f"the order column {order!r} is of type {kind}, not an integer type (byte, short, int or "
                         "long); cast it yourself, so that the values checked unique are the ones replays are judged by")
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
