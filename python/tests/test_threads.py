"""The GIL is released while encoding: two Python threads calling encode at once finish clearly
sooner than the same two calls one after the other (threads=1 per model call, so two calls can
use two cores)."""
import os
import threading
import time

import numpy as np
import pytest

import roberta_cpp
from conftest import TEXTS


def test_two_threads_encode_in_parallel(st_model):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    model = roberta_cpp.SentenceTransformer(st_model, threads=1)
    assert roberta_cpp.num_threads() == 1
    texts = [f"{TEXTS[i % len(TEXTS)]} number {i}" for i in range(4000)]
    expected = model.encode(texts)  # warm-up, and the answer

    def timed(fn):
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    results = [None, None]

    def work(i):
        results[i] = model.encode(texts)

    def sequential():
        work(0)
        work(1)

    def parallel():
        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # interleaved rounds, the best of each: other processes on the machine slow both alike
    seq, par = float("inf"), float("inf")
    for _ in range(3):
        seq = min(seq, timed(sequential))
        par = min(par, timed(parallel))
    print(f"\ntwo encode calls of {len(texts)} texts: sequential {seq:.3f} s, two threads {par:.3f} s "
          f"({par / seq:.2f} of sequential)")
    for r in results:
        np.testing.assert_array_equal(r, expected)
    roberta_cpp.set_num_threads(0)
    assert par < 0.85 * seq


def test_encode_releases_the_gil(st_model):
    """While one thread encodes, a pure-Python loop in another keeps running."""
    model = roberta_cpp.SentenceTransformer(st_model)
    texts = [f"{TEXTS[i % len(TEXTS)]} number {i}" for i in range(6000)]
    done = threading.Event()
    spins = 0

    def encode():
        model.encode(texts)
        done.set()

    t = threading.Thread(target=encode)
    t.start()
    while not done.is_set():
        spins += 1
    t.join()
    print(f"\nPython loop iterations while encode ran: {spins}")
    assert spins > 10000
