#include "vector_index.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include <usearch/index_dense.hpp>

#include "checksum.hpp"
#include "errors.hpp"
#include "parallel.hpp"
#include "scan_rows.hpp"

namespace agentsensus {

namespace us = unum::usearch;

namespace {

constexpr size_t kSerialPrefix = 4096;  // see add_many
constexpr size_t kBodyOffset = 8 + sizeof(IndexHeader);

// A read-only mapping of a whole file.
struct Mapping {
    const unsigned char* p = nullptr;
    size_t n = 0;
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (p) ::munmap(const_cast<unsigned char*>(p), n);
    }
};

// Maps path and checks magic, header, size and checksum; on success m holds
// the mapping and h the header.
bool map_checked(const std::string& path, size_t dim, Metric metric, IndexHeader& h, Mapping& m, std::string& why) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        why = "no index file";
        return false;
    }
    struct stat st{};
    bool ok = ::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= kBodyOffset;
    void* p = ok ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    ::close(fd);
    if (p == MAP_FAILED) {
        why = "index file header is damaged";
        return false;
    }
    m.p = static_cast<const unsigned char*>(p);
    m.n = static_cast<size_t>(st.st_size);
    std::memcpy(&h, m.p + 8, sizeof h);
    if (std::memcmp(m.p, kIndexMagic, 8) != 0) {
        why = "index file header is damaged";
        return false;
    }
    if (h.dim != dim || h.metric != static_cast<uint32_t>(metric)) {
        why = "index file has another dim or metric";
        return false;
    }
    if (h.body_bytes != m.n - kBodyOffset || checksum64(m.p + kBodyOffset, h.body_bytes) != h.body_sum) {
        why = "index file is damaged (size or checksum)";
        return false;
    }
    return true;
}
// Scans shorter than this copy the f32 vectors one by one: the int8 copy of
// the whole index is not worth making for them.
constexpr size_t kCompactScan = 512;

us::metric_kind_t kind_of(Metric m) {
    // cos is served as inner product over unit vectors: the same order, no
    // per-distance norms.
    return m == Metric::l2sq ? us::metric_kind_t::l2sq_k : us::metric_kind_t::ip_k;
}

size_t thread_slots() {
    // A search fails (rather than waits) when every slot is busy; Python
    // threads call in with the GIL released, so keep plenty.
    size_t hw = std::max<size_t>(1, std::thread::hardware_concurrency());
    return std::max<size_t>(64, 4 * hw);
}

template <class R> void check(R& r, const char* what) {
    if (!r) {
        std::string msg = std::string(what) + ": " + r.error.what();
        r.error.release();
        throw Error(msg);
    }
}

}  // namespace

struct VectorIndex::Impl {
    size_t dim;
    Metric metric;
    IndexParams params;
    us::index_dense_t index;
    std::unique_ptr<Mapping> map;  // set while index is a view of it
    // The scan copy, filled as scans meet ids it lacks (an owner's first long
    // scan reads f32 and then encodes its rows), so that no single query
    // pays for encoding the whole index. Scans read it under a shared lock;
    // filling and the index's own changes take it exclusively.
    mutable std::unique_ptr<ScanRows> rows;
    mutable std::shared_mutex rows_mu;

    Impl(size_t d, Metric m, const IndexParams& p) : dim(d), metric(m), params(p) { reset(); }

    // usearch's built-in f32 kernels compile for baseline x86-64 here (SSE);
    // ours dispatch to AVX2/AVX-512 at load time. The file records only the
    // metric kind, so this is set again after every load.
    us::metric_punned_t make_metric() const {
        auto fn = metric == Metric::l2sq ? &l2sq_distance : &ip_distance;
        return us::metric_punned_t::stateless(dim, reinterpret_cast<std::uintptr_t>(fn),
                                              us::metric_punned_signature_t::array_array_size_k, kind_of(metric),
                                              us::scalar_kind_t::f32_k);
    }

    void reset() {
        index = fresh();
        index.reserve(us::index_limits_t(1024, thread_slots()));
        map.reset();  // after the view that used it is gone
        rows.reset();
    }

    us::index_dense_t fresh() const {
        us::metric_punned_t pm = make_metric();
        us::index_dense_config_t cfg(params.connectivity, params.expansion_add, params.expansion_search);
        auto made = us::index_dense_t::make(pm, cfg);
        check(made, "usearch make");
        return std::move(made.index);
    }

    // Fills ix from a checked mapping; false with why on failure.
    bool load_into(us::index_dense_t& ix, const Mapping& m, std::string& why) const {
        us::memory_mapped_file_t borrowed(const_cast<us::byte_t*>(reinterpret_cast<const us::byte_t*>(m.p)), m.n);
        auto r = ix.load(std::move(borrowed), kBodyOffset);
        if (!r) {
            why = std::string("index file is damaged: ") + r.error.what();
            r.error.release();
            return false;
        }
        if (ix.dimensions() != dim) {
            why = "index file has another dim";
            return false;
        }
        ix.change_metric(make_metric());
        ix.change_expansion_search(params.expansion_search);  // an option of this open, not of the file
        // Loading resets thread slots and capacity to what the file held.
        ix.reserve(us::index_limits_t(std::max<size_t>(1024, ix.size() * 2), thread_slots()));
        return true;
    }

