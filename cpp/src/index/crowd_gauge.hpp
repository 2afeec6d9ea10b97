// Whether a store's neighbourhoods are crowded (store_recall.cpp, search_owned):
// where most searches' k-th best lies near the edge of the walk, the crowded
// rule follows the first search with a wider one anyway, so the plan starts
// at the wider width and skips the first.
//
// Measured, not learned from the recalls served: a verdict taken from
// earlier queries would make one query's answer depend on which queries came
// before it. The verdict is a function of the store (fixed probes, see
// Store::neighbourhoods_crowded), taken once per open and again each time the
// store has doubled since. Thread-safe: threads that measure at once measure
// the same thing.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace agentsensus {

// The crowded rule's wider width: kCrowdedWiden times the search width, or
// width * log2(total) / 4 when that is more, so that it grows with the
// graph's depth past 2^16 records (256, 266 and 319 of 64 at 10k, 100k and
// 1M; why, in store_recall.cpp at the crowded rule).
constexpr size_t kCrowdedWiden = 4;
inline size_t crowded_width(size_t width, size_t total) {
    const double depth = std::log2(static_cast<double>(std::max<size_t>(total, 2)));
    return std::max(kCrowdedWiden * width, static_cast<size_t>(std::ceil(static_cast<double>(width) * depth / 4)));
}

class CrowdGauge {
public:
    // How many probes a verdict takes, and crowded when more than half are.
    static constexpr size_t kProbes = 32;

    // The verdict for a store of `total` records; none when never measured or
    // the store has doubled since it was.
    std::optional<bool> verdict(size_t total) const {
        const uint64_t s = state_.load(std::memory_order_relaxed);
        if (s == 0 || total >= 2 * (s >> 1)) return std::nullopt;
        return (s & 1) != 0;
    }
    void set(size_t total, bool crowded) {
        // total >= 1 here (a search ran), so a set state is never 0.
        state_.store((static_cast<uint64_t>(total) << 1) | (crowded ? 1u : 0u), std::memory_order_relaxed);
    }

private:
    std::atomic<uint64_t> state_{0};  // records measured at << 1 | crowded; 0: not measured
};

}  // namespace agentsensus
