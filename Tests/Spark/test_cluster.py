"""applepay.spark on a real standalone cluster: a master and two workers on loopback (pyspark's spark-class), the
job submitted with --master spark://127.0.0.1:PORT as a user runs it, the package and libapplepay.so shipped to the
executors (--py-files and --files through PYSPARK_SUBMIT_ARGS, spark.executorEnv.APPLEPAY_LIBRARY): the cluster's
processes see neither the checkout nor PYTHONPATH. The output must be the CLI's result file. Everything started
here is stopped here.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from test_spark import MERCHANTS, NOW, PACKAGE, TRUST_ROOT, assert_same_lines, concatenated, make_archives, run_cli

# The cluster's own environment: nothing that would let an executor find the package or library on this machine.
CLUSTER_ENV = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "APPLEPAY_LIBRARY") and not key.startswith("PYSPARK")}
CLUSTER_ENV.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m")


def spark_class():
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


def start(args, log):
    # A session of its own: stopping it stops the JVM and what it started (a worker's executors).
    return subprocess.Popen([spark_class(), *args], stdout=log, stderr=subprocess.STDOUT, env=CLUSTER_ENV,
                            start_new_session=True)


def wait_for(path, pattern, process, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        match = re.search(pattern, open(path, errors="replace").read())
        if match:
            return match
        assert process.poll() is None, open(path, errors="replace").read()[-3000:]
        time.sleep(0.3)
    raise AssertionError(f"{pattern!r} not seen in {path}: {open(path, errors='replace').read()[-3000:]}")


def stop(process):
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def cluster(tmp_path):
    """spark://127.0.0.1:PORT of a standalone master with two one-core workers."""
    started = []
    try:
        master_log = tmp_path / "master.log"
        master = start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                        "--webui-port", "0"], open(master_log, "w"))
        started.append(master)
        url = wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master).group(1)
        for n in range(2):
            log = tmp_path / f"worker{n}.log"
            work = tmp_path / f"work{n}"
            work.mkdir()
            started.append(start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                                  "--memory", "768m", "--webui-port", "0", "--work-dir", str(work), url], open(log, "w")))
        for n in range(2):
            wait_for(tmp_path / f"worker{n}.log", r"Successfully registered with master", started[n + 1])
        yield url
    finally:
        for process in reversed(started):
            stop(process)


def test_job_on_a_standalone_cluster_with_the_package_shipped_is_the_cli_result_file(cluster, tmp_path):
    archives = make_archives(tmp_path)
    # What a user ships: the package as a zip and the library beside it, in a folder of their own.
    dist = tmp_path / "dist"
    dist.mkdir()
    with zipfile.ZipFile(dist / "applepay.zip", "w") as z:
        for folder, _, names in os.walk(os.path.join(PACKAGE, "applepay")):
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                z.write(path, os.path.relpath(path, PACKAGE))
    library = os.environ["APPLEPAY_LIBRARY"]
    shutil.copy(library, dist / "libapplepay.so")
    submit = (f"--py-files {dist / 'applepay.zip'} --files {dist / 'libapplepay.so'} "
              "--conf spark.executorEnv.APPLEPAY_LIBRARY=./libapplepay.so --conf spark.executor.memory=512m "
              "--conf spark.ui.enabled=false pyspark-shell")
    env = dict(CLUSTER_ENV, PYTHONPATH=str(dist / "applepay.zip"), APPLEPAY_LIBRARY=str(dist / "libapplepay.so"),
               PYSPARK_SUBMIT_ARGS=submit, PYSPARK_PYTHON=sys.executable)
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, "-m", "applepay.spark", *map(str, archives), "--out", str(out),
                          "--master", cluster, *[arg for spec in MERCHANTS for arg in ("--merchant", spec)],
                          "--trust-root", TRUST_ROOT, "--now", NOW, "--split-bytes", "16384"],
                         capture_output=True, env=env, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-5000:]
    assert_same_lines(concatenated(out), run_cli(archives, tmp_path / "cli.jsonl", "--now", NOW))
    # Both workers ran executors of the job.
    for n in range(2):
        assert any(os.scandir(tmp_path / f"work{n}")), f"worker {n} ran no executor"
