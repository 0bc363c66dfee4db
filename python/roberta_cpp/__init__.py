"""roberta_cpp: roberta.cpp's RoBERTa engine from Python, as a drop-in for the parts of
sentence-transformers and transformers' pipelines that run RoBERTa-family encoders.

    >>> from roberta_cpp import SentenceTransformer, pipeline
    >>> model = SentenceTransformer("path/to/sentence-transformers-folder")
    >>> model.encode(["first text", "second text"]).shape
    (2, 768)
    >>> fill = pipeline("fill-mask", model="models/demo")
    >>> fill("She opened the <mask> and looked out.")[0]["token_str"]
    ' door'

Also: pipeline("text-classification" / "zero-shot-classification" / "token-classification" /
"question-answering", model=...), CrossEncoder(path).predict / .rank, Tokenizer, Model.forward.

Models are local Hugging Face folders (config.json + model.safetensors + tokenizer.json); nothing
is downloaded. Every call releases the GIL while it tokenizes and runs the model, so Python threads
run in parallel; results are numpy arrays that own the C++ buffers (no copy).

Errors raise roberta_cpp.Error subclasses that carry the C++ message (which names the file, field,
line or position at fault):

    InvalidInputError(Error, ValueError)          bad text, ids or options (ErrorKind::kInvalidInput)
    ModelError(Error)                             bad or unsupported model files (kInvalidModel)
    IoError(Error, OSError)                       a file cannot be read or written (kIo)
    NotFoundError(IoError, FileNotFoundError)     ... because it does not exist

Threads: the engine uses all cores by default; ``set_num_threads(n)`` (or ``threads=n`` when
loading a model) sets the count for the whole process, like ``torch.set_num_threads``.
"""
from . import _core
from ._core import (
    Encoding,
    Error,
    InvalidInputError,
    IoError,
    ModelError,
    NotFoundError,
    num_threads,
    runtime_info,
    set_num_threads,
)
from .bge_m3 import BGEM3FlagModel
from .cross_encoder import CrossEncoder
from .hub import resolve_model
from .model import Model
from .pipelines import (
    SUPPORTED_TASKS,
    FeatureExtractionPipeline,
    FillMaskPipeline,
    Pipeline,
    QuestionAnsweringPipeline,
    TextClassificationPipeline,
    TokenClassificationPipeline,
    ZeroShotClassificationPipeline,
    pipeline,
)
from .sentence_transformer import SentenceTransformer, cos_sim, quantize_embeddings
from .sparse_encoder import SparseEncoder
from .tokenizer import BatchEncoding, Tokenizer

__version__ = _core.__version__

__all__ = [
    "BGEM3FlagModel",
    "BatchEncoding",
    "CrossEncoder",
    "Encoding",
    "Error",
    "FeatureExtractionPipeline",
    "FillMaskPipeline",
    "InvalidInputError",
    "IoError",
    "Model",
    "ModelError",
    "NotFoundError",
    "Pipeline",
    "QuestionAnsweringPipeline",
    "TextClassificationPipeline",
    "TokenClassificationPipeline",
    "ZeroShotClassificationPipeline",
    "SUPPORTED_TASKS",
    "SentenceTransformer",
    "SparseEncoder",
    "Tokenizer",
    "cos_sim",
    "num_threads",
    "runtime_info",
    "pipeline",
    "quantize_embeddings",
    "resolve_model",
    "set_num_threads",
]
