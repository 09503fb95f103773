"""python3 -m applepay.spark INPUT... --out DIR --merchant SPEC ...: the job's command line."""
import argparse
import os
import signal
import sys
import time

import applepay
from applepay.spark.job import run_job
from applepay.spark.options import DEFAULT_MAX_ITEM_BYTES, EngineOptions
from applepay.spark.splits import DEFAULT_SPLIT_BYTES, plan_splits


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
               "Also: spark-submit [--master URL] applepay/spark/__main__.py ARGS.")
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
    parser.add_argument("--google-protocol-version", action="append", default=None, metavar="VERSION",
                        choices=["ECv1", "ECv2", "ECv2SigningOnly"],
                        help="a Google Pay protocolVersion accepted (repeatable; default: ECv1 and ECv2; naming "
                             "versions replaces the default; ECv2SigningOnly, card data signed but not encrypted, "
                             "only when named); a token of another version is unsupportedVersion")
    parser.add_argument("--samsung-key", action="append", default=[], metavar="SPEC",
                        help="a Samsung Pay merchant private key (repeatable: keys rotate; a token's kid picks one): "
                             "PATH | key=PATH[,key-password-env=VAR] | p12=PATH[,password-env=VAR] | pkcs11=URI,pub=PATH")
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
                               args.google_root_keys, args.google_recipient_id, args.google_merchant_key,
                               args.samsung_key, args.google_protocol_version)
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
