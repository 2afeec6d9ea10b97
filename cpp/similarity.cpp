#include "similarity.hpp"

#include <cmath>

// Wheels target baseline x86-64; target_clones lets the same binary use AVX2
// or AVX-512 where the CPU has them (resolved once, at load time).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define AGENTSENSUS_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define AGENTSENSUS_CLONES
#endif

namespace agentsensus {

// 32 lanes of partial sums: four independent vector accumulators at AVX2
// width, so the loop is bound by loads, not by the add latency.
AGENTSENSUS_CLONES float dot(const float* a, const float* b, size_t n) {
    float acc[32] = {};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t j = 0; j < 32; ++j) acc[j] += a[i + j] * b[i + j];
    float s = 0.f;
    for (; i < n; ++i) s += a[i] * b[i];
    for (float x : acc) s += x;
    return s;
}

AGENTSENSUS_CLONES float l2sq(const float* a, const float* b, size_t n) {
    float acc[32] = {};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t j = 0; j < 32; ++j) {
            float d = a[i + j] - b[i + j];
            acc[j] += d * d;
        }
    float s = 0.f;
    for (; i < n; ++i) {
        float d = a[i] - b[i];
        s += d * d;
    }
    for (float x : acc) s += x;
    return s;
}

float ip_distance(uintptr_t a, uintptr_t b, uintptr_t n) {
    return 1.f - dot(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), n);
}

float l2sq_distance(uintptr_t a, uintptr_t b, uintptr_t n) {
    return l2sq(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), n);
}

bool normalize(float* v, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += double(v[i]) * double(v[i]);
    if (!(s > 0.0) || !std::isfinite(s)) return false;
    float inv = float(1.0 / std::sqrt(s));
    for (size_t i = 0; i < n; ++i) v[i] *= inv;
    return true;
}

}  // namespace agentsensus
