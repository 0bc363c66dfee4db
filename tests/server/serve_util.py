"""Starts `roberta serve` on a free port and talks HTTP to it (the server tests' shared helpers)."""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time


class Server:
    """`roberta serve --port 0 ARGS`, ready when it prints `listening on http://HOST:PORT`."""

    def __init__(self, binary, args, timeout=60, env=None):
        # The tests compare the server with `roberta` commands run in fp32 (cli_embed, ...): serve's
        # default, --dtype auto, would be bf16 on CPUs with AVX512-BF16.
        args = list(args) if "--dtype" in args else ["--dtype", "fp32", *args]
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=None if env is None else {**os.environ, **env})
        self.lines = []
        deadline = time.time() + timeout
        while True:
            line = self.proc.stderr.readline()
            if not line:
                self.proc.wait()
                raise RuntimeError("server exited before listening: " + "".join(self.lines))
            self.lines.append(line)
            if line.startswith("listening on http://"):
                hostport = line.strip()[len("listening on http://"):]
                self.host, port = hostport.rsplit(":", 1)
                self.port = int(port)
                break
            if time.time() > deadline:
                raise RuntimeError("no `listening on` line in time")
        self.listening_lines = [l for l in self.lines if l.startswith("listening on")]
        # Keep reading the log so that the pipe never fills up.
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def stop(self, timeout=60):
        """SIGTERM; returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        if code != 0:  # show why (a sanitizer's report, say)
            print("server log (exit status %d):\n%s" % (code, "".join(self.lines[-200:])), flush=True)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def request(server, method, path, body=None, headers=None, timeout=60, conn=None):
    """(status, headers dict with lower-case names, body bytes). body: bytes, str, or a JSON value."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    if own:
        conn.close()
    return out


def post_json(server, path, body, **kw):
    status, headers, data = request(server, "POST", path, body, **kw)
    return status, headers, (json.loads(data) if data else None)


def cli_embed(binary, model, texts, *flags):
    """`roberta embed` of these texts (one per line): the reference the server must equal."""
    flags = list(flags) if "--dtype" in flags else ["--dtype", "fp32", *flags]
    out = subprocess.run([binary, "embed", "--model", model, *flags], input="".join(t + "\n" for t in texts),
                         capture_output=True, text=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def max_diff(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b))


class Checks:
    """Counts failed checks; the script exits 1 if any failed."""

    def __init__(self):
        self.failed = 0

    def check(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.failed += 1

    def done(self):
        print(f"{self.failed} check(s) failed" if self.failed else "all checks passed")
        sys.exit(1 if self.failed else 0)
