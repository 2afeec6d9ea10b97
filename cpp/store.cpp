#include "store.hpp"

#include <dirent.h>
#include <signal.h>

#include <cerrno>
#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <unordered_set>

#include "bytes.hpp"
#include "limits.hpp"
#include "parallel.hpp"
#include "schema.hpp"

namespace agentsensus {

namespace {

const char* metric_name(Metric m) {
    switch (m) {
        case Metric::cos: return "cos";
        case Metric::ip: return "ip";
        case Metric::l2sq: return "l2sq";
    }
    return "?";
}

void random_uuid(unsigned char out[16]) {
    std::random_device rd;
    for (int i = 0; i < 16; i += 4) {
        uint32_t r = rd();
        std::memcpy(out + i, &r, 4);
    }
}

bool finite_all(const float* v, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) return false;
    return true;
}

void set_bit(std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    if (w >= bits.size()) bits.resize(std::max(w + 1, bits.size() * 2), 0);
    bits[w] |= uint64_t(1) << (id & 63);
}

void clear_bit(std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    if (w < bits.size()) bits[w] &= ~(uint64_t(1) << (id & 63));
}

bool test_bit(const std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    return w < bits.size() && (bits[w] >> (id & 63)) & 1;
}

// Unwinds a write transaction that found a conflict: nothing is written.
struct CommitAbort {};

// Best first; ties by id so answers are deterministic.
bool better(const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); }

}  // namespace

// ---------------------------------------------------------------- open/close

Store::Store(const std::string& dir, const StoreOptions& o)
    : dir_(dir), exact_cutoff_(o.exact_cutoff), expansion_search_(o.index.expansion_search) {
    if (o.dim > kMaxDim) throw InvalidArgument("dim must be at most " + std::to_string(kMaxDim));
    Env::Options eo;
    eo.readonly = o.readonly;
    eo.create = o.create;
    eo.sync = o.sync;
    eo.initial_map = o.map_size;
    env_ = std::make_unique<Env>(dir, eo);
    unsigned none = 0;
    db_.meta = env_->open_db("meta", none);
    db_.records = env_->open_db("records", none);
    db_.vectors = env_->open_db("vectors", none);
    db_.owners = env_->open_db("owners", kDupFixedInt);
    db_.owned = env_->open_db("owned", kDupFixedInt);
    db_.agents = env_->open_db("agents", none);
    db_.agent_names = env_->open_db("agent_names", none);
    db_.edges = env_->open_db("edges", kDupFixedInt);
    db_.merges = env_->open_db("merges", none);
    db_.rmerges = env_->open_db("rmerges", MDB_DUPSORT | MDB_DUPFIXED);
    db_.norms = env_->open_db("norms", none);
    db_.rnorms = env_->open_db("rnorms", MDB_DUPSORT | MDB_DUPFIXED);
    db_.journal = env_->open_db("journal", none);
    db_.hist = env_->open_db("hist", none);
    init_or_check(o);
    index_ = std::make_unique<VectorIndex>(dim_, metric_, o.index);
    open_index();
}

Store::~Store() {
    try {
        close();
    } catch (...) {
        // A destructor must not throw; close() explicitly to see errors.
    }
}

void Store::check_open() const {
    if (!env_) throw Error("store is closed");
}

uint64_t Store::meta_u64(MDB_txn* txn, const char* key, uint64_t dflt) {
    MDB_val v;
    if (!agentsensus::get(txn, db_.meta, val(key, std::strlen(key)), v)) return dflt;
    if (v.mv_size != 8) throw Corrupt(std::string("meta '") + key + "' has the wrong size");
    return load<uint64_t>(v.mv_data);
}

void Store::set_meta_u64(MDB_txn* txn, const char* key, uint64_t x) {
    put(txn, db_.meta, val(key, std::strlen(key)), val(&x, 8));
}

