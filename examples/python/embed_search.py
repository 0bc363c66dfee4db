"""Semantic search: embed a small corpus once, then find the texts closest to each query, as with
sentence-transformers. Usage: python3 embed_search.py [MODEL_DIR]   (default models/demo)"""
import sys

from roberta_cpp import SentenceTransformer, util

model = SentenceTransformer(sys.argv[1] if len(sys.argv) > 1 else "models/demo")
corpus = [
    "The cat slept on the warm windowsill.",
    "The ship sailed out of the harbour at dawn.",
    "She baked bread in the old stone oven.",
    "The soldiers marched along the river road.",
    "A kitten curled up by the fire.",
]
queries = ["Where did the cat sleep?", "The boat left the port in the morning."]
corpus_embeddings = model.encode(corpus, normalize_embeddings=True)  # (5, dimension) float32
query_embeddings = model.encode(queries, normalize_embeddings=True)
for query, hits in zip(queries, util.semantic_search(query_embeddings, corpus_embeddings, top_k=2)):
    print(query)
    for hit in hits:
        print(f"  {hit['score']:.4f}  {corpus[hit['corpus_id']]}")