    // Before any change: a view becomes an index in memory, read from the
    // mapping it was viewing (not the path, which a save may have replaced).
    void ensure_mutable() {
        if (!map) return;
        us::index_dense_t ix = fresh();
        std::string why;
        if (!load_into(ix, *map, why)) throw Error("cannot load the mapped index: " + why);
        index = std::move(ix);
        map.reset();
    }

    // Encodes the rows of ids (which the copy lacks) from the index's vectors.
    void fill_rows(const std::vector<uint64_t>& ids) const {
        std::unique_lock<std::shared_mutex> g(rows_mu);
        if (!rows) rows = std::make_unique<ScanRows>(dim, metric);
        rows->reserve_ids(index.size());
        std::vector<float> v(dim);
        for (uint64_t id : ids)
            if (index.get(id, v.data()) > 0) rows->put(id, v.data());
    }

    // Exact similarity of q to id's stored vector; false when absent.
    bool exact(const float* q, uint64_t id, float* buf, float& score) const {
        if (index.get(id, buf) == 0) return false;
        score = similarity(metric, q, buf, dim);
        return true;
    }

    float to_score(float distance) const { return metric == Metric::l2sq ? -distance : 1.0f - distance; }

    std::vector<Hit> collect(us::index_dense_t::search_result_t& r) const {
        check(r, "usearch search");
        std::vector<Hit> out(r.size());
        for (size_t i = 0; i < r.size(); ++i) {
            auto m = r[i];
            out[i] = Hit{static_cast<uint64_t>(m.member.key), to_score(m.distance)};
        }
        return out;
    }
};

VectorIndex::VectorIndex(size_t dim, Metric metric, const IndexParams& params) : impl_(new Impl(dim, metric, params)) {}

VectorIndex::~VectorIndex() = default;

void VectorIndex::add(uint64_t id, const float* v) {
    impl_->ensure_mutable();
    auto& ix = impl_->index;
    if (ix.size() + 1 > ix.capacity()) {
        size_t want = std::max<size_t>(1024, ix.capacity() * 2);
        ix.reserve(us::index_limits_t(want, thread_slots()));
    }
    auto r = ix.add(id, v);
    check(r, "usearch add");
    std::unique_lock<std::shared_mutex> g(impl_->rows_mu);
    if (impl_->rows) impl_->rows->put(id, v);
}

void VectorIndex::add_many(const uint64_t* ids, const float* vs, size_t n) {
    if (n == 0) return;
    impl_->ensure_mutable();
    auto& ix = impl_->index;
    // Reserve once, up front: reserve must not run during adds.
    if (ix.size() + n > ix.capacity()) {
        size_t want = std::max<size_t>({1024, ix.capacity() * 2, ix.size() + n});
        ix.reserve(us::index_limits_t(want, thread_slots()));
    }
    // Concurrent inserts into a near-empty graph race for its entry points and
    // leave it poorly connected: grow the first part of it one at a time.
    size_t serial = std::min(n, ix.size() < kSerialPrefix ? kSerialPrefix - ix.size() : size_t(0));
    for (size_t i = 0; i < serial; ++i) add(ids[i], vs + i * impl_->dim);
    ids += serial;
    vs += serial * impl_->dim;
    n -= serial;
    std::string error;
    std::mutex error_mu;
    parallel_for(n, [&](size_t i) {
        auto r = ix.add(ids[i], vs + i * impl_->dim);
        if (!r) {
            std::lock_guard<std::mutex> g(error_mu);
            if (error.empty()) error = r.error.what();
            r.error.release();
        }
    });
    if (!error.empty()) throw Error("usearch add: " + error);
    std::unique_lock<std::shared_mutex> g(impl_->rows_mu);
    if (impl_->rows)
        for (size_t i = 0; i < n; ++i) impl_->rows->put(ids[i], vs + i * impl_->dim);
}

void VectorIndex::remove(uint64_t id) {
    impl_->ensure_mutable();
    auto r = impl_->index.remove(id);
    check(r, "usearch remove");
    std::unique_lock<std::shared_mutex> g(impl_->rows_mu);
    if (impl_->rows) impl_->rows->erase(id);
}

bool VectorIndex::contains(uint64_t id) const { return impl_->index.contains(id); }

bool VectorIndex::get(uint64_t id, float* out) const { return impl_->index.get(id, out) > 0; }

size_t VectorIndex::size() const { return impl_->index.size(); }

void VectorIndex::clear() { impl_->reset(); }

std::vector<Hit> VectorIndex::search(const float* q, size_t k) const {
    if (impl_->index.size() == 0 || k == 0) return {};
    auto r = impl_->index.search(q, k);
    return impl_->collect(r);
}

