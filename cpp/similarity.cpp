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

AGENTSENSUS_CLONES float dot(const float* a, const float* b, size_t n) {
    float s = 0.f;
    for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

AGENTSENSUS_CLONES float l2sq(const float* a, const float* b, size_t n) {
    float s = 0.f;
    for (size_t i = 0; i < n; ++i) {
        float d = a[i] - b[i];
        s += d * d;
    }
    return s;
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
