// pybind11 glue for Store.recall's common path: Engine.recall_memories runs
// the recall with the GIL released and builds the agentsensus.Memory objects
// itself, so the part of a recall that holds the GIL (and so serializes
// reader threads) is as short as it can be: no Python frame per row, no
// intermediate tuples, times converted without Python datetime arithmetic;
// a recall that was short last time keeps the GIL (keep_gil_below).
// recall_nogil_ns lets a bench split a recall's time into GIL-held and
// GIL-released.
#include <chrono>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agentsensus/recall_filter.hpp"
#include "engine.hpp"  // first: Python.h, which datetime.h needs

#include <datetime.h>
#include <structmember.h>

namespace agentsensus_py {

namespace {

// Time this thread spent in recall_memories with the GIL released.
thread_local uint64_t released_ns = 0;

// A recall whose engine work took under keep_gil_below the last time for this
// store and owner keeps the GIL: with several reader threads, handing the
// GIL over and taking it back costs more than so short a recall frees (2
// threads gave 0.7x the recalls/s of one on 10-record owners when every
// recall released it). Invariant: no recall keeps the GIL while a thread
// that holds one of the engine's locks waits for the GIL, or the two would
// wait for each other (a recall that catches the index up takes its lock
// exclusively). The engine calls no Python, so the only such thread is a
// recall_many caller converting meanwhile: while any runs
// (converting_batches), every recall releases the GIL. The map is read
// and written with the GIL held only, and forgotten when it grows large
// (a first recall releases).
// recall_keep_gil_ns sets it (0: every recall releases), so a bench can
// set the two policies side by side.
std::chrono::nanoseconds keep_gil_below{30000};
constexpr size_t kKeepGilOwners = 1 << 16;
std::unordered_map<std::string, bool> short_recall;
// recall_many batches whose caller takes the GIL back while it holds the
// index lock shared; read and written with the GIL held.
size_t converting_batches = 0;

// recall_many_memories converts answers while the engine makes the rest
// (the default), or after them all (recall_many_overlap(False), so a bench
// can set the two side by side). While the batch runs, the caller's thread
// is one of the engine's workers and converts what is finished every
// kWakeEvery answers; so the threads never outnumber the workers. On a
// 2-core machine, 1% owners of 20k records: 1.63x-1.83x one-by-one recall
// converting meanwhile, against 1.54x-1.65x after, in the same runs of the
// installed package (bench/notes/2026-12-03-recall-many.md).
bool overlap_conversion = true;
constexpr size_t kWakeEvery = 8;

std::string short_recall_key(const Engine& e, const std::string& owner) {
    const Engine* p = &e;
    std::string key(reinterpret_cast<const char*>(&p), sizeof p);
    return key + owner;
}

// Memory's fields in its declaration order (records.py), interned once.
enum Field {
    kId,
    kText,
    kOwners,
    kRound,
    kScore,
    kVia,
    kMetadata,
    kCreated,
    kUpdated,
    kLexical,
    kSupersedes,
    kSupersededBy,
    kValidUntil,
    kFields
};
PyObject* field_names[kFields];
PyObject* via_names[3];  // "hit", "edge", ""

py::object steal(PyObject* o) {
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

// 9999-12-31T23:59:59.999999Z, the last instant a Python datetime holds.
constexpr uint64_t kMaxMicros = 253402300799999999ull;

// An aware UTC datetime for engine microseconds since the epoch; the same
// value record_meta.to_datetime gives (days to a civil date: H. Hinnant's
// algorithm, non-negative days only, which uint64 guarantees).
py::object utc_datetime(uint64_t us) {
    if (us > kMaxMicros)
        throw Corrupt("a record time of " + std::to_string(us) + " us is out of range (damaged times table)");
    const uint64_t day_us = 86400000000ull;
    uint64_t days = us / day_us, rem = us % day_us;
    const uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    const uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1), m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    const int y = static_cast<int>(yoe + era * 400) + (m <= 2);
    const uint64_t secs = rem / 1000000;
    return steal(PyDateTimeAPI->DateTime_FromDateAndTime(
        y, m, d, static_cast<int>(secs / 3600), static_cast<int>(secs / 60 % 60), static_cast<int>(secs % 60),
        static_cast<int>(rem % 1000000), PyDateTime_TimeZone_UTC, PyDateTimeAPI->DateTimeType));
}

// The immutable values that rows of one recall (or one recall_many batch)
// share, made once: a hit's expansion rows mostly have its owner set, a
// batch's rows name the same few owners, and one deposit's rows have its
// times. Frozensets, strs and datetimes are immutable, so Memory objects may
// share them; the GIL is held while this is used, which is the time that
// serializes reader threads.
class SharedValues {
public:
    py::object owners(const std::vector<std::string>& names) {
        key_.clear();
        for (const std::string& n : names) key_.append(n).push_back('\0');  // names hold no NUL (check_owner)
        auto it = sets_.find(key_);
        if (it != sets_.end()) return it->second;
        py::tuple t(names.size());
        for (size_t i = 0; i < names.size(); ++i) t[i] = name(names[i]);
        py::object set = steal(PyFrozenSet_New(t.ptr()));
        // A frozenset of strs cannot be part of a reference cycle: the
        // collector need not track it (as CPython does for atomic tuples).
        PyObject_GC_UnTrack(set.ptr());
        if (sets_.size() < kKept) sets_.emplace(key_, set);
        return set;
    }
    py::object time(uint64_t us) {
        auto it = times_.find(us);
        if (it != times_.end()) return it->second;
        py::object t = utc_datetime(us);
        if (times_.size() < kKept) times_.emplace(us, t);
        return t;
    }

private:
    py::object name(const std::string& n) {
        auto it = names_.find(n);
        if (it != names_.end()) return it->second;
        py::object s = stored_str(n);
        if (names_.size() < kKept) names_.emplace(n, s);
        return s;
    }
    static constexpr size_t kKept = 1 << 14;  // bounds a batch's tables; past it values are made per row
    std::string key_;
    std::unordered_map<std::string, py::object> sets_, names_;
    std::unordered_map<uint64_t, py::object> times_;
};

// Where each field lives in a Memory: Memory is a slotted frozen dataclass
// (records.py), so each field is a member descriptor holding an object at a
// fixed offset, and an instance is made by writing those slots, as a tuple
// is filled, with no attribute lookup per field. The class is checked once
// and kept alive, so its address cannot name another class later.
struct Layout {
    py::object cls;
    Py_ssize_t offset[kFields];
};
Layout layout;

const Layout& layout_of(PyTypeObject* cls) {
    if (layout.cls.ptr() == reinterpret_cast<PyObject*>(cls)) return layout;
    for (int i = 0; i < kFields; ++i) {
        PyObject* got = PyObject_GetAttr(reinterpret_cast<PyObject*>(cls), field_names[i]);
        if (!got) PyErr_Clear();  // no such attribute: not a slot either
        py::object d = py::reinterpret_steal<py::object>(got ? got : Py_NewRef(Py_None));
        if (!PyObject_TypeCheck(d.ptr(), &PyMemberDescr_Type) ||
            reinterpret_cast<PyMemberDescrObject*>(d.ptr())->d_member->type != T_OBJECT_EX)
            throw py::type_error("memory_type must be a slotted dataclass with Memory's fields; " +
                                 std::string(cls->tp_name) + "." + py::str(field_names[i]).cast<std::string>() +
                                 " is not a slot");
        layout.offset[i] = reinterpret_cast<PyMemberDescrObject*>(d.ptr())->d_member->offset;
    }
    layout.cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(cls));
    return layout;
}

// A Memory of these field values (references taken over), in field order.
// Without metadata a Memory holds only atomic values (ints, strs, floats,
// datetimes, a frozenset of strs), so it cannot be part of a reference cycle
// and the collector need not track it: a batch of recalls makes thousands,
// and tracked they set off collections that walk them all, under the GIL.
py::object new_memory(PyTypeObject* cls, py::object (&fields)[kFields], bool atomic) {
    const Layout& l = layout_of(cls);
    PyObject* m = cls->tp_alloc(cls, 0);  // slots zeroed, tracked
    if (!m) throw py::error_already_set();
    for (int i = 0; i < kFields; ++i)
        *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(m) + l.offset[i]) = fields[i].release().ptr();
    if (atomic) PyObject_GC_UnTrack(m);
    return steal(m);
}