void Store::init_or_check(const StoreOptions& o) {
    bool fresh = false;
    {
        ReadTxn t(*env_);
        MDB_val v;
        fresh = !agentsensus::get(t.get(), db_.meta, val("schema", 6), v);
    }
    if (fresh) {
        if (o.readonly) throw Corrupt("not an agentsensus store (no schema): " + dir_);
        if (o.dim == 0) throw InvalidArgument("dim is required to create a store at " + dir_);
        random_uuid(uuid_);
        env_->write([&](MDB_txn* txn) {
            uint32_t schema = kSchemaVersion, dim = o.dim, metric = static_cast<uint32_t>(o.metric);
            put(txn, db_.meta, val("schema", 6), val(&schema, 4));
            put(txn, db_.meta, val("dim", 3), val(&dim, 4));
            put(txn, db_.meta, val("metric", 6), val(&metric, 4));
            put(txn, db_.meta, val("uuid", 4), val(uuid_, 16));
            set_meta_u64(txn, "next_id", 1);
            set_meta_u64(txn, "next_agent", 1);
            set_meta_u64(txn, "next_merge", 1);
            set_meta_u64(txn, "next_journal", 1);
            set_meta_u64(txn, "deposits", 0);
            set_meta_u64(txn, "linked", 0);
        });
    }
    ReadTxn t(*env_);
    MDB_val v;
    auto need = [&](const char* key, size_t size) {
        if (!agentsensus::get(t.get(), db_.meta, val(key, std::strlen(key)), v) || v.mv_size != size)
            throw Corrupt(std::string("store meta '") + key + "' is missing or damaged in " + dir_);
    };
    need("schema", 4);
    uint32_t schema = load<uint32_t>(v.mv_data);
    if (schema != kSchemaVersion)
        throw Corrupt("store schema version " + std::to_string(schema) + " is not supported (this build reads " +
                      std::to_string(kSchemaVersion) + ")");
    need("dim", 4);
    dim_ = load<uint32_t>(v.mv_data);
    need("metric", 4);
    uint32_t m = load<uint32_t>(v.mv_data);
    if (m > 2 || dim_ == 0 || dim_ > kMaxDim) throw Corrupt("store meta has an invalid dim or metric");
    metric_ = static_cast<Metric>(m);
    need("uuid", 16);
    std::memcpy(uuid_, v.mv_data, 16);
    if (o.dim != 0 && o.dim != dim_)
        throw InvalidArgument("dim mismatch: the store at " + dir_ + " has dim=" + std::to_string(dim_) +
                              ", but dim=" + std::to_string(o.dim) + " was given");
    if (o.metric_given && o.metric != metric_)
        throw InvalidArgument(std::string("metric mismatch: the store at ") + dir_ + " has metric='" +
                              metric_name(metric_) + "', but metric='" + metric_name(o.metric) + "' was given");
}

uint64_t Store::journal_end(MDB_txn* txn) {
    Cursor c(txn, db_.journal);
    MDB_val k, v;
    if (!c.op(k, v, MDB_LAST)) return 0;
    if (k.mv_size != 8) throw Corrupt("journal key has the wrong size");
    return read_be64(k.mv_data);
}

// Removes index.usearch.tmp.<pid> files that a process killed while saving
// the index left behind (a live pid may still be writing its own).
static void remove_dead_index_temps(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (!d) return;
    const std::string prefix = std::string(kIndexFile + 1) + ".tmp.";
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        char* end = nullptr;
        long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
        if (pid <= 0 || *end != '\0') continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) std::remove((dir + "/" + name).c_str());
    }
    closedir(d);
}

void Store::open_index() {
    if (!env_->readonly()) remove_dead_index_temps(dir_);
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    uint64_t end = journal_end(t.get());
    IndexHeader h{};
    std::string why;
    // Mapped, not read: an open costs one checksum pass, not a copy of the
    // index; the first change in this process loads it (VectorIndex::view).
    bool ok = index_->view(dir_ + kIndexFile, h, why);
    if (ok && (std::memcmp(h.store_uuid, uuid_, 16) != 0 || h.journal_seq > end)) {
        // Another store's index, or one newer than this store's journal
        // (the LMDB file was replaced): never serve it.
        ok = false;
    }
    if (ok) {
        applied_seq_ = saved_seq_ = h.journal_seq;
        index_saved_valid_ = true;
        catch_up_locked(t.get());
    } else {
        rebuild_index_locked(t.get());
    }
}

void Store::rebuild_index_locked(MDB_txn* txn) {
    index_->clear();
    allow_.clear();
    Cursor c(txn, db_.vectors);
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    std::vector<uint64_t> ids;
    std::vector<float> vecs;
    auto flush = [&] {
        index_->add_many(ids.data(), vecs.data(), ids.size());
        ids.clear();
        vecs.clear();
    };
    while (more) {
        if (k.mv_size != 8 || v.mv_size != dim_ * sizeof(float)) throw Corrupt("a stored vector is damaged");
        // LMDB's memory is only valid inside the transaction: copy out, then
        // insert in parallel batches.
        ids.push_back(read_be64(k.mv_data));
        const float* f = static_cast<const float*>(v.mv_data);
        vecs.insert(vecs.end(), f, f + dim_);
        if (ids.size() == 8192) flush();
        more = c.op(k, v, MDB_NEXT);
    }
    flush();
    applied_seq_ = journal_end(txn);
    index_saved_valid_ = false;
}

