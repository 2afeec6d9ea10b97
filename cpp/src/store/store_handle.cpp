#include "agentsensus/store_handle.hpp"

#include <unistd.h>

#include <mutex>

#include "agentsensus/errors.hpp"
#include "lmdb/open_registry.hpp"

namespace agentsensus {

StoreHandle::StoreHandle(const std::string& dir, const StoreOptions& o)
    : dir_(dir), generation_(fork_generation()), pid_(getpid()), store_(std::make_unique<Store>(dir, o)) {}

StoreHandle::~StoreHandle() {
    try {
        close();
    } catch (...) {
        // A destructor must not throw; close() explicitly to see errors.
    }
}

void StoreHandle::check_process() const {
    // One atomic load per call: fork_generation() only moves in a child.
    if (generation_ != fork_generation())
        throw Error("the store at " + dir_ + " was opened by process " + std::to_string(pid_) +
                    " and cannot be used in this forked child (pid " + std::to_string(getpid()) +
                    "; LMDB forbids it): open the store again in the child");
}

StoreHandle::Use StoreHandle::checked(std::shared_lock<std::shared_mutex> lock) {
    if (!store_) throw Error("store is closed");
    return Use(std::move(lock), store_.get());
}

StoreHandle::Use StoreHandle::use() {
    check_process();  // before the lock: a child may inherit it held
    return checked(std::shared_lock<std::shared_mutex>(mu_));
}

std::optional<StoreHandle::Use> StoreHandle::try_use() {
    check_process();
    std::shared_lock<std::shared_mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return std::nullopt;
    return checked(std::move(lock));
}

void StoreHandle::close() {
    if (generation_ != fork_generation()) {
        // The parent still uses this environment and index file: the child
        // neither saves nor unmaps anything, and leaves the memory to exit.
        (void)store_.release();
        closed_.store(true, std::memory_order_release);
        return;
    }
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (!store_) return;
    closed_.store(true, std::memory_order_release);
    std::unique_ptr<Store> s = std::move(store_);
    s->close();
}

}  // namespace agentsensus
