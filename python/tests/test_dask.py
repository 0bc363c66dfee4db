"""python3 -m roberta_cpp.dask_embed: a LocalCluster of 2 workers against `roberta embed` on the
same input; a worker killed mid-run, and the whole run killed mid-run, then rerun (resume) to the
same result, finished parts untouched."""
import os
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import run_cli

pytest.importorskip("distributed")


def write_lines(path, n, seed=0):
    rng = random.Random(seed)
    words = "the a weather lovely garden she opened door looked out into park children playing sunny " \
            "caf\u00e9 na\u00efve \u65e5\u672c emoji \U0001F600 one more clause and end".split()
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(n):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) + "\n")


def reference(binary, model, lines, out):
    subprocess.run([binary, "embed", "--dtype", "fp32", "--model", str(model), "--format", "npy", "--output", str(out), str(lines)],
                   check=True, capture_output=True)
    return np.load(out)


def result(out):
    assert (out / "_SUCCESS").exists()
    names = sorted(p.name for p in out.glob("part-*.npy"))
    return np.concatenate([np.load(out / n) for n in names]), names


def start(model, lines, out, log, partition_lines):
    return subprocess.Popen(
        [sys.executable, "-m", "roberta_cpp.dask_embed", "--model", str(model), "--scheduler", "local:2",
         "--out", str(out), "--partition-lines", str(partition_lines), str(lines)],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"), start_new_session=True)


def test_local_cluster_matches_cli(tmp_path, st_model, roberta_binary):
    lines = tmp_path / "lines.txt"
    write_lines(lines, 2500)
    want = reference(roberta_binary, st_model, lines, tmp_path / "ref.npy")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "roberta_cpp.dask_embed", "--model", str(st_model), "--scheduler",
                        "local:2", "--out", str(out), "--partition-lines", "300", str(lines)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got, names = result(out)
    assert names == [f"part-{i:05d}.npy" for i in range(9)]
    assert got.dtype == np.float32 and got.shape == want.shape == (2500, 24)
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert len(re.findall(r"worker tcp://\S+ pid \d+ threads (\d+)", r.stderr)) == 2
    threads = int(re.search(r"threads (\d+)", r.stderr).group(1))
    assert threads == max(1, len(os.sched_getaffinity(0)) // 2)  # the cores split between the workers
    # a rerun finds everything done; a different partitioning into the same folder is refused
    r = subprocess.run([sys.executable, "-m", "roberta_cpp.dask_embed", "--model", str(st_model), "--scheduler",
                        "local:2", "--out", str(out), "--partition-lines", "300", str(lines)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "9 already done, 0 to run" in r.stderr
    r = subprocess.run([sys.executable, "-m", "roberta_cpp.dask_embed", "--model", str(st_model), "--scheduler",
                        "local:2", "--out", str(out), "--partition-lines", "100", str(lines)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "another run" in r.stderr


def wait_for(predicate, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_killed_worker_and_killed_run_resume(tmp_path, st_model, roberta_binary):
    lines = tmp_path / "lines.txt"
    write_lines(lines, 40000, seed=1)
    want = reference(roberta_binary, st_model, lines, tmp_path / "ref.npy")

    # 1. One worker killed mid-run: Dask runs its part again elsewhere; a rerun resumes if needed.
    out, log = tmp_path / "out1", tmp_path / "run1.log"
    p = start(st_model, lines, out, log, 200)
    assert wait_for(lambda: len(list(out.glob("part-*.npy"))) >= 3 and "pid" in log.read_text())
    pid = int(re.search(r"worker tcp://\S+ pid (\d+)", log.read_text()).group(1))
    os.kill(pid, signal.SIGKILL)
    p.wait(timeout=300)
    print(f"\nrun with a killed worker: exit {p.returncode}, "
          f"{len(list(out.glob('part-*.npy')))} parts, _SUCCESS {(out / '_SUCCESS').exists()}")
    r = subprocess.run([sys.executable, "-m", "roberta_cpp.dask_embed", "--model", str(st_model), "--scheduler",
                        "local:2", "--out", str(out), "--partition-lines", "200", str(lines)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got, names = result(out)
    assert len(names) == 200
    np.testing.assert_allclose(got, want, atol=1e-6)

    # 2. The whole run (driver and workers) killed mid-run: the rerun skips the finished parts.
    out, log = tmp_path / "out2", tmp_path / "run2.log"
    p = start(st_model, lines, out, log, 200)
    assert wait_for(lambda: len(list(out.glob("part-*.npy"))) >= 5)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    assert not (out / "_SUCCESS").exists()
    done = {q.name: q.stat().st_mtime_ns for q in out.glob("part-*.npy")}
    assert 5 <= len(done) < 200
    r = subprocess.run([sys.executable, "-m", "roberta_cpp.dask_embed", "--model", str(st_model), "--scheduler",
                        "local:2", "--out", str(out), "--partition-lines", "200", str(lines)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{len(done)} already done, {200 - len(done)} to run" in r.stderr
    assert all((out / n).stat().st_mtime_ns == t for n, t in done.items())
    got, _ = result(out)
    np.testing.assert_allclose(got, want, atol=1e-6)
