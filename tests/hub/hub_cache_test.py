"""Hub ids ("org/name[@revision]") resolved from a local Hugging Face cache, by the CLI, the server
and the Python package, against Hugging Face's own reading of the same cache (hf_cache_scan.js:
npm @huggingface/hub's scanCacheDir and getHFHubCachePath).

The cache is built here as huggingface_hub lays it out: models--ORG--NAME/refs/<branch or tag>
holding a commit hash, snapshots/<commit>/ holding the files (symlinks, as there). Two snapshots of
test-org/demo: main is the demo model, the tag v1 SECOND_MODEL_DIR; sentence-transformers/demo for
sentence-transformers' bare-name rule.

Usage: hub_cache_test.py ROBERTA_BINARY DEMO_MODEL_DIR SECOND_MODEL_DIR WORK_DIR
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "server"))
from serve_util import Server  # noqa: E402

binary, demo, second, work = sys.argv[1:5]
demo, second, work = (pathlib.Path(p).resolve() for p in (demo, second, work))
here = pathlib.Path(__file__).resolve().parent
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def make_repo(cache, repo_id, snapshots, refs):
    """snapshots: {commit: model folder}; refs: {name: commit}."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    for commit, folder in snapshots.items():
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True)
        for f in folder.iterdir():
            if f.is_file():
                (snap / f.name).symlink_to(f)
    for name, commit in refs.items():
        (repo / "refs" / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / name).write_text(commit)


def scan(env, cache=None):
    r = subprocess.run(["node", str(here / "hf_cache_scan.js")] + ([str(cache)] if cache else []),
                       env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def reference_path(info, repo_id, revision):
    """The snapshot folder HF's scan gives for a repo at a ref name or a commit."""
    repo = next(r for r in info["repos"] if r["id"] == repo_id and r["type"] == "model")
    return next(v["path"] for v in repo["revisions"] if revision in v["refs"] or v["commit"] == revision)


def resolve(env, *args):
    """roberta_cpp.resolve_model in a process with `env`."""
    code = "import sys, roberta_cpp; print(roberta_cpp.resolve_model(*sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "error: " + r.stderr.strip().splitlines()[-1]


def same(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def cli(env, *args):
    return subprocess.run([binary, *args], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)


shutil.rmtree(work / "caches", ignore_errors=True)
cache = work / "caches" / "hub"
c1, c2 = "1" * 40, "2" * 40
make_repo(cache, "test-org/demo", {c1: demo, c2: second}, {"main": c1, "v1": c2})
make_repo(cache, "sentence-transformers/demo", {c1: demo}, {"main": c1})
base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "XDG_CACHE"))}
env = dict(base, HF_HUB_CACHE=str(cache))

# ---- the folder of each (id, revision), as HF reads the cache
info = scan(env, cache)
check(not info["warnings"], f"HF's scan of the test cache has no warnings ({info['warnings']})")
for rev, args in [("main", ["test-org/demo"]), ("v1", ["test-org/demo@v1"]), ("v1", ["test-org/demo", "v1"]),
                  (c2, ["test-org/demo", c2]), ("main", ["test-org/demo", "", str(cache)])]:
    want = reference_path(info, "test-org/demo", rev)
    got = resolve(env if len(args) < 3 else base, *args)
    check(same(got, want), f"resolve_model{tuple(args)} = HF's snapshot of {rev} ({got})")
check(resolve(env, str(demo)) == str(demo), "an existing folder is returned as given")

# ---- which cache: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub, HOME
homes = work / "caches" / "homes"
for name, extra, cache_dir in [
        ("HF_HUB_CACHE", {"HF_HUB_CACHE": str(homes / "a")}, homes / "a"),
        ("HUGGINGFACE_HUB_CACHE", {"HUGGINGFACE_HUB_CACHE": str(homes / "b")}, homes / "b"),
        ("HF_HOME", {"HF_HOME": str(homes / "c")}, homes / "c" / "hub"),
        ("XDG_CACHE_HOME", {"XDG_CACHE_HOME": str(homes / "d")}, homes / "d" / "huggingface" / "hub"),
        ("HOME", {"HOME": str(homes / "e")}, homes / "e" / ".cache" / "huggingface" / "hub"),
        ("HF_HUB_CACHE over HF_HOME", {"HF_HUB_CACHE": str(homes / "f"), "HF_HOME": str(homes / "g")}, homes / "f")]:
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    cache_dir.symlink_to(cache, target_is_directory=True)
    e = dict(base, **extra)
    ref = scan(e)
    got = resolve(e, "test-org/demo")
    check(same(ref["cache"], cache_dir) and same(got, reference_path(ref, "test-org/demo", "main")),
          f"{name}: the cache HF's client reads, and the same snapshot ({got})")

