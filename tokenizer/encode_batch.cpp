// Tokenizer::encode_batch and encode_words_batch: the inputs of a batch encoded on several threads.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "roberta/tokenizer.h"
#include "test_hooks.h"

namespace roberta {

void (*test_hooks::encode_batch_item)(size_t index) = nullptr;

namespace {

// Threads take chunks of 16 inputs from a shared counter; each result goes to its own slot, so the
// output is in input order whatever the scheduling. Every failure is caught where it happens (an
// exception must not escape a thread); the failure of the lowest index is rethrown here: a
// roberta::Error as "input N: message" with its kind, anything else (std::bad_alloc, ...) as it is.
template <class EncodeOne>
std::vector<Encoding> encode_each(size_t count, unsigned num_threads, EncodeOne&& encode_one) {
  std::vector<Encoding> out(count);
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  num_threads = static_cast<unsigned>(std::min<size_t>(num_threads, count));
  std::atomic<size_t> next{0};
  size_t first_error = count;  // index of the first failing input
  std::exception_ptr first_exception;
  std::mutex error_mutex;
  const auto work = [&] {
    constexpr size_t kChunk = 16;
    for (;;) {
      const size_t start = next.fetch_add(kChunk);
      if (start >= count) return;
      for (size_t i = start; i < std::min(start + kChunk, count); ++i) {
        try {
          if (test_hooks::encode_batch_item) test_hooks::encode_batch_item(i);
          out[i] = encode_one(i);
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (i < first_error) {
            first_error = i;
            first_exception = std::current_exception();
          }
        }
      }
    }
  };
  if (num_threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < num_threads; ++t) threads.emplace_back(work);
    work();
  }
  if (first_exception) {
    try {
      std::rethrow_exception(first_exception);
    } catch (const Error& e) {
      throw Error("input " + std::to_string(first_error + 1) + ": " + e.what(), e.kind());
    }
  }
  return out;
}

}  // namespace

std::vector<Encoding> Tokenizer::encode_batch(std::span<const std::string> texts, const EncodeOptions& options,
                                              unsigned num_threads) const {
  return encode_each(texts.size(), num_threads, [&](size_t i) { return encode(texts[i], options); });
}

std::vector<Encoding> Tokenizer::encode_words_batch(std::span<const WordsInput> inputs, const EncodeOptions& options,
                                                    unsigned num_threads) const {
  return encode_each(inputs.size(), num_threads, [&](size_t i) {
    return inputs[i].pair ? encode_words_pair(inputs[i].words, *inputs[i].pair, options)
                          : encode_words(inputs[i].words, options);
  });
}

}  // namespace roberta
