// An open Store as concurrent callers share it. Every call holds the store
// open while it runs (a shared lock); close() takes the lock exclusively, so
// it waits for the calls in flight, and every call after it raises "store is
// closed" instead of reaching freed memory. In a process forked after the
// open, every call raises (LMDB forbids using an environment across fork),
// and close() abandons the store without touching its files.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>

#include "agentsensus/store.hpp"

namespace agentsensus {

class StoreHandle {
public:
    StoreHandle(const std::string& dir, const StoreOptions& o);
    ~StoreHandle();
    StoreHandle(const StoreHandle&) = delete;
    StoreHandle& operator=(const StoreHandle&) = delete;

    // The store, held open for as long as this lives: one call's worth.
    class Use {
    public:
        Store& operator*() const { return *store_; }
        Store* operator->() const { return store_; }

    private:
        friend class StoreHandle;
        Use(std::shared_lock<std::shared_mutex> lock, Store* s) : lock_(std::move(lock)), store_(s) {}
        std::shared_lock<std::shared_mutex> lock_;
        Store* store_;
    };

    // Waits while close() runs. Throws Error when closed or in a forked child.
    Use use();
    // The same without waiting: nullopt when close() holds the lock (so a
    // caller holding another lock, such as Python's, can drop it and wait).
    std::optional<Use> try_use();
    // Waits for the calls in flight, then saves the index and closes.
    // Idempotent. In a forked child: abandons the store (see above).
    void close();
    bool closed() const { return closed_.load(std::memory_order_acquire); }

private:
    void check_process() const;
    Use checked(std::shared_lock<std::shared_mutex> lock);

    const std::string dir_;
    const uint64_t generation_;  // fork_generation() at open
    const pid_t pid_;            // the opening process, for the message
    std::shared_mutex mu_;
    std::unique_ptr<Store> store_;
    std::atomic<bool> closed_{false};
};

}  // namespace agentsensus
