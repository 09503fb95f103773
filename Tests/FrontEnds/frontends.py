"""Each front end's column of the table: run over the manifest (cases.py), each returns
{"cases": {case id: (code, field)}, "replays": {replay id: [(code, field), (code, field)]}} ("replays" only where
the front end judges replays). Every runner is given each group's options as its own users give them."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cases import ROOT, one_line

HERE = Path(__file__).resolve().parent


def _load(manifest):
    return json.loads(Path(manifest).read_text())


def _token(case):
    return Path(case["tokenFile"]).read_bytes()


def _line_outcome(line):
    obj = json.loads(line)
    return (obj.get("error", "ok"), obj.get("field"))


def _replays_of(manifest, group):
    return [r for r in manifest["replays"] if r["group"] == group["name"]]


def _pair(replay):
    """A replay's two tokens: the case's, then the same payment again (the same bytes, or another wrapper's)."""
    return Path(replay["tokenFile"]).read_bytes(), Path(replay["againFile"]).read_bytes()


# ---- Swift API: FrontEndTableTests, run from the test build `swift test` made ----

def swift_api(manifest, work):
    out = Path(work) / "swift-api.json"
    env = dict(os.environ, APPLEPAY_FRONT_END_MANIFEST=str(manifest), APPLEPAY_FRONT_END_OUT=str(out))
    command = os.environ.get("APPLEPAY_SWIFT_TEST", "swift test --skip-build").split()
    run = subprocess.run(command + ["--filter", "FrontEndTableTests"], cwd=ROOT, env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0 and out.exists(), \
        f"swift test --filter FrontEndTableTests failed (exit {run.returncode}):\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
    return {"cases": {k: (v["code"], v["field"]) for k, v in json.loads(out.read_text()).items()}}


# ---- the CLI: decrypt and a one-token batch ----

def cli_flags(group):
    flags = [a for spec in group["merchants"] for a in ("--merchant", spec)]
    if group["trustRoot"]:
        flags += ["--trust-root", group["trustRoot"]]
    google = group["google"]
    if google:
        flags += ["--google-root-keys", google["rootKeys"]]
        flags += [a for value in google["recipientIds"] for a in ("--google-recipient-id", value)]
        flags += [a for value in google["merchantKeys"] for a in ("--google-merchant-key", value)]
    flags += [a for spec in group["samsung"] for a in ("--samsung-key", spec)]
    return flags + ["--now", group["now"]]


def _parallel(jobs):
    """Runs (key, function) jobs on as many threads as there are cores (each one waits on a process)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = [(key, pool.submit(job)) for key, job in jobs]
        return {key: future.result() for key, future in futures}


def _cli_decrypt(cli, group, case):
    run = subprocess.run([cli, "decrypt", case["tokenFile"], *cli_flags(group)], capture_output=True)
    assert run.returncode in (0, 1), f"{case['id']}: exit {run.returncode}: {run.stderr.decode()[-2000:]}"
    obj = json.loads(run.stdout)
    return ("ok", None) if run.returncode == 0 else (obj["error"], obj.get("field"))


def cli_decrypt(cli, manifest, work):
    manifest = _load(manifest)
    return {"cases": _parallel([(case["id"], lambda g=group, c=case: _cli_decrypt(cli, g, c))
                                for group in manifest["groups"] for case in group["cases"]])}


def _cli_batch(cli, group, lines, work):
    work = Path(tempfile.mkdtemp(dir=work))
    (work / "in.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    run = subprocess.run([cli, "batch", str(work / "in.jsonl"), "--out", str(work / "out.jsonl"), "--quiet",
                          *cli_flags(group)], capture_output=True)
    assert run.returncode == 0, f"{group['name']}: batch exit {run.returncode}: {run.stderr.decode()[-2000:]}"
    return [_line_outcome(line) for line in (work / "out.jsonl").read_bytes().splitlines()]


def cli_batch(cli, manifest, work):
    manifest = _load(manifest)
    cases = _parallel([(case["id"], lambda g=group, c=case: _cli_batch(cli, g, [one_line(_token(c))], work)[0])
                       for group in manifest["groups"] for case in group["cases"]])
    replays = _parallel([(r["id"], lambda g=group, r=r: _cli_batch(cli, g, [one_line(t) for t in _pair(r)], work))
        for group in manifest["groups"] for r in _replays_of(manifest, group)])
    return {"cases": cases, "replays": replays}


# ---- the C ABI, called directly ----

def c_abi(library, manifest, work):
    from cabi import CABI

    abi, manifest = CABI(library), _load(manifest)
    single, batched, replays = {}, {}, {}
    for group in manifest["groups"]:
        decryptor = abi.decryptor(group)
        try:
            for case in group["cases"]:
                token = _token(case)
                single[case["id"]] = abi.decrypt(decryptor, token, group["nowMilliseconds"])
                [batched[case["id"]]] = abi.decrypt_batch(decryptor, [token], group["nowMilliseconds"])
            for replay in _replays_of(manifest, group):
                replays[replay["id"]] = abi.decrypt_batch(decryptor, list(_pair(replay)), group["nowMilliseconds"])
        finally:
            abi.free_decryptor(decryptor)
    return {"cases": single}, {"cases": batched, "replays": replays}


# ---- Python: the applepay package (Sources/python) ----

def python_package(manifest, work):
    import applepay

    manifest = _load(manifest)
    single, batched, replays = {}, {}, {}

    def outcome(result):
        try:
            return (result.code_name, result.field)
        finally:
            result.free()

    for group in manifest["groups"]:
        merchants = []
        for m in group["merchantFiles"]:
            key = Path(m["key"]).read_bytes()
            merchants.append(applepay.Merchant.certificate(Path(m["cert"]).read_bytes(), key) if m["cert"]
                             else applepay.Merchant.identifier(m["id"], key))
        google = group["google"] or {}
        root = Path(group["trustRoot"]).read_bytes() if group["trustRoot"] else None
        with applepay.Decryptor(merchants, insecure_test_root_pem=root,
                                google_root_keys=Path(google["rootKeys"]).read_bytes() if google else None,
                                google_recipient_ids=google.get("recipientIds", ()),
                                google_merchant_keys=[Path(k).read_bytes() for k in google.get("merchantKeys", ())],
                                samsung_keys=group["samsung"], reference_unit=applepay.REFERENCE_MILLISECONDS) as d:
            now = group["nowMilliseconds"]
            for case in group["cases"]:
                token = _token(case)
                code, result = d.decrypt(token, now)
                single[case["id"]] = outcome(result)
                code, results = d.decrypt_batch([token], now, 1)
                assert code == applepay.OK
                [batched[case["id"]]] = [outcome(r) for r in results]
            for replay in _replays_of(manifest, group):
                code, results = d.decrypt_batch(list(_pair(replay)), now, 1)
                assert code == applepay.OK
                replays[replay["id"]] = [outcome(r) for r in results]
    return {"cases": single}, {"cases": batched, "replays": replays}


# ---- Go: the binding (Sources/go) through Tests/FrontEnds/go ----

def go_binding(manifest, work):
    env = dict(os.environ, PKG_CONFIG_PATH=os.pathsep.join(
        p for p in [str(ROOT / "Sources" / "ApplePayC"), os.environ.get("PKG_CONFIG_PATH")] if p))
    env.setdefault("GOFLAGS", "-mod=mod")
    # The .pc file carries no run path (issue 43): the program finds libapplepay.so through LD_LIBRARY_PATH, as
    # Tests/CABI/run-tests.sh gives it.
    library_dir = str(Path(os.environ.get("APPLEPAY_LIBRARY", ROOT / ".build" / "release" / "libapplepay.so")).parent)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in [library_dir, os.environ.get("LD_LIBRARY_PATH")] if p)
    run = subprocess.run(["go", "run", ".", str(manifest)], cwd=HERE / "go", env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"go run failed (exit {run.returncode}):\n{run.stderr[-3000:]}"
    out = json.loads(run.stdout)
    pair = lambda o: (o["code"], o["field"])  # noqa: E731
    return ({"cases": {k: pair(v) for k, v in out["decrypt"].items()}},
            {"cases": {k: pair(v) for k, v in out["batch"].items()},
             "replays": {k: [pair(o) for o in v] for k, v in out["replays"].items()}})


# ---- the HTTP service (Sources/Server's applepay-service) on loopback ----

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """applepay-service for one group's options (the service takes them at start, and its replay store lives as long
    as it does), on 127.0.0.1 with a free port, its memory replay store and the group's clock."""

    def __init__(self, binary, group, work):
        flags = [a for spec in group["merchants"] for a in ("--merchant", spec)]
        if group["trustRoot"]:
            flags += ["--trust-root", group["trustRoot"]]
        google = group["google"]
        if google:
            flags += ["--google-root-keys", google["rootKeys"]]
            flags += [a for value in google["recipientIds"] for a in ("--google-recipient-id", value)]
            flags += [a for value in google["merchantKeys"] for a in ("--google-merchant-key", value)]
        flags += [a for spec in group["samsung"] for a in ("--samsung-key", spec)]
        self.log = open(Path(tempfile.mkdtemp(dir=work)) / "service.log", "w+b")
        for attempt in range(3):
            self.port = _free_port()
            self.process = subprocess.Popen(
                [binary, "--listen", f"127.0.0.1:{self.port}", "--insecure-testing-fixed-now", group["now"], *flags],
                stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
            if self._ready():
                return
            self.stop()
        self.log.seek(0)
        raise AssertionError(f"applepay-service did not start for {group['name']}:\n{self.log.read().decode()[-3000:]}")

    def _ready(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    return True
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.1)
        return False

    def post(self, path, body, content_type):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body, method="POST",
                                         headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def decrypt(self, token):
        status, body = self.post("/v1/decrypt", token, "application/json")
        obj = json.loads(body)
        assert (status == 200) == ("error" not in obj), (status, body[:300])
        return (obj.get("error", "ok"), obj.get("field"))

    def batch(self, lines):
        status, body = self.post("/v1/decrypt/batch", b"".join(line + b"\n" for line in lines), "application/jsonl")
        assert status == 200, (status, body[:300])
        return [_line_outcome(line) for line in body.splitlines() if line.strip()]

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def service(binary, manifest, work):
    """/v1/decrypt per case and /v1/decrypt/batch of one line per case, each endpoint on a service of its own per group
    (a payment claims its identity in the service's replay store: the other endpoint would then see a replay). A replay
    pair is its case (sent already) and the same token sent again to the same endpoint afterwards."""
    manifest = _load(manifest)
    single, batched = {"cases": {}, "replays": {}}, {"cases": {}, "replays": {}}
    for group in manifest["groups"]:
        for column, send in ((single, lambda s, t: s.decrypt(t)), (batched, lambda s, t: s.batch([one_line(t)])[0])):
            s = Service(binary, group, work)
            try:
                for case in group["cases"]:
                    column["cases"][case["id"]] = send(s, _token(case))
                for replay in _replays_of(manifest, group):
                    again = send(s, _pair(replay)[1])
                    column["replays"][replay["id"]] = [column["cases"][replay["case"]], again]
            finally:
                s.stop()
    return single, batched


# ---- Spark: applepay.spark's library function on local[2] ----

def spark_library(spark, manifest, work):
    """decrypt_tokens over each group's cases, one row each (order: the case's place), with the group's options as the
    library takes them (the CLI's specs and paths). A replay pair is its case and a copy of its token (or of its
    payment in another wrapper) in a row after every case (replays are judged in the order column's order), in the
    same frame."""
    from applepay import spark as job

    manifest = _load(manifest)
    cases, replays = {}, {}
    for group in manifest["groups"]:
        google = group["google"] or {}
        options = dict(trust_root=group["trustRoot"], now=group["now"],
                       google_root_keys=google.get("rootKeys"), google_recipient_ids=google.get("recipientIds", ()),
                       google_merchant_keys=google.get("merchantKeys", ()), samsung_keys=group["samsung"])
        rows = [(i, _token(case)) for i, case in enumerate(group["cases"])]
        pairs = _replays_of(manifest, group)
        rows += [(len(rows) + j, _pair(r)[1]) for j, r in enumerate(pairs)]
        df = spark.createDataFrame(rows, "order long, token binary").repartition(2)
        got = {r["index"]: (r["code"], r["field"]) for r in job.decrypt_tokens(df, group["merchants"],
                                                                               **options).collect()}
        for i, case in enumerate(group["cases"]):
            cases[case["id"]] = got[i]
        for j, replay in enumerate(pairs):
            replays[replay["id"]] = [cases[replay["case"]], got[len(group["cases"]) + j]]
    return {"cases": cases, "replays": replays}
