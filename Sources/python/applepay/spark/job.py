"""The job: JSONL archives in, the CLI's result file (or Parquet) out, as Spark part files in OUT."""
import json
import os
import shutil
import signal
import sys
import time

import applepay
from applepay.spark.engine import _head_length, _replay_row, _typed_row
from applepay.spark.options import DEFAULT_MAX_ITEM_BYTES
from applepay.spark.replays import _first_claims, _holders
from applepay.spark.splits import _default_split_bytes, plan_splits
from applepay.spark.staging import (_ITEM_BITS, _created, _new_private_file, _repeated_keys, _split_keys,
                                    _staged_stream)


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


def _final_lines(layout, options, s, batch):
    """The bytes of a staged batch's lines, each with its final head, replays rewritten: the CLI's lines."""
    import numpy as np

    items, numbers, tids, wallets = (batch.column(name).to_pylist() for name in ("i", "n", "tid", "wallet"))
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
                                               at_signing_time=options.at_signing_time, wallet=wallets[k]))
        else:
            pieces.append(b'{"index":%d,"source":%s:%d",' % (index, source, line_base + numbers[k]))
            pieces.append(view[at[k] + _head_length(i):at[k + 1]])
    return b"".join(pieces)


def _typed_rows(layout, s, batch):
    items, numbers, codes, tids, wallets = (batch.column(name).to_pylist()
                                            for name in ("i", "n", "code", "tid", "wallet"))
    line = batch.column("line")
    out = {name: [] for name in _PARQUET_COLUMNS}
    for k, i in enumerate(items):
        index = layout.item_base[s] + i
        number = layout.line_base[s] + numbers[k]
        claimed = layout.replays.get((s << _ITEM_BITS) | i)
        _typed(out, layout, s, i, index, number, claimed, line[k].as_py(), codes[k], tids[k], wallets[k])
    return out


_PARQUET_COLUMNS = ["index", "source", "transactionId", "code", "message", "field", "payment"]
_PARQUET_DDL = ("index long, source string, transactionId string, code string, message string, field string, "
                "payment string")


def _parquet_schema(pa):
    return pa.schema([("index", pa.int64()), ("source", pa.string()), ("transactionId", pa.string()),
                      ("code", pa.string()), ("message", pa.string()), ("field", pa.string()),
                      ("payment", pa.string())])


def _typed(out, layout, s, i, index, number, claimed, line, code, tid, wallet):
    if claimed is not None:
        row = _replay_row(tid, claimed, wallet)
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
