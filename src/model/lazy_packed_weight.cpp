#include "model/lazy_packed_weight.h"

#include <atomic>
#include <mutex>

namespace roberta {

struct LazyPackedWeight::State {
  const float* w;
  size_t n, k;
  std::function<void()> release_original;
  std::once_flag once;
  kernels::PackedWeight packed;
  std::atomic<bool> done{false};
};

LazyPackedWeight::LazyPackedWeight(const float* w, size_t n, size_t k, std::function<void()> release_original)
    : state_(std::make_shared<State>()) {
  state_->w = w, state_->n = n, state_->k = k;
  state_->release_original = std::move(release_original);
}

const kernels::PackedWeight& LazyPackedWeight::get() const {
  State& s = *state_;
  std::call_once(s.once, [&] {
    s.packed = kernels::PackedWeight(s.w, s.n, s.k);
    if (s.release_original) s.release_original();
    s.done.store(true, std::memory_order_release);
  });
  return s.packed;
}

size_t LazyPackedWeight::bytes() const {
  return state_ && state_->done.load(std::memory_order_acquire) ? state_->packed.bytes() : 0;
}

}  // namespace roberta
