"""transformers' pipeline() on the engine: fill-mask and feature-extraction.
Usage: python3 pipeline.py [MODEL_DIR]   (default models/demo)"""
import sys

from roberta_cpp import pipeline

model = sys.argv[1] if len(sys.argv) > 1 else "models/demo"
fill = pipeline("fill-mask", model=model)
for candidate in fill("The ship sailed out of the <mask> at dawn.", top_k=3):
    print(f"{candidate['score']:.4f}  {candidate['token_str']!r:12}  {candidate['sequence']}")

extract = pipeline("feature-extraction", model=model)
states = extract("The ship sailed.")  # [1][tokens][hidden]: every token's last hidden state
print(len(states[0]), "tokens x", len(states[0][0]), "values")
