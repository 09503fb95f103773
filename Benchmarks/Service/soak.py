#!/usr/bin/env python3
# The soak's traffic, faults and report, started by soak.sh (which builds, mints, starts PostgreSQL and the
# two service instances, and cleans up); the header of soak.sh says what each figure means.
#
# Standard library only, so that the soak runs on a bare Debian machine. Python's threads are enough at
# this rate (a few hundred requests per second at most): each request spends its time waiting on a socket,
# where the interpreter lock is released.
import argparse
import collections
import http.client
import json
import os
import queue
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

# What each kind of request must get, outside the outage window. Anything else is listed as unexpected.
# Genuine kinds carry a token sent to be accepted; the others must never be accepted.
GENUINE = {"valid", "bound", "race", "slow-genuine"}
EXPECTED = {
    "valid": {200},
    "bound": {200},
    "race": {200, 422},
    "slow-genuine": {200},
    "replay": {422},
    "reframed-replay": {422},
    "mismatch": {422},
    "bad-envelope": {422},
    "bad-request": {422},
    "not-json": {422},
    "tampered": {422},
    "truncated": {422},
    "over-limit": {413, "reset"},
    "trickle-timeout": {408},
    "trickle-complete": {422},
    "abandon": {"abandoned"},
    "healthz": {200},
    "readyz": {200},
    "metrics": {200},
    "retry-after-503": {200},
}
# Rate-driven kinds and their share of the requests (slow clients run on threads of their own).
WEIGHTS = [
    ("valid", 40), ("bound", 5), ("race", 2), ("replay", 14), ("reframed-replay", 4), ("mismatch", 3),
    ("bad-envelope", 4), ("bad-request", 4), ("not-json", 5), ("tampered", 5), ("truncated", 5),
    ("over-limit", 2), ("healthz", 3), ("readyz", 2), ("metrics", 2),
]
SLOW_WEIGHTS = [("trickle-timeout", 1), ("trickle-complete", 2), ("slow-genuine", 2), ("abandon", 3)]

# The order the tokens were minted for: USD 10.00, 3DSecure (mint-tokens' payload). The mismatching
# one asks for 900.00, the schema-breaking one writes its amount as an exponent.
REQUEST = {"countryCode": "US", "currencyCode": "USD", "supportedNetworks": ["visa", "masterCard"],
           "merchantCapabilities": ["supports3DS"], "total": {"label": "Soak", "amount": "10.00"}}
MISMATCH = dict(REQUEST, total={"label": "Soak", "amount": "900.00"})
BAD_REQUEST = dict(REQUEST, total={"label": "Soak", "amount": "1e2"})


class Interrupted(Exception):
    """A slow client cut short by the end of the run: its answer never came, so it is not recorded."""


def now():
    return time.monotonic()


class Record:
    """One request: its kind, the instance, when it was sent and answered, the HTTP status (or "reset",
    "timeout", "refused", "abandoned" when there was none), the error code of the body, and the token."""
    __slots__ = ("kind", "instance", "start", "end", "status", "code", "token")

    def __init__(self, kind, instance, start, end, status, code=None, token=None):
        self.kind, self.instance, self.start, self.end = kind, instance, start, end
        self.status, self.code, self.token = status, code, token


