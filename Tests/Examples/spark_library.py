# The Spark article's library example (Spark.md), run by Tests/Examples/spark-job.sh: decrypt_tokens over
# the bundled archive on local[2]; the payments go to the directory named on the command line.
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from applepay.spark import decrypt_tokens

spark = SparkSession.builder.master("local[2]").getOrCreate()
# Your pipeline's token column and a unique, ordered long column (here: the archive's lines, in order).
tokens = spark.read.text("Vectors/archive.jsonl").select(
    F.col("value").alias("token"), F.monotonically_increasing_id().alias("received_seq"))

results = decrypt_tokens(tokens, ["cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem",
                                  "cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem"],
                         token="token", order="received_seq", now="2026-03-01T12:01:00Z",
                         trust_root="Vectors/trust/test-root.pem")  # trust_root: tests only
results.filter("code = 'ok'").select("index", "payment").write.parquet(sys.argv[1])

counts = {row["code"]: row["count"] for row in results.groupBy("code").count().collect()}
assert counts.get("ok") == 12 and counts.get("replayedTransaction") == 1, counts
spark.stop()
