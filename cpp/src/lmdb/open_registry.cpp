#include "lmdb/open_registry.hpp"

#include <pthread.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "agentsensus/errors.hpp"

namespace agentsensus {

namespace {

struct Held {
    std::string path;  // as the holder named it
    OpenClaim::Purpose purpose;
    uint64_t token;
    uint64_t generation;  // fork_generation() when claimed
};

std::atomic<uint64_t> g_generation{0};

// The registry, built on first use and never destroyed (claims may be
// released from static destructors at exit).
struct Registry {
    std::mutex mu;
    std::map<std::pair<dev_t, ino_t>, Held> held;
    uint64_t next_token = 1;

    Registry() {
        // Around fork(): the forking thread holds the lock, so the child
        // never inherits it locked by a thread that does not exist there.
        pthread_atfork([] { get().mu.lock(); }, [] { get().mu.unlock(); },
                       [] {
                           g_generation.fetch_add(1, std::memory_order_relaxed);
                           get().mu.unlock();
                       });
    }
    static Registry& get() {
        static Registry* r = new Registry();
        return *r;
    }
};

// Registered when the library loads, so that a fork before the first open
// is counted too.
const bool g_registered = (Registry::get(), true);

}  // namespace

uint64_t fork_generation() { return g_generation.load(std::memory_order_relaxed); }

OpenClaim::OpenClaim(const std::string& dir, Purpose purpose) {
    (void)g_registered;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) throw Error("cannot stat " + dir + ": " + std::strerror(errno));
    Registry& r = Registry::get();
    std::lock_guard<std::mutex> lock(r.mu);
    const uint64_t gen = fork_generation();
    auto key = std::make_pair(st.st_dev, st.st_ino);
    auto it = r.held.find(key);
    if (it != r.held.end() && it->second.generation == gen) {
        const Held& h = it->second;
        std::string at = "the store at " + dir + (h.path == dir ? "" : " (held as " + h.path + ")");
        if (h.purpose == Purpose::compact)
            throw Error(at + " is being compacted in this process: open it when compact returns");
        if (purpose == Purpose::compact) throw Error(at + " is open in this process: close it before compacting");
        throw Error(at +
                    " is already open in this process (LMDB allows one open per store per process; "
                    "share the Store object)");
    }
    uint64_t token = r.next_token++;
    r.held[key] = Held{dir, purpose, token, gen};  // replaces a claim inherited from a parent
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    token_ = token;
}

OpenClaim::OpenClaim(OpenClaim&& o) noexcept : dev_(o.dev_), ino_(o.ino_), token_(o.token_) { o.token_ = 0; }

OpenClaim& OpenClaim::operator=(OpenClaim&& o) noexcept {
    if (this != &o) {
        release();
        dev_ = o.dev_;
        ino_ = o.ino_;
        token_ = o.token_;
        o.token_ = 0;
    }
    return *this;
}

void OpenClaim::release() {
    if (!token_) return;
    Registry& r = Registry::get();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.held.find({dev_, ino_});
    // Only our own claim: in a forked child a new one may have replaced it.
    if (it != r.held.end() && it->second.token == token_) r.held.erase(it);
    token_ = 0;
}

}  // namespace agentsensus
