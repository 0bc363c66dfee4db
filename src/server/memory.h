#pragma once
// How the server process holds memory from glibc's malloc.
//
// A pass allocates and frees buffers of up to ~100 MB (activations of 16384 tokens, MLM logits).
// glibc's default raises its mmap threshold to the size of every mapped buffer freed (up to 32
// MiB); from then on buffers of that size come from the per-thread arenas instead, and their
// memory stays with the process after it is freed. A 10-minute soak went 66 -> 192 MB that way and
// stayed there when idle; with the threshold fixed it ended at 85 MB.
//
//   configure_malloc();     // once, at start: large buffers are mapped, and unmapped when freed
//   release_free_memory();  // when idle: free memory of every arena back to the system
namespace roberta::server {

// mallopt(M_MMAP_THRESHOLD, 256 KiB), which also turns the dynamic threshold off. Process-wide:
// `roberta serve` calls it before loading the model.
void configure_malloc();
// malloc_trim(0). The batcher calls it after a second without work (BatcherOptions::on_idle).
void release_free_memory();

}  // namespace roberta::server
