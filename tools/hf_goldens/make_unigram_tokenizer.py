#!/usr/bin/python3
"""Two SentencePiece Unigram tokenizers for the tokenizer goldens, trained on the shared corpus with
Google's sentencepiece and converted to tokenizer.json as transformers' converters would write them.

    /usr/bin/python3 tools/hf_goldens/make_unigram_tokenizer.py tests/data/hf [CORPUS_DIR]

- OUT_DIR/unigram/tokenizer.json: an XLM-RoBERTa-style tokenizer. sentencepiece Unigram, 2,000
  pieces, nmt_nfkc (the default normalization rule, the one XLM-R's model has), converted as
  transformers' XLMRobertaConverter (an SpmConverter) does: vocabulary `<s>` `<pad>` `</s>` `<unk>`,
  then the model's pieces from id 3 on, then `<mask>`; unk_id 3; normalizer Sequence [Precompiled
  (the model's precompiled_charsmap), Strip right, Replace " {2,}" -> "▁"]; Metaspace pre-tokenizer
  and decoder (replacement "▁", prepend_scheme "always", split true); TemplateProcessing
  `<s> $A </s>` / `<s> $A </s> </s> $B </s>`; the added tokens transformers' XLMRobertaTokenizerFast
  holds (`<s>` `<pad>` `</s>` `<unk>` and `<mask>` with lstrip, all special, not normalized).
- OUT_DIR/unigram_byte_fallback/tokenizer.json: a small Unigram model (600 pieces) trained with
  byte_fallback and the identity normalization rule (its precompiled_charsmap is empty, so no
  Precompiled normalizer), laid out the same way but with `byte_fallback: true` (the model's
  `<0x00>`..`<0xFF>` pieces) and the Llama/Moshi converters' decoder (Replace "▁" -> " ",
  ByteFallback, Fuse, Strip one leading space).

The .model files are read with a small protobuf wire-format reader (no protobuf module here) and
checked against sentencepiece's own SentencePieceProcessor. Training runs on one thread with a
fixed seed; it is deterministic (two runs give byte-identical tokenizer.json files). A file that
is already there and differs from the new one is reported and kept unless --force is given.
"""
import argparse
import base64
import json
import os
import struct
import sys
import tempfile

import sentencepiece as spm

CORPUS_FILES = ['fiction.txt', 'nonfiction.txt', 'drama-poetry.txt']
SEED = 20240611

# sentencepiece_model.proto: SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def fields(buf):
    """(field number, wire type, value) of a protobuf message: int for varints, bytes otherwise."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = read_varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError('unsupported wire type %d' % wire)
        yield number, wire, value


def int32(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def parse_model(data):
    """The parts of a ModelProto the converters read (proto2 defaults where a field is absent)."""
    model = {'pieces': [], 'trainer_spec': {'model_type': 1, 'unk_id': 0, 'byte_fallback': False,
                                            'unk_piece': '<unk>'},
             'normalizer_spec': {'name': '', 'precompiled_charsmap': b''}}
    for number, _, value in fields(data):
        if number == 1:  # repeated SentencePiece pieces
            piece = {'piece': '', 'score': 0.0, 'type': NORMAL}
            for n, _, v in fields(value):
                if n == 1:
                    piece['piece'] = v.decode('utf-8')
                elif n == 2:
                    piece['score'] = struct.unpack('<f', v)[0]
                elif n == 3:
                    piece['type'] = v
            model['pieces'].append(piece)
        elif number == 2:  # TrainerSpec
            spec = model['trainer_spec']
            for n, _, v in fields(value):
                if n == 3:
                    spec['model_type'] = v
                elif n == 35:
                    spec['byte_fallback'] = bool(v)
                elif n == 40:
                    spec['unk_id'] = int32(v)
                elif n == 45:
                    spec['unk_piece'] = v.decode('utf-8')
        elif number == 3:  # NormalizerSpec
            spec = model['normalizer_spec']
            for n, _, v in fields(value):
                if n == 1:
                    spec['name'] = v.decode('utf-8')
                elif n == 2:
                    spec['precompiled_charsmap'] = bytes(v)
    return model


def check_against_processor(model, path):
    """The reader agrees with sentencepiece's own view of the model."""
    sp = spm.SentencePieceProcessor(model_file=path)
    assert sp.get_piece_size() == len(model['pieces'])
    for i, p in enumerate(model['pieces']):
        assert sp.id_to_piece(i) == p['piece'], i
        assert sp.get_score(i) == p['score'], i
        assert sp.is_unknown(i) == (p['type'] == UNKNOWN), i
        assert sp.is_control(i) == (p['type'] == CONTROL), i
        assert sp.is_byte(i) == (p['type'] == BYTE), i
    assert sp.unk_id() == model['trainer_spec']['unk_id']


def added(id_, content, lstrip=False):
    return {'id': id_, 'content': content, 'single_word': False, 'lstrip': lstrip, 'rstrip': False,
            'normalized': False, 'special': True}