py::object id_or_none(uint64_t id) { return id ? steal(PyLong_FromUnsignedLongLong(id)) : py::object(py::none()); }

// One Memory, as Memory(...) would make it: Memory is a frozen dataclass
// with no __post_init__, so its __init__ does nothing but set these fields.
// The metadata dict is the only value that could reach back to the Memory.
py::object memory(PyTypeObject* cls, const py::object& decode, const Row& r, SharedValues& shared) {
    py::object fields[kFields] = {
        steal(PyLong_FromUnsignedLongLong(r.id)),
        stored_str(r.text),
        shared.owners(r.owners),
        steal(PyLong_FromUnsignedLong(r.round)),
        r.via == Via::hit ? steal(PyFloat_FromDouble(r.score)) : py::object(py::none()),
        py::reinterpret_borrow<py::object>(via_names[r.via == Via::hit    ? 0
                                                     : r.via == Via::edge ? 1
                                                                          : 2]),
        r.metadata.empty() ? py::object(py::none()) : py::object(decode(stored_str(r.metadata))),
        r.has_times ? shared.time(r.times.created) : py::object(py::none()),
        r.has_times ? shared.time(r.times.updated) : py::object(py::none()),
        py::object(py::none()),
        id_or_none(r.supersedes),
        id_or_none(r.superseded_by),
        r.superseded_by ? steal(PyLong_FromUnsignedLong(r.valid_until)) : py::object(py::none()),
    };
    return new_memory(cls, fields, r.metadata.empty());
}

}  // namespace

