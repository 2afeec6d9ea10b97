// One binary for every x86-64: target_clones compiles a kernel for AVX-512,
// AVX2 + FMA and the baseline, and the loader picks one per CPU (resolved
// once, at load time). Wheels target baseline x86-64.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define AGENTSENSUS_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define AGENTSENSUS_CLONES
#endif
