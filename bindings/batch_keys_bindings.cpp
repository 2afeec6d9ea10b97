// pybind11 glue for exactly-once batches: Engine.batch_result, batch_keys and
// load_batch_keys (the commit's batch argument is in engine.hpp). Conversion
// and GIL release only; agentsensus.batch_keys checks the key first.
#include <string>
#include <utility>
#include <vector>

#include "engine.hpp"

namespace agentsensus_py {

namespace {

py::tuple result_tuple(const BatchResult& r) {
    py::list merged;
    for (const auto& m : r.merged) {
        py::list row;
        for (uint8_t x : m) row.append(py::bool_(x != 0));
        merged.append(row);
    }
    return py::make_tuple(py::bytes(r.digest), r.ids, merged);
}

}  // namespace

void bind_batch_keys_impl(py::module_& m) {
    m.attr("MAX_BATCH_KEY_BYTES") = kMaxBatchKeyBytes;
    m.attr("BATCH_DIGEST_BYTES") = kBatchDigestBytes;
    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    engine.def(
        "batch_result",
        [](Engine& e, const py::bytes& key) -> py::object {
            auto u = e.use();
            Store& st = *u;
            std::string k = key;
            std::optional<BatchResult> r;
            {
                py::gil_scoped_release nogil;
                r = st.batch_result(k);
            }
            if (!r) return py::none();
            return result_tuple(*r);
        },
        py::arg("key"), "(digest, ids, merged) recorded under a batch key, or None.");
    engine.def(
        "batch_keys",
        [](Engine& e, const py::bytes& after, size_t limit) {
            auto u = e.use();
            Store& st = *u;
            std::string a = after;
            std::vector<std::pair<std::string, BatchResult>> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.batch_keys(a, limit);
            }
            py::list out;
            for (const auto& [k, r] : rows) out.append(py::make_tuple(py::bytes(k), result_tuple(r)));
            return out;
        },
        py::arg("after"), py::arg("limit"), "[(key, (digest, ids, merged))] in key order after `after`.");
    engine.def(
        "load_batch_keys",
        [](Engine& e, const py::list& rows) {
            auto u = e.use();
            Store& st = *u;
            std::vector<std::pair<std::string, BatchResult>> in;
            for (const py::handle& h : rows) {
                auto t = h.cast<py::tuple>();
                if (t.size() != 4) throw InvalidArgument("a batch key row has 4 fields");
                BatchResult r;
                r.digest = t[1].cast<std::string>();
                r.ids = t[2].cast<std::vector<std::vector<uint64_t>>>();
                for (const py::handle& row : t[3].cast<py::list>()) {
                    std::vector<uint8_t> mm;
                    for (const py::handle& x : row.cast<py::list>()) mm.push_back(x.cast<bool>() ? 1 : 0);
                    r.merged.push_back(std::move(mm));
                }
                in.emplace_back(t[0].cast<std::string>(), std::move(r));
            }
            py::gil_scoped_release nogil;
            st.load_batch_keys(in);
        },
        py::arg("rows"), "Records [(key, digest, ids, merged)] in one transaction (an import).");
}

}  // namespace agentsensus_py

void bind_batch_keys(pybind11::module_& m) { agentsensus_py::bind_batch_keys_impl(m); }
