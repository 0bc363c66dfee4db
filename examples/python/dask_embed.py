"""Embed every line of a text file on a Dask cluster (here two local worker processes), then load
the parts and search them. Usage: python3 dask_embed.py TEXT_FILE OUT_DIR [MODEL_DIR]

The same run from the shell: python3 -m roberta_cpp.dask_embed --model DIR --scheduler local:2
--out OUT_DIR TEXT_FILE. A rerun with the same arguments skips the parts already written."""
import sys

from roberta_cpp import SentenceTransformer, dask_embed, util


def main():
    text_file, out = sys.argv[1], sys.argv[2]
    model_dir = sys.argv[3] if len(sys.argv) > 3 else "models/demo"
    status = dask_embed.main(["--model", model_dir, "--scheduler", "local:2", "--partition-lines", "2",
                              "--out", out, text_file])
    if status != 0:
        sys.exit(status)
    embeddings = dask_embed.load_parts(out)  # one row per line, in input order
    lines = open(text_file, encoding="utf-8").read().splitlines()
    print(embeddings.shape[0], "lines embedded,", embeddings.shape[1], "values each")
    query = SentenceTransformer(model_dir).encode(["A ship at sea."])
    best = util.semantic_search(query, embeddings, top_k=1)[0][0]
    print(f"closest to 'A ship at sea.': {lines[best['corpus_id']]!r} ({best['score']:.4f})")


if __name__ == "__main__":  # Dask's worker processes import this file again
    main()
