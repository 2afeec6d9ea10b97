#include "index/vector_index.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include <usearch/index_dense.hpp>

#include "agentsensus/errors.hpp"
#include "format/checksum.hpp"
#include "index/parallel.hpp"
#include "index/scan_rows.hpp"
#include "lmdb/prefetch.hpp"

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
    // The checksum below reads all of it: have the kernel read ahead now.
    advise_will_read(m.p, m.n);
    std::memcpy(&h, m.p + 8, sizeof h);
    if (std::memcmp(m.p, kIndexMagic, 8) != 0 && std::memcmp(m.p, kIndexMagicF32, 8) != 0) {
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
// the whole index is not worth making for them. A quantized index reads
// them from LMDB (about 0.5 us a vector against 0.1 us from the graph), so
// its scans take the copy from a shorter length.
constexpr size_t kCompactScan = 512, kCompactScanQuantized = 64;

// Rows re-scored exactly per call of the exact source (one LMDB read
// transaction each), so that a first long scan never buffers the whole owner.
constexpr size_t kExactBatch = 4096;

// Room for `want` floats, uninitialized: exact_vectors writes every row it
// reads. Short scans (up to 256 KB of rows, the common case) reuse one
// buffer per thread: a fresh zeroed vector per call cost a memset and page
// faults on every recall. Longer ones allocate into `big`, so no thread
// keeps megabytes after one large scan.
float* scratch_floats(size_t want, std::unique_ptr<float[]>& big) {
    constexpr size_t kKept = size_t(1) << 16;
    if (want > kKept) {
        big.reset(new float[want]);
        return big.get();
    }
    thread_local std::unique_ptr<float[]> kept(new float[kKept]);
    return kept.get();
}

// Best first, ties to the lower id: the order of every ranked answer.
bool ranks_before(const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); }

// usearch stores a unit vector as round-toward-zero(127 * v) under int8.
constexpr float kI8Scale = 127.f;

