"""Replay verdicts: with Spark's operators (the library function), and by the CLI's rule over the holders of
the keys held more than once (the job)."""
from applepay.spark.staging import _key_pairs, _staged_stream


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
