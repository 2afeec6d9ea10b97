// quantize_i8 (cpp/src/index/quantize.cpp) and dot_f32_i8 (similarity.cpp),
// the two kernels behind the scan copy's error bounds: every int8 value must
// be v / scale rounded to nearest (ties to even) and clamped, and err and
// norm must be the norms they claim, or a bound rules out a true hit. Built
// under -ffast-math in an optimized build, the rounding trick folds away
// and this fails (checked).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "check.hpp"
#include "index/similarity.hpp"

using namespace agentsensus;

TEST(quantize_rounds_each_component_and_reports_its_error) {
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.f, 0.05f);
    for (size_t n = 1; n <= 70; ++n)
        for (int trial = 0; trial < 4; ++trial) {
            std::vector<float> v(n);
            for (float& x : v) x = nd(rng);
            std::vector<int8_t> out(n);
            float scale = 0, err = 0, norm = 0;
            quantize_i8(v.data(), n, out.data(), scale, err, norm);
            float top = 0;
            double e2 = 0, n2 = 0;
            for (size_t i = 0; i < n; ++i) top = std::max(top, std::fabs(v[i]));
            CHECK(scale == top / 127.f);
            for (size_t i = 0; i < n; ++i) {
                CHECK(out[i] == int8_t(std::max(-127.f, std::min(127.f, std::nearbyint(v[i] * (1.f / scale))))));
                double d = double(v[i]) - double(scale) * double(out[i]);
                e2 += d * d;
                n2 += double(v[i]) * double(v[i]);
            }
            CHECK(std::fabs(err - std::sqrt(e2)) <= 1e-6 * (std::sqrt(e2) + 1e-9));
            CHECK(std::fabs(norm - std::sqrt(n2)) <= 1e-6 * std::sqrt(n2));
        }
}

TEST(quantize_of_zero_and_of_ties) {
    std::vector<float> zero(9, 0.f);
    std::vector<int8_t> out(9, 5);
    float scale = 0, err = 1, norm = 1;
    quantize_i8(zero.data(), zero.size(), out.data(), scale, err, norm);
    CHECK(scale == 1.f && err == 0.f && norm == 0.f);
    for (int8_t x : out) CHECK(x == 0);
    // 127 and halves of it: 0.5 and 1.5 round to even (0 and 2).
    std::vector<float> ties = {127.f, 0.5f, 1.5f, -2.5f, 126.5f, 0.f, 0.f, 0.f, 3.5f};
    quantize_i8(ties.data(), ties.size(), out.data(), scale, err, norm);
    CHECK(scale == 1.f);
    const int8_t want[] = {127, 0, 2, -2, 126, 0, 0, 0, 4};
    for (size_t i = 0; i < ties.size(); ++i) CHECK(out[i] == want[i]);
}

TEST(dot_f32_i8_is_the_exact_sum) {
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    std::uniform_int_distribution<int> iv(-127, 127);
    for (size_t n = 0; n <= 40; ++n) {
        std::vector<float> a(n);
        std::vector<int8_t> b(n);
        long double want = 0;
        for (size_t i = 0; i < n; ++i) {
            a[i] = nd(rng), b[i] = int8_t(iv(rng));
            want += (long double)a[i] * b[i];
        }
        CHECK(std::fabs((long double)dot_f32_i8(a.data(), b.data(), n) - want) <= 1e-12L * (std::fabs(want) + 1));
    }
}

int main() { return check::run_all(); }