// The graph's distance over int8 rows: an estimate of 1 - cos, good enough to
// rank candidates that are then re-scored exactly.
float ip_i8_distance(uintptr_t a, uintptr_t b, uintptr_t n) {
    return 1.f - static_cast<float>(dot_i8(reinterpret_cast<const int8_t*>(a), reinterpret_cast<const int8_t*>(b), n)) /
                     (kI8Scale * kI8Scale);
}

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
    ExactSource source;  // the stored f32 vectors, for a quantized index

    Impl(size_t d, Metric m, const IndexParams& p) : dim(d), metric(m), params(p) { reset(); }

    // usearch's built-in f32 kernels compile for baseline x86-64 here (SSE);
    // ours dispatch to AVX2/AVX-512 at load time. The file records only the
    // metric kind, so this is set again after every load.
    // int8 only under cos: usearch scales each vector to unit length before
    // it rounds to int8, which keeps cos but would lose an ip or l2 norm.
    us::scalar_kind_t wanted_kind() const {
        return metric == Metric::cos ? us::scalar_kind_t::i8_k : us::scalar_kind_t::f32_k;
    }

    us::metric_punned_t make_metric(us::scalar_kind_t kind) const {
        auto fn = kind == us::scalar_kind_t::i8_k ? &ip_i8_distance
                  : metric == Metric::l2sq        ? &l2sq_distance
                                                  : &ip_distance;
        return us::metric_punned_t::stateless(dim, reinterpret_cast<std::uintptr_t>(fn),
                                              us::metric_punned_signature_t::array_array_size_k, kind_of(metric), kind);
    }

    bool quantized() const { return index.scalar_kind() == us::scalar_kind_t::i8_k; }

    // A loaded or viewed file's vectors are f32 (any file written before int8,
    // and every l2sq or ip store) or int8 under cos; its metric is set again.
    bool adopt_kind(us::index_dense_t& ix, std::string& why) const {
        us::scalar_kind_t kind = ix.scalar_kind();
        if (kind != us::scalar_kind_t::f32_k && !(kind == us::scalar_kind_t::i8_k && metric == Metric::cos)) {
            why = "index file holds vectors of another kind";
            return false;
        }
        ix.change_metric(make_metric(kind));
        return true;
    }

    void reset() {
        index = fresh();
        index.reserve(us::index_limits_t(1024, thread_slots()));
        map.reset();  // after the view that used it is gone
        rows.reset();
    }

    us::index_dense_t fresh() const {
        us::metric_punned_t pm = make_metric(wanted_kind());
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
        if (!adopt_kind(ix, why)) return false;
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

    // Encodes rows (n vectors, exact) of ids the copy lacks.
    void fill_rows(const uint64_t* ids, const float* vs, const unsigned char* found, size_t n) const {
        std::unique_lock<std::shared_mutex> g(rows_mu);
        if (!rows) rows = std::make_unique<ScanRows>(dim, metric);
        rows->reserve_ids(index.size());
        for (size_t i = 0; i < n; ++i)
            if (found[i]) rows->put(ids[i], vs + i * dim);
    }

    // The exact vectors of ids: the graph's own when it holds f32, else the
    // exact source's.
    void exact_vectors(const uint64_t* ids, size_t n, float* out, unsigned char* found) const {
        if (!quantized()) {
            for (size_t i = 0; i < n; ++i) found[i] = index.get(ids[i], out + i * dim) > 0;
            return;
        }
        if (!source) throw Error("the quantized index has no exact source");
        source(ids, n, out, found);
        // The source reads the latest snapshot; an id the graph no longer
        // holds is absent here too, as it would be in an f32 graph.
        for (size_t i = 0; i < n; ++i)
            if (found[i] && !index.contains(ids[i])) found[i] = 0;
    }

    // Exact scores of ids, batch by batch: on(i, score) for the ids that have
    // a vector, absent(i) for the rest; fill also encodes their scan rows.
    template <class On, class Absent>
    void score_exact(const float* q, const uint64_t* ids, size_t n, bool fill, On on, Absent absent) const {
        const size_t want = std::min(n, kExactBatch) * dim;
        std::unique_ptr<float[]> big;
        float* vs_data = scratch_floats(want, big);
        std::vector<unsigned char> found(std::min(n, kExactBatch));
        for (size_t at = 0; at < n; at += kExactBatch) {
            size_t m = std::min(kExactBatch, n - at);
            exact_vectors(ids + at, m, vs_data, found.data());
            for (size_t i = 0; i < m; ++i) {
                if (found[i])
                    on(at + i, similarity(metric, q, vs_data + i * dim, dim));
                else
                    absent(at + i);
            }
            if (fill) fill_rows(ids + at, vs_data, found.data(), m);
        }
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

void VectorIndex::set_exact_source(ExactSource source) { impl_->source = std::move(source); }

bool VectorIndex::quantized() const { return impl_->quantized(); }

float VectorIndex::max_error() const { return impl_->quantized() ? 1.f / kI8Scale + 1e-6f : 0.f; }

bool VectorIndex::contains(uint64_t id) const { return impl_->index.contains(id); }

bool VectorIndex::get(uint64_t id, float* out) const { return impl_->index.get(id, out) > 0; }

size_t VectorIndex::size() const { return impl_->index.size(); }

void VectorIndex::clear() { impl_->reset(); }

std::vector<Hit> VectorIndex::search(const float* q, size_t k) const {
    if (impl_->index.size() == 0 || k == 0) return {};
    if (!impl_->quantized()) {
        auto r = impl_->index.search(q, k);
        return impl_->collect(r);
    }
    // Every candidate the graph search kept is re-scored: asking for fewer
    // than it keeps would cost the same walk and rank fewer exactly.
    auto r = impl_->index.search(q, std::max(k, impl_->params.expansion_search));
    std::vector<Hit> cand = impl_->collect(r);
    std::vector<uint64_t> ids(cand.size());
    for (size_t i = 0; i < cand.size(); ++i) ids[i] = cand[i].id;
    std::vector<Hit> out;
    out.reserve(ids.size());
    impl_->score_exact(
        q, ids.data(), ids.size(), false, [&](size_t i, float s) { out.push_back(Hit{ids[i], s}); }, [](size_t) {});
    size_t top = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + top, out.end(), ranks_before);
    out.resize(top);
    return out;
}

std::vector<VectorIndex::Bounded> VectorIndex::walk(const float* q, size_t w) const {
    if (impl_->index.size() == 0 || w == 0) return {};
    auto r = impl_->index.search(q, std::max(w, impl_->params.expansion_search));
    const std::vector<Hit> cand = impl_->collect(r);
    std::vector<Bounded> out(cand.size());
    if (!impl_->quantized()) {
        for (size_t i = 0; i < cand.size(); ++i) out[i] = Bounded{cand[i].id, cand[i].score, cand[i].score};
        return out;
    }
    std::vector<uint64_t> missing;
    std::vector<size_t> at;
    {
        std::shared_lock<std::shared_mutex> g(impl_->rows_mu);
        const ScanRows* rows = impl_->rows.get();
        ScanRows::Query qq;
        if (rows) qq = rows->quantize(q);
        for (size_t i = 0; i < cand.size(); ++i) {
            out[i].id = cand[i].id;
            if (!rows || !rows->bounds_f32(q, qq, cand[i].id, out[i].lo, out[i].hi)) {
                missing.push_back(cand[i].id);
                at.push_back(i);
            }
        }
    }
    std::vector<char> gone(out.size(), 0);
    impl_->score_exact(
        q, missing.data(), missing.size(), true, [&](size_t j, float s) { out[at[j]].lo = out[at[j]].hi = s; },
        [&](size_t j) { gone[at[j]] = 1; });
    if (!missing.empty()) {
        size_t kept = 0;
        for (size_t i = 0; i < out.size(); ++i)
            if (!gone[i]) out[kept++] = out[i];
        out.resize(kept);
    }
    return out;
}

std::vector<Hit> VectorIndex::exact(const float* q, const uint64_t* ids, size_t n) const {
    std::vector<Hit> out;
    out.reserve(n);
    impl_->score_exact(q, ids, n, false, [&](size_t i, float s) { out.push_back(Hit{ids[i], s}); }, [](size_t) {});
    return out;
}

// The exact best `need` of kept (candidates of one walk), best first, ties to
// the lower id: what an exact re-score of every candidate would rank first.
// A candidate whose upper bound is below the need-th best lower bound cannot
// be among them, so it is never read from LMDB.
std::vector<Hit> VectorIndex::best(const float* q, const std::vector<Bounded>& kept, size_t need) const {
    std::vector<Hit> out;
    if (need == 0 || kept.empty()) return out;
    float floor = -INFINITY;
    if (kept.size() > need) {
        std::vector<float> lows(kept.size());
        for (size_t i = 0; i < kept.size(); ++i) lows[i] = kept[i].lo;
        std::nth_element(lows.begin(), lows.begin() + (need - 1), lows.end(), std::greater<float>());
        floor = lows[need - 1];
    }
    std::vector<uint64_t> ids;
    for (const Bounded& c : kept) {
        if (c.hi < floor) continue;
        if (c.lo == c.hi)
            out.push_back(Hit{c.id, c.lo});  // scored exactly by the walk
        else
            ids.push_back(c.id);
    }
    std::sort(ids.begin(), ids.end());  // the exact source reads LMDB in key order
    std::vector<Hit> scored = exact(q, ids.data(), ids.size());
    if (scored.size() < ids.size()) {
        // A vector gone since the walk: the floor may rest on its bound, so
        // score every kept candidate.
        out.clear();
        ids.clear();
        for (const Bounded& c : kept) {
            if (c.lo == c.hi)
                out.push_back(Hit{c.id, c.lo});
            else
                ids.push_back(c.id);
        }
        std::sort(ids.begin(), ids.end());
        scored = exact(q, ids.data(), ids.size());
    }
    out.insert(out.end(), scored.begin(), scored.end());
    const size_t top = std::min(need, out.size());
    std::partial_sort(out.begin(), out.begin() + top, out.end(), ranks_before);
    out.resize(top);
    return out;
}

std::vector<Hit> VectorIndex::scan(const float* q, const uint64_t* ids, size_t n, size_t k,
                                   std::vector<uint64_t>& absent) const {
    std::vector<Hit> out;
    if (k == 0 || n == 0) return out;
    const size_t compact = impl_->quantized() ? kCompactScanQuantized : kCompactScan;
    if (n < compact || impl_->index.size() < compact) {
        out.reserve(n);
        impl_->score_exact(
            q, ids, n, false, [&](size_t i, float s) { out.push_back(Hit{ids[i], s}); },
            [&](size_t i) { absent.push_back(ids[i]); });
    } else {
        // Bounds from the int8 copy; the k-th best lower bound rules out every
        // id whose upper bound is below it, and the rest are scored exactly.
        // Ids the copy lacks are scored exactly now and encoded afterwards.
        std::vector<Bounded> b;
        b.reserve(n);
        std::vector<uint64_t> missing;
        // The query quantized once for both passes (empty while no rows exist).
        ScanRows::Query qq;
        {
            std::shared_lock<std::shared_mutex> g(impl_->rows_mu);
            const ScanRows* rows = impl_->rows.get();  // null until a scan has filled some
            if (rows) qq = rows->quantize(q);
            constexpr size_t kAhead = 8;
            for (size_t i = 0; rows && i < std::min(n, kAhead); ++i) rows->prefetch(ids[i]);
            for (size_t i = 0; i < n; ++i) {
                if (rows && i + kAhead < n) rows->prefetch(ids[i + kAhead]);
                Bounded x{ids[i], 0, 0};
                if (rows && rows->bounds(qq, ids[i], x.lo, x.hi))
                    b.push_back(x);
                else
                    missing.push_back(ids[i]);
            }
        }
        // Ids the copy lacks: scored exactly now, and encoded.
        impl_->score_exact(
            q, missing.data(), missing.size(), true, [&](size_t i, float s) { b.push_back(Bounded{missing[i], s, s}); },
            [&](size_t i) { absent.push_back(missing[i]); });
        float floor = -INFINITY;
        if (b.size() > k) {
            std::nth_element(b.begin(), b.begin() + (k - 1), b.end(),
                             [](const Bounded& x, const Bounded& y) { return x.lo > y.lo; });
            floor = b[k - 1].lo;
        }
        std::vector<Bounded> near;
        for (const Bounded& x : b)
            if (x.hi >= floor) near.push_back(x);
        // What the int8 query's bounds leave is bounded again with the f32
        // query (about half the error), so fewer rows are read from LMDB.
        if (near.size() > k) {
            std::shared_lock<std::shared_mutex> g(impl_->rows_mu);
            const ScanRows* rows = impl_->rows.get();
            if (rows && qq.q.empty()) qq = rows->quantize(q);  // rows filled meanwhile
            for (Bounded& x : near)
                if (rows && x.lo != x.hi) rows->bounds_f32(q, qq, x.id, x.lo, x.hi);
            std::nth_element(near.begin(), near.begin() + (k - 1), near.end(),
                             [](const Bounded& x, const Bounded& y) { return x.lo > y.lo; });
            floor = std::max(floor, near[k - 1].lo);
        }
        std::vector<uint64_t> left;
        for (const Bounded& x : near)
            if (x.hi >= floor) left.push_back(x.id);
        // In id order: the exact source then reads LMDB's pages in key order.
        std::sort(left.begin(), left.end());
        bool lost = false;
        impl_->score_exact(
            q, left.data(), left.size(), false, [&](size_t i, float s) { out.push_back(Hit{left[i], s}); },
            [&](size_t i) {
                absent.push_back(left[i]);
                lost = true;
            });
        // The floor is sound only if every id that set it still has a
        // vector (the exact source reads the latest snapshot; a record
        // forgotten since the caller's has a row but no vector): then score
        // what the floor ruled out as well.
        if (lost) {
            std::vector<uint64_t> rest;
            for (const Bounded& x : b) {
                if (std::binary_search(left.begin(), left.end(), x.id)) continue;
                if (x.lo == x.hi)
                    out.push_back(Hit{x.id, x.lo});  // scored exactly above (the copy lacked it)
                else
                    rest.push_back(x.id);
            }
            std::sort(rest.begin(), rest.end());
            impl_->score_exact(
                q, rest.data(), rest.size(), false, [&](size_t i, float s) { out.push_back(Hit{rest[i], s}); },
                [&](size_t i) { absent.push_back(rest[i]); });
        }
    }
    size_t top = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + top, out.end(), ranks_before);
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
    if (!impl_->adopt_kind(ix, why)) return false;
    ix.change_expansion_search(impl_->params.expansion_search);
    impl_->index = std::move(ix);
    impl_->map = std::move(m);
    return true;
}

}  // namespace agentsensus
