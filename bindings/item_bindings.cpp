// pybind11 glue for the LangGraph item tables and the store's settings
// (item_table.hpp, settings_table.hpp); the commit's items argument is in
// engine.hpp. Conversion and GIL release only.
#include <optional>
#include <string>
#include <vector>

#include "engine.hpp"

namespace agentsensus_py {

// (ns, key, remove, value, created_us, updated_us, refs [(owner, record)], deposit)
std::vector<ItemWrite> item_writes(const py::list& items) {
    std::vector<ItemWrite> out;
    for (const py::handle& h : items) {
        py::tuple t = h.cast<py::tuple>();
        if (t.size() != 8) throw InvalidArgument("an item write has 8 fields");
        ItemWrite w;
        w.ns = t[0].cast<std::string>();
        w.key = t[1].cast<std::string>();
        w.remove = t[2].cast<bool>();
        w.value = t[3].cast<std::string>();
        w.created_us = t[4].cast<int64_t>();
        w.updated_us = t[5].cast<int64_t>();
        for (const py::handle& r : t[6].cast<py::list>()) {
            auto ref = r.cast<std::pair<std::string, uint64_t>>();
            w.refs.push_back(ItemRef{ref.first, ref.second});
        }
        w.deposit = t[7].cast<int64_t>();
        out.push_back(std::move(w));
    }
    return out;
}

py::list item_refs(const std::vector<ItemRef>& refs) {
    py::list out;
    for (const ItemRef& r : refs) out.append(py::make_tuple(stored_str(r.owner), r.record));
    return out;
}

namespace {

// (ns, key, value, created_us, updated_us, refs)
py::tuple row_of(const ItemRow& r) {
    return py::make_tuple(stored_str(r.ns), stored_str(r.key), stored_str(r.value), r.created_us, r.updated_us,
                          item_refs(r.refs));
}

py::list rows_of_items(const std::vector<ItemRow>& rows) {
    py::list out;
    for (const ItemRow& r : rows) out.append(row_of(r));
    return out;
}

}  // namespace

void bind_items_impl(py::module_& m) {
    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    engine.def(
        "item_write",
        [](Engine& e, const py::list& items) {
            auto u = e.use();
            Store& st = *u;
            std::vector<ItemWrite> w = item_writes(items);
            std::vector<ItemRef> unused;
            {
                py::gil_scoped_release nogil;
                unused = st.write_items(w);
            }
            return item_refs(unused);
        },
        py::arg("items"),
        "Applies item writes in one transaction (with the forget of records only their owner held); returns the other "
        "refs no item uses any more.");
    engine.def(
        "item_get",
        [](Engine& e, const std::string& ns, const std::string& key) -> py::object {
            auto u = e.use();
            Store& st = *u;
            std::optional<ItemRow> r;
            {
                py::gil_scoped_release nogil;
                r = st.item(ns, key);
            }
            if (!r) return py::none();
            return row_of(*r);
        },
        py::arg("ns"), py::arg("key"));
    engine.def(
        "items_under",
        [](Engine& e, const std::string& prefix) {
            auto u = e.use();
            Store& st = *u;
            std::vector<ItemRow> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.items_under(prefix);
            }
            return rows_of_items(rows);
        },
        py::arg("prefix"));
    engine.def("item_namespaces", [](Engine& e) {
        auto u = e.use();
        Store& st = *u;
        std::vector<std::string> ns;
        {
            py::gil_scoped_release nogil;
            ns = st.item_namespaces();
        }
        py::list out;
        for (const std::string& n : ns) out.append(stored_str(n));
        return out;
    });
    engine.def(
        "items_of",
        [](Engine& e, const std::string& owner, const std::vector<uint64_t>& records) {
            auto u = e.use();
            Store& st = *u;
            std::vector<std::pair<uint64_t, ItemRow>> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.items_of(owner, records);
            }
            py::list out;
            for (const auto& [id, r] : rows) out.append(py::make_tuple(id, row_of(r)));
            return out;
        },
        py::arg("owner"), py::arg("records"));
    engine.def(
        "items_page",
        [](Engine& e, const std::string& after_ns, const std::string& after_key, size_t limit) {
            auto u = e.use();
            Store& st = *u;
            std::vector<ItemRow> rows;
            {
                py::gil_scoped_release nogil;
                rows = st.items_page(after_ns, after_key, limit);
            }
            return rows_of_items(rows);
        },
        py::arg("after_ns"), py::arg("after_key"), py::arg("limit"));
    engine.def("item_count", [](Engine& e) {
        auto u = e.use();
        Store& st = *u;
        py::gil_scoped_release nogil;
        return st.item_count();
    });
    engine.def(
        "setting",
        [](Engine& e, const std::string& name) -> py::object {
            auto u = e.use();
            Store& st = *u;
            std::optional<std::string> v;
            {
                py::gil_scoped_release nogil;
                v = st.setting(name);
            }
            if (!v) return py::none();
            return stored_str(*v);
        },
        py::arg("name"));
    engine.def(
        "set_setting",
        [](Engine& e, const std::string& name, const std::string& value) {
            auto u = e.use();
            Store& st = *u;
            py::gil_scoped_release nogil;
            st.set_setting(name, value);
        },
        py::arg("name"), py::arg("value"));
}

}  // namespace agentsensus_py

void bind_items(pybind11::module_& m) { agentsensus_py::bind_items_impl(m); }
