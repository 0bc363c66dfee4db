"""`pip install .` from a clean clone into a fresh venv, offline (the README's command), then
import and encode with the installed package, away from the build tree.

The clone is of the committed HEAD of ROBERTA_SOURCE_DIR. The extension is built unoptimised
(ROBERTA_CMAKE_ARGS=-DCMAKE_BUILD_TYPE=None) to keep the test short; the release build is what a
plain `pip install .` makes."""
import json
import os
import subprocess
import sys

import numpy as np

import roberta_cpp
from conftest import SOURCE, TEXTS


def test_pip_install_into_fresh_venv(tmp_path, st_model):
    clone = tmp_path / "src"
    subprocess.run(["git", "clone", "-q", str(SOURCE), str(clone)], check=True)
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(ROBERTA_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=None", ROBERTA_BUILD_JOBS="2", PIP_NO_INPUT="1")
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation", "--no-index", str(clone)],
                       env=env, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    code = (
        "import json, sys, roberta_cpp\n"
        "m = roberta_cpp.SentenceTransformer(sys.argv[1])\n"
        "e = m.encode(json.loads(sys.argv[2]))\n"
        "print(json.dumps({'file': roberta_cpp.__file__, 'shape': e.shape, 'emb': e.tolist(),\n"
        "                  'stub': __import__('os').path.exists(__import__('os').path.join(\n"
        "                      __import__('os').path.dirname(roberta_cpp.__file__), '_core.pyi'))}))\n"
    )
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(st_model), json.dumps(TEXTS)],
                       env=env, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["file"].startswith(str(venv)), out["file"]
    assert out["stub"] and out["shape"] == [len(TEXTS), 24]
    np.testing.assert_allclose(np.array(out["emb"]), roberta_cpp.SentenceTransformer(st_model).encode(TEXTS),
                               atol=1e-5)