def convert(model, byte_fallback_decoder):
    """tokenizer.json as XLMRobertaConverter (SpmConverter) writes it; with byte_fallback_decoder, the
    model's byte_fallback kept and the Llama/Moshi converters' decoder."""
    assert model['trainer_spec']['model_type'] == 1, 'not a Unigram model'
    pieces = model['pieces']
    assert [p['piece'] for p in pieces[:3]] == ['<unk>', '<s>', '</s>']
    # XLMRobertaConverter.vocab / unk_id
    vocab = [['<s>', 0.0], ['<pad>', 0.0], ['</s>', 0.0], ['<unk>', 0.0]]
    vocab += [[p['piece'], p['score']] for p in pieces[3:]]
    vocab += [['<mask>', 0.0]]
    ids = {t: i for i, (t, _) in enumerate(vocab)}
    assert len(ids) == len(vocab), 'duplicate pieces'
    # SpmConverter.tokenizer adds the CONTROL / USER_DEFINED pieces (<s> </s>: special, not
    # normalized); XLMRobertaTokenizerFast then adds its other special tokens (<pad>, <unk>, <mask>
    # with lstrip). Serialized in id order.
    extra = [p['piece'] for p in pieces if p['type'] == USER_DEFINED]
    assert not extra, 'user-defined pieces are not expected here'
    added_tokens = [added(0, '<s>'), added(1, '<pad>'), added(2, '</s>'), added(3, '<unk>'),
                    added(ids['<mask>'], '<mask>', lstrip=True)]
    # SpmConverter.normalizer
    charsmap = model['normalizer_spec']['precompiled_charsmap']
    normalizers = [{'type': 'Strip', 'strip_left': False, 'strip_right': True},
                   {'type': 'Replace', 'pattern': {'Regex': ' {2,}'}, 'content': '\u2581'}]
    if charsmap:
        normalizers.insert(0, {'type': 'Precompiled',
                               'precompiled_charsmap': base64.b64encode(charsmap).decode('ascii')})
    # SpmConverter.pre_tokenizer / decoder: add_prefix_space True (XLMRobertaTokenizer has no such
    # attribute), legacy True -> prepend_scheme "always"; Python's Metaspace has split=True.
    metaspace = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True}
    if byte_fallback_decoder:
        decoder = {'type': 'Sequence', 'decoders': [
            {'type': 'Replace', 'pattern': {'String': '\u2581'}, 'content': ' '},
            {'type': 'ByteFallback'}, {'type': 'Fuse'},
            {'type': 'Strip', 'content': ' ', 'start': 1, 'stop': 0}]}
    else:
        decoder = metaspace
    special = lambda t: {'SpecialToken': {'id': t, 'type_id': 0}}
    seq = lambda s: {'Sequence': {'id': s, 'type_id': 0}}
    post_processor = {
        'type': 'TemplateProcessing',
        'single': [special('<s>'), seq('A'), special('</s>')],
        'pair': [special('<s>'), seq('A'), special('</s>'), special('</s>'), seq('B'), special('</s>')],
        'special_tokens': {'</s>': {'id': '</s>', 'ids': [2], 'tokens': ['</s>']},
                           '<s>': {'id': '<s>', 'ids': [0], 'tokens': ['<s>']}},
    }
    return {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added_tokens,
        'normalizer': {'type': 'Sequence', 'normalizers': normalizers},
        'pre_tokenizer': metaspace, 'post_processor': post_processor, 'decoder': decoder,
        'model': {'type': 'Unigram', 'unk_id': 3, 'vocab': vocab,
                  'byte_fallback': bool(byte_fallback_decoder and model['trainer_spec']['byte_fallback'])},
    }


def train(tmp, name, corpus, **options):
    prefix = os.path.join(tmp, name)
    spm.set_random_generator_seed(SEED)
    spm.SentencePieceTrainer.train(
        input=','.join(os.path.join(corpus, f) for f in CORPUS_FILES), model_prefix=prefix,
        model_type='unigram', num_threads=1, minloglevel=2, **options)
    path = prefix + '.model'
    with open(path, 'rb') as f:
        model = parse_model(f.read())
    check_against_processor(model, path)
    return model


def write(out_dir, name, doc, force):
    text = json.dumps(doc, indent=2, ensure_ascii=False) + '\n'
    path = os.path.join(out_dir, name, 'tokenizer.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        with open(path, encoding='utf-8') as f:
            old = f.read()
        if old == text:
            print('%s: unchanged' % path)
            return
        if not force:
            print('%s: the new training differs from the file there; kept it (--force replaces it)' % path)
            return
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    print('%s: written (%d pieces, %d bytes)' % (path, len(doc['model']['vocab']), len(text.encode())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out_dir')
    ap.add_argument('corpus', nargs='?', default=os.path.join(
        os.environ.get('ROBERTA_ASSETS', '/work/shared/assets'), 'corpus'))
    ap.add_argument('--force', action='store_true', help='replace files that differ from a new training')
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # XLM-R's sentencepiece model: Unigram, nmt_nfkc, <unk> <s> </s> at 0 1 2 (the defaults).
        xlmr = train(tmp, 'unigram', args.corpus, vocab_size=2000, normalization_rule_name='nmt_nfkc')
        assert xlmr['normalizer_spec']['precompiled_charsmap']
        write(args.out_dir, 'unigram', convert(xlmr, False), args.force)
        small = train(tmp, 'unigram_byte_fallback', args.corpus, vocab_size=600, byte_fallback=True,
                      normalization_rule_name='identity')
        assert not small['normalizer_spec']['precompiled_charsmap']
        assert [p['piece'] for p in small['pieces'] if p['type'] == BYTE] == ['<0x%02X>' % b for b in range(256)]
        write(args.out_dir, 'unigram_byte_fallback', convert(small, True), args.force)


if __name__ == '__main__':
    sys.exit(main())
