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
// f32 x int8 in double: every product is exact (24 + 8 bits of mantissa)
// and the sum's rounding negligible, so a caller can bound its error by the
// row's quantization alone (ScanRows::bounds_f32).
double dot_f32_i8(const float* a, const int8_t* b, size_t n);
// v as int8 scaled by its largest component (quantize.cpp): out = round-to-even(v / scale),
// scale = max |v_i| / 127 (1 for a zero vector); err = |v - scale * out| and
// norm = |v|, both summed in double.
void quantize_i8(const float* v, size_t n, int8_t* out, float& scale, float& err, float& norm);

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