void Store::catch_up_locked(MDB_txn* txn) {
    Cursor c(txn, db_.journal);
    Be64 from(applied_seq_ + 1);
    MDB_val k = val(from.b, 8), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    // Ownership bits and removals apply in journal order; additions (always
    // of new ids) are gathered and inserted in parallel afterwards.
    std::vector<uint64_t> adds;
    std::vector<float> add_vecs;
    while (more) {
        if (k.mv_size != 8 || v.mv_size != 13) throw Corrupt("journal entry is damaged");
        uint64_t seq = read_be64(k.mv_data);
        const unsigned char* p = static_cast<const unsigned char*>(v.mv_data);
        uint8_t op = p[0];
        uint64_t id = load<uint64_t>(p + 1);
        uint32_t agent = load<uint32_t>(p + 9);
        auto allow = allow_.find(agent);
        switch (op) {
            case kAdd: {
                // The record may be gone in this snapshot (deleted later).
                size_t at = add_vecs.size();
                add_vecs.resize(at + dim_);
                if (!index_->contains(id) && vector_of(txn, id, add_vecs.data() + at))
                    adds.push_back(id);
                else
                    add_vecs.resize(at);
                if (allow != allow_.end()) set_bit(allow->second, id);
                break;
            }
            case kOwn:
                if (allow != allow_.end()) set_bit(allow->second, id);
                break;
            case kDisown:
                if (allow != allow_.end()) clear_bit(allow->second, id);
                break;
            case kDel:
                if (index_->contains(id)) index_->remove(id);
                break;
            default:
                throw Corrupt("journal entry has an unknown operation");
        }
        applied_seq_ = seq;
        more = c.op(k, v, MDB_NEXT);
    }
    index_->add_many(adds.data(), add_vecs.data(), adds.size());
}

void Store::sync_index() {
    {
        std::shared_lock<std::shared_mutex> lock(index_mu_);
        ReadTxn t(*env_);
        if (journal_end(t.get()) <= applied_seq_) return;
    }
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    catch_up_locked(t.get());
}

void Store::close() {
    if (!env_) return;
    {
        std::unique_lock<std::shared_mutex> lock(index_mu_);
        if (!env_->readonly() && (!index_saved_valid_ || applied_seq_ != saved_seq_)) {
            IndexHeader h{};
            std::memcpy(h.store_uuid, uuid_, 16);
            h.journal_seq = applied_seq_;
            h.dim = dim_;
            h.metric = static_cast<uint32_t>(metric_);
            try {
                index_->save(dir_ + kIndexFile, h);
            } catch (...) {
                // The index is a cache: losing it costs a rebuild, not data.
            }
        }
        index_.reset();
        allow_.clear();
    }
    env_.reset();
}

// ---------------------------------------------------------------- reads

void Store::prepare_vector(const float* in, float* out) const {
    if (!finite_all(in, dim_)) throw InvalidArgument("vector has NaN or inf");
    std::memcpy(out, in, dim_ * sizeof(float));
    if (metric_ == Metric::cos && !normalize(out, dim_))
        throw InvalidArgument("vector has zero norm, which metric 'cos' cannot compare");
}

bool Store::vector_of(MDB_txn* txn, uint64_t id, float* out) {
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, db_.vectors, val(k.b, 8), v)) return false;
    if (v.mv_size != dim_ * sizeof(float)) throw Corrupt("vector of record " + std::to_string(id) + " is damaged");
    std::memcpy(out, v.mv_data, v.mv_size);
    return true;
}

std::optional<uint32_t> Store::agent_id(MDB_txn* txn, std::string_view name) {
    MDB_val v;
    if (name.empty() || name.size() > 511) return std::nullopt;
    if (!agentsensus::get(txn, db_.agents, val(name), v)) return std::nullopt;
    if (v.mv_size != 4) throw Corrupt("agent table is damaged");
    return load<uint32_t>(v.mv_data);
}

std::string Store::agent_name(MDB_txn* txn, uint32_t agent) {
    {
        std::lock_guard<std::mutex> g(names_mu_);
        auto it = names_.find(agent);
        if (it != names_.end()) return it->second;
    }
    Be32 k(agent);
    MDB_val v;
    if (!agentsensus::get(txn, db_.agent_names, val(k.b, 4), v))
        throw Corrupt("owner id " + std::to_string(agent) + " has no name");
    std::string name(view(v));
    // Only read transactions come here, so the name is committed and final.
    std::lock_guard<std::mutex> g(names_mu_);
    names_.emplace(agent, name);
    return name;
}

bool Store::owns(MDB_txn* txn, uint32_t agent, uint64_t id) {
    Be64 k(id);
    MDB_val key = val(k.b, 8), v = val(&agent, 4);
    Cursor c(txn, db_.owners);
    return c.op(key, v, MDB_GET_BOTH);
}

size_t Store::owned_count(MDB_txn* txn, uint32_t agent) {
    Be32 k(agent);
    MDB_val key = val(k.b, 4), v;
    Cursor c(txn, db_.owned);
    if (!c.op(key, v, MDB_SET)) return 0;
    size_t n = 0;
    int rc = mdb_cursor_count(c.get(), &n);
    if (rc) throw_lmdb(rc, "mdb_cursor_count");
    return n;
}

namespace {

// All u64 values under one key of a DUPFIXED table, a page per call.
std::vector<uint64_t> u64_dups(MDB_txn* txn, MDB_dbi dbi, MDB_val key) {
    std::vector<uint64_t> out;
    MDB_val v;
    Cursor c(txn, dbi);
    if (!c.op(key, v, MDB_SET)) return out;
    bool more = c.op(key, v, MDB_GET_MULTIPLE);
    while (more) {
        size_t n = v.mv_size / 8;
        size_t at = out.size();
        out.resize(at + n);
        std::memcpy(out.data() + at, v.mv_data, n * 8);
        more = c.op(key, v, MDB_NEXT_MULTIPLE);
    }
    return out;
}

}  // namespace

