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

// fn(worker, i) for every i < n on `workers` threads (the caller's among
// them), worker < workers naming the thread, so that each may own a
// resource (a read transaction) no other thread touches.
template <class F> void parallel_on(size_t n, size_t workers, F&& fn) {
    workers = std::max<size_t>(1, std::min(workers, n));
    if (workers == 1) {
        for (size_t i = 0; i < n; ++i) fn(size_t{0}, i);
        return;
    }
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto run = [&](size_t w) {
        try {
            for (size_t i; (i = next.fetch_add(1)) < n && !failed.load();) fn(w, i);
        } catch (...) {
            if (!failed.exchange(true)) failure = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
    run(0);
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
}

// The threads worth starting for n items: one per core, at most one per
// kParallelMin / 2 items.
inline size_t parallel_workers(size_t n) {
    size_t hw = std::max<size_t>(1, std::thread::hardware_concurrency());
    return std::max<size_t>(1, std::min(hw, n / (kParallelMin / 2)));
}

template <class F> void parallel_for(size_t n, F&& fn) {
    parallel_on(n, parallel_workers(n), [&](size_t, size_t i) { fn(i); });
}

}  // namespace agentsensus