class Instance:
    def __init__(self, name, port, pid):
        self.name, self.port, self.pid = name, port, pid

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError(f"no VmRSS for {self.name}")

    def cpu_seconds(self):
        """User + system CPU time of every thread so far (fields 14 and 15 of /proc/PID/stat)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self):
        # The services are soak.sh's children, not ours: a crashed one is a zombie until bash reaps it.
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except OSError:
            return False

    def get(self, path, timeout=5):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


class Soak:
    def __init__(self, args):
        self.args = args
        self.duration = args.minutes * 60.0
        self.instances = []
        for i, spec in enumerate(args.instance):
            port, pid = spec.split(":")
            self.instances.append(Instance("ab"[i], int(port), int(pid)))
        with open(args.tokens, "rb") as f:
            self.tokens = [line.rstrip(b"\n") for line in f if line.strip()]
        self.lock = threading.Lock()
        self.records = []
        self.stop = threading.Event()
        self.next_token = 0          # the next never-sent token
        self.recycled = collections.deque()  # refused without a claim (a mismatching request): send again
        self.accepted = []           # (token, instance) of every 200, for replays
        self.accepts = collections.Counter()  # token -> 200 answers, across both instances
        self.answered_503 = []       # genuine tokens answered 503: sent again after the outage
        self.alternate = collections.Counter()
        self.outage = None           # (start, end) once known; end is None while the store is down
        self.events = []
        self.failures = []           # monitor findings (a dead instance, a reload not counted)
        self.skipped = collections.Counter()  # in the outage window (True) or not
        self.skipped_at = []         # when, outside the outage window
        self.max_backlog = 0
        self.unclosed = collections.Counter()  # kind -> connections left open after 408/413
        self.rss = {}
        self.cpu = {}                # instance -> CPU seconds at the start of the traffic and at its end
        self.load = []               # (time, 1-minute load average), every second
        self.late = collections.Counter()  # dispatcher ticks late by more than 0.5 s: in the window or not
        self.log = open(os.path.join(args.logs, "requests.jsonl"), "w")
        self.t0 = now()

    # ---- bookkeeping

    def event(self, text):
        t = now() - self.t0
        with self.lock:
            self.events.append((t, text))
        print(f"soak: {t:7.1f} s  {text}", flush=True)

    def record(self, r):
        line = json.dumps({"kind": r.kind, "instance": r.instance, "start": round(r.start - self.t0, 4),
                           "end": round(r.end - self.t0, 4), "status": r.status, "code": r.code, "token": r.token})
        with self.lock:
            self.records.append(r)
            if r.status == 200 and r.token is not None:
                self.accepts[r.token] += 1
                if r.kind in GENUINE or r.kind == "retry-after-503":
                    self.accepted.append((r.token, r.instance))
            self.log.write(line + "\n")

    def take_token(self):
        """A genuine token never claimed: one refused earlier without a claim, else the next unsent one."""
        with self.lock:
            if self.recycled:
                return self.recycled.popleft()
            if self.next_token >= len(self.tokens) - self.args.ahead:
                return None
            self.next_token += 1
            return self.next_token - 1

    def token_ahead(self):
        """A token that will be sent genuinely later: hostile copies of it must not claim it."""
        with self.lock:
            return min(self.next_token + random.randrange(self.args.ahead // 2, self.args.ahead), len(self.tokens) - 1)

    def next_instance(self, kind):
        """Each kind alternates between the instances on its own, so that both get an even share of it."""
        with self.lock:
            self.alternate[kind] += 1
            return self.instances[self.alternate[kind] % 2]

    def other(self, instance_name):
        return self.instances[1] if instance_name == "a" else self.instances[0]

    def in_outage(self, start, end):
        outage = self.outage
        if outage is None:
            return False
        return end >= outage[0] and (outage[1] is None or start <= outage[1])

    # ---- requests

    def post(self, conns, instance, body, timeout=40):
        """POST /v1/decrypt on this worker's keep-alive connection to the instance; (status, code)."""
        conn, last = conns.get(instance.name, (None, 0))
        if conn is not None and now() - last > 10:
            # The service may close a connection idle for --idle-timeout, racing this request: a POST cannot
            # safely be sent again, so a connection left idle a while is not reused.
            conn.close()
            conn = None
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", instance.port, timeout=timeout)
        conns[instance.name] = (conn, now())
        try:
            conn.request("POST", "/v1/decrypt", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            if response.will_close:
                conn.close()
                conns.pop(instance.name, None)
        except socket.timeout:
            conn.close()
            conns.pop(instance.name, None)
            return "timeout", None
        except (ConnectionError, http.client.HTTPException, OSError) as error:
            conn.close()
            conns.pop(instance.name, None)
            return "reset", type(error).__name__
        return response.status, error_code(data)

    def run_job(self, kind, conns):
        if kind in ("valid", "bound"):
            token = self.take_token()
            if token is None:
                return
            body = self.tokens[token] if kind == "valid" else envelope(self.tokens[token], REQUEST)
            self.genuine(kind, token, self.next_instance(kind), body, conns)
        elif kind == "race":
            self.race()
        elif kind in ("replay", "reframed-replay"):
            with self.lock:
                if not self.accepted:
                    return
                token, first = random.choice(self.accepted)
            body = self.tokens[token]
            if kind == "reframed-replay":
                # The same fields framed differently: the signed content digest must still match.
                body = json.dumps(json.loads(body), indent=1, sort_keys=True).encode()
            target = self.other(first)
            start = now()
            status, code = self.post(conns, target, body)
            self.record(Record(kind, target.name, start, now(), status, code, token))
        elif kind == "mismatch":
            token = self.take_token()
            if token is None:
                return
            target = self.next_instance(kind)
            start = now()
            status, code = self.post(conns, target, envelope(self.tokens[token], MISMATCH))
            self.record(Record(kind, target.name, start, now(), status, code, token))
            if status == 422 and code == "paymentRequestMismatch":
                # A mismatch claims nothing, so the same token sent plain later must still be accepted.
                with self.lock:
                    self.recycled.append(token)
            elif status == 503:
                with self.lock:
                    self.answered_503.append(token)
        elif kind in ("bad-envelope", "bad-request", "not-json", "tampered", "truncated"):
            raw = self.tokens[self.token_ahead()]
            if kind == "bad-envelope":
                body = b'{"paymentToken":' + raw + b',"paymentRequest":' + json.dumps(REQUEST).encode() + b',"extra":1}'
            elif kind == "bad-request":
                body = envelope(raw, BAD_REQUEST)
            elif kind == "not-json":
                body = random.choice([b"this is not json", b"\x00\xff\xfe binary", b"{\"version\":", b"[]", b"null",
                                      b"<xml/>", ("\u00e9" * 40).encode()])
            elif kind == "tampered":
                body = tamper(raw)
            else:
                body = raw[: random.randrange(1, len(raw) - 1)]
            target = self.next_instance(kind)
            start = now()
            status, code = self.post(conns, target, body)
            self.record(Record(kind, target.name, start, now(), status, code))
        elif kind == "over-limit":
            target = self.next_instance(kind)
            start = now()
            body = b'{"version":"EC_v1","data":"' + b"A" * (self.args.max_body_bytes + 4096) + b'"}'
            status, code, end = self.raw_request(target, body, kind)
            self.record(Record(kind, target.name, start, end, status, code))
        elif kind in ("healthz", "readyz", "metrics"):
            target = self.next_instance(kind)
            start = now()
            try:
                status, _ = target.get("/" + kind, timeout=10)
            except socket.timeout:
                status = "timeout"
            except OSError:
                status = "reset"
            self.record(Record(kind, target.name, start, now(), status))

    def genuine(self, kind, token, target, body, conns):
        start = now()
        status, code = self.post(conns, target, body)
        self.record(Record(kind, target.name, start, now(), status, code, token))
        if status == 503:
            with self.lock:
                self.answered_503.append(token)

    def race(self):
        """One fresh token to both instances at once: the shared store must let exactly one claim it."""
        token = self.take_token()
        if token is None:
            return
        barrier = threading.Barrier(2)
        results = {}

        def send(instance):
            conns = {}
            barrier.wait()
            start = now()
            results[instance.name] = (start, *self.post(conns, instance, self.tokens[token]), now())
            for conn, _ in conns.values():
                conn.close()

        threads = [threading.Thread(target=send, args=(i,)) for i in self.instances]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for name, (start, status, code, end) in results.items():
            self.record(Record("race", name, start, end, status, code, token))
        if not any(r[1] == 200 for r in results.values()) and any(r[1] == 503 for r in results.values()):
            with self.lock:
                self.answered_503.append(token)

    def raw_request(self, target, body, kind):
        """An over-limit body on a socket of its own: the service may answer and close before it has it all."""
        try:
            sock = socket.create_connection(("127.0.0.1", target.port), timeout=15)
        except OSError:
            return "refused", None, now()
        try:
            head = (f"POST /v1/decrypt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode()
            try:
                sock.sendall(head + body)
            except OSError:
                pass  # answered and closed early; the answer may still be readable
            return self.read_answer(sock, kind)
        finally:
            sock.close()

    def read_answer(self, sock, kind):
        """(status, code, time the answer was read); then, after a 408 or 413, whether the service closes."""
        try:
            response = http.client.HTTPResponse(sock, method="POST")
            response.begin()
            code = error_code(response.read())
        except socket.timeout:
            return "timeout", None, now()
        except (OSError, http.client.HTTPException) as error:
            return "reset", type(error).__name__, now()
        answered = now()
        if response.status in (408, 413) and not closed_soon(sock):
            with self.lock:
                self.unclosed[kind] += 1
        return response.status, code, answered

    # ---- slow clients

    def slow_client(self):
        kinds, weights = zip(*SLOW_WEIGHTS)
        while not self.stop.is_set():
            kind = random.choices(kinds, weights)[0]
            target = self.next_instance(kind)
            token = None
            if kind == "slow-genuine":
                token = self.take_token()
                if token is None:
                    continue
                body, pause = self.tokens[token], 4.0 / 40  # 40 pieces over about 4 s
                pieces = [body[i * len(body) // 40:(i + 1) * len(body) // 40] for i in range(40)]
            elif kind == "trickle-complete":
                body, pause = b"not a token, sent one byte at a time", 0.15
                pieces = [body[i:i + 1] for i in range(len(body))]
            elif kind == "trickle-timeout":
                # One byte a second keeps the connection from idling out, so only the body deadline ends it.
                body, pause = self.tokens[self.token_ahead()], 1.0
                pieces = [body[i:i + 1] for i in range(len(body))]
            else:  # abandon: half of a token that is sent genuinely later, then the socket is closed
                body, pause = self.tokens[self.token_ahead()], 0.05
                pieces = [body[i:i + 100] for i in range(0, len(body) // 2, 100)]
            start = now()
            try:
                status, code, end = self.trickle(target, body, pieces, pause, kind)
            except Interrupted:
                return
            self.record(Record(kind, target.name, start, end, status, code, token))
            if status == "refused":
                time.sleep(1)
            if kind == "slow-genuine" and status == 503:
                with self.lock:
                    self.answered_503.append(token)

    def trickle(self, target, body, pieces, pause, kind):
        try:
            sock = socket.create_connection(("127.0.0.1", target.port), timeout=10)
        except OSError:
            return "refused", None, now()
        try:
            sock.sendall((f"POST /v1/decrypt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n").encode())
            # A service that never answers must not hold this client for the whole trickle.
            give_up = now() + self.args.request_timeout + 15
            for piece in pieces:
                if self.stop.is_set():
                    raise Interrupted()
                if now() > give_up:
                    break
                time.sleep(pause)
                sock.setblocking(False)
                try:
                    early = sock.recv(1, socket.MSG_PEEK)
                except BlockingIOError:
                    early = None
                except OSError:
                    early = b""
                sock.setblocking(True)
                sock.settimeout(10)
                if early is not None:
                    break  # answered (or closed) before the body was complete: read what it said
                try:
                    sock.sendall(piece)
                except OSError:
                    break
            if kind == "abandon":
                return "abandoned", None, now()
            sock.settimeout(self.args.request_timeout + 15)
            return self.read_answer(sock, kind)
        finally:
            sock.close()

    # ---- the run

    def worker(self, jobs):
        conns = {}
        while True:
            kind = jobs.get()
            if kind is None:
                break
            try:
                self.run_job(kind, conns)
            except Exception as error:  # a driver bug must show, not stop the soak silently
                print(f"soak: driver error on {kind}: {error!r}", file=sys.stderr, flush=True)
        for conn, _ in conns.values():
            conn.close()

    def dispatcher(self, jobs, end):
        kinds, weights = zip(*WEIGHTS)
        interval = 1.0 / self.args.rate
        due = now()
        while not self.stop.is_set() and now() < end:
            due += interval
            delay = due - now()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.5:
                # The driver itself was starved of CPU (or blocked): the machine stalled, not only the service.
                self.late[self.in_outage(due, due)] += 1
                due = now()
            backlog = jobs.qsize()
            self.max_backlog = max(self.max_backlog, backlog)
            if backlog > 2 * self.args.workers:
                # The instances are not keeping up (the outage, when every claim waits for the store
                # timeout): do not pile on.
                t = now()
                self.skipped[self.in_outage(t, t)] += 1
                if not self.in_outage(t, t):
                    self.skipped_at.append(t)
                continue
            jobs.put(random.choices(kinds, weights)[0])

    def monitor(self):
        """Every second: are both instances alive, and the machine's load (a stall on a shared machine
        explains a slow answer); every 10 s: their RSS, to a file for the trend."""
        with open(os.path.join(self.args.logs, "rss.csv"), "w") as out:
            out.write("seconds," + ",".join(f"rss_kib_{i.name}" for i in self.instances) + ",load1\n")
            tick = 0
            while not self.stop.wait(1.0):
                with open("/proc/loadavg") as f:
                    load = float(f.read().split()[0])
                self.load.append((now(), load))
                for i in self.instances:
                    if not i.alive() and not any(i.name in f for f in self.failures):
                        # Nothing after this would measure the soak, only the missing instance: stop the traffic.
                        self.failures.append(f"instance {i.name} (pid {i.pid}) died at {now() - self.t0:.1f} s")
                        self.event(f"instance {i.name} is not running any more: the traffic stops")
                        self.stop.set()
                tick += 1
                if tick % 10 == 0:
                    try:
                        out.write(f"{now() - self.t0:.0f}," + ",".join(str(i.rss_kib()) for i in self.instances) + f",{load}\n")
                        out.flush()
                    except (OSError, RuntimeError):
                        pass

    def reloads(self, instance):
        try:
            _, text = instance.get("/metrics")
        except OSError:
            return None
        match = re.search(rb'applepay_key_reloads_total\{result="ok"\} (\d+)', text)
        return int(match.group(1)) if match else 0

    def sighup(self, instance):
        before = self.reloads(instance)
        os.kill(instance.pid, signal.SIGHUP)
        deadline = now() + 10
        while now() < deadline:
            after = self.reloads(instance)
            if after is not None and before is not None and after > before:
                self.event(f"SIGHUP {instance.name}: merchant keys reloaded (reloads counted {before} -> {after})")
                return
            time.sleep(0.2)
        self.failures.append(f"SIGHUP to instance {instance.name}: no successful reload counted in /metrics within 10 s")
        self.event(f"SIGHUP {instance.name}: no reload counted within 10 s")

    def restart_postgres(self):
        start = now()
        self.outage = (start, None)
        self.event("PostgreSQL: stop")
        stopped = subprocess.run([self.args.pg_control, "stop"], timeout=60)
        self.event(f"PostgreSQL: stopped (exit {stopped.returncode}); down for {self.args.down_seconds:g} s")
        time.sleep(self.args.down_seconds)
        started = subprocess.run([self.args.pg_control, "start"], timeout=60)
        self.event(f"PostgreSQL: started (exit {started.returncode})")
        deadline = now() + 120
        waiting = set(i.name for i in self.instances)
        while waiting and now() < deadline and not self.stop.is_set():
            for i in self.instances:
                if i.name in waiting:
                    try:
                        status, body = i.get("/readyz", timeout=5)
                        if status == 200 and json.loads(body).get("replayStoreReachable") is True:
                            waiting.discard(i.name)
                            self.event(f"instance {i.name}: /readyz says the store is reachable")
                    except (OSError, ValueError):
                        pass
            time.sleep(0.2)
        if waiting:
            self.failures.append(f"the store was not reachable again from {', '.join(sorted(waiting))} within 120 s of the restart")
            self.outage = (start, now() + self.args.store_timeout_ms / 1000)
        else:
            self.outage = (start, now() + self.args.store_timeout_ms / 1000)
        self.event(f"outage window: {self.outage[0] - self.t0:.1f} s to {self.outage[1] - self.t0:.1f} s "
                   f"(stop until both /readyz reachable, plus the {self.args.store_timeout_ms} ms store timeout)")

    def run(self):
        jobs = queue.Queue()
        workers = [threading.Thread(target=self.worker, args=(jobs,), daemon=True) for _ in range(self.args.workers)]
        slow = [threading.Thread(target=self.slow_client, daemon=True) for _ in range(self.args.slow_clients)]
        monitor = threading.Thread(target=self.monitor, daemon=True)
        end = self.t0 + self.duration
        dispatcher = threading.Thread(target=self.dispatcher, args=(jobs, end), daemon=True)
        self.cpu = {i.name: [i.cpu_seconds()] for i in self.instances}
        for t in workers + slow + [monitor, dispatcher]:
            t.start()
        self.event(f"traffic started: {self.args.rate:g} requests/s on {self.args.workers} workers, "
                   f"{self.args.slow_clients} slow clients, for {self.args.minutes:g} min")
        warm = min(60.0, max(20.0, 0.1 * self.duration))
        plan = [(warm, "rss"), (0.25 * self.duration, "hup-a"), (0.5 * self.duration, "pg"),
                (0.75 * self.duration, "hup-b")]
        for at, action in sorted(plan):
            self.sleep_until(self.t0 + at)
            if self.stop.is_set():
                break
            if action == "rss":
                self.rss["warm"] = {i.name: i.rss_kib() for i in self.instances if i.alive()}
                self.event("RSS after warm-up: " + ", ".join(f"{n} {kib / 1024:.1f} MiB" for n, kib in self.rss["warm"].items()))
            elif action == "hup-a":
                self.sighup(self.instances[0])
            elif action == "hup-b":
                self.sighup(self.instances[1])
            else:
                self.restart_postgres()
        self.sleep_until(end)
        dispatcher.join()
        for _ in workers:
            jobs.put(None)
        for t in workers:
            t.join(timeout=60)
        died = self.stop.is_set()
        self.stop.set()  # slow clients stop mid-trickle; an interrupted one is not recorded
        for t in slow:
            t.join(timeout=15)
        self.rss["end"] = {i.name: i.rss_kib() for i in self.instances if i.alive()}
        for i in self.instances:
            if i.alive():
                self.cpu[i.name].append(i.cpu_seconds())
        self.event("traffic stopped; RSS at the end: " + ", ".join(f"{n} {kib / 1024:.1f} MiB" for n, kib in self.rss["end"].items()))
        if not died:
            self.retry_503()
        monitor.join(timeout=5)

    def retry_503(self):
        """What a client does after a 503: send the same token again once the store is back."""
        with self.lock:
            retries = sorted(set(self.answered_503) - set(t for t, n in self.accepts.items() if n))
        conns = {}
        for token in retries:
            target = self.next_instance("retry-after-503")
            start = now()
            status, code = self.post(conns, target, self.tokens[token])
            self.record(Record("retry-after-503", target.name, start, now(), status, code, token))
        for conn, _ in conns.values():
            conn.close()
        if retries:
            self.event(f"sent again the {len(retries)} genuine tokens answered 503")

    def sleep_until(self, t):
        while not self.stop.is_set():
            delay = t - now()
            if delay <= 0:
                return
            time.sleep(min(delay, 0.5))

    # ---- the report

    def report(self, interrupted=False):
        self.log.flush()
        out = []
        say = out.append
        records = list(self.records)
        ran = max((r.end for r in records), default=now()) - self.t0
        say("")
        say(f"=== soak report{' (INTERRUPTED: partial)' if interrupted else ''} ===")
        say(f"traffic: {ran:.1f} s, {len(records)} requests, asked {self.args.rate:g}/s "
            f"({len(records) / max(ran, 1):.1f}/s served); instances "
            + ", ".join(f"{i.name} = 127.0.0.1:{i.port} (pid {i.pid})" for i in self.instances))
        say("timeline (seconds from the start):")
        for t, text in self.events:
            say(f"  {t:7.1f}  {text}")

        # Requests by kind and status.
        table = collections.defaultdict(collections.Counter)
        codes = collections.defaultdict(collections.Counter)
        latencies = collections.defaultdict(list)
        for r in records:
            table[r.kind][r.status] += 1
            if r.status == 422 or (isinstance(r.status, int) and r.status >= 500):
                codes[r.kind][r.code] += 1
            if isinstance(r.status, int) and not self.in_outage(r.start, r.end):
                latencies[r.kind].append(r.end - r.start)
        statuses = sorted({s for c in table.values() for s in c}, key=lambda s: (isinstance(s, str), str(s)))
        say("requests by kind and status (latency outside the outage window; 422 and 5xx codes after the table):")
        say("  " + f"{'kind':<18}{'total':>7}" + "".join(f"{str(s):>10}" for s in statuses) + f"{'p50 ms':>9}{'p99 ms':>9}")
        order = [k for k, _ in WEIGHTS] + [k for k, _ in SLOW_WEIGHTS] + ["retry-after-503"]
        for kind in order:
            if kind not in table:
                continue
            c = table[kind]
            lat = sorted(latencies[kind])
            p50 = f"{lat[len(lat) // 2] * 1000:9.1f}" if lat else " " * 9
            p99 = f"{lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000:9.1f}" if lat else " " * 9
            say("  " + f"{kind:<18}{sum(c.values()):>7}" + "".join(f"{c.get(s, 0):>10}" for s in statuses) + p50 + p99)
        total = collections.Counter()
        for c in table.values():
            total.update(c)
        say("  " + f"{'all':<18}{sum(total.values()):>7}" + "".join(f"{total.get(s, 0):>10}" for s in statuses))
        for kind in order:
            if codes[kind]:
                say(f"  {kind}: " + ", ".join(f"{code or '-'} {n}" for code, n in codes[kind].most_common()))

        # The five figures.
        outside = [r for r in records if not self.in_outage(r.start, r.end)]
        twice = sorted(t for t, n in self.accepts.items() if n > 1)
        genuine = {}
        for r in records:
            if r.token is not None and (r.kind in GENUINE or r.kind == "retry-after-503"):
                genuine.setdefault(r.token, []).append(r)
        refused_outside = []
        retried = collections.Counter()
        for token, attempts in genuine.items():
            if self.accepts[token]:
                continue
            for r in attempts:
                if r.kind == "retry-after-503":
                    retried[(r.status, r.code)] += 1
                elif r.kind == "race" or self.in_outage(r.start, r.end):
                    continue
                else:
                    refused_outside.append(r)
            # A race with both answers outside the window and neither a 200 is a refused genuine token.
            races = [r for r in attempts if r.kind == "race"]
            if races and not any(self.in_outage(r.start, r.end) for r in races):
                refused_outside.append(races[0])
        # A token refused after a mismatch counts on its plain send (above), never on the mismatch itself.
        five_xx = [r for r in outside if isinstance(r.status, int) and r.status >= 500]
        in_window = collections.Counter(r.status for r in records if self.in_outage(r.start, r.end))
        accepted_genuine = sum(1 for t in genuine if self.accepts[t])
        growth = {}
        for i in self.instances:
            warm, end = self.rss.get("warm", {}).get(i.name), self.rss.get("end", {}).get(i.name)
            growth[i.name] = (warm, end, (end - warm) * 100.0 / warm if warm and end else None)

        checks = [
            (not twice, f"tokens accepted (200) twice across both instances: {len(twice)}"
                        + (f"  (tokens {twice[:10]})" if twice else "")),
            (not refused_outside, f"genuine tokens refused outside the outage window: {len(refused_outside)}"
                                  f"  ({len(genuine)} genuine tokens sent, {accepted_genuine} accepted)"),
            (not five_xx, f"5xx outside the outage window: {len(five_xx)}"
                          f"  (inside the window: " + ", ".join(f"{s} {n}" for s, n in sorted(in_window.items(), key=str)) + ")"),
        ]
        for name, (warm, end, pct) in growth.items():
            if pct is None:
                checks.append((False, f"RSS of instance {name}: not measured (warm-up {warm}, end {end} KiB)"))
            else:
                checks.append((pct <= 10.0, f"RSS of instance {name}: {warm / 1024:.1f} MiB after warm-up, "
                                            f"{end / 1024:.1f} MiB at the end, growth {pct:+.1f} %  (limit +10 %)"))
        for f in self.failures:
            checks.append((False, f))
        if self.outage is None and not interrupted:
            checks.append((False, "the PostgreSQL restart did not happen"))

        say("checks:")
        for ok, text in checks:
            say(f"  [{'ok' if ok else 'FAIL'}] {text}")

        say("notes:")
        if self.outage:
            o = self.outage
            say(f"  outage window {o[0] - self.t0:.1f}–{(o[1] or now()) - self.t0:.1f} s: "
                f"{sum(in_window.values())} requests overlapped it")
        with self.lock:
            n503 = len(set(self.answered_503))
        again = collections.Counter((r.status, r.code) for r in records if r.kind == "retry-after-503")
        say(f"  genuine tokens answered 503: {n503}; sent again after the outage: "
            + (", ".join(f"{st}{' ' + c if c else ''} {n}" for (st, c), n in again.most_common()) or "none"))
        if retried:
            say("  ! a token answered 503 was still refused when sent again after the outage (the service article allows this only "
                "for a stall longer than twice the store timeout, or an undo that cannot reach the database)")
        for r in refused_outside[:10]:
            say(f"  refused genuine: {r.kind} token {r.token} on {r.instance} at {r.start - self.t0:.1f} s: {r.status} {r.code or ''}")
        for r in five_xx[:10]:
            slow = sum(1 for o in records if o.end - o.start > 1 and o.kind in ("valid", "replay", "healthz", "not-json")
                       and abs(o.start - r.start) < 5)
            say(f"  5xx outside the window: {r.kind} on {r.instance} at {r.start - self.t0:.1f} s after {r.end - r.start:.2f} s: "
                f"{r.status} {r.code or ''} (load then {self.load_at(r.start):.1f}; {slow} ordinary requests within 5 s of it took over 1 s)")
        unexpected = collections.Counter()
        for r in outside:
            if r.status not in EXPECTED.get(r.kind, set()):
                unexpected[(r.kind, r.status, r.code)] += 1
        if unexpected:
            say("  unexpected answers outside the outage window (kind, status, code: count):")
            for (kind, status, code), n in unexpected.most_common():
                say(f"    {kind}, {status}, {code or '-'}: {n}")
        else:
            say("  every answer outside the outage window was the expected one for its kind")
        if self.unclosed:
            say("  connections still open 3 s after a 408/413 that said Connection: close: "
                + ", ".join(f"{k} {n}" for k, n in self.unclosed.items()))
        for name, cpu in self.cpu.items():
            if len(cpu) == 2:
                say(f"  instance {name} CPU: {cpu[1] - cpu[0]:.1f} s user+sys over the traffic, "
                    f"{(cpu[1] - cpu[0]) * 100 / max(ran, 1):.0f} % of one core on average")
        if self.load:
            loads = [l for _, l in self.load]
            say(f"  machine load (1-minute average, {os.cpu_count()} cores): {min(loads):.1f} to {max(loads):.1f}, "
                f"median {sorted(loads)[len(loads) // 2]:.1f}; driver ticks more than 0.5 s late (the machine stalled): "
                f"{self.late[False]} outside the outage window, {self.late[True]} in it")
        say(f"  requests not sent because the instances fell behind (backlog over {2 * self.args.workers}): "
            f"{self.skipped[False]} outside the outage window"
            + (f" (from {self.skipped_at[0] - self.t0:.1f} to {self.skipped_at[-1] - self.t0:.1f} s)" if self.skipped_at else "")
            + f", {self.skipped[True]} in it; largest backlog {self.max_backlog}")
        with self.lock:
            say(f"  tokens: {self.next_token} of {len(self.tokens)} minted taken for genuine sends")

        self.service_figures(say, records)
        failed = [text for ok, text in checks if not ok]
        if interrupted:
            say("RESULT: INTERRUPTED (the figures above cover the traffic until then)")
        else:
            say(f"RESULT: {'FAIL' if failed else 'PASS'}"
                + (f" ({len(failed)} check{'s' if len(failed) != 1 else ''} failed)" if failed else ""))
        text = "\n".join(out)
        print(text, flush=True)
        with open(os.path.join(self.args.logs, "report.txt"), "w") as f:
            f.write(text + "\n")
        return not failed and not interrupted


    def load_at(self, t):
        return min(self.load, key=lambda x: abs(x[0] - t), default=(0, float("nan")))[1]

    def service_figures(self, say, records):
        """The services' own view, to set beside the driver's: tokens by outcome, and their warning lines."""
        ok = sum(1 for r in records if r.status == 200 and r.token is not None)
        counted = 0
        for i in self.instances:
            try:
                _, text = i.get("/metrics")
            except OSError:
                say(f"  instance {i.name}: /metrics did not answer")
                continue
            outcomes = re.findall(rb'applepay_tokens_total\{outcome="([^"]+)"\} (\d+)', text)
            counted += sum(int(n) for o, n in outcomes if o == b"ok")
            say(f"  instance {i.name} applepay_tokens_total: " + ", ".join(f"{o.decode()} {int(n)}" for o, n in outcomes if int(n)))
        say(f"  200s with a token seen by the driver: {ok}; ok counted by the services: {counted}")
        for i in self.instances:
            path = os.path.join(self.args.logs, f"{i.name}.err")
            try:
                with open(path, errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            # Timestamps and per-request values stripped, so that one kind of line counts once.
            shapes = collections.Counter(re.sub(r"^\S+ ", "", re.sub(r"\b\d+(\.\d+)?\b", "N", line))[:220] for line in lines)
            say(f"  instance {i.name} log ({path}): {len(lines)} lines at --log-level warning"
                + (", by shape:" if lines else ""))
            for shape, n in shapes.most_common(12):
                say(f"    {n:6d}  {shape}")


def envelope(token, request):
    return b'{"paymentToken":' + token + b',"paymentRequest":' + json.dumps(request).encode() + b"}"


def tamper(token):
    """One base64 character of the ciphertext flipped: the signature no longer covers it."""
    start = token.index(b'"data":"') + 8 + 10
    flipped = b"B" if token[start:start + 1] == b"A" else b"A"
    return token[:start] + flipped + token[start + 1:]


def error_code(data):
    try:
        return json.loads(data).get("error")
    except (ValueError, AttributeError):
        return None


def closed_soon(sock):
    """After an answer that said Connection: close, does the service close within 3 s?"""
    sock.settimeout(3)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def interrupt(signum, frame):
    raise KeyboardInterrupt()


def main():
    parser = argparse.ArgumentParser(description="The soak's traffic, faults and report (run by soak.sh).")
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--instance", action="append", required=True, help="PORT:PID, twice")
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--pg-control", required=True)
    parser.add_argument("--logs", required=True)
    parser.add_argument("--rate", type=float, default=150)
    parser.add_argument("--workers", type=int, default=24)
    parser.add_argument("--slow-clients", type=int, default=4)
    parser.add_argument("--store-timeout-ms", type=int, default=2000)
    parser.add_argument("--request-timeout", type=int, default=30)
    parser.add_argument("--max-body-bytes", type=int, default=64 << 10)
    parser.add_argument("--down-seconds", type=float, default=5)
    parser.add_argument("--ahead", type=int, default=2000)
    args = parser.parse_args()
    if len(args.instance) != 2:
        parser.error("--instance PORT:PID twice")
    # SIGTERM (soak.sh's own cleanup, a CI runner) ends the run like Ctrl-C: a partial report, then out.
    signal.signal(signal.SIGTERM, interrupt)
    soak = Soak(args)
    try:
        soak.run()
    except KeyboardInterrupt:
        soak.stop.set()
        soak.report(interrupted=True)
        sys.exit(130)
    sys.exit(0 if soak.report() else 1)


if __name__ == "__main__":
    main()
