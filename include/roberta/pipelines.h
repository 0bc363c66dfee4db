#pragma once
// Every pipeline: fill-mask and sentence embeddings (one header each).
#include "roberta/embedder.h"
#include "roberta/fill_mask.h"
