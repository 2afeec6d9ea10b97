// pybind11 glue for Planfence lineage: _core.Lineage over an Engine's store.
// Conversion and GIL release only; the Python layer (agentsensus.fence)
// validates arguments first for friendlier messages.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <pybind11/native_enum.h>

#include "agentsensus/heads_codec.hpp"
#include "agentsensus/lineage.hpp"
#include "engine.hpp"

namespace agentsensus_py {

namespace {

std::string as_bytes(const py::handle& h, const char* what) {
    if (!py::isinstance<py::bytes>(h)) throw InvalidArgument(std::string(what) + " must be bytes");
    return h.cast<std::string>();
}

ValueDigest as_digest(const py::handle& h) {
    std::string d = as_bytes(h, "digest");
    if (d.size() != kValueDigestBytes) throw InvalidArgument("a value digest is 16 bytes");
    ValueDigest out;
    std::memcpy(out.data(), d.data(), kValueDigestBytes);
    return out;
}

py::bytes digest_bytes(const ValueDigest& d) { return py::bytes(reinterpret_cast<const char*>(d.data()), d.size()); }

std::optional<Scope> as_scope(const py::object& scope) {
    if (scope.is_none()) return std::nullopt;
    Scope s;
    for (const py::handle& h : scope) s.insert(h.cast<std::string>());
    return s;
}

// _core.StaleWhy's members by value, fetched once at import: casting a C++
// enum calls the Python enum class (about 0.45 us a row), this is an incref.
// Never destroyed: they live as long as the module.
std::vector<py::object>* stale_whys = nullptr;

py::tuple result_tuple(const CheckResult& r) {
    py::list stale;
    for (const StaleRow& s : r.stale)
        stale.append(py::make_tuple(stored_str(s.key), stored_str(s.owner), s.recorded, s.head,
                                    (*stale_whys)[static_cast<size_t>(s.why)]));
    return py::make_tuple(r.current, stale, r.owners_asked, r.bytes);
}

// A prepared check, opaque to Python except for what the transport needs.
struct Prepared {
    PreparedCheck p;
};

}  // namespace

// One store's lineage. Holds its Engine alive; every call holds the store
// open while it runs (Engine::use), since the Python Store can be closed
// from another thread.
class LineageHandle {
public:
    explicit LineageHandle(py::object engine) : engine_obj_(std::move(engine)) {
        engine_ = engine_obj_.cast<Engine*>();
        auto u = engine_->use();
        Store& store = *u;
        py::gil_scoped_release nogil;
        lineage_ = std::make_unique<Lineage>(store);
    }

    py::list apply(const py::list& ops, bool commit) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::vector<LineageOp> v;
        v.reserve(ops.size());
        for (const py::handle& h : ops) {
            py::tuple t = py::reinterpret_borrow<py::tuple>(h);
            if (t.size() != 7 && t.size() != 8) throw InvalidArgument("a lineage op has 7 fields (8 with restore)");
            LineageOp op;
            try {
                op.kind = t[0].cast<LineageOp::Kind>();
            } catch (const py::cast_error&) {
                throw InvalidArgument("a lineage op's kind must be a LineageKind");
            }
            op.key = t[1].cast<std::string>();
            op.owner = t[2].cast<std::string>();
            op.digest = as_digest(t[3]);
            op.value = as_bytes(t[4], "value");
            op.version = t[5].cast<uint64_t>();
            for (const py::handle& in : t[6].cast<py::list>()) {
                py::tuple p = py::reinterpret_borrow<py::tuple>(in);
                op.inputs.emplace_back(p[0].cast<std::string>(), p[1].cast<uint64_t>());
            }
            if (t.size() == 8) op.restore = t[7].cast<bool>();
            v.push_back(std::move(op));
        }
        std::vector<uint64_t> out;
        {
            py::gil_scoped_release nogil;
            out = lin.apply(v, commit);
        }
        return py::cast(out);
    }

