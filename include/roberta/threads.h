#pragma once
// How many threads the engine uses.
//
//   roberta::set_num_threads(4);   // before or between forward passes, from any thread
//   roberta::num_threads();        // 4
namespace roberta {

// Threads used by the engine's pool (0: all cores). OpenBLAS itself is kept single-threaded: the
// engine splits the work. Safe to call while other threads run forward passes: they finish on the
// pool they started with, and later passes use the new one.
void set_num_threads(unsigned n);
// The number of threads forward passes started now will use.
unsigned num_threads();

}  // namespace roberta
