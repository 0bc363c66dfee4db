#pragma once
// Every pipeline, one header each: fill-mask, sentence embeddings (dense, sparse, bge-m3's), text
// classification, zero-shot classification, cross-encoder reranking, token classification (NER)
// and question answering.
#include "roberta/cross_encoder.h"
#include "roberta/embedder.h"
#include "roberta/fill_mask.h"
#include "roberta/late_chunking.h"
#include "roberta/m3_embedder.h"
#include "roberta/quantization.h"
#include "roberta/question_answerer.h"
#include "roberta/sparse_encoder.h"
#include "roberta/text_classifier.h"
#include "roberta/token_classifier.h"
#include "roberta/zero_shot_classifier.h"