    py::tuple info(const std::string& key) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        KeyInfo k;
        {
            py::gil_scoped_release nogil;
            k = lin.info(key);
        }
        return py::make_tuple(stored_str(k.owner), k.head);
    }

    py::bytes value(const std::string& key, uint64_t version) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::string v;
        {
            py::gil_scoped_release nogil;
            v = lin.value(key, version);
        }
        return py::bytes(v);
    }

    std::vector<std::string> keys() {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        py::gil_scoped_release nogil;
        return lin.keys();
    }

    py::list versions(const std::string& key) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::vector<VersionRow> rows;
        {
            py::gil_scoped_release nogil;
            rows = lin.versions(key);
        }
        py::list out;
        for (const VersionRow& r : rows)
            out.append(py::make_tuple(r.version, r.kind, digest_bytes(r.digest), py::bytes(r.value), r.inputs));
        return out;
    }

    std::vector<std::string> verify() {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        py::gil_scoped_release nogil;
        return lin.verify();
    }

    py::list frontier(const std::string& key, const py::object& scope) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::optional<Scope> s = as_scope(scope);
        std::vector<LinkRow> rows;
        {
            py::gil_scoped_release nogil;
            rows = lin.frontier(key, s ? &*s : nullptr);
        }
        py::list out;
        for (const LinkRow& r : rows)
            out.append(
                py::make_tuple(stored_str(r.key), stored_str(r.owner), r.version, digest_bytes(r.digest), r.derived));
        return out;
    }

    Prepared prepare(const std::string& key, const py::object& scope) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::optional<Scope> s = as_scope(scope);
        Prepared p;
        py::gil_scoped_release nogil;
        p.p = lin.prepare(key, s ? &*s : nullptr);
        return p;
    }

    Prepared prepare_all() {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        Prepared p;
        py::gil_scoped_release nogil;
        p.p = lin.prepare_all();
        return p;
    }

    py::bytes answer(const std::string& owner, const py::bytes& query) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::string q = query;
        std::string a;
        {
            py::gil_scoped_release nogil;
            a = lin.answer(owner, q);
        }
        return py::bytes(a);
    }

    py::tuple finish(const Prepared& p, const py::list& answers) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::vector<std::optional<std::string>> owned;
        for (const py::handle& h : answers)
            owned.push_back(h.is_none() ? std::nullopt : std::optional<std::string>(as_bytes(h, "an answer")));
        std::vector<const std::string*> ptrs;
        for (auto& o : owned) ptrs.push_back(o ? &*o : nullptr);
        CheckResult r;
        {
            py::gil_scoped_release nogil;
            r = lin.finish(p.p, ptrs);
        }
        return result_tuple(r);
    }

    py::tuple check_local(const std::string& key, const py::object& scope) {
        auto u = engine_->use();
        Lineage& lin = *lineage_;
        std::optional<Scope> s = as_scope(scope);
        CheckResult r;
        {
            py::gil_scoped_release nogil;
            r = lin.check_local(key, s ? &*s : nullptr);
        }
        return result_tuple(r);
    }

private:
    py::object engine_obj_;
    Engine* engine_ = nullptr;
    std::unique_ptr<Lineage> lineage_;
};

