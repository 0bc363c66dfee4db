#!/usr/bin/env python3
"""Golden results of Hugging Face's task pipelines and sentence-transformers' CrossEncoder.

    /usr/bin/python3 tools/hf_goldens/gen_pipeline_goldens.py \
        --transformers SRC/transformers --sentence-transformers SRC/sentence_transformers \
        [--legacy-text-classification OLD/text_classification.py] [--out tests/data/pipelines]
    /usr/bin/python3 tools/hf_goldens/gen_pipeline_goldens.py --unigram-pipelines \
        SRC/transformers/pipelines/token_classification.py SRC/transformers/pipelines/question_answering.py

The expected outputs come from the libraries' own code, run unchanged: transformers'
text_classification.py, zero_shot_classification.py, token_classification.py and
question_answering.py (their __call__, _sanitize_parameters, preprocess, _forward and postprocess),
and sentence-transformers' CrossEncoder.predict / rank / get_default_activation_fn. Only what needs
a real model or tokenizer object is replaced by small stand-ins below:

- the tokenizer: a shim that answers the calls those modules make with the results of Hugging
  Face's Rust tokenizer (npm `tokenizers`, through pipeline_tokenizer.js): ids, offsets, special
  token masks, word ids, overflowing windows, Encoding.word_to_chars, convert_ids_to_tokens and
  convert_tokens_to_string (the decoder of the tokenizer.json, as transformers' TokenizersBackend
  calls it), and `_tokenizer.model` with the attributes the real model object has (a Unigram model
  has no continuing_subword_prefix);
- the model: returns logits made here (seeded random, with chosen labels and answer spans raised
  so that every option has something to do) and checks that it was given the expected ids;
- the plumbing of transformers.pipelines.base (Pipeline.__call__ / run_single as base.py does
  them: _sanitize_parameters, preprocess, _forward, postprocess), and the imports the modules make
  (ExplicitEnum, TruncationStrategy, SquadExample/SquadFeatures as plain records).

Nothing of transformers or sentence-transformers is copied into this repository: the script reads
their source files from the folders given on the command line. See README.md beside it.
"""
import argparse
import enum
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------------------------------------
# Hugging Face's tokenizer through node