std::vector<uint64_t> Store::owned_ids(MDB_txn* txn, uint32_t agent) {
    Be32 k(agent);
    return u64_dups(txn, db_.owned, val(k.b, 4));
}

bool Store::read_row(MDB_txn* txn, uint64_t id, Row& row) {
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), v)) return false;
    RecordHeader h;
    std::string_view text;
    if (!decode_record(v, h, text)) throw Corrupt("record " + std::to_string(id) + " is damaged");
    row.id = id;
    row.text.assign(text);
    row.round = h.round;
    row.owners.clear();
    Cursor c(txn, db_.owners);
    MDB_val key = val(k.b, 8), ov;
    bool more = c.op(key, ov, MDB_SET);
    if (more) more = c.op(key, ov, MDB_FIRST_DUP);
    while (more) {
        if (ov.mv_size != 4) throw Corrupt("owner set of record " + std::to_string(id) + " is damaged");
        row.owners.push_back(agent_name(txn, load<uint32_t>(ov.mv_data)));
        more = c.op(key, ov, MDB_NEXT_DUP);
    }
    std::sort(row.owners.begin(), row.owners.end());
    return true;
}

PrepareResult Store::prepare(const float* vectors, size_t n, const unsigned char* digests, size_t k,
                             float min_similarity) {
    check_open();
    std::vector<float> qs(n * dim_);
    for (size_t i = 0; i < n; ++i) prepare_vector(vectors + i * dim_, qs.data() + i * dim_);
    sync_index();
    PrepareResult out;
    out.exact.assign(n, 0);
    out.offsets.assign(n + 1, 0);
    std::shared_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    // The commit re-checks everything after seq, so seq must not claim more
    // than the index has seen: records this snapshot has but the index
    // lacks are then re-checked at commit instead of being missed.
    out.seq = std::min(journal_end(t.get()), applied_seq_);
    std::vector<uint64_t> named;
    std::vector<size_t> to_search;
    for (size_t i = 0; i < n; ++i) {
        MDB_val v;
        if (agentsensus::get(t.get(), db_.norms, val(digests + i * kDigestBytes, kDigestBytes), v)) {
            if (v.mv_size != 8) throw Corrupt("text index is damaged");
            out.exact[i] = read_be64(v.mv_data);
            named.push_back(out.exact[i]);
        } else if (k > 0) {
            to_search.push_back(i);
        }
    }
    // Searches are independent: spread them over the cores (usearch gives
    // each thread its own slot). LMDB reads stay on this thread.
    std::vector<std::vector<Hit>> found(n);
    parallel_for(to_search.size(), [&](size_t j) {
        size_t i = to_search[j];
        found[i] = index_->search(qs.data() + i * dim_, k);
    });
    for (size_t i = 0; i < n; ++i) {
        // The index may hold records newer than this snapshot (another
        // thread caught it up): keep only those the snapshot has.
        for (const Hit& h : found[i]) {
            if (h.score < min_similarity) continue;
            Be64 key(h.id);
            MDB_val rv;
            if (!agentsensus::get(t.get(), db_.records, val(key.b, 8), rv)) continue;
            out.candidates.push_back(h);
            named.push_back(h.id);
        }
        out.offsets[i + 1] = static_cast<uint32_t>(out.candidates.size());
    }
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    out.records.resize(named.size());
    for (size_t i = 0; i < named.size(); ++i)
        if (!read_row(t.get(), named[i], out.records[i])) throw Corrupt("text index names a missing record");
    return out;
}

