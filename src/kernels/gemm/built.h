#pragma once
// Which of the packed GEMMs' instruction-set kernels this compiler builds: GCC 10+ has the AVX-512
// intrinsics the AVX512-BF16, -VNNI and -BW kernels use; AVX-VNNI needs GCC 11 or clang 12 (Apple's
// clang numbers its versions apart from LLVM's: avxvnni from its 13).
#if defined(__x86_64__)
#define ROBERTA_HAVE_AVX2_INT8_KERNEL 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define ROBERTA_HAVE_BF16_KERNEL 1
#define ROBERTA_HAVE_VNNI_KERNEL 1
#endif
#if defined(__x86_64__) && (defined(__apple_build_version__) ? __clang_major__ >= 13                  \
                            : defined(__clang__)             ? __clang_major__ >= 12                  \
                                                             : defined(__GNUC__) && __GNUC__ >= 11)
#define ROBERTA_HAVE_AVX_VNNI_KERNEL 1
#endif
