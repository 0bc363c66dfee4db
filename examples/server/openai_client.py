"""Embeddings from `roberta serve` with OpenAI's official Python client (pip install openai).
Usage: python3 openai_client.py [URL]   (default http://127.0.0.1:8080)"""
import sys

from openai import OpenAI

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
client = OpenAI(base_url=url + "/v1", api_key="unused")  # --api-key KEY on the server to require one
res = client.embeddings.create(model="demo", input=["The cat sat on the mat.", "A dog slept."])
print(len(res.data), "embeddings of", len(res.data[0].embedding), "values;", res.usage.prompt_tokens, "prompt tokens")
