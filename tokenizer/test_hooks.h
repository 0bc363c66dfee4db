#pragma once
// Test-only hooks into the tokenizer library. Internal: tests set them to reach failures that no
// input can cause; production code never sets them, and a null hook costs one load and branch.
#include <cstddef>

namespace roberta::test_hooks {

// Called by Tokenizer::encode_batch with the index of each text just before encoding it, on the
// thread that encodes it (a test makes it throw there). Set it only while no encode_batch runs.
extern void (*encode_batch_item)(size_t index);

}  // namespace roberta::test_hooks
