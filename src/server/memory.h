#pragma once
// Giving the server's free memory back to the system when it has nothing to do.
//
// A pass allocates and frees buffers of up to ~100 MB (activations of 16384 tokens, MLM logits).
// glibc raises its mmap threshold to the size of every mapped buffer freed (up to 32 MiB), so
// after the first passes such buffers come from the malloc arenas, are reused from there without
// page faults, and stay with the process once freed: RSS rises to the working set of the largest
// passes and stays there, also when idle. That RSS is flat, not a leak. Fixing the threshold low
// (mallopt(M_MMAP_THRESHOLD, 256 KiB)) keeps it lower under load, but makes every large pass map
// and fault in its buffers again, which costs throughput. So the arenas keep their memory while
// there is work, and release_free_memory() gives what is free back once there is none
// (docs/performance.md#figures-behind-the-code).
//
// What stays is mostly the forward pass's per-thread scratch buffers (up to 32 MiB each,
// util/scratch.h) and memory still in use in partly used pages.
//
//   batcher_options.on_idle = release_free_memory;   // the batcher calls it after 1 s without work
namespace roberta::server {

// malloc_trim(0): the free memory of every arena, at the top of its heap or in whole free pages
// inside it, back to the system.
void release_free_memory();

}  // namespace roberta::server
