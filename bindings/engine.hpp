// The Engine class that _core exposes, shared by the binding files of one
// module (module.cpp binds it; other files take an Engine& to reach its store).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "agentsensus/errors.hpp"
#include "agentsensus/limits.hpp"
#include "agentsensus/store.hpp"
#include "agentsensus/store_handle.hpp"

namespace agentsensus_py {

namespace py = pybind11;
using namespace agentsensus;

// C-contiguous float32 arrays pass without a copy; the Python layer has
// already refused other dtypes and shapes with a clear message.
using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;

// Texts and names were valid UTF-8 when written, so one that is not was
// damaged on disk: CorruptStoreError, not a UnicodeDecodeError.
inline py::str stored_str(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), nullptr);
    if (!o) {
        PyErr_Clear();
        // Not quoted: the message itself must decode.
        throw Corrupt("a stored text or name is not valid UTF-8: the store file is damaged");
    }
    return py::reinterpret_steal<py::str>(o);
}

inline py::tuple owners_tuple(const std::vector<std::string>& owners) {
    py::tuple t(owners.size());
    for (size_t i = 0; i < owners.size(); ++i) t[i] = stored_str(owners[i]);
    return t;
}

inline py::tuple row_tuple(const Row& r) {
    py::object score = r.via == Via::hit ? py::object(py::float_(r.score)) : py::object(py::none());
    const char* via = r.via == Via::hit ? "hit" : r.via == Via::edge ? "edge" : "";
    return py::make_tuple(r.id, stored_str(r.text), owners_tuple(r.owners), r.round, score, via);
}

inline const float* rows_of(const F32& a, size_t n, size_t dim, const char* what) {
    if (a.ndim() != 2 || static_cast<size_t>(a.shape(0)) != n || static_cast<size_t>(a.shape(1)) != dim)
        throw InvalidArgument(std::string(what) + " must have shape (" + std::to_string(n) + ", " +
                              std::to_string(dim) + ")");
    return a.data();
}

// Item writes from Python tuples, and refs back (item_bindings.cpp).
std::vector<ItemWrite> item_writes(const py::list& items);
py::list item_refs(const std::vector<ItemRef>& refs);

// The CommitPlan Python builds by keyword (module.cpp binds it).
void bind_commit_plan(py::module_& m);

class Engine {
public:
    Engine(const std::string& path, uint32_t dim, Metric metric, bool metric_given, bool create, bool readonly,
           bool sync, size_t exact_cutoff, size_t map_size, size_t expansion_search) {
        StoreOptions o;
        o.dim = dim;
        o.metric = metric;
        o.metric_given = metric_given;
        o.create = create;
        o.readonly = readonly;
        o.sync = sync;
        o.exact_cutoff = exact_cutoff;
        o.index.expansion_search = expansion_search;
        o.map_size = map_size;
        py::gil_scoped_release nogil;
        h_ = std::make_unique<StoreHandle>(path, o);
    }

    // The store held open for one call (StoreHandle): keep the result alive
    // for the whole call. Taken without blocking while the GIL is held; if
    // close() is running, its end is awaited with the GIL released.
    StoreHandle::Use use() {
        if (auto u = h_->try_use()) return std::move(*u);
        py::gil_scoped_release nogil;
        return h_->use();
    }
    bool closed() const { return h_->closed(); }

    // scope: the statements' scope ("" the default); only its records are candidates.
    py::tuple prepare(const F32& vectors, const py::bytes& digests, size_t k, float min_similarity,
                      const std::string& scope = std::string(), size_t near_k = 0,
                      float near_floor = std::numeric_limits<float>::infinity()) {
        auto u = use();
        Store& st = *u;
        std::string d = digests;
        size_t n = d.size() / kDigestBytes;
        if (d.size() % kDigestBytes) throw InvalidArgument("digests must be 16 bytes each");
        const float* v = rows_of(vectors, n, st.dim(), "vectors");
        PrepareResult r;
        {
            py::gil_scoped_release nogil;
            r = st.prepare(v, n, reinterpret_cast<const unsigned char*>(d.data()), k, min_similarity, scope, near_k,
                           near_floor);
        }
        py::array_t<uint64_t> ids(r.candidates.size());
        py::array_t<float> scores(r.candidates.size());
        auto pi = ids.mutable_unchecked<1>();
        auto ps = scores.mutable_unchecked<1>();
        for (size_t i = 0; i < r.candidates.size(); ++i) {
            pi(i) = r.candidates[i].id;
            ps(i) = r.candidates[i].score;
        }
        py::dict records;
        for (const Row& row : r.records)
            records[py::int_(row.id)] = py::make_tuple(stored_str(row.text), owners_tuple(row.owners), row.round);
        py::object near = py::none();
        if (near_k > 0) {
            py::array_t<int64_t> near_ids(r.near.size());
            py::array_t<float> near_scores(r.near.size());
            auto ni = near_ids.mutable_unchecked<1>();
            auto ns = near_scores.mutable_unchecked<1>();
            for (size_t i = 0; i < r.near.size(); ++i) {
                ni(i) = static_cast<int64_t>(r.near[i].id);
                ns(i) = r.near[i].score;
            }
            std::vector<bool> complete(r.near_complete.begin(), r.near_complete.end());
            near = py::make_tuple(r.near_offsets, near_ids, near_scores, complete);
        }
        return py::make_tuple(r.seq, r.exact, r.offsets, ids, scores, records, near);
    }

