"""Starts the server and runs openai_client.js against it (see openai_client_test.sh)."""
import os
import subprocess
import sys

from serve_util import Server

binary, model, texts, work = sys.argv[1:5]
server = Server(binary, ["--model", model, "--served-model-name", "tiny-test", "--api-key", "test-key", "--quiet"])
try:
    r = subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai_client.js"),
                        server.url + "/v1", texts, os.path.join(work, "reference.jsonl")], timeout=120)
finally:
    code = server.stop()
print(f"server exit status {code}")
sys.exit(r.returncode or (code != 0))
