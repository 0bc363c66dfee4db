"""`roberta serve` under bad requests and bad clients: each gets its status, and the server still
answers afterwards; SIGTERM under load finishes the requests in flight and exits 0.

Usage: faults_test.py ROBERTA_BINARY MODEL_DIR
"""
import gzip
import http.client
import json
import socket
import sys
import threading
import time

from serve_util import Checks, Server, post_json, request

binary, model = sys.argv[1:3]
c = Checks()
long_text = " ".join(["word"] * 2000)


def still_answers(server, what):
    status, _, out = post_json(server, "/embed", {"inputs": "still here?"})
    c.check(status == 200 and len(out) == 1 and request(server, "GET", "/health")[0] == 200, f"  ... and answers after {what}")


def expect(server, what, path, body, status, error_type=None, **kw):
    got, headers, data = request(server, "POST", path, body, **kw)
    try:
        out = json.loads(data)
    except ValueError:
        out = None
    ok = got == status
    if error_type and ok:
        ok = isinstance(out, dict) and (out.get("error_type") == error_type or
                                        (isinstance(out.get("error"), dict) and out["error"].get("code") == status))
    c.check(ok, f"{what}: {got} (want {status}) {data[:120]!r}")
    still_answers(server, what)
    return headers


server = Server(binary, ["--model", model, "--payload-limit", "200000", "--no-auto-truncate", "--request-timeout", "2",
                         "--max-concurrent-requests", "4", "--threads", "2"])
