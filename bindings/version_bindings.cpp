// pybind11 glue for versions (cpp/src/store/store_versions.cpp):
// Engine.chain and versions_of. Conversion and GIL release only; commit
// takes supersessions in its plans (commit_plan_bindings.cpp) and recall
// its as_of in the filter spec.
#include <vector>

#include "engine.hpp"

namespace agentsensus_py {

namespace {

py::object id_or_none(uint64_t id) { return id ? py::object(py::int_(id)) : py::object(py::none()); }

}  // namespace

void bind_versions(py::module_& m) {
    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    engine.def(
        "chain",
        [](Engine& e, uint64_t id) {
            auto u = e.use();
            Store& st = *u;
            py::gil_scoped_release nogil;
            return st.chain(id);
        },
        py::arg("id"));
    // Per id: (supersedes, superseded_by, valid_until), None where there is no link.
    engine.def(
        "versions_of",
        [](Engine& e, const std::vector<uint64_t>& ids) {
            auto u = e.use();
            Store& st = *u;
            std::vector<VersionLinks> links;
            {
                py::gil_scoped_release nogil;
                links = st.versions_of(ids);
            }
            py::list out;
            for (const VersionLinks& l : links)
                out.append(
                    py::make_tuple(id_or_none(l.supersedes), id_or_none(l.superseded_by),
                                   l.superseded_by ? py::object(py::int_(l.valid_until)) : py::object(py::none())));
            return out;
        },
        py::arg("ids"));
}

}  // namespace agentsensus_py
