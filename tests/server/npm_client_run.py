"""Starts the server and runs CLIENT_client.js against it (see npm_client_test.sh).

openai: one server with an API key, the client at its /v1. hf: two servers with an API key, the
client given each one's root URL as its Inference Endpoint: one as TEI serves an embedding model
(POST / is /embed), one with TEI's TASK=sentence-similarity (POST / is /similarity)."""
import os
import subprocess
import sys

from serve_util import Server

client, binary, model, texts, work = sys.argv[1:6]
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), client + "_client.js")
args = ["--model", model, "--served-model-name", "tiny-test", "--api-key", "test-key", "--quiet"]
envs = [None] if client == "openai" else [None, {"TASK": "sentence-similarity"}]
servers = []
try:
    for env in envs:
        servers.append(Server(binary, args, env=env))
    urls = [servers[0].url + "/v1"] if client == "openai" else [s.url for s in servers]
    r = subprocess.run(["node", script, *urls, texts, os.path.join(work, "reference.jsonl")], timeout=120)
finally:
    codes = [s.stop() for s in servers]
print(f"server exit status {codes}")
sys.exit(r.returncode or any(codes))
