// pybind11 glue for record times, per-owner metadata and update:
// Engine.get_meta, records_meta, update, meta_dump and load_meta (filtered
// recall is Engine.recall_memories, memory_bindings.cpp). Conversion and GIL
// release only; store.py checks the metadata first.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "agentsensus/recall_filter.hpp"
#include "engine.hpp"

namespace agentsensus_py {

namespace {

py::object times_or_none(const Row& r, bool created) {
    if (!r.has_times) return py::none();
    return py::int_(created ? r.times.created : r.times.updated);
}

py::object metadata_or_none(const std::string& m) {
    if (m.empty()) return py::none();
    return stored_str(m);
}

}  // namespace

void bind_record_meta_impl(py::module_& m) {
    m.attr("MAX_METADATA_BYTES") = kMaxMetadataBytes;
    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    engine.def(
        "get_meta",
        [](Engine& e, uint64_t id, const std::string& owner) {
            auto u = e.use();
            Store& st = *u;
            Row r;
            {
                py::gil_scoped_release nogil;
                r = st.get(id, owner);
            }
            return py::make_tuple(r.id, stored_str(r.text), owners_tuple(r.owners), r.round, times_or_none(r, true),
                                  times_or_none(r, false), metadata_or_none(r.metadata));
        },
        py::arg("id"), py::arg("owner") = std::string());
    engine.def(
        "records_meta",
        [](Engine& e, uint64_t after, size_t limit) {
            auto u = e.use();
            Store& st = *u;
            std::vector<Row> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.records(after, limit);
            }
            py::list out;
            for (const Row& r : rows)
                out.append(py::make_tuple(r.id, stored_str(r.text), owners_tuple(r.owners), r.round,
                                          times_or_none(r, true), times_or_none(r, false)));
            return out;
        },
        py::arg("after"), py::arg("limit"));
    engine.def(
        "update",
        [](Engine& e, const std::string& owner, uint64_t id, const std::string& expected, const std::string& text,
           const py::bytes& digest, const F32& vector, uint32_t round, const std::string& metadata) {
            auto u = e.use();
            Store& st = *u;
            std::string d = digest;
            if (d.size() != kDigestBytes) throw InvalidArgument("a text digest must be 16 bytes");
            if (vector.ndim() != 1 || static_cast<size_t>(vector.shape(0)) != st.dim())
                throw InvalidArgument("vector must have shape (" + std::to_string(st.dim()) + ",)");
            py::gil_scoped_release nogil;
            return st.update(owner, id, expected, text, reinterpret_cast<const unsigned char*>(d.data()), vector.data(),
                             round, metadata);
        },
        py::arg("owner"), py::arg("id"), py::arg("expected"), py::arg("text"), py::arg("digest"), py::arg("vector"),
        py::arg("round"), py::arg("metadata"));
    engine.def(
        "merges_of",
        [](Engine& e, uint64_t id) {
            auto u = e.use();
            Store& st = *u;
            std::vector<MergeRow> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.merges_of(id);
            }
            py::list out;
            for (const MergeRow& m : rows)
                out.append(py::make_tuple(m.seq, m.survivor, stored_str(m.kept), stored_str(m.discarded),
                                          stored_str(m.owner), m.round));
            return out;
        },
        py::arg("id"));
    engine.def(
        "meta_dump",
        [](Engine& e, uint64_t after, size_t limit) {
            auto u = e.use();
            Store& st = *u;
            std::vector<MetaDump> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.meta_dump(after, limit);
            }
            py::list out;
            for (const MetaDump& d : rows) {
                py::list md;
                for (const auto& p : d.metadata) md.append(py::make_tuple(stored_str(p.first), stored_str(p.second)));
                out.append(py::make_tuple(d.id, d.has_times ? py::object(py::int_(d.times.created)) : py::none(),
                                          d.has_times ? py::object(py::int_(d.times.updated)) : py::none(), md));
            }
            return out;
        },
        py::arg("after"), py::arg("limit"));
    engine.def(
        "load_meta",
        [](Engine& e, const py::list& rows) {
            auto u = e.use();
            Store& st = *u;
            std::vector<MetaDump> ds;
            for (const py::handle& h : rows) {
                auto t = py::reinterpret_borrow<py::tuple>(h);
                if (t.size() != 4) throw InvalidArgument("a metadata row is (id, created, updated, [(owner, json)])");
                MetaDump d;
                d.id = t[0].cast<uint64_t>();
                if (!t[1].is_none() || !t[2].is_none()) {
                    d.has_times = true;
                    d.times.created = t[1].cast<uint64_t>();
                    d.times.updated = t[2].cast<uint64_t>();
                }
                for (const py::handle& p : t[3].cast<py::list>()) {
                    auto pt = py::reinterpret_borrow<py::tuple>(p);
                    d.metadata.emplace_back(pt[0].cast<std::string>(), pt[1].cast<std::string>());
                }
                ds.push_back(std::move(d));
            }
            py::gil_scoped_release nogil;
            st.load_meta(ds);
        },
        py::arg("rows"));
}

}  // namespace agentsensus_py

void bind_record_meta(pybind11::module_& m) { agentsensus_py::bind_record_meta_impl(m); }
