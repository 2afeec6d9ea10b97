#include "index/similarity.hpp"

#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "index/clones.hpp"

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

// int8 x int8 -> int32. GCC vectorizes the plain loop poorly (16-bit
// multiplies, then widening adds), so AVX2 gets it by hand. Sums stay far
// inside int32: 127 * 127 * kMaxDim < 2^31.
static int32_t dot_i8_plain(const int8_t* a, const int8_t* b, size_t n) {
    int32_t s = 0;
    for (size_t i = 0; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
    return s;
}

#if defined(__x86_64__) && defined(__GNUC__)
// pmaddubsw multiplies unsigned by signed bytes, so a's sign moves onto b:
// |a| * (b * sign(a)) = a * b, 32 products in two instructions instead of
// four widenings and two pmaddwd. Exact for values in [-127, 127], which is
// all that either int8 encoding here produces (usearch's cast of a unit
// vector, ScanRows' clamp): a pair of products then stays under 2 * 127^2 <
// 2^15, so pmaddubsw's int16 saturation never applies, and b * sign(a) never
// negates -128. (A -128 in a damaged index file misranks its graph walk
// only: every score is re-scored from the f32 vectors.)
// 32 products of a and b, summed in eight int32 lanes.
__attribute__((target("avx2"))) static inline __m256i dot_i8_block(const int8_t* a, const int8_t* b) {
    __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(va, va), _mm256_sign_epi8(vb, va));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

__attribute__((target("avx2"))) static int32_t dot_i8_avx2(const int8_t* a, const int8_t* b, size_t n) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    size_t i = 0;
    // Two accumulators: the adds of one block do not wait for the last.
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm256_add_epi32(acc0, dot_i8_block(a + i, b + i));
        acc1 = _mm256_add_epi32(acc1, dot_i8_block(a + i + 32, b + i + 32));
    }
    if (i + 32 <= n) {
        acc0 = _mm256_add_epi32(acc0, dot_i8_block(a + i, b + i));
        i += 32;
    }
    __m256i acc = _mm256_add_epi32(acc0, acc1);
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s) + dot_i8_plain(a + i, b + i, n - i);
}

// The same sign trick with AVX-512 VNNI: vpdpbusd multiplies unsigned by
// signed bytes and sums each four into an int32 lane in one instruction (no
// int16 step, so no saturation either). 64 products of a and b, added into
// acc's sixteen lanes.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static inline __m512i dot_i8_block512(__m512i acc,
                                                                                             const int8_t* a,
                                                                                             const int8_t* b) {
    __m512i va = _mm512_loadu_si512(a), vb = _mm512_loadu_si512(b);
    __m512i b_signed = _mm512_mask_sub_epi8(vb, _mm512_movepi8_mask(va), _mm512_setzero_si512(), vb);  // b * sign(a)
    return _mm512_dpbusd_epi32(acc, _mm512_abs_epi8(va), b_signed);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int32_t dot_i8_vnni(const int8_t* a, const int8_t* b,
                                                                                  size_t n) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        acc0 = dot_i8_block512(acc0, a + i, b + i);
        acc1 = dot_i8_block512(acc1, a + i + 64, b + i + 64);
    }
    for (; i + 64 <= n; i += 64) acc0 = dot_i8_block512(acc0, a + i, b + i);
    // Summed through memory: GCC 12's _mm512_reduce_add_epi32 warns of an
    // undefined register in its own header.
    alignas(64) int32_t lanes[16];
    _mm512_store_si512(lanes, _mm512_add_epi32(acc0, acc1));
    int32_t s = 0;
    for (int32_t x : lanes) s += x;
    return s + dot_i8_avx2(a + i, b + i, n - i);
}

int32_t dot_i8(const int8_t* a, const int8_t* b, size_t n) {
    static const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (vnni) return dot_i8_vnni(a, b, n);
    return avx2 ? dot_i8_avx2(a, b, n) : dot_i8_plain(a, b, n);
}
#else
int32_t dot_i8(const int8_t* a, const int8_t* b, size_t n) { return dot_i8_plain(a, b, n); }
#endif

// Eight lanes of double partial sums: one AVX-512 (two AVX2) vector of
// fused multiply-adds, each exact since the product is.
AGENTSENSUS_CLONES double dot_f32_i8(const float* a, const int8_t* b, size_t n) {
    double acc[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t j = 0; j < 8; ++j) acc[j] += double(a[i + j]) * double(b[i + j]);
    double s = 0.0;
    for (; i < n; ++i) s += double(a[i]) * double(b[i]);
    return s + (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
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