try:
    expect(server, "malformed JSON", "/embed", b'{"inputs": ["a", ', 400, "Validation")
    expect(server, "not an object", "/embed", b'[1, 2]', 400, "Validation")
    expect(server, "inputs of the wrong type", "/embed", {"inputs": 5}, 400, "Validation")
    expect(server, "normalize of the wrong type", "/embed", {"inputs": "a", "normalize": "yes"}, 400, "Validation")
    expect(server, "a list holding a number", "/embed", {"inputs": ["a", 3.5]}, 400, "Validation")
    expect(server, "empty input list", "/embed", {"inputs": []}, 400, "Empty")
    expect(server, "empty string", "/embed", {"inputs": ""}, 400, "Empty")
    expect(server, "OpenAI route, wrong encoding_format", "/v1/embeddings", {"input": "a", "encoding_format": "hex"}, 400)
    expect(server, "body over --payload-limit", "/embed", {"inputs": "x" * 300000}, 413, "Validation")
    expect(server, "10,000 inputs", "/embed", {"inputs": ["a b"] * 10000}, 413, "Validation")
    expect(server, "10,000 inputs (OpenAI)", "/v1/embeddings", {"input": ["a"] * 10000}, 413)
    expect(server, "over-long input with truncation off", "/embed", {"inputs": long_text}, 422)
    # an error of one input of several names it by its index in the request
    for path, field, body in [("/embed", "inputs", {"inputs": ["fine", long_text]}),
                              ("/v1/embeddings", "input", {"input": ["fine", long_text]}),
                              ("/fill_mask", "inputs", {"inputs": ["a <mask>.", "no mask"]})]:
        got, _, data = request(server, "POST", path, body)
        c.check(got == 422 and f"{field}[1]: ".encode() in data, f"{path}: the bad input named {field}[1] ({data[:100]!r})")
    expect(server, "over-long input, truncate true in the request", "/embed", {"inputs": long_text, "truncate": True}, 200)
    expect(server, "invalid UTF-8", "/embed", b'{"inputs": "caf\xc3"}', 422, "Tokenizer")
    expect(server, "token id out of range", "/v1/embeddings", {"input": [5, 10**9]}, 422)
    expect(server, "negative token id", "/v1/embeddings", {"input": [[5, -1]]}, 422)
    # /decode: ids outside the vocabulary are skipped, as HF's decode (TEI's) skips them; ids that
    # are not u32 (TEI's type) are refused
    alone = request(server, "POST", "/decode", {"ids": [5]})
    for ids in ([5, 10**9], [2**32 - 1, 5]):
        got = request(server, "POST", "/decode", {"ids": ids})
        c.check(got[0] == 200 and got[2] == alone[2],
                f"/decode {ids}: the id outside the vocabulary skipped ({got[2]!r})")
    expect(server, "/decode id of 2^32", "/decode", {"ids": [2**32]}, 400)
    expect(server, "/decode id of 2^63 (wraps to a negative int64)", "/decode", {"ids": [2**63]}, 400)
    expect(server, "/decode id of 2^64 - 2", "/decode", {"ids": [2**64 - 2, 5]}, 400)
    expect(server, "/decode negative id", "/decode", {"ids": [-1]}, 400)
    expect(server, "/decode of an empty list in a batch", "/decode", {"ids": [[5], []]}, 400, "Empty")
    # 99,000 nested arrays (198 KB, under the limit): a copy of the parsed value would recurse that deep.
    expect(server, "/decode of deeply nested ids", "/decode", b'{"ids":' + b"[" * 99000 + b"]" * 99000 + b"}", 400,
           "Validation")
    expect(server, "/decode of a deep list after an id", "/decode", b'{"ids":[1,' + b"[" * 99000 + b"]" * 99000 + b"]}",
           400, "Validation")
    # Bodies httplib does not hold to --payload-limit itself (it counts only a Content-Length,
    # before decoding): chunked and compressed ones are read up to the limit, decoded; over it, or
    # undecodable, they get their error and the connection is closed, so that the unread rest of
    # the body (here: a whole request hidden in it) is never answered as a request of its own.
    hidden = b"POST /decode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ids\":[5]}"

    def raw(head, body, later=b"", before=b""):
        """On a fresh connection: `before` (whole requests), then head + body, then after 0.5 s
        `later` (httplib drops what it has buffered beyond a request, so a request hidden in a body
        is parsed only if it comes later). (status of the answer to head, whether the answers
        stopped there and the server closed the connection, the raw reply)."""
        s = socket.create_connection((server.host, server.port))
        s.settimeout(20)
        try:
            if before:  # (apart: httplib 0.11 drops what it read ahead of a request, pipelined ones too)
                s.sendall(before)
                time.sleep(0.3)
            s.sendall(head + body)
            time.sleep(0.5)
            s.sendall(later)
        except OSError:
            pass
        reply = b""
        started = time.time()
        try:
            while time.time() - started < 20:
                part = s.recv(65536)
                if not part:
                    break
                reply += part
        except OSError:
            pass
        s.close()
        answers = reply.split(b"HTTP/1.1 ")[1:]
        n_before = before.count(b" HTTP/1.1\r\n")
        status = int(answers[n_before].split(b" ", 1)[0]) if len(answers) > n_before else None
        return status, len(answers) == n_before + 1 and time.time() - started < 4, reply

    def chunked(data, size=4096, end=True):
        return b"".join(b"%x\r\n" % len(data[i:i + size]) + data[i:i + size] + b"\r\n"
                        for i in range(0, len(data), size)) + (b"0\r\n\r\n" if end else b"")

    post = b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    ok_body = b'{"inputs": "a"' + b" " * 1000 + b"}"
    big_body = b'{"inputs": "a"' + b" " * 300000 + b"}"  # over the test's limit of 200,000 bytes
    ok = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"  # a first request, which names the connection
    gz_ok, gz_big = gzip.compress(ok_body), gzip.compress(big_body)
    for what, head, body, later, want, closed, before in [
        ("a gzip body", post + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(gz_ok), gz_ok, b"", 200,
         False, b""),
        ("a chunked body", post + b"Transfer-Encoding: chunked\r\n\r\n", chunked(ok_body), b"", 200, False, b""),
        ("a gzip body inflating past the limit, a request hidden behind it",
         post + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % (len(gz_big) + len(hidden)), gz_big, hidden,
         413, True, b""),
        ("a chunked body past the limit, a request hidden behind it",
         post + b"Transfer-Encoding: chunked\r\n\r\n", chunked(big_body, end=False), hidden, 413, True, b""),
        ("a body in an encoding httplib cannot decode",
         post + b"Content-Encoding: zstd\r\nContent-Length: %d\r\n\r\n" % len(hidden), b"", hidden, 415, True, b""),
        ("a GET with a body (which httplib does not read)",
         b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(hidden), b"", hidden, 200, True, b""),
        ("a multipart/form-data body", b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; "
         b"boundary=xx\r\nContent-Length: %d\r\n\r\n" % (len(hidden) + 60),
         b'--xx\r\nContent-Disposition: form-data; name="a"\r\n\r\nhello\r\n', hidden, 415, True, b""),
        ("a DELETE with a chunked body (which httplib does not read)",
         b"DELETE /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", b"", chunked(hidden), 405, True, b""),
        ("a TRACE with a body", b"TRACE /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(hidden),
         b"", hidden, 400, True, b""),
        ("a Content-Length that is not a number", post + b"Content-Length: abc\r\n\r\n", b"", hidden, 400, True, b""),
        ("two different Content-Lengths", post + b"Content-Length: 15\r\nContent-Length: %d\r\n\r\n"
         % (15 + len(hidden)), b'{"inputs":"hi"}', hidden, 400, True, b""),
        ("Content-Length and Transfer-Encoding together", post + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n"
         % (5 + len(hidden)), b"0\r\n\r\n", hidden, 400, True, b""),
        ("a 9,000-byte path after a first request (httplib's 414, before routing)",
         b"POST /" + b"x" * 9000 + b" HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(hidden), b"", hidden,
         414, True, ok),
        ("HTTP/1.2 after a first request (httplib's 400, before routing)",
         b"POST /embed HTTP/1.2\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(hidden), b"", hidden, 400, True, ok)]:
        got, one_then_closed, reply = raw(head, body, later, before)
        if closed:
            headers = reply.split(b"HTTP/1.1 ")[-1].split(b"\r\n\r\n")[0]
            c.check(b"\r\nConnection: close" in headers, f"{what}: the answer says Connection: close")
        c.check(got == want and (one_then_closed if closed else True),
                f"{what}: {got} (want {want}){', one answer, then the connection closed' if closed else ''} "
                f"({reply[-80:]!r})")
        still_answers(server, what)
    # httplib's own 413 (a Content-Length over the limit) reads the body past: the connection stays
    # usable, as a client such as http.client expects when the answer does not say close.
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    first = request(server, "POST", "/embed", big_body, conn=conn)
    second = request(server, "GET", "/health", conn=conn)
    conn.close()
    c.check(first[0] == 413 and first[1].get("connection") != "close" and second[0] == 200,
            f"after httplib's own 413 the same connection answers again ({first[0]}, {second[0]})")

    # A client that sends half its body and goes away.
    s = socket.create_connection((server.host, server.port))
    s.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"inputs\": \"ab")
    s.close()
    time.sleep(0.2)
    still_answers(server, "a client that disconnects mid-request")

    # A client that sends a whole request and disconnects before the answer.
    for _ in range(5):
        s = socket.create_connection((server.host, server.port))
        body = json.dumps({"inputs": [long_text[:3000]] * 32, "truncate": True}).encode()
        s.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        s.close()
    time.sleep(0.5)
    still_answers(server, "clients that disconnect before their answer")

    # A client that trickles its headers: its connection is closed after --request-timeout (2 s),
    # although each byte comes well within the per-read timeout.
    s = socket.create_connection((server.host, server.port))  # blocking: MSG_DONTWAIT polls
    started = time.time()
    closed_after = None
    request_line = b"POST /embed HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    for i in range(len(request_line)):
        try:
            s.sendall(request_line[i:i + 1])
            if s.recv(1, socket.MSG_DONTWAIT) == b"":
                closed_after = time.time() - started
                break
        except BlockingIOError:
            pass
        except OSError:
            closed_after = time.time() - started
            break
        time.sleep(0.2)
        if time.time() - started > 15:
            break
    s.close()
    c.check(closed_after is not None and 1.5 < closed_after < 6, f"a client trickling its headers is cut off after {closed_after} s")
    still_answers(server, "a trickling client")

    # More requests in flight than --max-concurrent-requests (4): 429 with Retry-After.
    results = []
    body = {"inputs": [long_text[:2000]] * 32, "truncate": True}

    def one():
        status, headers, _ = request(server, "POST", "/embed", body)
        results.append((status, headers.get("retry-after")))

    for attempt in range(5):
        results.clear()
        threads = [threading.Thread(target=one) for _ in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if any(s == 429 for s, _ in results):
            break
    statuses = sorted(set(s for s, _ in results))
    c.check(set(statuses) <= {200, 429} and 429 in statuses and 200 in statuses
            and all(r == "1" for s, r in results if s == 429), f"24 at once with a limit of 4: statuses {statuses}, Retry-After 1")
    still_answers(server, "overload")
    status, _, data = request(server, "GET", "/metrics")
    m = data.decode()
    c.check('te_request_failure{err="overloaded"}' in m and 'te_request_failure{err="batch_size"}' in m
            and 'te_request_failure{err="tokenization"}' in m, "/metrics counts the failures by kind")
finally:
    code = server.stop()
c.check(code == 0, f"exit 0 after the faults ({code})")

# SIGTERM under load: every request in flight gets its answer, then exit 0; later ones are refused.
server = Server(binary, ["--model", model, "--quiet", "--threads", "2"])
outcomes = []
stop_at = [None]
lock = threading.Lock()


def client():
    while True:
        sent = time.time()
        try:
            status, _, out = post_json(server, "/embed", {"inputs": [long_text[:2500]] * 32, "truncate": True})
            ok = status == 200 and len(out) == 32
        except (ConnectionError, OSError) as e:
            status, ok = type(e).__name__, False
        with lock:
            outcomes.append((sent, time.time(), status, ok))
        if stop_at[0] is not None and sent > stop_at[0]:
            return


threads = [threading.Thread(target=client) for _ in range(8)]
for t in threads:
    t.start()
time.sleep(1.5)
stop_at[0] = time.time()
code = server.stop(timeout=60)
for t in threads:
    t.join(timeout=60)
# Requests sent well before the signal were being handled when it came; one sent just before it
# may still have been in the socket buffer, and gets 503 (draining) or 200.
t = stop_at[0]
before = [o for o in outcomes if o[0] < t - 0.2]
in_flight = [o for o in before if o[1] > t]
after = [o for o in outcomes if o[0] >= t - 0.2]
c.check(code == 0, f"SIGTERM under load: exit 0 ({code})")
c.check(len(before) >= 8 and all(ok for _, _, _, ok in before),
        f"all {len(before)} requests sent before SIGTERM got 200 with 32 rows")
c.check(len(in_flight) >= 1, f"{len(in_flight)} of them were still in flight at SIGTERM and completed")
c.check(all(s in (503, "ConnectionRefusedError", "RemoteDisconnected", "ConnectionResetError") or ok
            for _, _, s, ok in after), f"requests at or after SIGTERM: 200, 503 or refused ({sorted(set(str(o[2]) for o in after))})")
c.done()
