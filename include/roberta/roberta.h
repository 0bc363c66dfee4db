#pragma once
// roberta.cpp: RoBERTa-family encoders on the CPU. Include this for everything.
#include "roberta/config.h"
#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/npy.h"
#include "roberta/tokenizer.h"
#include "roberta/weights.h"

namespace roberta {

// Threads used by the engine (0: all cores). Call before the first forward(); later calls
// rebuild the pool. OpenBLAS itself is kept single-threaded: the engine splits the work.
void set_num_threads(unsigned n);

}  // namespace roberta
