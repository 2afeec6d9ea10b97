#include "lmdb/prefetch.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace agentsensus {

uint64_t thread_major_faults() {
    struct rusage u{};
#ifdef RUSAGE_THREAD
    if (::getrusage(RUSAGE_THREAD, &u) != 0) return 0;
#else
    if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
#endif
    return static_cast<uint64_t>(u.ru_majflt);
}

BatchPrefetch::BatchPrefetch(ColdGauge& gauge, MDB_env* env, size_t n, Touch touch)
    : gauge_(gauge), env_(env), n_(n), touch_(std::move(touch)) {
    // A batch shorter than kMinBatch neither starts helpers nor tells the
    // gauge anything: no fault counts (two system calls) on that path, which
    // is a deposit's (8 candidates).
    if (n_ < ColdGauge::kMinBatch) return;
    faults_at_start_ = thread_major_faults();
    if (!gauge_.wanted(n_)) return;
    const size_t lanes = std::min(kLanes, n_ / 2);
    try {
        for (size_t i = 0; i < lanes; ++i) lanes_.emplace_back([this] { lane(); });
    } catch (...) {
        // No thread to be had: the caller reads alone, as without a prefetch.
    }
}

BatchPrefetch::~BatchPrefetch() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : lanes_) t.join();
    if (n_ < ColdGauge::kMinBatch) return;
    uint64_t mine = thread_major_faults() - faults_at_start_;
    gauge_.saw(mine + lane_faults_.load(), n_, !lanes_.empty());
}

void BatchPrefetch::lane() {
    uint64_t f0 = thread_major_faults();
    // The caller's read transaction keeps the map as it is (its resize guard
    // is held) for as long as this lane runs: a plain transaction suffices.
    MDB_txn* txn = nullptr;
    if (mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn) == 0) {
        try {
            for (size_t i; !stop_.load(std::memory_order_relaxed) && (i = next_.fetch_add(1)) < n_;) {
                if (i < passed_.load(std::memory_order_relaxed)) continue;  // the caller read it already
                touch_(txn, i);
            }
        } catch (...) {
            // A hint that failed: the caller's own read reports any real problem.
        }
        mdb_txn_abort(txn);
    }
    lane_faults_.fetch_add(thread_major_faults() - f0);
}

FileWarmer::FileWarmer(const std::string& path) {
    try {
        thread_ = std::thread([this, path] { run(path); });
    } catch (...) {
        // No thread: the file is read as the engine needs it, as before.
    }
}

FileWarmer::~FileWarmer() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
}

void FileWarmer::run(const std::string& path) {
    constexpr size_t kChunk = size_t(1) << 20;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st{};
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const size_t size = ::fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
    void* map = MAP_FAILED;
    if (size > 0 && pages > 0 && page > 0 && size <= static_cast<size_t>(pages) / 4 * static_cast<size_t>(page))
        map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);  // only asked what is resident, never read
    if (map != MAP_FAILED) {
        std::vector<char> buf(kChunk);
#ifdef __APPLE__
        std::vector<char> in((kChunk + page - 1) / page);
#else
        std::vector<unsigned char> in((kChunk + page - 1) / page);
#endif
        for (size_t at = 0; at < size && !stop_.load(std::memory_order_relaxed); at += kChunk) {
            const size_t n = std::min(kChunk, size - at);
            bool resident = ::mincore(static_cast<char*>(map) + at, n, in.data()) == 0;
            for (size_t i = 0; resident && i < (n + page - 1) / page; ++i) resident = in[i] & 1;
            if (!resident && ::pread(fd, buf.data(), n, static_cast<off_t>(at)) <= 0) break;
        }
        ::munmap(map, size);
    }
    ::close(fd);
}

unsigned touch_pages(const void* p, size_t n) {
    static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const auto* b = static_cast<const volatile unsigned char*>(p);
    unsigned sum = 0;
    for (size_t at = 0; at < n; at += page) sum += b[at];
    if (n) sum += b[n - 1];
    return sum;
}

void advise_will_read(const void* p, size_t n) {
#ifdef MADV_WILLNEED
    // madvise wants a page-aligned start.
    static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uintptr_t a = reinterpret_cast<uintptr_t>(p), start = a & ~(page - 1);
    ::madvise(reinterpret_cast<void*>(start), n + (a - start), MADV_WILLNEED);
#else
    (void)p;
    (void)n;
#endif
}

}  // namespace agentsensus
