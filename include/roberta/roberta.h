#pragma once
// roberta.cpp: RoBERTa-family encoders on the CPU. Include this for the whole public API.
// (Developer-facing pieces — safetensors and .npy readers — are in roberta/dev/.)
#include "roberta/config.h"
#include "roberta/error.h"
#include "roberta/hub.h"
#include "roberta/model.h"
#include "roberta/pipelines.h"
#include "roberta/runtime.h"
#include "roberta/threads.h"
#include "roberta/tokenizer.h"
