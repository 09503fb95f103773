"""The one SparkSession (local[2]) every Spark test shares: starting Spark costs seconds, a job a fraction."""
import os

import pytest


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.umask(0o077)
    session = (SparkSession.builder.master("local[2]").appName("applepay-spark-tests")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.hadoop.fs.permissions.umask-mode", "077").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
