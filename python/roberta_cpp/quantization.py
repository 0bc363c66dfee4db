"""sentence_transformers.quantization's quantize_embeddings, so that ``from roberta_cpp.quantization
import quantize_embeddings`` replaces the sentence-transformers import."""
from .sentence_transformer import quantize_embeddings

__all__ = ["quantize_embeddings"]
