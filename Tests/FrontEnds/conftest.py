"""What the front-end table needs, located once per session; a missing piece FAILS the tests that need it (CI runs
this after every build exists: Tests/FrontEnds/run.sh). Each path can be given in the environment:
- APPLEPAY_CLI: applepay-decrypt (default: .build/debug, the one `swift test` builds)
- APPLEPAY_LIBRARY: libapplepay.so (default: .build/release, as Tests/CABI/run-tests.sh builds it)
- APPLEPAY_MINT_TOKENS: mint-tokens (default: .build/release, then .build/debug)
- APPLEPAY_SERVICE: applepay-service (default: Sources/Server/.build/debug, as Sources/Server/ci.sh builds it)
- APPLEPAY_SWIFT_TEST: the command that runs the Swift tests (default `swift test --skip-build`: the test build
  `swift test` made; FrontEndTableTests is the Swift API's column)
- go (PATH) with Sources/ApplePayC/applepay-uninstalled.pc; Java and pyspark for Spark (local[2]).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "Sources" / "python"))


def _tool(variable, *candidates):
    paths = [os.environ.get(variable)] + [str(ROOT / c) for c in candidates]
    found = next((p for p in paths if p and os.access(p, os.X_OK)), None)
    assert found, f"{variable}: not found (looked in {[p for p in paths if p]}); build it or set {variable}"
    return found


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("front-ends")


@pytest.fixture(scope="session")
def manifest(work):
    import cases

    tool = _tool("APPLEPAY_MINT_TOKENS", ".build/release/mint-tokens", ".build/debug/mint-tokens")
    minted = work / "google-minted"
    subprocess.run([tool, "google", str(minted), "4"], check=True, capture_output=True)
    samsung = work / "samsung-minted"
    subprocess.run([tool, "samsung", str(samsung), "3"], check=True, capture_output=True)
    return cases.build(work / "manifest", minted, samsung)


@pytest.fixture(scope="session")
def library():
    path = os.environ.get("APPLEPAY_LIBRARY") or str(ROOT / ".build" / "release" / "libapplepay.so")
    assert os.path.exists(path), f"libapplepay.so not found at {path} (swift build -c release --product applepay)"
    os.environ["APPLEPAY_LIBRARY"] = path  # the applepay package and Spark's executors load this one
    return path


@pytest.fixture(scope="session")
def spark(library):
    from pyspark.sql import SparkSession

    os.umask(0o077)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The executors (Python workers) import applepay from the checkout.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "Sources" / "python"),
                                                           os.environ.get("PYTHONPATH")] if p)
    session = (SparkSession.builder.master("local[2]").appName("applepay-front-ends")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