void bind_fence_impl(py::module_& m) {
    m.attr("VALUE_DIGEST_BYTES") = kValueDigestBytes;
    m.attr("MAX_KEY_BYTES") = kMaxKeyBytes;
    m.attr("MAX_VALUE_BYTES") = kMaxValueBytes;
    m.attr("MAX_INPUTS") = kMaxInputs;

    // The codes shared with the Python layer, named once here.
    py::native_enum<LineageOp::Kind>(m, "LineageKind", "enum.Enum", "What a lineage op writes (LineageOp::Kind).")
        .value("publish", LineageOp::publish)
        .value("derive", LineageOp::derive)
        .value("observe", LineageOp::observe)
        .finalize();
    py::native_enum<StaleWhy>(m, "StaleWhy", "enum.Enum", "Why a frontier link is not current.")
        .value("moved", StaleWhy::moved)
        .value("unknown", StaleWhy::unknown)
        .value("no_answer", StaleWhy::no_answer)
        .value("malformed", StaleWhy::malformed)
        .finalize();
    stale_whys = new std::vector<py::object>();
    for (StaleWhy w : {StaleWhy::moved, StaleWhy::unknown, StaleWhy::no_answer, StaleWhy::malformed})
        stale_whys->push_back(py::cast(w));  // in value order: index = value

    py::class_<Prepared>(m, "PreparedCheck")
        .def("groups",
             [](const Prepared& p) {
                 py::list out;
                 for (const OwnerGroup& g : p.p.groups) {
                     py::list links;
                     for (const LinkRow& r : g.links)
                         links.append(py::make_tuple(stored_str(r.key), r.version, digest_bytes(r.digest)));
                     out.append(py::make_tuple(stored_str(g.owner), py::bytes(g.query), links));
                 }
                 return out;
             })
        .def("__len__", [](const Prepared& p) { return p.p.groups.size(); });

    py::class_<LineageHandle>(m, "Lineage")
        .def(py::init<py::object>(), py::arg("engine"))
        .def("apply", &LineageHandle::apply, py::arg("ops"), py::arg("commit"))
        .def("info", &LineageHandle::info, py::arg("key"))
        .def("value", &LineageHandle::value, py::arg("key"), py::arg("version"))
        .def("keys", &LineageHandle::keys)
        .def("versions", &LineageHandle::versions, py::arg("key"))
        .def("verify", &LineageHandle::verify)
        .def("frontier", &LineageHandle::frontier, py::arg("key"), py::arg("scope"))
        .def("prepare", &LineageHandle::prepare, py::arg("key"), py::arg("scope"))
        .def("prepare_all", &LineageHandle::prepare_all)
        .def("answer", &LineageHandle::answer, py::arg("owner"), py::arg("query"))
        .def("finish", &LineageHandle::finish, py::arg("prepared"), py::arg("answers"))
        .def("check_local", &LineageHandle::check_local, py::arg("key"), py::arg("scope"))
        .def_static(
            "encode_answer",
            [](const std::vector<std::pair<uint64_t, bool>>& heads) {
                std::vector<HeadAnswer> a;
                a.reserve(heads.size());
                for (const auto& [h, same] : heads) a.push_back(HeadAnswer{h, same});
                std::string out;
                {
                    py::gil_scoped_release nogil;
                    out = encode_answer(a);
                }
                return py::bytes(out);
            },
            py::arg("heads"))
        .def_static(
            "encode_query",
            [](const std::vector<std::pair<std::string, uint64_t>>& entries) {
                std::vector<HeadQuery> q;
                q.reserve(entries.size());
                for (const auto& [k, v] : entries) q.push_back(HeadQuery{k, v});
                std::string out;
                {
                    py::gil_scoped_release nogil;
                    std::sort(q.begin(), q.end(), [](const HeadQuery& a, const HeadQuery& b) { return a.key < b.key; });
                    out = encode_query(q);
                }
                return py::bytes(out);
            },
            py::arg("entries"))
        // The codec's own decoders, for the Python side of a heads server
        // (planfence/memory_links.py) and client (transport.py).
        .def_static(
            "decode_query",
            [](const py::bytes& query) {
                std::vector<HeadQuery> q;
                if (!decode_query(std::string_view(query), q, kMaxInputs * 16))
                    throw InvalidArgument("malformed head query");
                py::list out;
                for (const HeadQuery& e : q) out.append(py::make_tuple(stored_str(e.key), e.recorded));
                return out;
            },
            py::arg("query"),
            "(key, recorded version) of each entry of an encoded head query; ValueError when malformed.")
        .def_static(
            "decode_answer",
            [](const py::bytes& answer, size_t expected) {
                std::vector<HeadAnswer> a;
                if (!decode_answer(std::string_view(answer), expected, a))
                    throw InvalidArgument("malformed head answer");
                py::list out;
                for (const HeadAnswer& e : a) out.append(py::make_tuple(e.head, e.same));
                return out;
            },
            py::arg("answer"), py::arg("expected"),
            "(head, same) of each entry of an encoded head answer of `expected` entries; ValueError when malformed "
            "or of another length.");
}

}  // namespace agentsensus_py

void bind_fence(pybind11::module_& m) { agentsensus_py::bind_fence_impl(m); }
