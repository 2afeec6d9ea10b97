#include "vector_index.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include <usearch/index_dense.hpp>

#include <mutex>

#include "errors.hpp"
#include "parallel.hpp"

namespace agentsensus {

namespace us = unum::usearch;

namespace {

constexpr size_t kSerialPrefix = 4096;  // see add_many
constexpr char kMagic[8] = {'A', 'S', 'I', 'D', 'X', '0', '0', '1'};

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
        us::metric_punned_t pm = make_metric();
        us::index_dense_config_t cfg(params.connectivity, params.expansion_add, params.expansion_search);
        auto made = us::index_dense_t::make(pm, cfg);
        check(made, "usearch make");
        index = std::move(made.index);
        index.reserve(us::index_limits_t(1024, thread_slots()));
    }

    float to_score(float distance) const {
        return metric == Metric::l2sq ? -distance : 1.0f - distance;
    }

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

VectorIndex::VectorIndex(size_t dim, Metric metric, const IndexParams& params)
    : impl_(new Impl(dim, metric, params)) {}

VectorIndex::~VectorIndex() = default;

void VectorIndex::add(uint64_t id, const float* v) {
    auto& ix = impl_->index;
    if (ix.size() + 1 > ix.capacity()) {
        size_t want = std::max<size_t>(1024, ix.capacity() * 2);
        ix.reserve(us::index_limits_t(want, thread_slots()));
    }
    auto r = ix.add(id, v);
    check(r, "usearch add");
}

void VectorIndex::add_many(const uint64_t* ids, const float* vs, size_t n) {
    if (n == 0) return;
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
}

void VectorIndex::remove(uint64_t id) {
    auto r = impl_->index.remove(id);
    check(r, "usearch remove");
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

void VectorIndex::save(const std::string& path, const IndexHeader& h) const {
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error("cannot write index file " + tmp + ": " + std::strerror(errno));
    bool ok = std::fwrite(kMagic, 1, 8, f) == 8 && std::fwrite(&h, sizeof h, 1, f) == 1;
    if (ok) {
        auto r = impl_->index.save_to_stream(
            [f](void const* buf, std::size_t n) noexcept { return std::fwrite(buf, 1, n, f) == n; });
        if (!r) {
            r.error.release();
            ok = false;
        }
    }
    ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot write index file " + path);
    }
}

bool VectorIndex::read_header(const std::string& path, IndexHeader& h) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    char magic[8];
    bool ok = std::fread(magic, 1, 8, f) == 8 && std::memcmp(magic, kMagic, 8) == 0 &&
              std::fread(&h, sizeof h, 1, f) == 1;
    std::fclose(f);
    return ok;
}

bool VectorIndex::load(const std::string& path, IndexHeader& h, std::string& why) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
        why = "no index file";
        return false;
    }
    char magic[8];
    if (std::fread(magic, 1, 8, f) != 8 || std::memcmp(magic, kMagic, 8) != 0 ||
        std::fread(&h, sizeof h, 1, f) != 1) {
        std::fclose(f);
        why = "index file header is damaged";
        return false;
    }
    if (h.dim != impl_->dim || h.metric != static_cast<uint32_t>(impl_->metric)) {
        std::fclose(f);
        why = "index file has another dim or metric";
        return false;
    }
    auto r = impl_->index.load_from_stream(
        [f](void* buf, std::size_t n) noexcept { return std::fread(buf, 1, n, f) == n; });
    std::fclose(f);
    if (!r) {
        why = std::string("index file is damaged: ") + r.error.what();
        r.error.release();
        impl_->reset();
        return false;
    }
    if (impl_->index.dimensions() != impl_->dim) {
        why = "index file has another dim";
        impl_->reset();
        return false;
    }
    impl_->index.change_metric(impl_->make_metric());
    // Loading resets thread slots and capacity to what the file held.
    impl_->index.reserve(us::index_limits_t(std::max<size_t>(1024, impl_->index.size() * 2), thread_slots()));
    return true;
}

}  // namespace agentsensus