void bind_memories(py::module_& m) {
    PyDateTime_IMPORT;
    if (!PyDateTimeAPI) throw py::error_already_set();
    const char* names[kFields] = {"id",         "text",          "owners",     "round",      "score",
                                  "via",        "metadata",      "created_at", "updated_at", "lexical_score",
                                  "supersedes", "superseded_by", "valid_until"};
    for (int i = 0; i < kFields; ++i) field_names[i] = PyUnicode_InternFromString(names[i]);
    const char* vias[3] = {"hit", "edge", ""};
    for (int i = 0; i < 3; ++i) via_names[i] = PyUnicode_InternFromString(vias[i]);

    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    // Store.recall without lexical: scope None recalls from every scope.
    // memory_type is agentsensus.Memory, decode_metadata the stored JSON
    // text's reader (record_meta.decode_metadata).
    engine.def(
        "recall_memories",
        [](Engine& e, const std::string& owner, std::optional<std::string> scope, const F32& query, size_t k,
           bool expand, const py::bytes& spec, float threshold, const py::type& memory_type,
           const py::object& decode_metadata) {
            auto u = e.use();
            Store& st = *u;
            if (query.ndim() != 1 || static_cast<size_t>(query.shape(0)) != st.dim())
                throw InvalidArgument("query vector must have shape (" + std::to_string(st.dim()) + ",)");
            RecallFilter f = RecallFilter::decode(std::string(spec));
            std::vector<Row> rows;
            auto run = [&] {
                return scope ? st.recall_scoped(owner, *scope, query.data(), k, expand, f, threshold)
                             : st.recall(owner, query.data(), k, expand, f, threshold);
            };
            const std::string key = short_recall_key(e, owner);
            auto known = short_recall.find(key);
            const bool keep_gil = converting_batches == 0 && known != short_recall.end() && known->second;
            auto t0 = std::chrono::steady_clock::now();
            if (keep_gil) {
                rows = run();
            } else {
                py::gil_scoped_release nogil;
                rows = run();
            }
            auto took = std::chrono::steady_clock::now() - t0;
            if (!keep_gil)
                released_ns +=
                    static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
            if (known != short_recall.end()) {
                known->second = took < keep_gil_below;
            } else {
                if (short_recall.size() >= kKeepGilOwners) short_recall.clear();
                short_recall.emplace(key, took < keep_gil_below);
            }
            auto* cls = reinterpret_cast<PyTypeObject*>(memory_type.ptr());
            py::list out(rows.size());
            SharedValues shared;
            for (size_t i = 0; i < rows.size(); ++i) out[i] = memory(cls, decode_metadata, rows[i], shared);
            return out;
        },
        py::arg("owner"), py::arg("scope"), py::arg("query"), py::arg("k"), py::arg("expand"), py::arg("spec"),
        py::arg("threshold"), py::arg("memory_type"), py::arg("decode_metadata"));
    // Store.recall_many without lexical: the recalls of many (owner, query)
    // pairs in one engine call. The engine's workers make the answers with
    // the GIL released, and this thread, one of them, turns the finished
    // ones into Memory objects between its own recalls (which needs the
    // GIL): that conversion is about a quarter of a short recall's time,
    // and done after the batch it would leave the other cores idle for it.
    engine.def(
        "recall_many_memories",
        [](Engine& e, const std::vector<std::string>& owners, std::optional<std::string> scope, const F32& queries,
           size_t k, bool expand, const py::bytes& spec, float threshold, const py::type& memory_type,
           const py::object& decode_metadata) {
            auto u = e.use();
            Store& st = *u;
            const size_t n = owners.size();
            const float* q = rows_of(queries, n, st.dim(), "queries");
            RecallFilter f = RecallFilter::decode(std::string(spec));
            auto* cls = reinterpret_cast<PyTypeObject*>(memory_type.ptr());
            SharedValues shared;  // across the batch: its rows name the same few owners
            auto convert = [&](std::vector<Row>&& rows) {
                py::list one(rows.size());
                for (size_t j = 0; j < rows.size(); ++j) one[j] = memory(cls, decode_metadata, rows[j], shared);
                return one;
            };
            py::list out(n);
            if (!overlap_conversion) {
                std::vector<std::vector<Row>> answers;
                {
                    py::gil_scoped_release nogil;
                    answers = st.recall_many(owners, q, k, expand, f, threshold, scope);
                }
                for (size_t i = 0; i < n; ++i) out[i] = convert(std::move(answers[i]));
                return out;
            }
            // answers[i] is written by one worker, then i is published under
            // mu. The caller's thread is one of the engine's workers
            // (parallel_on): between its own recalls it converts what the
            // batch has finished, with the GIL taken back, while the other
            // workers only recall. The conversion so takes the caller's
            // share of the recalls, not a core of its own or the time after.
            std::vector<std::vector<Row>> answers(n);
            std::mutex mu;
            std::vector<size_t> ready, batch;
            auto convert_ready = [&] {  // with the GIL
                {
                    std::lock_guard<std::mutex> g(mu);
                    batch.swap(ready);
                }
                for (size_t i : batch) out[i] = convert(std::move(answers[i]));
                batch.clear();
            };
            const std::thread::id caller = std::this_thread::get_id();
            // Counted while the GIL is held, so no recall that kept it is in
            // the engine now, and none keeps it until the batch ends (the
            // keep_gil invariant above). Uncounted with the GIL held again.
            struct Converting {
                Converting() { ++converting_batches; }
                ~Converting() { --converting_batches; }
            } converting;
            {
                py::gil_scoped_release nogil;
                st.recall_many(owners, q, k, expand, f, threshold, scope, [&](size_t i, std::vector<Row>&& rows) {
                    answers[i] = std::move(rows);
                    size_t waiting;
                    {
                        std::lock_guard<std::mutex> g(mu);
                        ready.push_back(i);
                        waiting = ready.size();
                    }
                    if (waiting >= kWakeEvery && std::this_thread::get_id() == caller) {
                        py::gil_scoped_acquire gil;
                        convert_ready();
                    }
                });
            }
            convert_ready();
            return out;
        },
        py::arg("owners"), py::arg("scope"), py::arg("queries"), py::arg("k"), py::arg("expand"), py::arg("spec"),
        py::arg("threshold"), py::arg("memory_type"), py::arg("decode_metadata"));
    // records.candidate: a Memory of values given in field order, made as
    // recall makes them (a deposit makes up to 16 per statement for its judge).
    m.def(
        "memory_from",
        [](const py::type& memory_type, const py::tuple& values) {
            if (values.size() != kFields)
                throw InvalidArgument("memory_from: " + std::to_string(kFields) + " values needed, got " +
                                      std::to_string(values.size()));
            py::object fields[kFields];
            for (int i = 0; i < kFields; ++i) fields[i] = values[i];
            // Values from Python may hold anything: the Memory stays tracked.
            return new_memory(reinterpret_cast<PyTypeObject*>(memory_type.ptr()), fields, false);
        },
        py::arg("memory_type"), py::arg("values"),
        "A Memory (memory_type) of its field values in declaration order, made as recall makes them.");
    m.def(
        "recall_keep_gil_ns",
        [](int64_t ns) {
            if (ns < 0) throw InvalidArgument("recall_keep_gil_ns: ns must be >= 0, got " + std::to_string(ns));
            int64_t before = keep_gil_below.count();
            keep_gil_below = std::chrono::nanoseconds(ns);
            short_recall.clear();
            return before;
        },
        py::arg("ns"),
        "Sets how short (ns of engine work, the last time for that store and owner) a recall must be to keep the "
        "GIL; 0: every recall releases it. Returns the previous value.");
    m.def(
        "recall_many_overlap",
        [](bool on) {
            bool before = overlap_conversion;
            overlap_conversion = on;
            return before;
        },
        py::arg("on"),
        "Sets whether Engine.recall_many_memories converts answers while the engine makes the rest (True, the "
        "default) or after them all. Returns the previous value.");
    m.def(
        "recall_nogil_ns", []() { return released_ns; },
        "Nanoseconds this thread has spent in Engine.recall_memories' engine work with the GIL released.");
}

}  // namespace agentsensus_py