std::vector<Row> Store::recall(const std::string& owner, const float* query, size_t k, bool expand) {
    check_open();
    std::vector<float> q(dim_);
    prepare_vector(query, q.data());
    if (k == 0) return {};

    std::optional<uint32_t> agent;
    size_t count = 0, total = 0;
    {
        ReadTxn t(*env_);
        agent = agent_id(t.get(), owner);
        if (agent) count = owned_count(t.get(), *agent);
        total = entries(t.get(), db_.records);
    }
    if (!agent || count == 0) return {};

    // The plan. A filtered HNSW search over a selective owner wanders the
    // whole graph before it has k matches (NOTES: 35x at 0.1%), so: scan the
    // owner's vectors exactly when it owns few records, else search the whole
    // graph for about kOverfetch * k / selectivity nearest and keep the
    // owner's, widening when that leaves fewer than k. When the (widened)
    // search would cost more than a scan, scan. A search of w nearest keeps
    // max(w, expansion_search) candidates and costs about kScanPerCandidate
    // scanned vectors per candidate (measured at 100k records, dim 384: a
    // search at width 64 about 1.3 ms, a scan through the index's int8 copy
    // about 0.07 us a vector in id order, 0.12 us at every tenth id). A scan
    // is also exact, where HNSW may miss.
    constexpr size_t kOverfetch = 3, kScanPerCandidate = 200;
    auto search_cost = [&](size_t w) { return std::max(w, expansion_search_) * kScanPerCandidate; };
    size_t wanted = total ? (kOverfetch * k * total + count - 1) / count : k;
    wanted = std::max(wanted, k);
    bool exact = count <= exact_cutoff_ || search_cost(wanted) >= count;
    if (!exact) {
        // The owner's allow-set, current to the latest commit.
        sync_index();
        std::unique_lock<std::shared_mutex> lock(index_mu_);
        if (!allow_.count(*agent)) {
            ReadTxn t(*env_);
            catch_up_locked(t.get());
            std::vector<uint64_t> bits;
            for (uint64_t id : owned_ids(t.get(), *agent)) set_bit(bits, id);
            allow_.emplace(*agent, std::move(bits));
        }
    }

    std::shared_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    std::vector<Hit> hits;
    if (!exact) {
        const std::vector<uint64_t>& bits = allow_.at(*agent);
        size_t want = std::min(k, count);
        for (;; wanted *= 4) {
            hits = index_->search(q.data(), wanted);
            // Keep the owner's; the allow-set may be ahead of this snapshot,
            // so ownership is confirmed in it.
            hits.erase(std::remove_if(hits.begin(), hits.end(),
                                      [&](const Hit& h) { return !test_bit(bits, h.id) || !owns(t.get(), *agent, h.id); }),
                       hits.end());
            if (hits.size() >= want) break;
            if (wanted >= total || search_cost(wanted * 4) >= count) {
                exact = true;  // the graph does not reach enough of them: scan
                break;
            }
        }
        if (hits.size() > k) hits.resize(k);
    }
    if (exact) {
        std::vector<uint64_t> ids = owned_ids(t.get(), *agent), absent;
        hits = index_->scan(q.data(), ids.data(), ids.size(), k, absent);
        // What the index does not hold (yet, or any more) is read from LMDB.
        std::vector<float> buf(dim_);
        for (uint64_t id : absent)
            if (vector_of(t.get(), id, buf.data()))
                hits.push_back(Hit{id, similarity(metric_, q.data(), buf.data(), dim_)});
        size_t top = std::min(k, hits.size());
        std::partial_sort(hits.begin(), hits.begin() + top, hits.end(), better);
        hits.resize(top);
    }

    std::vector<Row> rows;
    std::unordered_set<uint64_t> seen;
    for (const Hit& h : hits) {
        Row r;
        if (!read_row(t.get(), h.id, r)) continue;
        r.score = h.score;
        r.via = Via::hit;
        seen.insert(h.id);
        rows.push_back(std::move(r));
    }
    if (expand) {
        size_t nhits = rows.size();
        for (size_t i = 0; i < nhits; ++i) {
            uint64_t id = rows[i].id;
            for (uint64_t nb : neighbors_in(t.get(), id)) {
                if (seen.count(nb) || !owns(t.get(), *agent, nb)) continue;
                Row r;
                if (!read_row(t.get(), nb, r)) continue;
                r.via = Via::edge;
                seen.insert(nb);
                rows.push_back(std::move(r));
            }
        }
    }
    return rows;
}

std::vector<uint64_t> Store::neighbors_in(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    return u64_dups(txn, db_.edges, val(k.b, 8));
}

std::vector<Row> Store::records(uint64_t after, size_t limit) {
    check_open();
    ReadTxn t(*env_);
    std::vector<Row> out;
    Cursor c(t.get(), db_.records);
    Be64 from(after + 1);
    MDB_val k = val(from.b, 8), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    while (more && out.size() < limit) {
        if (k.mv_size != 8) throw Corrupt("a record key is damaged");
        Row r;
        read_row(t.get(), read_be64(k.mv_data), r);
        out.push_back(std::move(r));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

Row Store::get(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Row r;
    if (!read_row(t.get(), id, r)) throw NotFound("no record " + std::to_string(id));
    return r;
}

std::vector<uint64_t> Store::neighbors(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), v)) throw NotFound("no record " + std::to_string(id));
    return neighbors_in(t.get(), id);
}

std::vector<uint64_t> Store::owned(const std::string& owner) {
    check_open();
    ReadTxn t(*env_);
    auto agent = agent_id(t.get(), owner);
    if (!agent) return {};
    return owned_ids(t.get(), *agent);
}

Stats Store::stats() {
    check_open();
    ReadTxn t(*env_);
    Stats s;
    s.records = entries(t.get(), db_.records);
    s.deposits = meta_u64(t.get(), "deposits");
    s.merges = entries(t.get(), db_.merges);
    s.linked = meta_u64(t.get(), "linked");
    s.agents = entries(t.get(), db_.agents);
    Cursor c(t.get(), db_.hist);
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    while (more) {
        if (k.mv_size != 4 || v.mv_size != 8) throw Corrupt("owner-count histogram is damaged");
        uint32_t owners = read_be32(k.mv_data);
        uint64_t n = load<uint64_t>(v.mv_data);
        if (owners >= 2) s.shared += n;
        if (n > 0) s.max_owners = std::max<uint64_t>(s.max_owners, owners);
        more = c.op(k, v, MDB_NEXT);
    }
    return s;
}

