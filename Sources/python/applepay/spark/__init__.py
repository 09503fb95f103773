"""Apache Spark: verify and decrypt Apple Pay and Google Pay tokens on executors, with the CLI's replay verdicts.

Two uses (see the Spark article):

* a library function, ``decrypt_tokens(df, merchants, ...)``: a DataFrame with a token column and a unique order
  column in; a DataFrame with ``index``, ``transactionId``, ``code``, ``message``, ``field`` and ``payment``
  (the payment JSON, or null) out.
* a job, ``python3 -m applepay.spark INPUT... --out DIR --merchant SPEC ...`` (or ``spark-submit`` its ``__main__.py``):
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

The modules: ``options``, the CLI's merchant specs and engine options; ``splits``, the job's reader: splits of the
inputs and the lines that start in each; ``engine``, the engine a whole Arrow batch a call, and the rows of its
lines; ``staging``, the job's first pass: each split decrypted and its lines staged in OUT; ``replays``, replay
verdicts, with Spark's operators and by the CLI's rule; ``library``, the library function, decrypt_tokens; ``job``,
the job: run_job writes OUT; ``command``, the job's command line (main; python3 -m applepay.spark runs it,
__main__.py).
"""
# Every name the module spark.py had, public and private (tests and callers import them from here).
from applepay.spark.options import (add_google_merchant_key, DEFAULT_MAX_ITEM_BYTES, EngineOptions,
                                    _GOOGLE_SPEC_FIELDS, load_merchant, parse_google_key_spec, parse_merchant_spec,
                                    parse_time, _SPEC_FIELDS, _spec_values)  # noqa: F401
from applepay.spark.splits import (_check_unchanged, DEFAULT_SPLIT_BYTES, _default_split_bytes, _identity,
                                   _owned_segments, plan_splits)  # noqa: F401
from applepay.spark.engine import (_binary_array, _BINARY_LIMIT, _binary_views, _decrypt_arrow, _engine_seconds,
                                   _head_length, _keys_array, _narrowed, _OK, _replay_row,
                                   _TIMING, _typed_row)  # noqa: F401
from applepay.spark.staging import (_CALL_TOKENS, _created, _decrypt_split, _item_batch, _ITEM_BITS, _key_pairs,  # noqa: F401
                                    _new_private_file, _oversized_batch, _repeated_keys, _split_keys,
                                    _STAGED_COLUMNS, _staged_path, _staged_schema, _staged_stream, _Staging)
from applepay.spark.replays import (_collect_replays, _first_claims, _holders, resolve_replays)  # noqa: F401
from applepay.spark.library import (decrypt_tokens, _judged_library_rows, _LIBRARY_COLUMNS, _LIBRARY_DDL,
                                    _library_schema, _map_in_arrow, _token_batches)  # noqa: F401
from applepay.spark.job import (_chunks16, _escaped_source, _final_lines, _int64s, _Layout, _PARQUET_COLUMNS,  # noqa: F401
                                _PARQUET_DDL, _parquet_schema, _part_name, _remove_after_failure, run_job,
                                _tasks_running, _Timing, _typed, _typed_rows, _write_split, _written_splits)
from applepay.spark.command import (main, _parser, _terminated)  # noqa: F401