    // plans: CommitPlan objects (bind_commit_plan), each with its deposit's scope.
    // batch: None, or (key bytes, digest bytes) to record exactly once with the commit.
    // items: None, or item writes (item_bindings.cpp) applied in the same
    // transaction; then a commit returns (True, ids, unused refs).
    py::tuple commit(const std::vector<CommitPlan>& plans, uint64_t prepared_seq, float min_similarity,
                     const py::object& batch = py::none(), const py::object& items = py::none()) {
        auto u = use();
        std::optional<std::vector<ItemWrite>> iw;
        if (!items.is_none()) iw = item_writes(items.cast<py::list>());
        std::optional<BatchKey> bk;
        if (!batch.is_none()) {
            auto t = batch.cast<py::tuple>();
            if (t.size() != 2) throw InvalidArgument("a commit's batch is (key, digest)");
            bk = BatchKey{t[0].cast<std::string>(), t[1].cast<std::string>()};
        }
        Store& st = *u;
        CommitResult r;
        {
            py::gil_scoped_release nogil;
            r = st.commit(plans, prepared_seq, min_similarity, bk ? &*bk : nullptr, iw ? &*iw : nullptr);
        }
        if (r.conflict) return py::make_tuple(false, r.why);
        if (iw) return py::make_tuple(true, r.ids, item_refs(r.unused));
        return py::make_tuple(true, r.ids);
    }

    py::list recall(const std::string& owner, const F32& query, size_t k, bool expand) {
        auto u = use();
        Store& st = *u;
        if (query.ndim() != 1 || static_cast<size_t>(query.shape(0)) != st.dim())
            throw InvalidArgument("query vector must have shape (" + std::to_string(st.dim()) + ",)");
        std::vector<Row> rows;
        {
            py::gil_scoped_release nogil;
            rows = st.recall(owner, query.data(), k, expand);
        }
        py::list out;
        for (const Row& r : rows) out.append(row_tuple(r));
        return out;
    }

    py::tuple get(uint64_t id) {
        auto u = use();
        Store& st = *u;
        Row r;
        {
            py::gil_scoped_release nogil;
            r = st.get(id);
        }
        return py::make_tuple(r.id, stored_str(r.text), owners_tuple(r.owners), r.round);
    }

    // scope: None for the whole store, else that scope's records only.
    py::dict stats(std::optional<std::string> scope) {
        auto u = use();
        Store& st = *u;
        Stats x;
        {
            py::gil_scoped_release nogil;
            x = scope ? st.stats(*scope) : st.stats();
        }
        py::dict d;
        d["records"] = x.records;
        d["deposits"] = x.deposits;
        d["merges"] = x.merges;
        d["shared"] = x.shared;
        d["linked"] = x.linked;
        d["max_owners"] = x.max_owners;
        d["agents"] = x.owners;  // Stats.agents in the Python API
        return d;
    }

    py::list merges(uint64_t after, size_t limit) {
        auto u = use();
        Store& st = *u;
        std::vector<MergeRow> rows;
        {
            py::gil_scoped_release nogil;
            rows = st.merges(after, limit);
        }
        py::list out;
        for (const MergeRow& m : rows)
            out.append(py::make_tuple(m.seq, m.survivor, stored_str(m.kept), stored_str(m.discarded),
                                      stored_str(m.owner), m.round));
        return out;
    }

    // (text, rows): the record's text and its said rows as (n, owner, round,
    // text), n ascending (forget's plan reads them).
    py::tuple said(uint64_t id) {
        auto u = use();
        Store& st = *u;
        std::pair<std::string, std::vector<SaidRow>> r;
        {
            py::gil_scoped_release nogil;
            r = st.said(id);
        }
        py::list rows;
        for (const SaidRow& s : r.second)
            rows.append(py::make_tuple(s.n, stored_str(s.owner), s.round, stored_str(s.text)));
        return py::make_tuple(stored_str(r.first), rows);
    }

    bool forget(const std::string& owner, uint64_t id, const std::string& expected_text, uint64_t expected_rows,
                uint64_t expected_last, const std::string& text, uint64_t vector_from,
                const std::vector<std::string>& digests) {
        auto u = use();
        Store& st = *u;
        ForgetPlan p{expected_text, expected_rows, expected_last, text, vector_from, digests};
        py::gil_scoped_release nogil;
        return st.forget(owner, id, p);
    }

