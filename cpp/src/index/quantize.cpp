// int8 quantization of the scan copy's rows and queries (scan_rows.hpp).
// Built without -ffast-math, unlike similarity.cpp: the rounding trick
// below and the order of the error sums must not be rewritten.
#include <algorithm>
#include <cmath>

#include "index/clones.hpp"
#include "index/similarity.hpp"

namespace agentsensus {

namespace {
// std::nearbyint under the default rounding mode (to nearest, ties to even),
// for |x| <= 128, inline: adding and taking away 1.5 * 2^23 rounds a float
// to an integer. std::nearbyint is a libm call per element on x86-64
// without SSE4.1 (3.7 us a row at dim 384, most of it those calls). Equal
// to std::rint on every float in [-128, 128] (checked exhaustively);
// quantize_i8's values are within [-127, 127] by construction. The file is
// built without -ffast-math, so the two additions are not folded away.
inline float round_to_even(float x) {
    constexpr float kShift = 12582912.0f;
    return (x + kShift) - kShift;
}
}  // namespace

// Eight independent lanes per sum, so each loop vectorizes; a scan encodes
// its query once per call and a row the first time it meets it.
AGENTSENSUS_CLONES void quantize_i8(const float* v, size_t n, int8_t* out, float& scale, float& err, float& norm) {
    float top[8] = {};
    double n2[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t j = 0; j < 8; ++j) {
            top[j] = std::max(top[j], std::fabs(v[i + j]));
            n2[j] += double(v[i + j]) * double(v[i + j]);
        }
    float t = 0.f;
    double sn = 0.0;
    for (; i < n; ++i) {
        t = std::max(t, std::fabs(v[i]));
        sn += double(v[i]) * double(v[i]);
    }
    for (size_t j = 0; j < 8; ++j) {
        t = std::max(t, top[j]);
        sn += n2[j];
    }
    scale = t > 0.f ? t / 127.f : 1.f;
    const float inv = 1.f / scale;
    const double sc = scale;
    double e2[8] = {};
    i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t j = 0; j < 8; ++j) {
            float r = std::min(127.f, std::max(-127.f, round_to_even(v[i + j] * inv)));
            out[i + j] = static_cast<int8_t>(r);
            double d = double(v[i + j]) - sc * double(r);
            e2[j] += d * d;
        }
    double se = 0.0;
    for (; i < n; ++i) {
        float r = std::min(127.f, std::max(-127.f, round_to_even(v[i] * inv)));
        out[i] = static_cast<int8_t>(r);
        double d = double(v[i]) - sc * double(r);
        se += d * d;
    }
    for (double x : e2) se += x;
    err = float(std::sqrt(se));
    norm = float(std::sqrt(sn));
}

}  // namespace agentsensus