class HfTokenizerServer:
    def __init__(self, tokenizer_json):
        env = dict(os.environ)
        self.proc = subprocess.Popen(["node", os.path.join(HERE, "pipeline_tokenizer.js"), tokenizer_json],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
                                     encoding="utf-8")
        self.memo = {}

    def call(self, op, **kw):
        req = json.dumps({"op": op, **kw}, ensure_ascii=False, sort_keys=True)
        if req in self.memo:
            return self.memo[req]
        self.proc.stdin.write(req + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        self.memo[req] = answer
        return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ------------------------------------------------------------------------------------------------
# Stand-ins for the parts of transformers the pipeline modules import


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


class ExplicitEnum(str, enum.Enum):  # transformers.utils.generic.ExplicitEnum
    @classmethod
    def _missing_(cls, value):
        raise ValueError(f"{value} is not a valid {cls.__name__}, please select one of "
                         f"{list(cls._value2member_map_.keys())}")


class TruncationStrategy(ExplicitEnum):
    ONLY_FIRST = "only_first"
    ONLY_SECOND = "only_second"
    LONGEST_FIRST = "longest_first"
    DO_NOT_TRUNCATE = "do_not_truncate"


class PaddingStrategy(ExplicitEnum):
    LONGEST = "longest"
    MAX_LENGTH = "max_length"
    DO_NOT_PAD = "do_not_pad"


class ArgumentHandler:
    pass


class Pipeline:
    """transformers.pipelines.base.Pipeline.__call__ for one input, and run_single as base.py has it."""

    _preprocess_params, _forward_params, _postprocess_params = {}, {}, {}

    def __call__(self, inputs, *args, **kwargs):
        preprocess_params, forward_params, postprocess_params = self._sanitize_parameters(**kwargs)
        preprocess_params = {**self._preprocess_params, **preprocess_params}
        forward_params = {**self._forward_params, **forward_params}
        postprocess_params = {**self._postprocess_params, **postprocess_params}
        if isinstance(inputs, list):  # base.py: a list is a batch, one result per item (run_multi)
            return [self.run_single(item, preprocess_params, forward_params, postprocess_params) for item in inputs]
        return self.run_single(inputs, preprocess_params, forward_params, postprocess_params)

    def forward(self, model_inputs, **forward_params):
        with torch.no_grad():
            return self._forward(model_inputs, **forward_params)

    def run_single(self, inputs, preprocess_params, forward_params, postprocess_params):
        model_inputs = self.preprocess(inputs, **preprocess_params)
        model_outputs = self.forward(model_inputs, **forward_params)
        return self.postprocess(model_outputs, **postprocess_params)


class ChunkPipeline(Pipeline):
    def run_single(self, inputs, preprocess_params, forward_params, postprocess_params):
        all_outputs = []
        for model_inputs in self.preprocess(inputs, **preprocess_params):
            all_outputs.append(self.forward(model_inputs, **forward_params))
        return self.postprocess(all_outputs, **postprocess_params)


class SquadExample:  # the fields the fast-tokenizer path reads
    def __init__(self, qas_id, question_text, context_text, answer_text, start_position_character, title,
                 answers=None, is_impossible=False):
        self.question_text = question_text
        self.context_text = context_text


class SquadFeatures:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def install_transformers_stubs():
    from torch.utils.data import Dataset

    module("transformers")
    module("transformers.utils", ExplicitEnum=ExplicitEnum, add_end_docstrings=lambda *d: (lambda f: f),
           is_torch_available=lambda: True, is_tf_available=lambda: False, is_tokenizers_available=lambda: True,
           logging=types.SimpleNamespace(get_logger=logging.getLogger), PaddingStrategy=PaddingStrategy,
           PushToHubMixin=type("PushToHubMixin", (), {}))
    module("transformers.pipelines")
    module("transformers.pipelines.base", ArgumentHandler=ArgumentHandler, Pipeline=Pipeline,
           ChunkPipeline=ChunkPipeline, Dataset=Dataset, GenericTensor=object,
           build_pipeline_init_args=lambda **kw: "", PIPELINE_INIT_ARGS="")
    module("transformers.tokenization_python", TruncationStrategy=TruncationStrategy, PreTrainedTokenizer=object)
    module("transformers.tokenization_utils", TruncationStrategy=TruncationStrategy, PreTrainedTokenizer=object)
    module("transformers.tokenization_utils_base", TruncationStrategy=TruncationStrategy)
    module("transformers.data", SquadExample=SquadExample, SquadFeatures=SquadFeatures,
           squad_convert_examples_to_features=None)
    module("transformers.models")
    module("transformers.models.auto")
    module("transformers.models.auto.modeling_auto", **{
        n: {} for n in ["MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
                        "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES"]})
    module("transformers.models.bert")
    module("transformers.models.bert.tokenization_bert", BasicTokenizer=object)
    module("transformers.models.bert.tokenization_bert_legacy", BasicTokenizer=object)
    # What sentence_transformers/cross_encoder/CrossEncoder.py imports from transformers.
    for n in ["AutoConfig", "AutoModelForSequenceClassification", "AutoTokenizer", "PretrainedConfig",
              "PreTrainedModel", "PreTrainedTokenizer"]:
        setattr(sys.modules["transformers"], n, type(n, (), {}))


def load_source(name, path, names=None):
    """Runs the file `path` as module `name`; `names` are set in the module before it runs."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = name.rsplit(".", 1)[0]
    mod.__dict__.update(names or {})
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def install_sentence_transformers(st_dir):
    module("huggingface_hub", HfApi=object)
    module("packaging", version=types.SimpleNamespace(parse=lambda v: v))
    module("packaging.version", parse=lambda v: v)
    module("tqdm")
    import typing_extensions
    if not hasattr(typing_extensions, "deprecated"):  # older typing_extensions: a no-op decorator
        typing_extensions.deprecated = lambda *a, **k: (lambda f: f)
    module("tqdm.autonotebook", trange=lambda start, stop, step, **kw: range(start, stop, step))
    module("sentence_transformers", __version__="stand-in")
    module("sentence_transformers.backend", load_onnx_model=None, load_openvino_model=None)
    module("sentence_transformers.cross_encoder")
    module("sentence_transformers.cross_encoder.fit_mixin", FitMixin=type("FitMixin", (), {}))
    module("sentence_transformers.cross_encoder.model_card", CrossEncoderModelCardData=object,
           generate_model_card=None)
    load_source("sentence_transformers.cross_encoder.util", os.path.join(st_dir, "cross_encoder", "util.py"))
    misc = load_source("sentence_transformers.util_misc", os.path.join(st_dir, "util", "misc.py"))
    module("sentence_transformers.util", fullname=misc.fullname, import_from_string=misc.import_from_string,
           get_device_name=lambda: "cpu", load_file_path=lambda *a, **k: None)
    return load_source("sentence_transformers.cross_encoder.CrossEncoder",
                       os.path.join(st_dir, "cross_encoder", "CrossEncoder.py"))


# ------------------------------------------------------------------------------------------------
# Tokenizer and model stand-ins


class EncodingShim:
    """tokenizers.Encoding: the calls question_answering.py makes."""

    def __init__(self, rec):
        self.rec = rec
        self.offsets = [tuple(o) for o in rec["offsets"]]

    def token_to_word(self, i):
        w = self.rec["word_ids"][i]
        return None if w < 0 else w

    def word_to_chars(self, word, sequence_index=0):
        span = self.rec["word_to_chars"][str(sequence_index)].get(str(word))
        return None if span is None else tuple(span)


class BatchEncodingShim(dict):
    def __init__(self, data, encodings):
        super().__init__(data)
        self._encodings = encodings

    def __getitem__(self, key):
        if isinstance(key, int):
            return EncodingShim(self._encodings[key])
        return super().__getitem__(key)

    def sequence_ids(self, i):
        return [None if s < 0 else s for s in self._encodings[i]["sequence_ids"]]

    def word_ids(self, i=0):
        return [None if w < 0 else w for w in self._encodings[i]["word_ids"]]

    def to(self, device):
        return self


class UnigramModelShim:
    """tokenizers.models.Unigram as `Tokenizer.model` returns it: its Python class has getters for
    alpha and nbest_size only (bindings/python/src/models.rs), so token_classification.py's
    getattr(model, "continuing_subword_prefix", None) gives None and transformers uses its fallback
    heuristic for subwords."""


class TokenizerShim:
    """The surface of a transformers fast tokenizer (RobertaTokenizerFast) that the pipelines use."""

    is_fast = True
    padding_side = "right"
    model_input_names = ["input_ids", "attention_mask"]
    pad_token = "<pad>"
    eos_token = "</s>"

    def __init__(self, server, model_max_length, continuing_subword_prefix, special_ids=(0, 1, 3), model=None):
        self.server = server
        self.model_max_length = model_max_length
        self.cls_token_id, self.pad_token_id, self.unk_token_id = special_ids  # RoBERTa's <s>, <pad>, <unk>
        # `model`: a stand-in for the model object itself (UnigramModelShim), else a BPE/WordPiece model
        # whose continuing_subword_prefix is the one given.
        self._tokenizer = types.SimpleNamespace(model=model if model is not None else types.SimpleNamespace(
            continuing_subword_prefix=continuing_subword_prefix))
        self.log = []  # every request, in order, with HF's encodings

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self.server.call("id_to_token", ids=[ids])["tokens"][0]
        return self.server.call("id_to_token", ids=[int(i) for i in ids])["tokens"]

    def convert_tokens_to_string(self, tokens):
        return self.server.call("decode_tokens", tokens=list(tokens))["text"]

    def __call__(self, text=None, text_pair=None, add_special_tokens=True, padding=False, truncation=None,
                 max_length=None, stride=0, return_tensors=None, return_token_type_ids=None,
                 return_overflowing_tokens=False, return_offsets_mapping=False, return_special_tokens_mask=False,
                 is_split_into_words=False, **kwargs):
        assert not kwargs, kwargs
        if is_split_into_words:  # one list of words (what token_classification.py passes)
            assert isinstance(text, list) and all(isinstance(w, str) for w in text) and text_pair is None, text
            rows = [(text, None)]
        elif isinstance(text, list):  # a batch of pairs [[a, b], ...]
            rows = [(p[0], p[1]) for p in text]
        else:
            rows = [(text, text_pair)]
        if isinstance(truncation, TruncationStrategy):
            truncation = truncation.value
        if truncation is True:
            truncation = "longest_first"
        if truncation in (False, None, "do_not_truncate"):
            truncation = None
        if truncation is not None and max_length is None:
            max_length = self.model_max_length
        strategy = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond",
                    None: None}[truncation]
        encodings, sample = [], []
        for r, (a, b) in enumerate(rows):
            if is_split_into_words:
                trunc = None if strategy is None else {"max_length": max_length, "strategy": strategy, "stride": stride}
                ans = self.server.call("encode_words", words=a, add_special_tokens=add_special_tokens, truncation=trunc,
                                       overflow=bool(return_overflowing_tokens))
            elif return_overflowing_tokens:
                ans = self.server.call("windows", a=a, b=b, max_length=max_length, strategy=strategy, stride=stride)
            else:
                trunc = None if strategy is None else {"max_length": max_length, "strategy": strategy, "stride": stride}
                ans = self.server.call("encode", a=a, b=b, add_special_tokens=add_special_tokens, truncation=trunc)
            if "error" in ans:
                raise Exception(ans["error"])
            encs = ans["encodings"] if return_overflowing_tokens else ans["encodings"][:1]
            self.log.append({"a": a, "b": b, "strategy": strategy, "max_length": max_length, "stride": stride,
                             "overflow": bool(return_overflowing_tokens), "direct_same": ans.get("direct_same"),
                             "encodings": encs})
            encodings += encs
            sample += [r] * len(encs)
        if padding in (True, "longest"):
            width = max(len(e["ids"]) for e in encodings)
            padded = []
            for e in encodings:
                n = width - len(e["ids"])
                padded.append({**e, "ids": e["ids"] + [self.pad_token_id] * n,
                               "attention_mask": e["attention_mask"] + [0] * n,
                               "special_tokens_mask": e["special_tokens_mask"] + [1] * n,
                               "offsets": e["offsets"] + [[0, 0]] * n, "type_ids": e["type_ids"] + [0] * n,
                               "sequence_ids": e["sequence_ids"] + [-1] * n, "word_ids": e["word_ids"] + [-1] * n})
            encodings = padded
        data = {"input_ids": [e["ids"] for e in encodings], "attention_mask": [e["attention_mask"] for e in encodings]}
        if return_token_type_ids:
            data["token_type_ids"] = [e["type_ids"] for e in encodings]
        if return_special_tokens_mask:
            data["special_tokens_mask"] = [e["special_tokens_mask"] for e in encodings]
        if return_offsets_mapping:
            data["offset_mapping"] = [[tuple(o) for o in e["offsets"]] for e in encodings]
        if return_overflowing_tokens:
            data["overflow_to_sample_mapping"] = sample
        if return_tensors == "pt":
            data = {k: torch.tensor(v) for k, v in data.items()}
        return BatchEncodingShim(data, encodings)


class Outputs(dict):
    __getattr__ = dict.__getitem__


class ModelShim:
    """Answers each forward call with the next logits of a queue, after checking the ids."""

    device = "cpu"

    def __init__(self, config, queue):
        self.config = config
        self.queue = list(queue)  # [(expected input_ids rows, Outputs)]

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, return_dict=None):
        raise AssertionError("not called directly")

    def __call__(self, input_ids=None, attention_mask=None, token_type_ids=None, return_dict=None, **kw):
        expected_ids, out = self.queue.pop(0)
        got = input_ids.tolist()
        assert got == expected_ids, (got, expected_ids)
        return out


class Config(types.SimpleNamespace):
    @property
    def num_labels(self):
        return len(self.id2label)


def make_config(labels, problem_type=None, label2id=None, **extra):
    return Config(id2label=dict(enumerate(labels)),
                  label2id=label2id if label2id is not None else {l: i for i, l in enumerate(labels)},
                  problem_type=problem_type, **extra)


def f32(x):
    return np.asarray(x, dtype=np.float32)


def to_json(x):
    if isinstance(x, dict):
        return {k: to_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_json(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.ndarray):
        return to_json(x.tolist())
    return x


def enc_record(e):
    return {k: e[k] for k in ["ids", "offsets", "special_tokens_mask", "sequence_ids", "word_ids"]}


def strip_padding(e):
    n = sum(e["attention_mask"])
    return {k: (v[:n] if isinstance(v, list) else v) for k, v in e.items()}


# ------------------------------------------------------------------------------------------------
# text-classification


TEXT_CASES = [
    # name, labels, problem_type, inputs, HF kwargs, logits (None: random)
    ("default_top_k_legacy", ["NEGATIVE", "POSITIVE"], None, "This movie was great!", {}, None),
    ("top_k_none", ["NEGATIVE", "POSITIVE"], None, "This movie was great!", {"top_k": None}, None),
    ("top_k_1_explicit", ["anger", "joy", "sadness", "fear"], None, "I am so happy today.", {"top_k": 1}, None),
    ("top_k_2", ["anger", "joy", "sadness", "fear"], None, "I am so happy today.", {"top_k": 2}, None),
    ("top_k_larger_than_labels", ["anger", "joy", "sadness"], None, "Meh.", {"top_k": 10}, None),
    ("sigmoid_forced", ["anger", "joy", "sadness"], None, "Meh.", {"top_k": None, "function_to_apply": "sigmoid"}, None),
    ("none_forced", ["anger", "joy", "sadness"], None, "Meh.", {"top_k": None, "function_to_apply": "none"}, None),
    ("softmax_forced_multi_label", ["a", "b", "c"], "multi_label_classification", "Text",
     {"top_k": None, "function_to_apply": "softmax"}, None),
    ("multi_label_default_sigmoid", ["toxic", "obscene", "insult", "threat"], "multi_label_classification",
     "You are a silly person.", {"top_k": None}, None),
    ("single_label_problem_type", ["x", "y", "z"], "single_label_classification", "Text", {"top_k": 2}, None),
    ("one_label_default_sigmoid", ["LABEL_0"], None, "A single score.", {}, None),
    ("one_label_top_k_none", ["LABEL_0"], None, "A single score.", {"top_k": None}, None),
    ("regression_default_none", ["LABEL_0"], "regression", "How similar?", {"top_k": None}, [[2.75]]),
    ("regression_legacy", ["LABEL_0"], "regression", "How similar?", {}, [[-1.5]]),
    ("pair_input", ["contradiction", "neutral", "entailment"], None,
     {"text": "A man is playing a guitar.", "text_pair": "Someone plays music."}, {"top_k": None}, None),
    ("tie_keeps_label_order", ["first", "second", "third"], None, "Tie.", {"top_k": None}, [[1.0, 2.0, 2.0]]),
    ("truncation_long_text", ["NEGATIVE", "POSITIVE"], None,
     "word " * 40 + "end of a long review that gets cut", {"top_k": None, "truncation": True, "_model_max_length": 16},
     None),
]

LEGACY_TEXT_CASES = [
    ("legacy_return_all_scores_true", ["anger", "joy", "sadness"], None, "Hm.", {"return_all_scores": True}),
    ("legacy_return_all_scores_false", ["anger", "joy", "sadness"], None, "Hm.", {"return_all_scores": False}),
    ("legacy_return_all_scores_with_top_k", ["anger", "joy", "sadness"], None, "Hm.",
     {"return_all_scores": True, "top_k": 2}),
]


def gen_text_classification(tc_module, server, rng, cases, legacy=False):
    out = []
    for case in cases:
        name, labels, problem_type, inputs, kwargs = case[:5]
        logits = case[5] if len(case) > 5 else None
        kwargs = dict(kwargs)
        max_len = kwargs.pop("_model_max_length", 512)
        config = make_config(labels, problem_type)
        tok = TokenizerShim(server, max_len, "")
        # tokenize first (the same call preprocess makes) to know the ids the model must see
        if isinstance(inputs, dict):
            probe = tok(text=inputs["text"], text_pair=inputs["text_pair"], truncation=kwargs.get("truncation"))
        else:
            probe = tok(inputs, truncation=kwargs.get("truncation"))
        ids = probe["input_ids"]
        if logits is None:
            logits = rng.normal(0, 2, size=(1, len(labels))).astype(np.float32)
        logits = f32(logits)
        pipe = tc_module.TextClassificationPipeline.__new__(tc_module.TextClassificationPipeline)
        pipe.framework = "pt"
        pipe.tokenizer = tok
        pipe.model = ModelShim(config, [(ids, Outputs(logits=torch.tensor(logits)))])
        tok.log.clear()
        result = pipe(inputs, **kwargs)
        assert not pipe.model.queue
        out.append({"name": name, "legacy_transformers_4": legacy,
                    "config": {"id2label": labels, "problem_type": problem_type or "", "model_max_length": max_len},
                    "inputs": inputs, "options": kwargs, "encoding": enc_record(tok.log[0]["encodings"][0]),
                    "logits": to_json(logits[0]), "expected": to_json(result)})
    return out


# ------------------------------------------------------------------------------------------------
# zero-shot-classification

NLI = ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]
NLI_ENTAIL_FIRST = ["entailment", "neutral", "contradiction"]
ZERO_SHOT_CASES = [
    ("three_labels", NLI, "I have a problem with my iphone that needs to be resolved asap!!",
     {"candidate_labels": ["urgent", "not urgent", "phone"]}, 512, None),
    ("custom_template_multi_label", NLI, "The new phone has a great camera and a long battery life.",
     {"candidate_labels": ["technology", "sports", "cooking", "photography"], "hypothesis_template": "The topic is {}.",
      "multi_label": True}, 512, None),
    ("single_label_is_multi_label", NLI, "Dinner was delicious.", {"candidate_labels": ["food"]}, 512, None),
    ("labels_as_comma_string", NLI, "Who won the match yesterday?",
     {"candidate_labels": " sports,politics , ,weather"}, 512, None),
    ("entailment_first_multi_label", NLI_ENTAIL_FIRST, "Stocks fell sharply today.",
     {"candidate_labels": ["finance", "health"], "multi_label": True}, 512, None),
    ("entailment_first_single", NLI_ENTAIL_FIRST, "Stocks fell sharply today.",
     {"candidate_labels": ["finance", "health", "travel"]}, 512, None),
    ("truncated_sequence_only_first", NLI, "very long sequence " * 12 + "about the weather",
     {"candidate_labels": ["weather", "music"]}, 24, None),
    ("ties_reverse_order", NLI, "Tie.", {"candidate_labels": ["alpha", "beta", "gamma"]}, 512,
     [[0.5, 0.1, 1.25], [0.2, 0.3, 2.0], [0.4, -0.1, 1.25]]),
    ("format_index_template", NLI, "Paris is lovely in spring.",
     {"candidate_labels": ["travel", "{braces}"], "hypothesis_template": "{0} is the topic {{really}}."}, 512, None),
]


def gen_zero_shot(zs_module, server, rng):
    out = []
    for name, labels, sequence, kwargs, max_len, logits in ZERO_SHOT_CASES:
        config = make_config(labels)
        tok = TokenizerShim(server, max_len, "")
        pipe = zs_module.ZeroShotClassificationPipeline.__new__(zs_module.ZeroShotClassificationPipeline)
        pipe._args_parser = zs_module.ZeroShotClassificationArgumentHandler()
        pipe.tokenizer = tok
        # the pairs preprocess will make, tokenized the same way first
        cand = pipe._args_parser._parse_labels(kwargs["candidate_labels"])
        template = kwargs.get("hypothesis_template", "This example is {}.")
        queue, rows = [], []
        for i, label in enumerate(cand):
            enc = pipe._parse_and_tokenize([[sequence, template.format(label)]])
            row = f32(logits[i]) if logits is not None else rng.normal(0, 2, size=3).astype(np.float32)
            rows.append(row)
            queue.append((enc["input_ids"].tolist(), Outputs(logits=torch.tensor(row[None]))))
        pipe.model = ModelShim(config, queue)
        tok.log.clear()
        result = pipe(sequence, **kwargs)
        assert not pipe.model.queue
        out.append({"name": name, "config": {"id2label": labels, "model_max_length": max_len},
                    "sequence": sequence, "options": kwargs, "candidate_labels": cand,
                    "hypotheses": [template.format(l) for l in cand],
                    "encodings": [enc_record(r["encodings"][0]) for r in tok.log],
                    "logits": to_json(np.stack(rows)), "expected": to_json(result)})
    return out


# ------------------------------------------------------------------------------------------------
# CrossEncoder (sentence-transformers)

CE_PAIRS = [("How many people live in Berlin?", "Berlin had a population of 3,520,031 registered inhabitants."),
            ("How many people live in Berlin?", "Berlin is well known for its museums."),
            ("How many people live in Berlin?", "New York City is famous for the Metropolitan Museum of Art."),
            ("A man is eating pasta.", "A man is eating food.")]
CE_CASES = [
    # name, labels, config extras, call, kwargs, model_max_length
    ("predict_one_label_default_sigmoid", ["LABEL_0"], {}, "predict", {}, 512),
    ("predict_one_label_identity_from_config", ["LABEL_0"],
     {"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity", "version": "4.0.1"}},
     "predict", {}, 512),
    ("predict_old_config_key_tanh", ["LABEL_0"],
     {"sbert_ce_default_activation_function": "torch.nn.modules.activation.Tanh"}, "predict", {}, 512),
    ("predict_untrusted_activation_falls_back", ["LABEL_0"],
     {"sentence_transformers": {"activation_fn": "my_package.MyActivation"}}, "predict", {}, 512),
    ("predict_three_labels_identity", ["contradiction", "entailment", "neutral"], {}, "predict", {}, 512),
    ("predict_three_labels_softmax", ["contradiction", "entailment", "neutral"], {}, "predict",
     {"apply_softmax": True}, 512),
    ("predict_one_label_apply_softmax", ["LABEL_0"], {}, "predict", {"apply_softmax": True}, 512),
    ("predict_three_labels_sigmoid_from_config", ["a", "b", "c"],
     {"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}}, "predict",
     {"apply_softmax": True}, 512),
    ("predict_truncated_longest_first", ["LABEL_0"], {}, "predict", {}, 20),
    ("rank_all", ["LABEL_0"], {}, "rank", {}, 512),
    ("rank_top_k_documents", ["LABEL_0"], {}, "rank", {"top_k": 2, "return_documents": True}, 512),
    ("rank_identity_ties", ["LABEL_0"],
     {"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"}}, "rank",
     {"return_documents": True}, 512),
]


def gen_cross_encoder(ce_module, server, rng):
    out = []
    for name, labels, extras, call, kwargs, max_len in CE_CASES:
        config = make_config(labels, **json.loads(json.dumps(extras)))
        tok = TokenizerShim(server, max_len, "")
        if call == "rank":
            query, docs = CE_PAIRS[0][0], [p[1] for p in CE_PAIRS[:3]] + ["Berlin is a city.", "Paris."]
            pairs = [[query, d] for d in docs]
        else:
            pairs = [list(p) for p in CE_PAIRS]
        if name == "predict_truncated_longest_first":
            pairs = [[CE_PAIRS[0][0], "Berlin " + "is big " * 20], ["short", "text"]]
        probe = tok(pairs, padding=True, truncation=True, return_tensors="pt")
        if name == "rank_identity_ties":
            logits = f32([[1.5], [0.25], [1.5], [-3.0], [0.25]])
        else:
            logits = rng.normal(0, 3, size=(len(pairs), len(labels))).astype(np.float32)
        model = ModelShim(config, [(probe["input_ids"].tolist(), Outputs(logits=torch.tensor(logits)))])
        ce = ce_module.CrossEncoder.__new__(ce_module.CrossEncoder)
        torch.nn.Module.__init__(ce)
        ce.model = model
        ce.tokenizer = tok
        ce.trust_remote_code = False
        ce.set_activation_fn(None)  # as CrossEncoder.__init__ does: the default from the config
        tok.log.clear()
        if call == "rank":
            result = ce.rank(query, docs, **kwargs)
        else:
            result = ce.predict(pairs, **kwargs)
        assert not model.queue
        out.append({"name": name, "config": {"id2label": labels, "model_max_length": max_len, "extra": extras},
                    "call": call, "pairs": pairs, "options": kwargs,
                    "encodings": [enc_record(e) for entry in tok.log for e in entry["encodings"]],
                    "logits": to_json(logits), "expected": to_json(result)})
    return out


# ------------------------------------------------------------------------------------------------
# token-classification (NER)

NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "DATE", "MISC"]

# text, [(substring, occurrence, [label per token...]  (the last label repeats))]
NER_TEXTS = [
    ("Angela Merkel visited Microsoftcorp in New York-based offices on Monday and Tuesday, then met Olaf Scholz",
     [("Angela", 0, ["B-PER"]), ("Merkel", 0, ["I-PER"]), ("Microsoftcorp", 0, ["B-ORG", "I-PER"]),
      ("New York", 0, ["B-LOC", "I-LOC"]), ("-based", 0, ["I-LOC", "O"]), ("Monday", 0, ["DATE"]),
      ("Tuesday", 0, ["DATE"]), ("Olaf", 0, ["B-PER"]), ("Scholz", 0, ["B-PER", "I-PER"])]),
    ("Paris Hilton met Berlin officials. Berlin Berlin!\nLondon calling <unk> São Paulo",
     [("Paris", 0, ["B-PER"]), ("Hilton", 0, ["B-PER"]), ("Berlin", 0, ["B-LOC"]), ("officials", 0, ["I-ORG"]),
      ("Berlin", 1, ["B-LOC"]), ("Berlin", 2, ["B-LOC"]), ("London", 0, ["I-LOC"]), ("<unk>", 0, ["MISC"]),
      ("São", 0, ["B-LOC"]), ("Paulo", 0, ["I-LOC"])]),
    ("café Zürich hosted ÉCOLE students; naïve résumé reviewers from the ACME-Corp",
     [("café", 0, ["B-ORG", "I-ORG"]), ("Zürich", 0, ["B-LOC", "I-LOC", "B-LOC"]), ("ÉCOLE", 0, ["B-ORG", "I-ORG"]),
      ("naïve", 0, ["MISC"]), ("résumé", 0, ["MISC", "O", "MISC"]), ("ACME-Corp", 0, ["B-ORG", "I-ORG"])]),
]
NER_AGGREGATIONS = ["none", "simple", "first", "average", "max"]

NER_STRIDE_TEXT = ("In 2019 Angela Merkel and Emmanuel Macron met in Aachen near the border. The talks with "
                   "Ursula von der Leyen of the European Commission continued in Brussels and Strasbourg until "
                   "Tuesday, when Mark Rutte of the Netherlands arrived at Schiphol Airport.")
NER_STRIDE_SPANS = [("2019", 0, ["DATE"]), ("Angela Merkel", 0, ["B-PER", "I-PER"]),
                    ("Emmanuel Macron", 0, ["B-PER", "I-PER"]), ("Aachen", 0, ["B-LOC", "I-LOC"]),
                    ("Ursula von der Leyen", 0, ["B-PER", "I-PER"]), ("European Commission", 0, ["B-ORG", "I-ORG"]),
                    ("Brussels", 0, ["B-LOC"]), ("Strasbourg", 0, ["B-LOC", "I-LOC"]), ("Tuesday", 0, ["DATE"]),
                    ("Mark Rutte", 0, ["B-PER", "I-PER"]), ("Netherlands", 0, ["B-LOC"]),
                    ("Schiphol Airport", 0, ["B-LOC", "I-LOC"])]


def char_span(text, sub, occurrence):
    pos = -1
    for _ in range(occurrence + 1):
        pos = text.index(sub, pos + 1)
    return pos, pos + len(sub)


def ner_logits(rng, text, enc, spans, margin=3.0):
    T, L = len(enc["ids"]), len(NER_LABELS)
    logits = rng.normal(0, 1, size=(T, L)).astype(np.float32)
    chosen = ["O"] * T
    for sub, occ, labels in spans:
        s, e = char_span(text, sub, occ)
        toks = [i for i in range(T) if not enc["special_tokens_mask"][i] and enc["offsets"][i][1] > s
                and enc["offsets"][i][0] < e]
        for k, i in enumerate(toks):
            chosen[i] = labels[min(k, len(labels) - 1)]
    for i in range(T):
        logits[i, NER_LABELS.index(chosen[i])] += margin + rng.uniform(0, 1.5)
    return logits


def ner_text_record(ner_module, server, rng, name, text, spans, kwargs, max_len, margin=3.0, tok=None):
    """One record of token_classification.jsonl: transformers' pipeline called on `text` (with the
    tokenizer `tok`, by default roberta-base's behind `server`)."""
    config = make_config(NER_LABELS)
    tok = tok or TokenizerShim(server, max_len, "")
    tok.model_max_length = max_len
    pipe = ner_module.TokenClassificationPipeline.__new__(ner_module.TokenClassificationPipeline)
    pipe._args_parser = ner_module.TokenClassificationArgumentHandler()
    pipe.tokenizer = tok
    pre, _, _ = pipe._sanitize_parameters(**{k: v for k, v in kwargs.items() if k != "ignore_labels"})
    probe = tok(text, return_tensors="pt", truncation=True, return_special_tokens_mask=True,
                return_offsets_mapping=True, **pre.get("tokenizer_params", {}))
    queue, windows = [], []
    for w in range(len(probe["input_ids"])):
        enc = {k: probe._encodings[w][k] for k in ["ids", "offsets", "special_tokens_mask"]}
        logits = ner_logits(rng, text, enc, spans, margin)
        windows.append(logits)
        queue.append(([probe["input_ids"][w].tolist()], Outputs(logits=torch.tensor(logits[None]))))
    pipe.model = ModelShim(config, queue)
    tok.log.clear()
    result = pipe(text, **kwargs)
    assert not pipe.model.queue
    log = tok.log[0]
    return {"name": name, "config": {"id2label": NER_LABELS, "model_max_length": max_len},
            "text": text, "options": kwargs, "hf_0_23_windows_same": log["direct_same"],
            "windows": [enc_record(strip_padding(e)) for e in log["encodings"]],
            "logits": [to_json(l[: sum(e["attention_mask"])]) for l, e in zip(windows, log["encodings"])],
            "expected": to_json(result)}


def gen_token_classification(ner_module, server, rng):
    out = []

    def run(*args, **kwargs):
        out.append(ner_text_record(ner_module, server, rng, *args, **kwargs))

    for t, (text, spans) in enumerate(NER_TEXTS):
        for agg in NER_AGGREGATIONS:
            run(f"text{t}_{agg}", text, spans, {"aggregation_strategy": agg}, 512, margin=2.0 if t == 2 else 3.0)
    run("text0_default_options", NER_TEXTS[0][0], NER_TEXTS[0][1], {}, 512)
    run("text0_ignore_nothing", NER_TEXTS[0][0], NER_TEXTS[0][1], {"ignore_labels": []}, 512)
    run("text1_simple_ignore_o_and_misc", NER_TEXTS[1][0], NER_TEXTS[1][1],
        {"aggregation_strategy": "simple", "ignore_labels": ["O", "MISC", "LOC"]}, 512)
    run("text0_truncated_no_stride", NER_TEXTS[0][0], NER_TEXTS[0][1], {"aggregation_strategy": "simple"}, 16)
    for agg in ["simple", "first", "average", "max"]:
        run(f"stride_{agg}", NER_STRIDE_TEXT, NER_STRIDE_SPANS, {"aggregation_strategy": agg, "stride": 5}, 20,
            margin=1.5)
    run("stride_wide_first", NER_STRIDE_TEXT, NER_STRIDE_SPANS, {"aggregation_strategy": "first", "stride": 12}, 24,
        margin=1.5)
    return out


# is_split_into_words: lists of words. words, [(word index, [label per token...])], options, model_max_length

NER_WORDS = ["Angela", "Merkel", "visited", "Microsoftcorp", "in", "New", "York-based", "offices", "on",
             "Monday", ",", "then", "met", "Olaf", "Scholz", "."]
NER_WORDS_SPANS = [(0, ["B-PER"]), (1, ["I-PER"]), (3, ["B-ORG", "I-PER"]), (5, ["B-LOC"]),
                   (6, ["I-LOC", "I-LOC", "O"]), (9, ["DATE"]), (13, ["B-PER"]), (14, ["I-PER"])]
NER_WORDS_ODD = ["São", "Paulo", "", "Zürich", "New York", "café!", "<unk>", "\u00e9t\u00e9"]
NER_WORDS_ODD_SPANS = [(0, ["B-LOC"]), (1, ["I-LOC"]), (3, ["B-LOC"]), (4, ["B-LOC", "I-LOC"]), (5, ["MISC", "O"]),
                       (6, ["B-ORG"]), (7, ["DATE"])]
NER_WORDS_LONG = (["In", "2019", "Angela", "Merkel", "and", "Emmanuel", "Macron", "met", "in", "Aachen", "near",
                   "the", "border", ".", "The", "talks", "with", "Ursula", "von", "der", "Leyen", "continued", "in",
                   "Brussels", "until", "Tuesday", "."])
NER_WORDS_LONG_SPANS = [(1, ["DATE"]), (2, ["B-PER"]), (3, ["I-PER"]), (5, ["B-PER"]), (6, ["I-PER"]), (9, ["B-LOC"]),
                        (17, ["B-PER"]), (18, ["I-PER"]), (19, ["I-PER"]), (20, ["I-PER"]), (23, ["B-LOC"]),
                        (25, ["DATE"])]
APS_PATCH = [["/pre_tokenizer/add_prefix_space", True], ["/post_processor/add_prefix_space", True]]


def word_logits(rng, enc, spans, margin):
    """Logits that give the tokens of each listed word their labels (by the encoding's word ids)."""
    T, L = len(enc["ids"]), len(NER_LABELS)
    logits = rng.normal(0, 1, size=(T, L)).astype(np.float32)
    chosen = ["O"] * T
    for word, labels in spans:
        toks = [i for i in range(T) if enc["word_ids"][i] == word]
        for k, i in enumerate(toks):
            chosen[i] = labels[min(k, len(labels) - 1)]
    for i in range(T):
        if enc["attention_mask"][i]:
            logits[i, NER_LABELS.index(chosen[i])] += margin + rng.uniform(0, 1.5)
    return logits


def gen_token_classification_words(ner_module, servers, rng):
    """Records of token_classification_words.jsonl: transformers' pipeline called with lists of words."""
    out = []

    def run(name, tokenizer, inputs, spans, kwargs, max_len, margin=3.0):
        config = make_config(NER_LABELS)
        tok = TokenizerShim(servers[tokenizer], max_len, "")
        pipe = ner_module.TokenClassificationPipeline.__new__(ner_module.TokenClassificationPipeline)
        pipe._args_parser = ner_module.TokenClassificationArgumentHandler()
        pipe.tokenizer = tok
        pipe.framework = "pt"
        pre, _, _ = pipe._sanitize_parameters(**{k: v for k, v in kwargs.items() if k != "ignore_labels"},
                                              is_split_into_words=True)
        batch = inputs if isinstance(inputs[0], list) else [inputs]
        queue, sentences = [], []
        for words, sentence_spans in zip(batch, spans):
            probe = tok(words, return_tensors="pt", truncation=True, return_special_tokens_mask=True,
                        return_offsets_mapping=True, is_split_into_words=True, **pre.get("tokenizer_params", {}))
            logits = []
            for w in range(len(probe["input_ids"])):
                l = word_logits(rng, probe._encodings[w], sentence_spans, margin)
                logits.append(l)
                queue.append(([probe["input_ids"][w].tolist()], Outputs(logits=torch.tensor(l[None]))))
            sentences.append({"words": words, "windows": [enc_record(strip_padding(e)) for e in probe._encodings],
                              "logits": [to_json(l[: sum(e["attention_mask"])])
                                         for l, e in zip(logits, probe._encodings)]})
        pipe.model = ModelShim(config, queue)
        result = pipe(inputs, is_split_into_words=True, **kwargs)
        assert not pipe.model.queue
        out.append({"name": name, "config": {"id2label": NER_LABELS, "model_max_length": max_len},
                    "tokenizer_patch": APS_PATCH if tokenizer == "aps" else [], "inputs": inputs,
                    "options": kwargs, "sentences": sentences, "expected": to_json(result)})

    for agg in NER_AGGREGATIONS:
        run(f"aps_{agg}", "aps", NER_WORDS, [NER_WORDS_SPANS], {"aggregation_strategy": agg}, 512)
    for agg in ["none", "simple", "first"]:  # transformers 5: no prefix space, no error
        run(f"plain_{agg}", "plain", NER_WORDS, [NER_WORDS_SPANS], {"aggregation_strategy": agg}, 512)
    for agg in ["none", "first", "average"]:
        run(f"odd_words_{agg}", "aps", NER_WORDS_ODD, [NER_WORDS_ODD_SPANS], {"aggregation_strategy": agg}, 512)
    run("delimiter_bar_first", "aps", NER_WORDS, [NER_WORDS_SPANS], {"aggregation_strategy": "first",
                                                                    "delimiter": "|"}, 512)
    run("delimiter_two_spaces_simple", "aps", NER_WORDS, [NER_WORDS_SPANS],
        {"aggregation_strategy": "simple", "delimiter": "  "}, 512)
    run("delimiter_empty_max", "plain", NER_WORDS, [NER_WORDS_SPANS], {"aggregation_strategy": "max", "delimiter": ""},
        512)
    run("batch_simple", "aps", [NER_WORDS, NER_WORDS_ODD, []], [NER_WORDS_SPANS, NER_WORDS_ODD_SPANS, []],
        {"aggregation_strategy": "simple"}, 512)
    run("truncated_first", "aps", NER_WORDS_LONG, [NER_WORDS_LONG_SPANS], {"aggregation_strategy": "first"}, 14)
    for agg in ["simple", "first", "max"]:
        run(f"stride_{agg}", "aps", NER_WORDS_LONG, [NER_WORDS_LONG_SPANS], {"aggregation_strategy": agg, "stride": 4},
            14, margin=1.5)
    run("stride_plain_average", "plain", NER_WORDS_LONG, [NER_WORDS_LONG_SPANS],
        {"aggregation_strategy": "average", "stride": 5}, 16, margin=1.5)
    # a stride without aggregation_strategy: every window's tokens, a token read twice once
    run("stride_no_aggregation", "aps", NER_WORDS_LONG, [NER_WORDS_LONG_SPANS], {"stride": 4}, 14, margin=1.5)
    run("stride_no_aggregation_ignore_nothing", "plain", NER_WORDS_LONG, [NER_WORDS_LONG_SPANS],
        {"stride": 5, "ignore_labels": []}, 16, margin=1.5)
    return out


def gen_token_classification_stride(ner_module, server, rng):
    """Records of token_classification_stride.jsonl: texts read in windows without an
    aggregation_strategy (transformers returns every window's tokens, aggregate_overlapping_entities
    keeping a token read by two windows once, the higher score)."""
    out = []

    def run(*args, **kwargs):
        out.append(ner_text_record(ner_module, server, rng, *args, **kwargs))

    run("stride_no_aggregation", NER_STRIDE_TEXT, NER_STRIDE_SPANS, {"stride": 5}, 20, margin=1.5)
    run("stride_no_aggregation_ignore_nothing", NER_STRIDE_TEXT, NER_STRIDE_SPANS,
        {"stride": 5, "ignore_labels": []}, 20, margin=1.5)
    run("stride_wide_no_aggregation", NER_STRIDE_TEXT, NER_STRIDE_SPANS,
        {"stride": 12, "ignore_labels": ["O", "DATE"]}, 24, margin=1.5)
    # short windows over <unk>, São Paulo and a newline; equal logits margins make close scores
    run("text1_small_windows_no_aggregation", NER_TEXTS[1][0], NER_TEXTS[1][1], {"stride": 3, "ignore_labels": []},
        10, margin=0.5)
    run("text2_stride_no_aggregation", NER_TEXTS[2][0], NER_TEXTS[2][1], {"stride": 6}, 14, margin=2.0)
    return out


# ------------------------------------------------------------------------------------------------
# question-answering

QA_LONG_CONTEXT = ("The Amazon rainforest covers much of the Amazon basin of South America. This basin "
                   "encompasses seven million square kilometres, of which five and a half million are covered "
                   "by the rainforest. The region includes territory belonging to nine nations. The majority "
                   "of the forest is contained within Brazil, with 60% of the rainforest, followed by Peru with "
                   "13%, Colombia with 10%, and with minor amounts in Venezuela, Ecuador, Bolivia, Guyana, "
                   "Suriname and French Guiana. The capital of Peru is Lima, and the largest city in Brazil "
                   "is São Paulo.")
# name, question, context, kwargs, answers: [(window, substring, occurrence, boost)], impossible boost
QA_CASES = [
    ("short_top1", "Where do I live?", "My name is Wolfgang and I live in Berlin", {},
     [(0, "Berlin", 0, 6.0)], 0.0),
    ("short_top3", "Where do I live?", "My name is Wolfgang and I live in Berlin, Germany.", {"top_k": 3},
     [(0, "Berlin", 0, 4.0), (0, "Germany", 0, 3.0)], 0.0),
    ("impossible_wins", "What is the answer?", "Nothing in this context answers that question at all.",
     {"top_k": 2, "handle_impossible_answer": True}, [(0, "context", 0, 2.0)], 9.0),
    ("impossible_loses", "Who wrote it?", "The book was written by Harper Lee in 1960.",
     {"top_k": 3, "handle_impossible_answer": True}, [(0, "Harper Lee", 0, 6.0)], 2.0),
    ("long_context_answer_in_second_window", "What is the capital of Peru?", QA_LONG_CONTEXT,
     {"max_seq_len": 48, "doc_stride": 16, "top_k": 2}, [(1, "Brazil", 0, 8.0), (4, "Lima", 0, 5.0)], 0.0),
    ("long_context_overlap_scores_add", "Which country has most of the forest?", QA_LONG_CONTEXT,
     {"max_seq_len": 40, "doc_stride": 20, "top_k": 3}, [(4, "Brazil", 0, 6.0), (5, "Brazil", 0, 6.0)], 0.0),
    ("long_context_default_doc_stride", "Which country has most of the forest?", QA_LONG_CONTEXT,
     {"max_seq_len": 64, "top_k": 2, "handle_impossible_answer": True}, [(1, "Brazil", 0, 5.0)], 1.0),
    ("no_align_to_words", "What city?", "The largest city is SãoPauloville indeed.",
     {"align_to_words": False, "top_k": 2}, [(0, "Paulo", 0, 6.0)], 0.0),
    ("align_to_words_inside_word", "What city?", "The largest city is SãoPauloville indeed.",
     {"top_k": 2}, [(0, "Paulo", 0, 6.0)], 0.0),
    ("max_answer_len_short", "Who?", "Pablo Diego José Francisco de Paula Picasso painted Guernica.",
     {"max_answer_len": 3, "top_k": 3}, [(0, "Pablo Diego José Francisco de Paula Picasso", 0, 4.0)], 0.0),
    ("case_insensitive_merge", "Where?", "Paris is nice; paris is big; PARIS is old.",
     {"top_k": 3}, [(0, "Paris", 0, 4.0), (0, "paris", 0, 4.0), (0, "PARIS", 0, 3.5)], 0.0),
    ("question_with_bos_token", "<s> Where is it?", "It is in Rome.", {"top_k": 2},
     [(0, "Rome", 0, 5.0)], 0.0),
    ("multiline_context", "Who?", "First line.\nSecond line with Ada Lovelace\n\tand tabs.",
     {"top_k": 4}, [(0, "Ada Lovelace", 0, 5.0)], 0.0),
]


def gen_question_answering(qa_module, server, rng, cases=QA_CASES, make_tok=None):
    """Records of question_answering*.jsonl. An answer's window is an index, or "all": every window
    whose context tokens hold the whole answer. make_tok: the tokenizer shim (roberta-base's by default)."""
    out = []
    for name, question, context, kwargs, answers, impossible in cases:
        config = make_config(["LABEL_0", "LABEL_1"])
        tok = make_tok(server) if make_tok else TokenizerShim(server, 512, "")
        pipe = qa_module.QuestionAnsweringPipeline.__new__(qa_module.QuestionAnsweringPipeline)
        pipe._args_parser = qa_module.QuestionAnsweringArgumentHandler()
        pipe.tokenizer = tok
        max_seq_len = kwargs.get("max_seq_len", min(512, 384))
        doc_stride = kwargs.get("doc_stride", min(max_seq_len // 2, 128))
        probe = tok(text=question, text_pair=context, padding="do_not_pad", truncation="only_second",
                    max_length=max_seq_len, stride=doc_stride, return_token_type_ids=True,
                    return_overflowing_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
        queue, logits, boosted = [], [], set()
        for w, enc in enumerate(probe._encodings):
            T = len(enc["ids"])
            start = rng.normal(0, 1, size=T).astype(np.float32)
            end = rng.normal(0, 1, size=T).astype(np.float32)
            for a, (win, sub, occ, boost) in enumerate(answers):
                if win != w and win != "all":
                    continue
                s, e = char_span(context, sub, occ)
                toks = [i for i in range(T) if enc["sequence_ids"][i] == 1 and enc["offsets"][i][1] > s
                        and enc["offsets"][i][0] < e]
                if win == "all" and not (toks and enc["offsets"][toks[0]][0] <= s and enc["offsets"][toks[-1]][1] >= e):
                    continue
                assert toks, (name, w, sub)
                boosted.add(a)
                start[toks[0]] += boost
                end[toks[-1]] += boost
            if name == "question_with_bos_token" and w == 0:
                start[1] += 7.0  # the <s> written in the question: HF leaves it unmasked (cls_token_id)
            start[0] += impossible
            end[0] += impossible
            logits.append({"start": start, "end": end})
            queue.append(([enc["ids"]], Outputs(start_logits=torch.tensor(start[None]),
                                                end_logits=torch.tensor(end[None]))))
        assert len(boosted) == len(answers), (name, boosted)
        pipe.model = ModelShim(config, queue)
        tok.log.clear()
        result = pipe(question=question, context=context, **kwargs)
        assert not pipe.model.queue
        if isinstance(result, dict):
            result = [result]
        log = tok.log[0]
        out.append({"name": name, "question": question, "context": context, "options": kwargs,
                    "max_seq_len": max_seq_len, "doc_stride": doc_stride,
                    "hf_0_23_windows_same": log["direct_same"],
                    "windows": [enc_record(e) for e in log["encodings"]],
                    "logits": [{"start": to_json(l["start"]), "end": to_json(l["end"])} for l in logits],
                    "expected": to_json(result)})
    return out


# ------------------------------------------------------------------------------------------------


# A BERT-style WordPiece tokenizer (tests/data/hf/wordpiece/tokenizer.json, some `model_type: roberta`
# checkpoints ship one): its model has a continuing_subword_prefix ("##"), so transformers tells
# subwords by their token strings, and the WordPiece decoder joins the words of a group.
NER_WORDPIECE_TEXTS = [
    ("안녕하세요 서울은 한국의 수도입니다.", [("서울은", 0, ["B-LOC", "I-LOC"]), ("한국", 0, ["B-LOC"])]),
    ("New York is a city in the world!", [("New York", 0, ["B-LOC", "I-LOC"])]),
    ("The quick brown fox jumps over the lazy dog.", [("fox jumps", 0, ["B-PER", "I-PER", "B-ORG"]),
                                                     ("dog", 0, ["MISC"])]),
    ("저는 학생입니다 unbelievably in 日本語 qqq 東京!", [("학생입니다", 0, ["B-PER", "O", "I-PER"]),
                                                      ("unbelievably", 0, ["B-ORG", "I-ORG", "B-ORG", "I-ORG"]),
                                                      ("日本語", 0, ["B-LOC", "I-LOC", "B-LOC"]),
                                                      ("qqq", 0, ["MISC"]), ("東京", 0, ["B-LOC", "I-LOC"])]),
]
# Uncased (the same tokenizer.json with BertNormalizer's lowercase, so strip_accents too): the words
# transformers gives are the lowercased, accent-free tokens joined; subwords still by their "##".
NER_WORDPIECE_UNCASED_TEXTS = [
    ("ÉCOLE Café NAÏVE İstanbul ΟΔΟΣ", [("ÉCOLE", 0, ["B-ORG", "I-ORG"]), ("Café", 0, ["B-LOC", "I-LOC"]),
                                      ("İstanbul", 0, ["B-LOC"]), ("ΟΔΟΣ", 0, ["MISC"])]),
    ("The Quick Brown FOX jumps over the lazy Dog, naïve cafe\u0301.",
     [("Quick Brown FOX", 0, ["B-PER", "I-PER", "I-PER"]), ("naïve cafe\u0301", 0, ["B-ORG", "I-ORG", "I-ORG"])]),
]
NER_WORDPIECE_STRIDE = (" ".join(t for t, _ in NER_WORDPIECE_TEXTS[:3]),
                        [("서울은", 0, ["B-LOC", "I-LOC"]), ("New York", 0, ["B-LOC", "I-LOC"]),
                         ("fox jumps", 0, ["B-PER", "I-PER", "I-PER"])])


def gen_token_classification_wordpiece(ner_module, server, rng, special_ids, uncased=False):
    out = []

    def run(name, text, spans, kwargs, max_len, margin=3.0):
        tok = TokenizerShim(server, max_len, "##", special_ids)
        out.append(ner_text_record(ner_module, server, rng, name, text, spans, kwargs, max_len, margin, tok=tok))

    if uncased:
        for t, (text, spans) in enumerate(NER_WORDPIECE_UNCASED_TEXTS):
            for agg in NER_AGGREGATIONS:
                run(f"wordpiece_uncased{t}_{agg}", text, spans, {"aggregation_strategy": agg}, 512)
        return out
    for t, (text, spans) in enumerate(NER_WORDPIECE_TEXTS):
        for agg in NER_AGGREGATIONS:
            run(f"wordpiece{t}_{agg}", text, spans, {"aggregation_strategy": agg}, 512, margin=2.0 if t == 3 else 3.0)
    for agg in [None, "simple", "first", "max"]:  # (no aggregation given: "none" with a stride is an error)
        run(f"wordpiece_stride_{agg or 'default'}", *NER_WORDPIECE_STRIDE,
            {"stride": 3, **({"aggregation_strategy": agg} if agg else {})}, 12, margin=1.5)
    return out


# ------------------------------------------------------------------------------------------------
# SentencePiece Unigram (tests/data/hf/unigram/tokenizer.json, XLMRobertaConverter's layout:
# Precompiled nmt_nfkc, Metaspace always/split, Unigram with unk_id 3). Its model has no
# continuing_subword_prefix, so transformers' fallback heuristic tells subwords (a token is a subword
# unless its first character or the one before it is U+0020); a token starting with "▁" has offsets
# that begin at the space before its word (or at the first character, at the start of a text); an
# <unk> token (adjacent unknown characters fused) gets the text under its offsets as its word and is
# never a subword; convert_tokens_to_string is the Metaspace decoder (the first token's "▁" dropped).

NER_UNIGRAM_TEXTS = [
    # entities after punctuation, an unknown CJK run after a lone "▁" token
    ("Angela Merkel visited Berlin (Germany) and 東京 on Monday.",
     [("Angela", 0, ["B-PER", "I-PER", "B-ORG"]), ("Merkel", 0, ["I-PER"]), ("Berlin", 0, ["B-LOC", "I-LOC"]),
      ("(Germany)", 0, ["O", "B-LOC", "I-LOC", "I-LOC", "I-LOC", "O"]), ("東京", 0, ["B-LOC"]),
      ("Monday", 0, ["DATE"])]),
    # accented letters the vocabulary lacks (<unk> inside words), a line break, two and three spaces
    ("São Paulo\nRio de Janeiro  and   Zürich, naïve café owners.",
     [("São", 0, ["B-LOC", "I-LOC", "B-LOC"]), ("Paulo", 0, ["I-LOC"]), ("Rio de Janeiro", 0, ["B-LOC", "I-LOC"]),
      ("Zürich", 0, ["B-LOC", "I-LOC", "I-LOC"]), ("naïve", 0, ["MISC", "O", "MISC"]),
      ("café", 0, ["B-ORG", "I-ORG"])]),
    # NFKC forms: full-width letters, the ﬁ and ﬃ ligatures (pieces sharing a character), an emoji
    ("The ｆｕｌｌ-width Ｔｏｋｙｏ office of Ｓｏｎｙ opened the ﬁnancial oﬃce 😀 today.",
     [("ｆｕｌｌ-width", 0, ["MISC", "O", "MISC"]), ("Ｔｏｋｙｏ", 0, ["B-LOC", "I-LOC"]),
      ("Ｓｏｎｙ", 0, ["B-ORG", "I-ORG"]), ("ﬁnancial oﬃce", 0, ["B-ORG", "I-ORG", "O", "I-ORG"]),
      ("😀", 0, ["MISC"]), ("today", 0, ["DATE"])]),
    # a tab, NBSP and U+3000 before words (normalized to spaces, but not U+0020 for the heuristic), quotes
    ("Meet\tAda Lovelace\u00a0in London\u3000today, with IBM's \"Apple\" team.",
     [("Ada Lovelace", 0, ["B-PER", "I-PER"]), ("London", 0, ["B-LOC"]), ("today", 0, ["DATE"]),
      ("IBM", 0, ["B-ORG", "I-ORG"]), ("Apple", 0, ["B-ORG", "I-ORG"])]),
    # an unknown run first (its "▁" and itself both at offset 0), a flag emoji, abbreviations
    ("東京 and 大阪 are in Japan 🇯🇵! Dr. Jekyll met Mr. Hyde in New York.",
     [("東京", 0, ["B-LOC"]), ("大阪", 0, ["B-LOC"]), ("Japan 🇯🇵", 0, ["B-LOC", "I-LOC"]),
      ("Jekyll", 0, ["B-PER", "I-PER"]), ("Hyde", 0, ["B-PER", "I-PER"]), ("New York", 0, ["B-LOC", "I-LOC"])]),
]
NER_UNIGRAM_STRIDE = (" ".join(NER_UNIGRAM_TEXTS[i][0] for i in (0, 1, 3)),
                      [span for i in (0, 1, 3) for span in NER_UNIGRAM_TEXTS[i][1]])

QA_UNIGRAM_CASES = [
    # name, question, context, kwargs, answers: [(window or "all", substring, occurrence, boost)], impossible boost
    ("short_top3", "Where do I live?", "My name is Wolfgang and I live in Berlin, Germany.", {"top_k": 3},
     [(0, "Berlin", 0, 4.0), (0, "Germany", 0, 3.0)], 0.0),
    ("answer_first_word", "Who lives in Berlin?", "Wolfgang lives in Berlin.", {"top_k": 2},
     [(0, "Wolfgang", 0, 5.0), (0, "Berlin", 0, 2.0)], 0.0),
    ("impossible_wins", "What is the answer?", "Nothing in this context answers that question at all.",
     {"top_k": 2, "handle_impossible_answer": True}, [(0, "context", 0, 2.0)], 9.0),
    ("impossible_loses", "Who wrote it?", "The book was written by Harper Lee in 1960.",
     {"top_k": 3, "handle_impossible_answer": True}, [(0, "Harper Lee", 0, 6.0)], 2.0),
    ("long_context_windows", "What is the capital of Peru?", QA_LONG_CONTEXT,
     {"max_seq_len": 48, "doc_stride": 16, "top_k": 3}, [("all", "Lima", 0, 6.0), ("all", "São Paulo", 0, 4.0)], 0.0),
    ("long_context_overlap_scores_add", "Which country has most of the forest?", QA_LONG_CONTEXT,
     {"max_seq_len": 48, "doc_stride": 20, "top_k": 3, "handle_impossible_answer": True},
     [("all", "Brazil", 0, 6.0)], 1.0),
    ("long_context_default_doc_stride", "Which country has most of the forest?", QA_LONG_CONTEXT,
     {"max_seq_len": 64, "top_k": 2}, [("all", "Brazil", 0, 5.0)], 0.0),
    ("unknown_characters", "What is the capital of Japan?",
     "The capital of Japan is 東京, and 大阪 is its second city.", {"top_k": 3}, [(0, "東京", 0, 5.0), (0, "大阪", 0, 3.0)], 0.0),
    ("unknown_character_inside_word", "Which city?", "The largest city is São Paulo in Brazil.", {"top_k": 3},
     [(0, "São Paulo", 0, 6.0), (0, "ão", 0, 3.0)], 0.0),
    ("several_spaces", "Who painted Guernica?", "It was painted by   Pablo    Picasso  in 1937.", {"top_k": 3},
     [(0, "Pablo    Picasso", 0, 5.0), (0, "1937", 0, 2.0)], 0.0),
    # (the same cases as in QA_CASES, with this tokenizer)
    *[c for c in QA_CASES if c[0] in ("no_align_to_words", "align_to_words_inside_word", "max_answer_len_short",
                                      "case_insensitive_merge")],
    ("multiline_context", "Who?", "First line.\nSecond line with Ada Lovelace\n\tand tabs.",
     {"top_k": 4}, [(0, "Ada Lovelace", 0, 5.0), (0, "and", 0, 2.0)], 0.0),
    ("nfkc_context", "Ｗｈｅｒｅ is the ﬁrm?", "The ﬁrm Ｓｏｎｙ is in Ｔｏｋｙｏ\u3000now.",
     {"top_k": 3}, [(0, "Ｔｏｋｙｏ", 0, 6.0), (0, "ﬁrm", 0, 3.0)], 0.0),
]


def unigram_special_ids(spec):
    """<s>, <pad>, <unk> ids of a Unigram tokenizer.json (its vocabulary is a list of [piece, score])."""
    ids = {piece: i for i, (piece, _) in enumerate(spec["model"]["vocab"])}
    assert ids["<unk>"] == spec["model"]["unk_id"]
    return ids["<s>"], ids["<pad>"], ids["<unk>"]


def gen_token_classification_unigram(ner_module, server, rng, special_ids):
    out = []

    def run(name, text, spans, kwargs, max_len, margin=3.0):
        tok = TokenizerShim(server, max_len, None, special_ids, model=UnigramModelShim())
        out.append(ner_text_record(ner_module, server, rng, name, text, spans, kwargs, max_len, margin, tok=tok))

    for t, (text, spans) in enumerate(NER_UNIGRAM_TEXTS):
        for agg in NER_AGGREGATIONS:
            run(f"unigram{t}_{agg}", text, spans, {"aggregation_strategy": agg}, 512, margin=2.0 if t == 2 else 3.0)
    for agg in [None, "simple", "first", "average", "max"]:  # (no aggregation given: "none" with a stride is an error)
        run(f"unigram_stride_{agg or 'default'}", *NER_UNIGRAM_STRIDE,
            {"stride": 4, **({"aggregation_strategy": agg} if agg else {})}, 16, margin=1.5)
    return out


def gen_question_answering_unigram(qa_module, server, rng, special_ids):
    return gen_question_answering(qa_module, server, rng, QA_UNIGRAM_CASES,
                                  lambda s: TokenizerShim(s, 512, None, special_ids, model=UnigramModelShim()))


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{os.path.basename(path)}: {len(records)} records")


def gen_ner_only(ner, tokenizer_json):
    """token_classification_words.jsonl and token_classification_stride.jsonl, each with its own seed:
    two tokenizers, roberta-base as published and with add_prefix_space (APS_PATCH), each behind its
    own HF tokenizer server."""
    import tempfile

    with open(tokenizer_json, encoding="utf-8") as f:
        spec = json.load(f)
    for pointer, value in APS_PATCH:
        node = spec
        keys = pointer.split("/")[1:]
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    with tempfile.TemporaryDirectory() as tmp:
        aps_json = os.path.join(tmp, "tokenizer.json")
        with open(aps_json, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        servers = {"plain": HfTokenizerServer(os.path.abspath(tokenizer_json)), "aps": HfTokenizerServer(aps_json)}
        try:
            return {"token_classification_words.jsonl":
                    gen_token_classification_words(ner, servers, np.random.default_rng(20261126)),
                    "token_classification_stride.jsonl":
                    gen_token_classification_stride(ner, servers["plain"], np.random.default_rng(20261127))}
        finally:
            for server in servers.values():
                server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transformers",
                    help="the src/transformers folder of a transformers checkout (its pipelines/ is read)")
    ap.add_argument("--sentence-transformers",
                    help="the sentence_transformers package folder of a sentence-transformers checkout")
    ap.add_argument("--legacy-text-classification",
                    help="text_classification.py of transformers 4.x (with return_all_scores); optional")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "..", "..", "..", "shared", "assets",
                                                        "roberta-base-tokenizer", "tokenizer.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "data", "pipelines"))
    ap.add_argument("--wordpiece-ner", metavar="TOKEN_CLASSIFICATION_PY",
                    help="write only token_classification_wordpiece.jsonl: this token_classification.py with the "
                         "WordPiece tokenizer of tests/data/hf/wordpiece (--wordpiece-tokenizer)")
    ap.add_argument("--wordpiece-tokenizer", default=os.path.join(HERE, "..", "..", "tests", "data", "hf", "wordpiece",
                                                                  "tokenizer.json"))
    ap.add_argument("--unigram-pipelines", nargs=2, metavar=("TOKEN_CLASSIFICATION_PY", "QUESTION_ANSWERING_PY"),
                    help="write only token_classification_unigram.jsonl and question_answering_unigram.jsonl: "
                         "these two pipeline files with the SentencePiece Unigram tokenizer of "
                         "tests/data/hf/unigram (--unigram-tokenizer)")
    ap.add_argument("--unigram-tokenizer", default=os.path.join(HERE, "..", "..", "tests", "data", "hf", "unigram",
                                                                "tokenizer.json"))
    ap.add_argument("--ner-only", metavar="TOKEN_CLASSIFICATION_PY",
                    help="write only token_classification_words.jsonl (is_split_into_words) and "
                         "token_classification_stride.jsonl (a stride without aggregation), from this "
                         "token_classification.py; --transformers and --sentence-transformers are then not read")
    args = ap.parse_args()
    if args.unigram_pipelines:
        install_transformers_stubs()
        import typing

        ner = load_source("transformers.pipelines.token_classification", args.unigram_pipelines[0],
                          {"Optional": typing.Optional})
        qa = load_source("transformers.pipelines.question_answering", args.unigram_pipelines[1])
        with open(args.unigram_tokenizer, encoding="utf-8") as f:
            special_ids = unigram_special_ids(json.load(f))
        server = HfTokenizerServer(os.path.abspath(args.unigram_tokenizer))
        try:
            ner_records = gen_token_classification_unigram(ner, server, np.random.default_rng(20261130), special_ids)
            qa_records = gen_question_answering_unigram(qa, server, np.random.default_rng(20261131), special_ids)
        finally:
            server.close()
        write_jsonl(os.path.join(args.out, "token_classification_unigram.jsonl"), ner_records)
        write_jsonl(os.path.join(args.out, "question_answering_unigram.jsonl"), qa_records)
        return
    if args.wordpiece_ner:
        install_transformers_stubs()
        import typing

        ner = load_source("transformers.pipelines.token_classification", args.wordpiece_ner,
                          {"Optional": typing.Optional})
        with open(args.wordpiece_tokenizer, encoding="utf-8") as f:
            spec = json.load(f)
        vocab = spec["model"]["vocab"]
        special_ids = (vocab["[CLS]"], vocab["[PAD]"], vocab["[UNK]"])
        server = HfTokenizerServer(os.path.abspath(args.wordpiece_tokenizer))
        try:
            records = gen_token_classification_wordpiece(ner, server, np.random.default_rng(20261128), special_ids)
        finally:
            server.close()
        write_jsonl(os.path.join(args.out, "token_classification_wordpiece.jsonl"), records)
        with tempfile.TemporaryDirectory() as tmp:  # the uncased tokenizer: lowercase (and strip_accents)
            spec["normalizer"]["lowercase"] = True
            uncased = os.path.join(tmp, "tokenizer.json")
            with open(uncased, "w", encoding="utf-8") as f:
                json.dump(spec, f, ensure_ascii=False)
            server = HfTokenizerServer(uncased)
            try:
                records = gen_token_classification_wordpiece(ner, server, np.random.default_rng(20261129), special_ids,
                                                             uncased=True)
            finally:
                server.close()
        write_jsonl(os.path.join(args.out, "token_classification_wordpiece_uncased.jsonl"), records)
        return
    if args.ner_only:
        install_transformers_stubs()
        # (one stored copy of the v5 file names typing.Optional in a signature without importing it)
        import typing

        ner = load_source("transformers.pipelines.token_classification", args.ner_only,
                          {"Optional": typing.Optional})
        for name, records in gen_ner_only(ner, args.tokenizer).items():
            write_jsonl(os.path.join(args.out, name), records)
        return

    if not args.transformers or not args.sentence_transformers:
        ap.error("--transformers and --sentence-transformers are needed (unless --ner-only)")
    install_transformers_stubs()
    pipes = os.path.join(args.transformers, "pipelines")
    tc = load_source("transformers.pipelines.text_classification", os.path.join(pipes, "text_classification.py"))
    zs = load_source("transformers.pipelines.zero_shot_classification",
                     os.path.join(pipes, "zero_shot_classification.py"))
    ner = load_source("transformers.pipelines.token_classification", os.path.join(pipes, "token_classification.py"))
    qa = load_source("transformers.pipelines.question_answering", os.path.join(pipes, "question_answering.py"))
    ce = install_sentence_transformers(args.sentence_transformers)

    os.makedirs(args.out, exist_ok=True)
    server = HfTokenizerServer(os.path.abspath(args.tokenizer))
    try:
        rng = np.random.default_rng(20240611)
        tc_records = gen_text_classification(tc, server, rng, TEXT_CASES)
        if args.legacy_text_classification:
            tc4 = load_source("transformers.pipelines.text_classification_v4", args.legacy_text_classification)
            tc_records += gen_text_classification(tc4, server, rng, LEGACY_TEXT_CASES, legacy=True)
        write_jsonl(os.path.join(args.out, "text_classification.jsonl"), tc_records)
        write_jsonl(os.path.join(args.out, "zero_shot_classification.jsonl"), gen_zero_shot(zs, server, rng))
        write_jsonl(os.path.join(args.out, "cross_encoder.jsonl"), gen_cross_encoder(ce, server, rng))
        write_jsonl(os.path.join(args.out, "token_classification.jsonl"), gen_token_classification(ner, server, rng))
        write_jsonl(os.path.join(args.out, "question_answering.jsonl"), gen_question_answering(qa, server, rng))
    finally:
        server.close()


if __name__ == "__main__":
    main()
