// pybind11 glue: type conversion, GIL release around every engine call, and
// the mapping of engine exceptions to Python ones. No logic lives here.
#include <pybind11/native_enum.h>

#include "agentsensus/compact.hpp"
#include "agentsensus/page_check.hpp"
#include "agentsensus/visible_text.hpp"
#include "engine.hpp"

using namespace agentsensus_py;

void bind_fence(pybind11::module_& m);
void bind_batch_keys(pybind11::module_& m);
namespace agentsensus_py {
void bind_lexical(pybind11::module_& m);
void bind_memories(pybind11::module_& m);
void bind_versions(pybind11::module_& m);
}  // namespace agentsensus_py
void bind_record_meta(pybind11::module_& m);
void bind_items(pybind11::module_& m);
void bind_scopes(pybind11::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "agentsensus engine (C++): LMDB storage, usearch search, consensus merges.";

    static py::exception<Error> base(m, "Error");
    static py::exception<Corrupt> corrupt(m, "CorruptStoreError", base.ptr());
    static py::exception<StoreFull> full(m, "StoreFullError", base.ptr());
    static py::exception<StoreMoved> moved(m, "StoreMovedError", base.ptr());
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const InvalidArgument& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const NotFound& e) {
            PyErr_SetString(PyExc_KeyError, e.what());
        } catch (const Corrupt& e) {
            py::set_error(corrupt, e.what());
        } catch (const StoreFull& e) {
            py::set_error(full, e.what());
        } catch (const StoreMoved& e) {
            py::set_error(moved, e.what());
        } catch (const Error& e) {
            py::set_error(base, e.what());
        }
    });

    m.attr("MAX_STATEMENT_BYTES") = kMaxStatementBytes;
    m.attr("MAX_STATEMENTS_PER_DEPOSIT") = kMaxStatementsPerDeposit;
    m.attr("MAX_OWNER_BYTES") = kMaxOwnerBytes;
    m.attr("MAX_OWNERS_PER_RECORD") = kMaxOwnersPerRecord;
    m.attr("MAX_DIM") = kMaxDim;
    {
        py::list ranges;  // the engine's invisible code points, for _store/validation.py
        for (const CodeRange& r : kInvisibleRanges) ranges.append(py::make_tuple(r.lo, r.hi));
        m.attr("INVISIBLE_RANGES") = ranges;
    }

    py::native_enum<Metric>(m, "Metric", "enum.Enum", "The similarity a store compares vectors with.")
        .value("cos", Metric::cos)
        .value("ip", Metric::ip)
        .value("l2sq", Metric::l2sq)
        .finalize();

    bind_commit_plan(m);
    py::class_<Engine>(m, "Engine")
        .def(py::init<const std::string&, uint32_t, Metric, bool, bool, bool, bool, size_t, size_t, size_t>(),
             py::arg("path"), py::arg("dim"), py::arg("metric"), py::arg("metric_given"), py::arg("create"),
             py::arg("readonly"), py::arg("sync"), py::arg("exact_cutoff"), py::arg("map_size"),
             py::arg("expansion_search") = 64)
        .def_property_readonly("dim", [](Engine& e) { return e.use()->dim(); })
        .def_property_readonly("metric", [](Engine& e) { return e.use()->metric(); })
        .def_property_readonly("closed", [](Engine& e) { return e.closed(); })
        .def("prepare", &Engine::prepare, py::arg("vectors"), py::arg("digests"), py::arg("k"),
             py::arg("min_similarity"), py::arg("scope") = std::string(), py::arg("near_k") = 0,
             py::arg("near_floor") = std::numeric_limits<float>::infinity())
        .def("commit", &Engine::commit, py::arg("plans"), py::arg("prepared_seq"), py::arg("min_similarity"),
             py::arg("batch") = py::none(), py::arg("items") = py::none())
        .def("recall", &Engine::recall)
        .def("prepare_vectors",
             [](Engine& e, const F32& vectors) {
                 auto u = e.use();
                 Store& st = *u;
                 size_t n = vectors.ndim() == 2 ? static_cast<size_t>(vectors.shape(0)) : 0;
                 const float* in = rows_of(vectors, n, st.dim(), "vectors");
                 py::array_t<float> out({n, static_cast<size_t>(st.dim())});
                 float* o = out.mutable_data();
                 py::gil_scoped_release nogil;
                 st.prepare_vectors(in, n, o);
                 return out;
             })
        .def("similarities",
             [](Engine& e, const F32& queries, const F32& kept) {
                 auto u = e.use();
                 Store& st = *u;
                 size_t n = queries.ndim() == 2 ? static_cast<size_t>(queries.shape(0)) : 0;
                 size_t m = kept.ndim() == 2 ? static_cast<size_t>(kept.shape(0)) : 0;
                 const float* q = rows_of(queries, n, st.dim(), "queries");
                 const float* k = rows_of(kept, m, st.dim(), "kept");
                 py::array_t<float> out({n, m});
                 float* o = out.mutable_data();
                 py::gil_scoped_release nogil;
                 st.similarities(q, n, k, m, o);
                 return out;
             })
        .def("get", &Engine::get)
        .def("neighbors",
             [](Engine& e, uint64_t id) {
                 auto u = e.use();
                 Store& st = *u;
                 py::gil_scoped_release nogil;
                 return st.neighbors(id);
             })
        .def("owned",
             [](Engine& e, const std::string& owner) {
                 auto u = e.use();
                 Store& st = *u;
                 py::gil_scoped_release nogil;
                 return st.owned(owner);
             })
        .def("forget", &Engine::forget, py::arg("owner"), py::arg("id"), py::arg("expected_text"),
             py::arg("expected_rows"), py::arg("expected_last"), py::arg("text"), py::arg("vector_from"),
             py::arg("digests"))
        .def("said", &Engine::said, py::arg("id"))
        .def("records",
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
                     out.append(py::make_tuple(r.id, stored_str(r.text), owners_tuple(r.owners), r.round));
                 return out;
             })
        .def(
            "verify",
            [](Engine& e, py::object digest) {
                auto u = e.use();
                Store& st = *u;
                std::vector<std::string> problems;
                Store::DigestFn fn;
                if (!digest.is_none())
                    // The store's normalization lives in Python (normalize.py):
                    // called per text, holding the GIL only for the call.
                    fn = [&digest](std::string_view text, std::string_view scope) {
                        py::gil_scoped_acquire gil;
                        py::object t = py::reinterpret_steal<py::object>(
                            PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
                        py::object s = py::reinterpret_steal<py::object>(
                            PyUnicode_DecodeUTF8(scope.data(), static_cast<Py_ssize_t>(scope.size()), "replace"));
                        return std::string(py::bytes(digest(t, s)));
                    };
                {
                    py::gil_scoped_release nogil;
                    problems = st.verify(fn);
                }
                // A report quotes damaged names and texts: decode leniently,
                // or the report of damage would itself fail.
                py::list out;
                for (const std::string& p : problems)
                    out.append(py::reinterpret_steal<py::str>(
                        PyUnicode_DecodeUTF8(p.data(), static_cast<Py_ssize_t>(p.size()), "replace")));
                return out;
            },
            py::arg("digest") = py::none())
        .def("repair",
             [](Engine& e, const std::vector<std::pair<uint64_t, py::bytes>>& digests) {
                 auto u = e.use();
                 Store& st = *u;
                 std::vector<std::pair<uint64_t, std::string>> ds;
                 for (auto& [id, d] : digests) ds.emplace_back(id, std::string(d));
                 py::gil_scoped_release nogil;
                 st.repair(ds);
             })
        .def("check_alone",
             [](Engine& e) {
                 auto u = e.use();
                 Store& st = *u;
                 st.check_alone();
             })
        .def("dump", &Engine::dump, py::arg("after"), py::arg("limit"))
        .def("load", &Engine::load, py::arg("owners"), py::arg("rows"), py::arg("vectors"), py::arg("merges"),
             py::arg("counters"), py::arg("scopes") = py::none(), py::arg("supersedes") = py::none())
        .def("counters",
             [](Engine& e) {
                 auto u = e.use();
                 Store& st = *u;
                 Counters c;
                 {
                     py::gil_scoped_release nogil;
                     c = st.counters();
                 }
                 return py::make_tuple(c.next_id, c.next_merge, c.deposits);
             })
        .def("owner_names",
             [](Engine& e) {
                 auto u = e.use();
                 Store& st = *u;
                 py::gil_scoped_release nogil;
                 return st.owner_names();
             })
        .def("stats", &Engine::stats, py::arg("scope") = py::none())
        .def("merges", &Engine::merges)
        .def("checkpoint",
             [](Engine& e) {
                 auto u = e.use();
                 Store& st = *u;
                 py::gil_scoped_release nogil;
                 return st.checkpoint();
             })
        .def("close", &Engine::close);

    m.def(
        "compact",
        [](const std::string& path) {
            CompactResult r;
            {
                py::gil_scoped_release nogil;
                r = compact_store(path);
            }
            return py::make_tuple(r.before, r.after);
        },
        py::arg("path"), "Rewrites a closed store's data.mdb without free pages; returns (bytes before, after).");
    m.def(
        "check_pages",
        [](const std::string& path, bool deep) {
            py::gil_scoped_release nogil;
            return check_pages(path, deep);
        },
        py::arg("path"), py::arg("deep") = true,
        "Structural problems of path/data.mdb, read without LMDB's map; [] when sound.");

    bind_fence(m);
    bind_batch_keys(m);
    bind_lexical(m);
    bind_record_meta(m);
    bind_items(m);
    bind_scopes(m);
    bind_memories(m);
    bind_versions(m);
}
