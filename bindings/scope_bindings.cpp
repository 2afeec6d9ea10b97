// pybind11 glue for scopes (cpp/scopes.cpp): Engine.scope_of, scopes_of,
// scope_names and recall_scoped. Conversion and GIL release only; prepare,
// commit and load take their scope arguments in module.cpp.
#include <limits>
#include <string>
#include <vector>

#include "engine.hpp"
#include "recall_filter.hpp"

namespace agentsensus_py {

void bind_scopes_impl(py::module_& m) {
    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    engine.def(
        "scope_of",
        [](Engine& e, uint64_t id) {
            auto u = e.use();
            Store& st = *u;
            std::string s;
            {
                py::gil_scoped_release nogil;
                s = st.scope_of(id);
            }
            return stored_str(s);
        },
        py::arg("id"));
    engine.def(
        "scopes_of",
        [](Engine& e, const std::vector<uint64_t>& ids) {
            auto u = e.use();
            Store& st = *u;
            std::vector<std::string> names;
            {
                py::gil_scoped_release nogil;
                names = st.scopes_of(ids);
            }
            py::list out;
            for (const std::string& s : names) out.append(stored_str(s));
            return out;
        },
        py::arg("ids"));
    engine.def("scope_names", [](Engine& e) {
        auto u = e.use();
        Store& st = *u;
        std::vector<std::string> names;
        {
            py::gil_scoped_release nogil;
            names = st.scope_names();
        }
        py::list out;
        for (const std::string& s : names) out.append(stored_str(s));
        return out;
    });
    // Rows as recall_where's: (id, text, owners, round, score, via, created, updated, metadata).
    engine.def(
        "recall_scoped",
        [](Engine& e, const std::string& owner, const std::string& scope, const F32& query, size_t k, bool expand,
           const py::bytes& spec, float threshold) {
            auto u = e.use();
            Store& st = *u;
            if (query.ndim() != 1 || static_cast<size_t>(query.shape(0)) != st.dim())
                throw InvalidArgument("query vector must have shape (" + std::to_string(st.dim()) + ",)");
            RecallFilter f = RecallFilter::decode(std::string(spec));
            std::vector<Row> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.recall_scoped(owner, scope, query.data(), k, expand, f, threshold);
            }
            py::list out;
            for (const Row& r : rows) {
                py::tuple base = row_tuple(r);
                py::object created = r.has_times ? py::object(py::int_(r.times.created)) : py::object(py::none());
                py::object updated = r.has_times ? py::object(py::int_(r.times.updated)) : py::object(py::none());
                py::object meta = r.metadata.empty() ? py::object(py::none()) : py::object(stored_str(r.metadata));
                out.append(
                    py::make_tuple(base[0], base[1], base[2], base[3], base[4], base[5], created, updated, meta));
            }
            return out;
        },
        py::arg("owner"), py::arg("scope"), py::arg("query"), py::arg("k"), py::arg("expand"),
        py::arg("spec") = py::bytes(), py::arg("threshold") = -std::numeric_limits<float>::infinity());
}

}  // namespace agentsensus_py

void bind_scopes(pybind11::module_& m) { agentsensus_py::bind_scopes_impl(m); }