std::vector<Hit> VectorIndex::scan(const float* q, const uint64_t* ids, size_t n, size_t k,
                                   std::vector<uint64_t>& absent) const {
    std::vector<Hit> out;
    if (k == 0 || n == 0) return out;
    std::vector<float> buf(impl_->dim);
    auto better = [](const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); };
    if (n < kCompactScan || impl_->index.size() < kCompactScan) {
        out.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            float s;
            if (impl_->exact(q, ids[i], buf.data(), s))
                out.push_back(Hit{ids[i], s});
            else
                absent.push_back(ids[i]);
        }
    } else {
        // Bounds from the int8 copy; the k-th best lower bound rules out every
        // id whose upper bound is below it, and the rest are scored exactly.
        // Ids the copy lacks are scored exactly now and encoded afterwards.
        struct Bound {
            float lo, hi;
            uint64_t id;
        };
        std::vector<Bound> b;
        b.reserve(n);
        std::vector<uint64_t> missing;
        {
            std::shared_lock<std::shared_mutex> g(impl_->rows_mu);
            const ScanRows* rows = impl_->rows.get();  // null until a scan has filled some
            ScanRows::Query qq = rows ? rows->quantize(q) : ScanRows::Query{};
            constexpr size_t kAhead = 8;
            for (size_t i = 0; rows && i < std::min(n, kAhead); ++i) rows->prefetch(ids[i]);
            for (size_t i = 0; i < n; ++i) {
                if (rows && i + kAhead < n) rows->prefetch(ids[i + kAhead]);
                Bound x{0, 0, ids[i]};
                float s;
                if (rows && rows->bounds(qq, ids[i], x.lo, x.hi)) {
                    b.push_back(x);
                } else if (impl_->exact(q, ids[i], buf.data(), s)) {
                    b.push_back(Bound{s, s, ids[i]});
                    missing.push_back(ids[i]);
                } else {
                    absent.push_back(ids[i]);
                }
            }
        }
        if (!missing.empty()) impl_->fill_rows(missing);
        float floor = -INFINITY;
        if (b.size() > k) {
            std::nth_element(b.begin(), b.begin() + (k - 1), b.end(),
                             [](const Bound& x, const Bound& y) { return x.lo > y.lo; });
            floor = b[k - 1].lo;
        }
        for (const Bound& x : b) {
            float s;
            if (x.hi < floor) continue;
            if (impl_->exact(q, x.id, buf.data(), s))
                out.push_back(Hit{x.id, s});
            else
                absent.push_back(x.id);
        }
    }
    size_t top = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + top, out.end(), better);
    out.resize(top);
    return out;
}

void VectorIndex::save(const std::string& path, const IndexHeader& given) const {
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FILE* f = std::fopen(tmp.c_str(), "w+b");
    if (!f) throw Error("cannot write index file " + tmp + ": " + std::strerror(errno));
    IndexHeader h = given;
    h.body_bytes = h.body_sum = 0;
    bool ok = std::fwrite(kIndexMagic, 1, 8, f) == 8 && std::fwrite(&h, sizeof h, 1, f) == 1;
    if (ok) {
        auto r = impl_->index.save_to_stream(
            [f](void const* buf, std::size_t n) noexcept { return std::fwrite(buf, 1, n, f) == n; });
        if (!r) {
            r.error.release();
            ok = false;
        }
    }
    ok = ok && std::fflush(f) == 0;
    if (ok) {
        // The checksum of what reached the file, read back through a mapping.
        int fd = ::fileno(f);
        struct stat st{};
        ok = ::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= kBodyOffset;
        void* p = ok ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
        ok = p != MAP_FAILED;
        if (ok) {
            h.body_bytes = static_cast<size_t>(st.st_size) - kBodyOffset;
            h.body_sum = checksum64(static_cast<const unsigned char*>(p) + kBodyOffset, h.body_bytes);
            ::munmap(p, static_cast<size_t>(st.st_size));
            ok = ::pwrite(fd, &h, sizeof h, 8) == static_cast<ssize_t>(sizeof h);
        }
    }
    ok = ok && ::fsync(::fileno(f)) == 0;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot write index file " + path);
    }
}

bool VectorIndex::view(const std::string& path, IndexHeader& h, std::string& why) {
    impl_->reset();
    auto m = std::make_unique<Mapping>();
    if (!map_checked(path, impl_->dim, impl_->metric, h, *m, why)) return false;
    us::index_dense_t ix = impl_->fresh();
    ix.reserve(us::index_limits_t(1024, thread_slots()));  // view keeps these thread slots
    us::memory_mapped_file_t borrowed(const_cast<us::byte_t*>(reinterpret_cast<const us::byte_t*>(m->p)), m->n);
    auto r = ix.view(std::move(borrowed), kBodyOffset);
    if (!r) {
        why = std::string("index file is damaged: ") + r.error.what();
        r.error.release();
        return false;
    }
    if (ix.dimensions() != impl_->dim) {
        why = "index file has another dim";
        return false;
    }
    ix.change_metric(impl_->make_metric());
    ix.change_expansion_search(impl_->params.expansion_search);
    impl_->index = std::move(ix);
    impl_->map = std::move(m);
    return true;
}

}  // namespace agentsensus