std::vector<MergeRow> Store::merges(uint64_t after_seq, size_t limit) {
    check_open();
    ReadTxn t(*env_);
    std::vector<MergeRow> out;
    Cursor c(t.get(), db_.merges);
    Be64 from(after_seq + 1);
    MDB_val k = val(from.b, 8), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    while (more && out.size() < limit) {
        Reader r(v.mv_data, v.mv_size);
        MergeRow m;
        uint32_t agent, kept_len;
        std::string_view kept;
        if (k.mv_size != 8 || !r.get(m.survivor) || !r.get(agent) || !r.get(m.round) || !r.get(kept_len) ||
            !r.get_bytes(kept_len, kept))
            throw Corrupt("merge log entry is damaged");
        m.seq = read_be64(k.mv_data);
        m.kept.assign(kept);
        m.discarded.assign(r.rest());
        m.owner = agent_name(t.get(), agent);
        out.push_back(std::move(m));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

// ---------------------------------------------------------------- writes

uint32_t Store::ensure_agent(MDB_txn* txn, std::string_view name) {
    if (auto a = agent_id(txn, name)) return *a;
    uint64_t next = meta_u64(txn, "next_agent", 1);
    if (next > 0xffffffffu) throw Error("too many distinct owners");
    uint32_t id = static_cast<uint32_t>(next);
    put(txn, db_.agents, val(name), val(&id, 4));
    Be32 k(id);
    put(txn, db_.agent_names, val(k.b, 4), val(name));
    set_meta_u64(txn, "next_agent", next + 1);
    return id;
}

void Store::journal(MDB_txn* txn, uint8_t op, uint64_t id, uint32_t agent) {
    uint64_t seq = meta_u64(txn, "next_journal", 1);
    unsigned char e[13];
    e[0] = op;
    std::memcpy(e + 1, &id, 8);
    std::memcpy(e + 9, &agent, 4);
    Be64 k(seq);
    put(txn, db_.journal, val(k.b, 8), val(e, 13), MDB_APPEND);
    set_meta_u64(txn, "next_journal", seq + 1);
}

void Store::hist_add(MDB_txn* txn, uint32_t owners, int64_t delta) {
    if (owners == 0) return;
    Be32 k(owners);
    MDB_val v;
    uint64_t n = 0;
    if (agentsensus::get(txn, db_.hist, val(k.b, 4), v)) n = load<uint64_t>(v.mv_data);
    n = static_cast<uint64_t>(static_cast<int64_t>(n) + delta);
    if (n == 0)
        del(txn, db_.hist, val(k.b, 4));
    else
        put(txn, db_.hist, val(k.b, 4), val(&n, 8));
}

bool Store::add_owner(MDB_txn* txn, uint64_t id, uint32_t agent) {
    Be64 k(id);
    if (!put(txn, db_.owners, val(k.b, 8), val(&agent, 4), MDB_NODUPDATA)) return false;
    Be32 ak(agent);
    put(txn, db_.owned, val(ak.b, 4), val(&id, 8), MDB_NODUPDATA);
    Cursor c(txn, db_.owners);
    MDB_val key = val(k.b, 8), v;
    c.op(key, v, MDB_SET);
    size_t n = 0;
    int rc = mdb_cursor_count(c.get(), &n);
    if (rc) throw_lmdb(rc, "mdb_cursor_count");
    // Thrown inside the write transaction, so the whole commit is undone.
    if (n > kMaxOwnersPerRecord)
        throw InvalidArgument("record " + std::to_string(id) + " already has " + std::to_string(kMaxOwnersPerRecord) +
                              " owners, the limit per record");
    hist_add(txn, static_cast<uint32_t>(n - 1), -1);
    hist_add(txn, static_cast<uint32_t>(n), +1);
    return true;
}

void Store::add_edge(MDB_txn* txn, uint64_t a, uint64_t b) {
    uint64_t linked = meta_u64(txn, "linked");
    for (int side = 0; side < 2; ++side) {
        uint64_t from = side ? b : a, to = side ? a : b;
        Be64 k(from);
        MDB_val probe;
        bool had = agentsensus::get(txn, db_.edges, val(k.b, 8), probe);
        if (put(txn, db_.edges, val(k.b, 8), val(&to, 8), MDB_NODUPDATA) && !had) ++linked;
    }
    set_meta_u64(txn, "linked", linked);
}

void Store::delete_record(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    uint64_t linked = meta_u64(txn, "linked");
    std::vector<uint64_t> nbs = neighbors_in(txn, id);
    for (uint64_t nb : nbs) {
        Be64 nk(nb);
        MDB_val back = val(&id, 8);
        del(txn, db_.edges, val(nk.b, 8), &back);
        MDB_val probe;
        if (!agentsensus::get(txn, db_.edges, val(nk.b, 8), probe)) --linked;
    }
    if (!nbs.empty()) {
        del(txn, db_.edges, val(k.b, 8));
        --linked;
    }
    set_meta_u64(txn, "linked", linked);

    // The text index entries that point here, found through the reverse index.
    {
        Cursor c(txn, db_.rnorms);
        MDB_val key = val(k.b, 8), v;
        bool more = c.op(key, v, MDB_SET);
        if (more) more = c.op(key, v, MDB_FIRST_DUP);
        while (more) {
            std::string digest(view(v));
            MDB_val cur;
            if (agentsensus::get(txn, db_.norms, val(digest), cur) && cur.mv_size == 8 &&
                read_be64(cur.mv_data) == id)
                del(txn, db_.norms, val(digest));
            more = c.op(key, v, MDB_NEXT_DUP);
        }
        del(txn, db_.rnorms, val(k.b, 8));
    }
    // The merge log keeps texts: a deleted record takes its entries with it.
    {
        Cursor c(txn, db_.rmerges);
        MDB_val key = val(k.b, 8), v;
        bool more = c.op(key, v, MDB_SET);
        if (more) more = c.op(key, v, MDB_FIRST_DUP);
        while (more) {
            std::string seq(view(v));
            del(txn, db_.merges, val(seq));
            more = c.op(key, v, MDB_NEXT_DUP);
        }
        del(txn, db_.rmerges, val(k.b, 8));
    }
    del(txn, db_.records, val(k.b, 8));
    del(txn, db_.vectors, val(k.b, 8));
    journal(txn, kDel, id, 0);
}

void Store::put_merge(MDB_txn* txn, uint64_t seq, uint64_t survivor, uint32_t agent, uint32_t round,
                      std::string_view kept, std::string_view discarded) {
    // [u64 survivor][u32 agent][u32 round][u32 kept length] kept discarded
    std::string e;
    append<uint64_t>(e, survivor);
    append<uint32_t>(e, agent);
    append<uint32_t>(e, round);
    append<uint32_t>(e, static_cast<uint32_t>(kept.size()));
    e.append(kept);
    e.append(discarded);
    Be64 mk(seq), sk(survivor);
    put(txn, db_.merges, val(mk.b, 8), val(e), MDB_APPEND);
    put(txn, db_.rmerges, val(sk.b, 8), val(mk.b, 8));
}

void Store::forget(const std::string& owner, uint64_t id) {
    check_open();
    env_->write([&](MDB_txn* txn) {
        Be64 k(id);
        MDB_val rv;
        if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv)) throw NotFound("no record " + std::to_string(id));
        auto agent = agent_id(txn, owner);
        MDB_val own = val(agent ? &*agent : nullptr, 4);
        if (!agent || !del(txn, db_.owners, val(k.b, 8), &own))
            throw NotFound("record " + std::to_string(id) + " is not owned by '" + owner + "'");
        Be32 ak(*agent);
        MDB_val idv = val(&id, 8);
        del(txn, db_.owned, val(ak.b, 4), &idv);
        Cursor c(txn, db_.owners);
        MDB_val key = val(k.b, 8), v;
        size_t left = 0;
        if (c.op(key, v, MDB_SET)) {
            int rc = mdb_cursor_count(c.get(), &left);
            if (rc) throw_lmdb(rc, "mdb_cursor_count");
        }
        hist_add(txn, static_cast<uint32_t>(left + 1), -1);
        hist_add(txn, static_cast<uint32_t>(left), +1);
        journal(txn, kDisown, id, *agent);
        if (left == 0) delete_record(txn, id);
    });
    sync_index();
}

