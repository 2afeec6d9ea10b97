// Page-cache prefetching for a store opened on a cold page cache. Everything
// here is a hint: it changes which pages are resident when the engine reads
// them, never what it reads (every read still goes through the caller's own
// transaction), and a prefetch that fails is ignored.
//
// Why: a recall re-scores its candidates exactly from LMDB's f32 vectors and
// confirms their owners, one lookup after another. On a cold cache each
// lookup is a random disk read (about 155 us here), and one recall at 1M
// records makes 300-400 of them. The disk serves several reads in flight
// far faster than the same reads one after another, so while the cache is
// cold, helper threads fetch the pages the caller is about to read.
#pragma once
#include <lmdb.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace agentsensus {

// Major page faults (reads that waited for the disk) of the calling thread
// so far; of the whole process where the system counts no per-thread figure.
uint64_t thread_major_faults();

// Whether a store's reads are meeting a cold page cache, learned from the
// major faults its reads take: on once a batch faults, off once a prefetched
// batch found everything resident. Thread-safe; only a hint.
class ColdGauge {
public:
    // Batches shorter than this are read alone: a thread costs more than a
    // few lookups, and short batches are not where cold recalls spend.
    static constexpr size_t kMinBatch = 16;
    bool wanted(size_t n) const { return n >= kMinBatch && cold_.load(std::memory_order_relaxed); }
    // faults taken reading n keys (by the caller alone, or with helpers).
    void saw(uint64_t faults, size_t n, bool prefetched) {
        if (faults > 0 && n >= kMinBatch)
            cold_.store(true, std::memory_order_relaxed);
        else if (prefetched && faults == 0)
            cold_.store(false, std::memory_order_relaxed);
    }

private:
    // Off until a batch read alone faults: a warm store never starts a helper,
    // a cold one reads its first batch alone.
    std::atomic<bool> cold_{false};
};

// Fetches, on helper threads, what the caller is about to read of n keys in
// order: touch(txn, i) reads key i's pages in a read transaction of its own
// thread. The caller says how far it got (reached), so helpers skip what it
// passed. The destructor stops and joins the helpers and tells the gauge
// what faults the batch took. The caller must hold its own read transaction
// (and whatever guards the map) for the lifetime of this object: the helpers'
// transactions rely on it.
class BatchPrefetch {
public:
    using Touch = std::function<void(MDB_txn*, size_t)>;
    static constexpr size_t kLanes = 16;  // reads in flight: the disk's best here (27.5k reads/s at 16)

    BatchPrefetch(ColdGauge& gauge, MDB_env* env, size_t n, Touch touch);
    ~BatchPrefetch();
    BatchPrefetch(const BatchPrefetch&) = delete;
    BatchPrefetch& operator=(const BatchPrefetch&) = delete;

    void reached(size_t i) { passed_.store(i, std::memory_order_relaxed); }

private:
    void lane();

    ColdGauge& gauge_;
    MDB_env* env_;
    size_t n_;
    Touch touch_;
    uint64_t faults_at_start_ = 0;
    std::atomic<size_t> next_{0}, passed_{0};
    std::atomic<uint64_t> lane_faults_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::thread> lanes_;
};

// Reads a file into the page cache on a thread of its own, in file order, a
// chunk at a time (one read in flight, so that the caller's own random reads
// are not queued behind it), skipping chunks already resident. Only a file
// that fits in a quarter of physical memory is read: a larger one would
// evict what it was read for. Stops between chunks when destroyed.
class FileWarmer {
public:
    explicit FileWarmer(const std::string& path);
    ~FileWarmer();
    FileWarmer(const FileWarmer&) = delete;
    FileWarmer& operator=(const FileWarmer&) = delete;

private:
    void run(const std::string& path);

    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Reads the bytes of [p, p + n) one byte a page, so that each page of a
// mapping is brought in; returns a value the compiler cannot drop.
unsigned touch_pages(const void* p, size_t n);

// Advises the kernel that all of a mapping will be read soon, so that it
// starts reading it ahead at once; a no-op where the call is missing.
void advise_will_read(const void* p, size_t n);

}  // namespace agentsensus
