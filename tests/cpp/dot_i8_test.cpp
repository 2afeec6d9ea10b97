// dot_i8 (cpp/src/index/similarity.cpp) against the plain sum of products, over every
// length up to past two AVX2 blocks and the extremes of the range both int8
// encodings produce ([-127, 127]): the kernel's sign trick and int16 pair
// sums must give the exact integer.
#include <cstdint>
#include <random>
#include <vector>

#include "check.hpp"
#include "index/similarity.hpp"

using namespace agentsensus;

namespace {

int64_t reference(const std::vector<int8_t>& a, const std::vector<int8_t>& b) {
    int64_t s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += int64_t(a[i]) * int64_t(b[i]);
    return s;
}

}  // namespace

TEST(random_vectors_of_every_length) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> v(-127, 127);
    for (size_t n = 0; n <= 200; ++n)
        for (int trial = 0; trial < 4; ++trial) {
            std::vector<int8_t> a(n), b(n);
            for (size_t i = 0; i < n; ++i) a[i] = int8_t(v(rng)), b[i] = int8_t(v(rng));
            CHECK_EQ(int64_t(dot_i8(a.data(), b.data(), n)), reference(a, b));
        }
}

TEST(the_extremes_of_the_range) {
    // Every pair of products at its largest magnitude, both signs, and zeros
    // (where the sign trick zeroes b).
    const int8_t values[] = {127, -127, 0, 1, -1};
    for (int8_t x : values)
        for (int8_t y : values) {
            for (size_t n : {size_t(31), size_t(32), size_t(64), size_t(384), size_t(385)}) {
                std::vector<int8_t> a(n, x), b(n, y);
                CHECK_EQ(int64_t(dot_i8(a.data(), b.data(), n)), reference(a, b));
            }
        }
    std::vector<int8_t> a(384), b(384);
    for (size_t i = 0; i < a.size(); ++i) a[i] = i % 2 ? 127 : -127, b[i] = i % 3 ? -127 : 127;
    CHECK_EQ(int64_t(dot_i8(a.data(), b.data(), a.size())), reference(a, b));
}

int main() { return check::run_all(); }
