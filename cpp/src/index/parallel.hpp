// A minimal parallel loop for the engine's independent batch work (index
// searches in prepare, index insertions in catch-up). Small batches run
// inline: a thread costs more than a handful of searches.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace agentsensus {

constexpr size_t kParallelMin = 16;  // items below which threads do not pay

template <class F> void parallel_for(size_t n, F&& fn) {
    size_t hw = std::max<size_t>(1, std::thread::hardware_concurrency());
    size_t workers = std::min(hw, n / (kParallelMin / 2));
    if (workers <= 1) {
        for (size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto run = [&] {
        try {
            for (size_t i; (i = next.fetch_add(1)) < n && !failed.load();) fn(i);
        } catch (...) {
            if (!failed.exchange(true)) failure = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(run);
    run();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace agentsensus
