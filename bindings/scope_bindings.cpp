// pybind11 glue for scopes (cpp/src/store/store_scopes.cpp): Engine.scope_of, scopes_of and
// scope_names (a scope's recall is Engine.recall_memories). Conversion and
// GIL release only; prepare, commit and load take their scope arguments in
// module.cpp.
#include <limits>
#include <string>
#include <vector>

#include "agentsensus/recall_filter.hpp"
#include "engine.hpp"

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
}

}  // namespace agentsensus_py

void bind_scopes(pybind11::module_& m) { agentsensus_py::bind_scopes_impl(m); }