CommitResult Store::commit(const std::vector<DepositPlan>& plans, uint64_t prepared_seq, float min_similarity) {
    check_open();
    // Validate and normalize everything before the transaction starts.
    std::vector<std::vector<float>> vecs(plans.size());
    size_t new_count = 0;
    for (size_t p = 0; p < plans.size(); ++p) {
        const DepositPlan& d = plans[p];
        if (d.owner.empty() || d.owner.size() > kMaxOwnerBytes)
            throw InvalidArgument("owner must be 1 to " + std::to_string(kMaxOwnerBytes) + " bytes");
        if (d.statements.empty() || d.statements.size() > kMaxStatementsPerDeposit)
            throw InvalidArgument("a deposit holds 1 to " + std::to_string(kMaxStatementsPerDeposit) + " statements");
        vecs[p].resize(d.statements.size() * dim_);
        for (size_t i = 0; i < d.statements.size(); ++i) {
            const StatementPlan& s = d.statements[i];
            if (s.text.empty() || s.text.size() > kMaxStatementBytes)
                throw InvalidArgument("statement must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
            prepare_vector(s.vector, vecs[p].data() + i * dim_);
            if (s.target < 0 && static_cast<size_t>(-s.target) > new_count)
                throw InvalidArgument("a merge names a new record that comes later in the commit");
            if (s.target != 0 && s.kept.empty()) throw InvalidArgument("a merge needs the kept text");
            if (s.kept.size() > kMaxStatementBytes) throw InvalidArgument("kept text is too long");
            if (s.target == 0) ++new_count;
        }
    }

    CommitResult res;
    try {
    env_->write([&](MDB_txn* txn) {
        res = CommitResult{};
        uint64_t now = journal_end(txn);
        // Records other writers added since prepare, for the similarity re-check.
        std::vector<std::pair<uint64_t, std::vector<float>>> added;
        if (now > prepared_seq) {
            Cursor c(txn, db_.journal);
            Be64 from(prepared_seq + 1);
            MDB_val k = val(from.b, 8), v;
            bool more = c.op(k, v, MDB_SET_RANGE);
            while (more) {
                const unsigned char* e = static_cast<const unsigned char*>(v.mv_data);
                if (v.mv_size == 13 && e[0] == kAdd) {
                    uint64_t id = load<uint64_t>(e + 1);
                    std::vector<float> buf(dim_);
                    if (vector_of(txn, id, buf.data())) added.emplace_back(id, std::move(buf));
                }
                more = c.op(k, v, MDB_NEXT);
            }
        }
        auto conflict = [&](std::string why) {
            res.conflict = true;
            res.why = std::move(why);
        };

        uint64_t next_id = meta_u64(txn, "next_id", 1);
        uint64_t next_merge = meta_u64(txn, "next_merge", 1);
        uint64_t deposits = meta_u64(txn, "deposits");
        std::vector<uint64_t> staged;  // ids of the new records of this commit, in order
        res.ids.resize(plans.size());

        for (size_t p = 0; p < plans.size() && !res.conflict; ++p) {
            const DepositPlan& d = plans[p];
            uint32_t agent = ensure_agent(txn, d.owner);
            ++deposits;
            std::vector<uint64_t>& ids = res.ids[p];
            for (size_t i = 0; i < d.statements.size() && !res.conflict; ++i) {
                const StatementPlan& s = d.statements[i];
                const float* v = vecs[p].data() + i * dim_;
                MDB_val digest = val(s.digest, kDigestBytes);
                if (s.target == 0) {
                    MDB_val cur;
                    if (agentsensus::get(txn, db_.norms, digest, cur)) {
                        conflict("an identical statement committed meanwhile");
                        break;
                    }
                    for (const auto& a : added)
                        if (similarity(metric_, v, a.second.data(), dim_) >= min_similarity) {
                            conflict("a similar record committed meanwhile");
                            break;
                        }
                    if (res.conflict) break;
                    uint64_t id = next_id++;
                    Be64 k(id);
                    put(txn, db_.records, val(k.b, 8), val(encode_record(d.round, deposits, s.text)), MDB_APPEND);
                    put(txn, db_.vectors, val(k.b, 8), val(v, dim_ * sizeof(float)), MDB_APPEND);
                    put(txn, db_.norms, digest, val(k.b, 8));
                    put(txn, db_.rnorms, val(k.b, 8), digest);
                    add_owner(txn, id, agent);
                    journal(txn, kAdd, id, agent);
                    staged.push_back(id);
                    ids.push_back(id);
                    continue;
                }
                uint64_t id = s.target > 0 ? static_cast<uint64_t>(s.target) : staged[-s.target - 1];
                Be64 k(id);
                MDB_val rv;
                if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv)) {
                    conflict("record " + std::to_string(id) + " was deleted meanwhile");
                    break;
                }
                RecordHeader h;
                std::string_view current;
                if (!decode_record(rv, h, current)) throw Corrupt("record " + std::to_string(id) + " is damaged");
                if (s.target > 0 && current != s.expected) {
                    conflict("record " + std::to_string(id) + " changed meanwhile");
                    break;
                }
                std::string before(current);
                if (s.kept != before) {
                    put(txn, db_.records, val(k.b, 8), val(encode_record(h.round, h.deposit, s.kept)));
                }
                // Log what the merge let go of: the statement, the old text, or
                // (a custom policy that wrote new text) both.
                std::vector<std::string_view> dropped;
                if (s.kept == before) {
                    dropped.push_back(s.text);
                } else {
                    dropped.push_back(before);
                    if (s.kept != s.text) dropped.push_back(s.text);
                }
                for (std::string_view disc : dropped) put_merge(txn, next_merge++, id, agent, d.round, s.kept, disc);
                if (add_owner(txn, id, agent)) journal(txn, kOwn, id, agent);
                MDB_val cur;
                if (!agentsensus::get(txn, db_.norms, digest, cur)) {
                    put(txn, db_.norms, digest, val(k.b, 8));
                    put(txn, db_.rnorms, val(k.b, 8), digest);
                }
                ids.push_back(id);
            }
            if (res.conflict) break;
            // Affiliation: the records this deposit ended in, pairwise.
            std::vector<uint64_t> distinct(ids);
            std::sort(distinct.begin(), distinct.end());
            distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
            for (size_t a = 0; a < distinct.size(); ++a)
                for (size_t b = a + 1; b < distinct.size(); ++b) add_edge(txn, distinct[a], distinct[b]);
        }
        if (res.conflict) throw CommitAbort{};
        set_meta_u64(txn, "next_id", next_id);
        set_meta_u64(txn, "next_merge", next_merge);
        set_meta_u64(txn, "deposits", deposits);
    });
    } catch (const CommitAbort&) {
        return res;
    }
    sync_index();
    return res;
}

}  // namespace agentsensus