# ---- the command line: an id runs the snapshot's model
texts = "The cat sat on the mat.\nShe opened the door.\n"
by_id = subprocess.run([binary, "embed", "--dtype", "fp32", "--model", "test-org/demo"], input=texts, env=env,
                       capture_output=True, text=True)
by_dir = subprocess.run([binary, "embed", "--dtype", "fp32", "--model", str(demo)], input=texts, env=env,
                        capture_output=True, text=True)
check(by_id.returncode == 0 and by_id.stdout == by_dir.stdout, "roberta embed --model test-org/demo = the demo folder")
v1 = subprocess.run([binary, "embed", "--dtype", "fp32", "--model", "test-org/demo@v1"], input=texts, env=env,
                    capture_output=True, text=True)
v1_dir = subprocess.run([binary, "embed", "--dtype", "fp32", "--model", str(second)], input=texts, env=env,
                        capture_output=True, text=True)
check(v1.returncode == 0 and v1.stdout == v1_dir.stdout and v1.stdout != by_id.stdout,
      "roberta embed --model test-org/demo@v1 = the v1 snapshot's model")
for model, words in [("test-org/absent", [str(cache / "models--test-org--absent"), "hf download test-org/absent"]),
                     ("test-org/demo@v9", ['revision "v9"', str(cache / "models--test-org--demo" / "refs" / "v9")])]:
    r = cli(env, "tokenize", "--model", model, "--text", "x")
    check(r.returncode == 1 and r.stderr.startswith("error: ") and all(w in r.stderr for w in words),
          f"--model {model}: exit 1 naming {words} ({r.stderr.strip()})")

# ---- the server: /info names the id, answers come from the snapshot
server = Server(binary, ["--model", "test-org/demo", "--quiet"], env={"HF_HUB_CACHE": str(cache)})
try:
    import urllib.request
    get = lambda path: json.loads(urllib.request.urlopen(server.url + path, timeout=30).read())
    check(get("/info")["model_id"] == "test-org/demo", "serve: /info's model_id is the Hub id")
    check(get("/v1/models")["data"][0]["id"] == "test-org/demo", "serve: /v1/models names the Hub id")
    request = urllib.request.Request(server.url + "/embed", data=json.dumps({"inputs": texts.split("\n")[0]}).encode(),
                                     headers={"Content-Type": "application/json"})
    row = json.loads(urllib.request.urlopen(request, timeout=30).read())[0]
    want = json.loads(by_dir.stdout.split("\n")[0])
    norm = sum(x * x for x in want) ** 0.5
    check(max(abs(a - b / norm) for a, b in zip(row, want)) <= 1e-5, "serve: /embed = the snapshot's embedding")
finally:
    check(server.stop() == 0, "serve: exit 0")

# ---- Python: the drop-ins take ids as sentence-transformers and transformers do
code = r"""
import os, sys, numpy as np, roberta_cpp
from roberta_cpp import SentenceTransformer, pipeline, Tokenizer, Model
demo, cache = sys.argv[1], sys.argv[2]
texts = ["The cat sat on the mat.", "She opened the door."]
want = SentenceTransformer(demo).encode(texts)
def same(model): return np.array_equal(model.encode(texts), want)
print("ST id", same(SentenceTransformer("test-org/demo")))
print("ST bare name", same(SentenceTransformer("demo")))  # sentence-transformers/demo, as there
print("ST revision", not same(SentenceTransformer("test-org/demo", revision="v1")))
os.environ.pop("HF_HUB_CACHE")
print("ST cache_folder", same(SentenceTransformer("test-org/demo", cache_folder=cache)))
os.environ["HF_HUB_CACHE"] = cache
fill = pipeline("fill-mask", model="test-org/demo")
print("pipeline id", fill("She opened the <mask>.")[0]["token_str"] == pipeline("fill-mask", model=demo)("She opened the <mask>.")[0]["token_str"])
print("Tokenizer id", Tokenizer.from_pretrained("test-org/demo").encode("Hello world").ids == Tokenizer.from_pretrained(demo).encode("Hello world").ids)
print("Model id", Model.from_pretrained("test-org/demo").config["hidden_size"] == Model.from_pretrained(demo).config["hidden_size"])
try:
    SentenceTransformer("test-org/absent")
    print("absent raises", False)
except FileNotFoundError as e:
    print("absent raises", "models--test-org--absent" in str(e))
"""
r = subprocess.run([sys.executable, "-c", code, str(demo), str(cache)], env=env, capture_output=True, text=True)
lines = r.stdout.strip().splitlines()
check(r.returncode == 0 and len(lines) == 8, f"Python checks ran ({r.stderr.strip()[-300:]})")
for line in lines:
    name, _, ok = line.rpartition(" ")
    check(ok == "True", f"Python: {name}")

print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