    // (rows, vectors): rows of (id, text, owners, round, deposit, edges,
    // digests, said), vectors one float32 row per record; said is the
    // record's statements as (n, owner, round, text, vector bytes: native
    // float32, empty for row 0).
    py::tuple dump(uint64_t after, size_t limit) {
        auto u = use();
        Store& st = *u;
        std::vector<DumpRow> rows;
        {
            py::gil_scoped_release nogil;
            rows = st.dump(after, limit);
        }
        py::array_t<float> vectors({rows.size(), static_cast<size_t>(st.dim())});
        float* out = vectors.mutable_data();
        py::list list;
        for (size_t i = 0; i < rows.size(); ++i) {
            const DumpRow& r = rows[i];
            std::memcpy(out + i * st.dim(), r.vector.data(), st.dim() * sizeof(float));
            py::list digests;
            for (const std::string& d : r.digests) digests.append(py::bytes(d));
            py::list said;
            for (const SaidRow& sr : r.said)
                said.append(py::make_tuple(
                    sr.n, stored_str(sr.owner), sr.round, stored_str(sr.text),
                    py::bytes(reinterpret_cast<const char*>(sr.vector.data()), sr.vector.size() * sizeof(float))));
            list.append(py::make_tuple(r.id, stored_str(r.text), owners_tuple(r.owners), r.round, r.deposit, r.edges,
                                       digests, said));
        }
        return py::make_tuple(list, vectors);
    }

    // scopes: None, or per row its scope name ("" the default); supersedes:
    // None, or per row the record it supersedes (0 none).
    void load(const std::vector<std::string>& owners, const py::list& rows, const F32& vectors, const py::list& merges,
              const py::object& counters, const py::object& scopes = py::none(),
              const py::object& supersedes = py::none()) {
        auto u = use();
        Store& st = *u;
        LoadBatch b;
        b.owners = owners;
        std::vector<std::string> row_scopes;
        if (!scopes.is_none()) row_scopes = scopes.cast<std::vector<std::string>>();
        if (!row_scopes.empty() && row_scopes.size() != rows.size())
            throw InvalidArgument("a load's scopes must be one per row");
        std::vector<uint64_t> row_supersedes;
        if (!supersedes.is_none()) row_supersedes = supersedes.cast<std::vector<uint64_t>>();
        if (!row_supersedes.empty() && row_supersedes.size() != rows.size())
            throw InvalidArgument("a load's supersedes must be one per row");
        const float* v = rows_of(vectors, rows.size(), st.dim(), "vectors");
        for (size_t i = 0; i < rows.size(); ++i) {
            py::tuple t = rows[i].cast<py::tuple>();
            if (t.size() != 7 && t.size() != 8) throw InvalidArgument("a loaded record has 7 or 8 fields");
            DumpRow r;
            r.id = t[0].cast<uint64_t>();
            r.text = t[1].cast<std::string>();
            r.owners = t[2].cast<std::vector<std::string>>();
            r.round = t[3].cast<uint32_t>();
            r.deposit = t[4].cast<uint64_t>();
            r.edges = t[5].cast<std::vector<uint64_t>>();
            r.digests = t[6].cast<std::vector<std::string>>();
            r.vector.assign(v + i * st.dim(), v + (i + 1) * st.dim());
            if (t.size() == 8) {
                for (const py::handle& sh : t[7].cast<py::list>()) {
                    py::tuple st5 = sh.cast<py::tuple>();
                    if (st5.size() != 5) throw InvalidArgument("a loaded statement has 5 fields");
                    SaidRow sr;
                    sr.n = st5[0].cast<uint64_t>();
                    sr.owner = st5[1].cast<std::string>();
                    sr.round = st5[2].cast<uint32_t>();
                    sr.text = st5[3].cast<std::string>();
                    std::string vb = st5[4].cast<std::string>();
                    if (vb.size() % sizeof(float)) throw InvalidArgument("a statement's vector has a partial float");
                    sr.vector.resize(vb.size() / sizeof(float));
                    std::memcpy(sr.vector.data(), vb.data(), vb.size());
                    r.said.push_back(std::move(sr));
                }
            }
            if (!row_scopes.empty()) r.scope = row_scopes[i];
            if (!row_supersedes.empty()) r.supersedes = row_supersedes[i];
            b.rows.push_back(std::move(r));
        }
        for (const py::handle& h : merges) {
            py::tuple t = h.cast<py::tuple>();
            if (t.size() != 6) throw InvalidArgument("a loaded merge has 6 fields");
            b.merges.push_back(MergeRow{t[0].cast<uint64_t>(), t[1].cast<uint64_t>(), t[2].cast<std::string>(),
                                        t[3].cast<std::string>(), t[4].cast<std::string>(), t[5].cast<uint32_t>()});
        }
        Counters c;
        if (!counters.is_none()) {
            auto t = counters.cast<std::tuple<uint64_t, uint64_t, uint64_t>>();
            c = Counters{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
            b.counters = &c;
        }
        py::gil_scoped_release nogil;
        st.restore(b);
    }

    // Waits for the calls in flight; later calls raise "store is closed".
    void close() {
        py::gil_scoped_release nogil;
        h_->close();
    }

private:
    std::unique_ptr<StoreHandle> h_;
};

}  // namespace agentsensus_py
