"""Starts the server and runs CLIENT_client.js against it (see npm_client_test.sh).

openai: one server with an API key, the client at its /v1. hf: three servers with an API key, the
client given each one's root URL as its Inference Endpoint: one as TEI serves an embedding model
(POST / is /embed), one with TEI's TASK=sentence-similarity (POST / is /similarity), and one serving
the sentiment classifier beside MODEL_DIR (POST / is text classification), with
`roberta classify --dtype fp32 --all --json` of the texts as the reference."""
import os
import subprocess
import sys

from serve_util import Server

client, binary, model, texts, work = sys.argv[1:6]
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), client + "_client.js")
args = ["--model", model, "--served-model-name", "tiny-test", "--api-key", "test-key", "--quiet"]
runs = [(args, None)]
extra = []
if client == "hf":
    classifier = os.path.join(os.path.dirname(os.path.abspath(model)), "sentiment")
    runs += [(args, {"TASK": "sentence-similarity"}), (args[:1] + [classifier] + args[2:], None)]
    lines = [l for l in open(texts, encoding="utf-8").read().split("\n") if l]
    labels = subprocess.run([binary, "classify", "--dtype", "fp32", "--model", classifier, "--all", "--json", *lines],
                            check=True, capture_output=True, text=True).stdout
    extra = [os.path.join(work, "classify.jsonl")]
    with open(extra[0], "w", encoding="utf-8") as f:
        f.write(labels)
servers = []
try:
    for run_args, env in runs:
        servers.append(Server(binary, run_args, env=env))
    urls = [servers[0].url + "/v1"] if client == "openai" else [s.url for s in servers]
    r = subprocess.run(["node", script, *urls, texts, os.path.join(work, "reference.jsonl"), *extra], timeout=120)
finally:
    codes = [s.stop() for s in servers]
print(f"server exit status {codes}")
sys.exit(r.returncode or any(codes))
