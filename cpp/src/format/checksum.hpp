// A fast 64-bit checksum for detecting damaged files (not a defence against
// an adversary): four independent XXH64-style lanes, so it runs at memory
// speed on any CPU without intrinsics.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace agentsensus {

inline uint64_t checksum64(const unsigned char* p, size_t n) {
    constexpr uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL;
    auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
    auto round = [&](uint64_t acc, uint64_t w) { return rotl(acc + w * P2, 31) * P1; };
    uint64_t a = P1 + P2, b = P2, c = 0, d = 0 - P1;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        std::memcpy(w, p + i, 32);
        a = round(a, w[0]);
        b = round(b, w[1]);
        c = round(c, w[2]);
        d = round(d, w[3]);
    }
    uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = rotl(h ^ round(0, w), 27) * P1;
    }
    for (; i < n; ++i) h = rotl(h ^ (p[i] * P1), 11) * P2;
    h ^= n;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    return h;
}

}  // namespace agentsensus
