// Exact similarity kernels, used for owner scans and for re-checking what
// committed meanwhile. Higher is more similar for every metric.
#pragma once
#include <cstddef>
#include <cstdint>

#include "agentsensus/options.hpp"

namespace agentsensus {

float dot(const float* a, const float* b, size_t n);
float l2sq(const float* a, const float* b, size_t n);
// Integer dot product of int8 vectors (the scan copy, scan_rows.hpp, and the
// int8 graph's walk); exact for components in [-127, 127].
int32_t dot_i8(const int8_t* a, const int8_t* b, size_t n);

// Similarity under the store's metric. Under cos the stored and query vectors
// are unit length, so it is the dot product.
inline float similarity(Metric m, const float* a, const float* b, size_t n) {
    return m == Metric::l2sq ? -l2sq(a, b, n) : dot(a, b, n);
}

// The same kernels in the shape usearch calls a custom metric with
// (pointers and dimensions as integers), as distances: lower is closer.
float ip_distance(uintptr_t a, uintptr_t b, uintptr_t n);
float l2sq_distance(uintptr_t a, uintptr_t b, uintptr_t n);

// Scales v to unit length in place; false when its norm is zero.
bool normalize(float* v, size_t n);

}  // namespace agentsensus
