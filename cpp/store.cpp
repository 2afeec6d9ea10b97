#include "store.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unordered_set>

#include "bytes.hpp"
#include "limits.hpp"
#include "parallel.hpp"
#include "schema.hpp"
#include "visible_text.hpp"

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
    auto open = [&](const TableSpec& t) { return env_->open_db(t.name, t.flags); };
    db_.meta = open(kMetaTable);
    db_.records = open(kRecordsTable);
    db_.vectors = open(kVectorsTable);
    db_.owners = open(kOwnersTable);
    db_.owned = open(kOwnedTable);
    db_.owners_by_name = open(kOwnersByNameTable);
    db_.owner_names = open(kOwnerNamesTable);
    db_.edges = open(kEdgesTable);
    db_.merges = open(kMergesTable);
    db_.rmerges = open(kMergesBySurvivorTable);
    db_.norms = open(kNormsTable);
    db_.rnorms = open(kNormsByRecordTable);
    db_.journal = open(kJournalTable);
    db_.hist = open(kHistTable);
    try {
        db_.said = open(kSaidTable);
    } catch (const Corrupt&) {
        if (!o.readonly) throw;
        has_said_ = false;  // a schema-1 store, read only: it has no said rows to read
    }
    try {
        db_.batch_keys = open(kBatchKeysTable);
    } catch (const Corrupt&) {
        if (!o.readonly) throw;
        has_batch_keys_ = false;  // a schema-1 or 2 store, read only: no batch keys
    }
    try {
        db_.times = open(kTimesTable);
        db_.metadata = open(kMetadataTable);
    } catch (const Corrupt&) {
        if (!o.readonly) throw;
        has_record_meta_ = false;  // a schema-1 or 2 store, read only: no times, no metadata
    }
    try {
        db_.scopes = open(kScopesTable);
        db_.scoped = open(kScopedTable);
        db_.scope_names = open(kScopeNamesTable);
        db_.scopes_by_name = open(kScopesByNameTable);
    } catch (const Corrupt&) {
        if (!o.readonly) throw;
        has_scopes_ = false;  // a schema-1 or 2 store, read only: every record in the default scope
    }
    items_ = std::make_unique<ItemTable>(*env_);
    settings_ = std::make_unique<SettingsTable>(*env_);
    lexical_ = std::make_unique<LexicalIndex>(*env_, db_.meta, db_.records, o.readonly,
                                              [this](MDB_txn* txn, uint64_t id) { return record_scope(txn, id); });
    init_or_check(o);
    index_ = std::make_unique<VectorIndex>(dim_, metric_, o.index);
    // A quantized index re-scores its candidates from LMDB's f32 vectors, in
    // a read transaction of the calling thread (searches run on several).
    index_->set_exact_source([this](const uint64_t* ids, size_t n, float* out, unsigned char* found) {
        ReadTxn t(*env_);
        // On a cold cache, helpers fetch the pages of each candidate's vector
        // and owner row (read next, by search_owned) while this thread reads.
        BatchPrefetch ahead(cold_, env_->raw(), n, [this, ids](MDB_txn* txn, size_t i) {
            Be64 k(ids[i]);
            MDB_val v;
            if (agentsensus::get(txn, db_.vectors, val(k.b, 8), v)) touch_pages(v.mv_data, v.mv_size);
            if (agentsensus::get(txn, db_.owners, val(k.b, 8), v)) touch_pages(v.mv_data, v.mv_size);
        });
        // Two passes: every value is found first, then copied with the
        // next values' cache lines requested ahead, so that their reads from
        // memory overlap instead of waiting one after another.
        std::vector<const char*> at(n, nullptr);
        const size_t bytes = dim_ * sizeof(float);
        for (size_t i = 0; i < n; ++i) {
            ahead.reached(i);
            Be64 k(ids[i]);
            MDB_val v;
            if (!agentsensus::get(t.get(), db_.vectors, val(k.b, 8), v)) continue;
            if (v.mv_size != bytes) throw Corrupt("vector of record " + std::to_string(ids[i]) + " is damaged");
            at[i] = static_cast<const char*>(v.mv_data);
        }
        constexpr size_t kAhead = 4;
        auto request = [&](size_t i) {
            if (i < n && at[i])
                for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(at[i] + b);
        };
        for (size_t i = 0; i < kAhead; ++i) request(i);
        for (size_t i = 0; i < n; ++i) {
            request(i + kAhead);
            found[i] = at[i] != nullptr;
            if (at[i]) std::memcpy(out + i * dim_, at[i], bytes);
        }
    });
    open_index();
    // What recalls read at random (vectors, owners, rows), read ahead in
    // file order while they start: a cold store warms at the disk's
    // sequential speed rather than a page a lookup.
    warmer_ = std::make_unique<FileWarmer>(dir_ + "/data.mdb");
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

uint64_t Store::meta_u64(MDB_txn* txn, const MetaKey& key, uint64_t dflt) {
    MDB_val v;
    if (!agentsensus::get(txn, db_.meta, meta_key(key), v)) return dflt;
    if (v.mv_size != 8) throw Corrupt(std::string("meta '") + key.name + "' has the wrong size");
    return load<uint64_t>(v.mv_data);
}

void Store::set_meta_u64(MDB_txn* txn, const MetaKey& key, uint64_t x) {
    put(txn, db_.meta, meta_key(key), val(&x, 8));
}

Counters Store::read_counters(MDB_txn* txn) {
    Counters c;
    c.next_id = meta_u64(txn, kMetaNextId, 1);
    c.next_merge = meta_u64(txn, kMetaNextMerge, 1);
    c.deposits = meta_u64(txn, kMetaDeposits);
    return c;
}

void Store::write_counters(MDB_txn* txn, const Counters& c) {
    set_meta_u64(txn, kMetaNextId, c.next_id);
    set_meta_u64(txn, kMetaNextMerge, c.next_merge);
    set_meta_u64(txn, kMetaDeposits, c.deposits);
}

void Store::init_or_check(const StoreOptions& o) {
    bool fresh = false;
    {
        ReadTxn t(*env_);
        MDB_val v;
        fresh = !agentsensus::get(t.get(), db_.meta, meta_key(kMetaSchema), v);
    }
    if (fresh) {
        if (o.readonly) throw Corrupt("not an agentsensus store (no schema): " + dir_);
        if (o.dim == 0) throw InvalidArgument("dim is required to create a store at " + dir_);
        random_uuid(uuid_);
        env_->write([&](MDB_txn* txn) {
            uint32_t schema = kSchemaVersion, dim = o.dim, metric = static_cast<uint32_t>(o.metric);
            put(txn, db_.meta, meta_key(kMetaSchema), val(&schema, kMetaSchema.size));
            put(txn, db_.meta, meta_key(kMetaDim), val(&dim, kMetaDim.size));
            put(txn, db_.meta, meta_key(kMetaMetric), val(&metric, kMetaMetric.size));
            put(txn, db_.meta, meta_key(kMetaUuid), val(uuid_, kMetaUuid.size));
            set_meta_u64(txn, kMetaNextId, 1);
            set_meta_u64(txn, kMetaNextOwner, 1);
            set_meta_u64(txn, kMetaNextMerge, 1);
            set_meta_u64(txn, kMetaNextJournal, 1);
            set_meta_u64(txn, kMetaDeposits, 0);
            set_meta_u64(txn, kMetaLinked, 0);
            lexical_->mark_built(txn);  // an empty store's index is complete
        });
    }
    ReadTxn t(*env_);
    MDB_val v;
    auto need = [&](const MetaKey& key) {
        if (!agentsensus::get(t.get(), db_.meta, meta_key(key), v) || v.mv_size != key.size)
            throw Corrupt(std::string("store meta '") + key.name + "' is missing or damaged in " + dir_);
    };
    need(kMetaSchema);
    uint32_t schema = load<uint32_t>(v.mv_data);
    if (schema < kOldestSchemaVersion || schema > kSchemaVersion)
        throw Corrupt("store schema version " + std::to_string(schema) + " is not supported (this build reads " +
                      std::to_string(kOldestSchemaVersion) + " to " + std::to_string(kSchemaVersion) + ")");
    if (schema < kSchemaVersion && !o.readonly) {
        // Schema 1 lacks only the said table, now created empty: its records
        // keep working without rows. Builds that read 1 only must not write
        // here any more (they would leave rows behind), so the version moves.
        env_->write([&](MDB_txn* txn) {
            uint32_t now = kSchemaVersion;
            put(txn, db_.meta, meta_key(kMetaSchema), val(&now, kMetaSchema.size));
        });
    }
    need(kMetaDim);
    dim_ = load<uint32_t>(v.mv_data);
    need(kMetaMetric);
    uint32_t m = load<uint32_t>(v.mv_data);
    if (m > 2 || dim_ == 0 || dim_ > kMaxDim) throw Corrupt("store meta has an invalid dim or metric");
    metric_ = static_cast<Metric>(m);
    need(kMetaUuid);
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

// Removes compact.tmp/, the copy a compaction that died left behind. It is
// provably abandoned once this process has the store open: a compaction
// holds LMDB's open lock exclusively from before it creates the copy until
// it is done, so this open waited for any running one, and none can start
// while the store is open (compact_store).
static void remove_abandoned_compaction(const std::string& dir) {
    const std::string tmp = dir + "/compact.tmp";
    DIR* d = opendir(tmp.c_str());
    if (!d) return;
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") std::remove((tmp + "/" + name).c_str());
    }
    closedir(d);
    rmdir(tmp.c_str());
}

void Store::open_index() {
    if (!env_->readonly()) {
        remove_dead_index_temps(dir_);
        remove_abandoned_compaction(dir_);
    }
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
    // An id added twice in one catch-up (a forget gave it a new vector: a
    // delete and an add) is inserted once; both reads gave today's vector.
    std::unordered_set<uint64_t> pending;
    while (more) {
        JournalEntry e;
        if (k.mv_size != 8 || !decode_journal(v, e)) throw Corrupt("journal entry is damaged");
        uint64_t seq = read_be64(k.mv_data);
        const uint64_t id = e.record;
        auto allow = allow_.find(e.owner);
        switch (e.op) {
            case kAdd: {
                // The record may be gone in this snapshot (deleted later).
                size_t at = add_vecs.size();
                add_vecs.resize(at + dim_);
                if (!index_->contains(id) && !pending.count(id) && vector_of(txn, id, add_vecs.data() + at)) {
                    adds.push_back(id);
                    pending.insert(id);
                } else
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
            default: throw Corrupt("journal entry has an unknown operation");
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

uint64_t Store::checkpoint() {
    check_open();
    if (env_->readonly()) throw Error("the store at " + dir_ + " is open read-only");
    // Exclusive: the saved file must be one state of the index, caught up to
    // a known journal seq (searches wait for the save).
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    {
        ReadTxn t(*env_);
        catch_up_locked(t.get());
    }
    if (!index_saved_valid_ || applied_seq_ != saved_seq_) {
        IndexHeader h{};
        std::memcpy(h.store_uuid, uuid_, 16);
        h.journal_seq = applied_seq_;
        h.dim = dim_;
        h.metric = static_cast<uint32_t>(metric_);
        index_->save(dir_ + kIndexFile, h);  // unlike close(), a failed save is reported
        saved_seq_ = applied_seq_;
        index_saved_valid_ = true;
    }
    return saved_seq_;
}

void Store::close() {
    if (!env_) return;
    warmer_.reset();
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

void Store::prepare_vectors(const float* in, size_t n, float* out) const {
    for (size_t i = 0; i < n; ++i) prepare_vector(in + i * dim_, out + i * dim_);
}

void Store::similarities(const float* queries, size_t n, const float* kept, size_t m, float* out) const {
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < m; ++j) out[i * m + j] = similarity(metric_, queries + i * dim_, kept + j * dim_, dim_);
}

bool Store::vector_of(MDB_txn* txn, uint64_t id, float* out) {
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, db_.vectors, val(k.b, 8), v)) return false;
    if (v.mv_size != dim_ * sizeof(float)) throw Corrupt("vector of record " + std::to_string(id) + " is damaged");
    std::memcpy(out, v.mv_data, v.mv_size);
    return true;
}

std::optional<uint32_t> Store::owner_id(MDB_txn* txn, std::string_view name) {
    MDB_val v;
    if (name.empty() || name.size() > 511) return std::nullopt;
    if (!agentsensus::get(txn, db_.owners_by_name, val(name), v)) return std::nullopt;
    if (v.mv_size != 4) throw Corrupt("oid table is damaged");
    return load<uint32_t>(v.mv_data);
}

std::string Store::owner_name(MDB_txn* txn, uint32_t oid) {
    {
        std::lock_guard<std::mutex> g(names_mu_);
        auto it = names_.find(oid);
        if (it != names_.end()) return it->second;
    }
    Be32 k(oid);
    MDB_val v;
    if (!agentsensus::get(txn, db_.owner_names, val(k.b, 4), v))
        throw Corrupt("owner id " + std::to_string(oid) + " has no name");
    std::string name(view(v));
    // Only read transactions come here, so the name is committed and final.
    std::lock_guard<std::mutex> g(names_mu_);
    names_.emplace(oid, name);
    return name;
}

bool Store::owns(MDB_txn* txn, uint32_t oid, uint64_t id) {
    Be64 k(id);
    MDB_val key = val(k.b, 8), v = val(&oid, 4);
    Cursor c(txn, db_.owners);
    return c.op(key, v, MDB_GET_BOTH);
}

size_t Store::owned_count(MDB_txn* txn, uint32_t oid) {
    Be32 k(oid);
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

std::vector<uint64_t> Store::owned_ids(MDB_txn* txn, uint32_t oid) {
    Be32 k(oid);
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
        row.owners.push_back(owner_name(txn, load<uint32_t>(ov.mv_data)));
        more = c.op(key, ov, MDB_NEXT_DUP);
    }
    std::sort(row.owners.begin(), row.owners.end());
    return true;
}

PrepareResult Store::prepare(const float* vectors, size_t n, const unsigned char* digests, size_t k,
                             float min_similarity, std::string_view scope) {
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
    // Only the scope's records are exact duplicates or candidates.
    const ScopeView sv = scope_view(t.get(), scope);
    for (size_t i = 0; i < n; ++i) {
        MDB_val v;
        if (agentsensus::get(t.get(), db_.norms, val(digests + i * kDigestBytes, kDigestBytes), v) &&
            (v.mv_size != 8 || sv.contains(read_be64(v.mv_data)))) {
            if (v.mv_size != 8) throw Corrupt("text index is damaged");
            out.exact[i] = read_be64(v.mv_data);
            named.push_back(out.exact[i]);
        } else if (k > 0) {
            to_search.push_back(i);
        }
    }
    // A store of at most exact_cutoff records is scanned exactly, as recall
    // scans an owner of that size: the candidates are then the true nearest,
    // ties to the lower id, whatever shape the HNSW graph took (parallel
    // inserts, and usearch's per-slot level generators that concurrent
    // searches reorder, make it differ from run to run).
    std::vector<uint64_t> all;
    const size_t total = entries(t.get(), db_.records);
    if (!to_search.empty() && !sv.filtered && total <= exact_cutoff_) {
        Cursor c(t.get(), db_.records);
        MDB_val rk, rv;
        for (bool more = c.op(rk, rv, MDB_FIRST); more; more = c.op(rk, rv, MDB_NEXT)) {
            if (rk.mv_size != 8) throw Corrupt("record table is damaged");
            all.push_back(read_be64(rk.mv_data));
        }
    }
    // Searches are independent: spread them over the cores (usearch gives
    // each thread its own slot). LMDB reads stay on this thread.
    std::vector<std::vector<Hit>> found(n);
    parallel_for(to_search.size(), [&](size_t j) {
        size_t i = to_search[j];
        if (sv.filtered) {
            found[i] = search_scope(sv, qs.data() + i * dim_, k, total);
        } else if (all.empty()) {
            found[i] = index_->search(qs.data() + i * dim_, k);
        } else {
            // What the index lacks (newer than applied_seq_) the commit re-checks, as for a search.
            std::vector<uint64_t> absent;
            found[i] = index_->scan(qs.data() + i * dim_, all.data(), all.size(), k, absent);
        }
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

// The plan. A filtered HNSW search over a selective owner wanders the whole
// graph before it has k matches (35x slower than unfiltered at 0.1%
// selectivity when this plan was chosen), so: scan the owner's vectors
// exactly when it owns few records, else search the whole graph for about
// kOverfetch * k / selectivity nearest and keep the owner's, widening when
// that leaves fewer than k. When the (widened) search would cost more than a
// scan, scan. A search of w nearest keeps max(w, expansion_search) candidates
// and costs about kScanPerCandidate scanned vectors per candidate (measured
// on the int8 graph, dim 384: a scan about 0.07-0.09 us a vector, a search
// 34 (50k records), 118 (100k) and 124 (1M) scanned vectors per candidate;
// 200 when the graph held f32). A scan is also exact, where HNSW may miss.
//
// A crowded neighbourhood is searched once more, at least twice as wide and
// at least kCrowdedWiden times expansion_search: when the owner's k-th best
// lies within kCrowded (cosine) of the last candidate the walk ranked,
// records as good as the k-th sit at the walk's edge, where HNSW misses
// most. Measured on the clustered corpus: at 100k records the 5th best and
// the 64th candidate lie a median 0.42 apart (recall@5 1.000 at width 64),
// at 1M 0.029 (0.906 at width 64, 0.997 at 256, no better at 384), so it is
// done once. The wider width grows with the graph's depth past 2^16 records
// (crowded_width, crowd_gauge.hpp): a rebuilt 1M graph of the same corpus
// (the import adds in parallel, so no two builds are the same graph) gave
// 0.989 at 256 and 0.995 at 320 and 384 (the 100% owner; the 50% owner
// 0.990, 0.996, 0.996). kCrowded is 0.1 rather than less: the misses left at 10k records
// (a query far from every record, its 5th best at 0.16-0.20) lay
// 0.038-0.065 from the 64th; at 100k, 1% of the queries fall under 0.1.
// Where more than half the neighbourhoods are crowded (at 1M records of the
// clustered corpus), the first, narrower search is skipped: the search starts
// at the wider width, as a crowded query would reach it anyway (CrowdGauge).
namespace {
constexpr size_t kOverfetch = 3, kScanPerCandidate = 100;
constexpr float kCrowded = 0.1f;
}  // namespace

size_t Store::search_cost(size_t width) const { return std::max(width, expansion_search_) * kScanPerCandidate; }

// The probes are the stored vectors at evenly spaced keys, each searched
// unfiltered at the default width as a query near a record would be; crowded
// when the k-th best (kProbeK, the default k) lies within kCrowded of the
// last candidate for more than half of them. kProbes searches at the default
// width, at the first graph recall of an open that could start wider.
bool Store::neighbourhoods_crowded(MDB_txn* txn, size_t total) {
    if (auto v = crowd_.verdict(total)) return *v;
    constexpr size_t kProbeK = 5;
    Cursor c(txn, db_.vectors);
    MDB_val k, v;
    if (!c.op(k, v, MDB_FIRST) || k.mv_size != 8) return false;
    const uint64_t first = read_be64(k.mv_data);
    if (!c.op(k, v, MDB_LAST) || k.mv_size != 8) return false;
    const uint64_t last = read_be64(k.mv_data);
    std::vector<float> probe(dim_);
    size_t probed = 0, crowded = 0;
    for (size_t i = 0; i < CrowdGauge::kProbes; ++i) {
        Be64 at(first + (last - first) / CrowdGauge::kProbes * i);
        k = val(at.b, 8);
        if (!c.op(k, v, MDB_SET_RANGE)) break;
        if (v.mv_size != dim_ * sizeof(float)) throw Corrupt("a stored vector is damaged");
        std::memcpy(probe.data(), v.mv_data, v.mv_size);
        std::vector<Hit> hits = index_->search(probe.data(), expansion_search_);
        if (hits.size() <= kProbeK) continue;
        ++probed;
        crowded += hits[kProbeK - 1].score - hits.back().score < kCrowded;
    }
    const bool verdict = 2 * crowded > probed;
    crowd_.set(total, verdict);
    return verdict;
}

std::vector<Row> Store::recall(const std::string& owner, const float* query, size_t k, bool expand,
                               const RecallFilter& filter, float threshold) {
    check_open();
    std::vector<float> q(dim_);
    prepare_vector(query, q.data());
    if (k == 0) return {};

    std::optional<uint32_t> oid;
    size_t count = 0, total = 0;
    {
        ReadTxn t(*env_);
        oid = owner_id(t.get(), owner);
        if (oid) count = owned_count(t.get(), *oid);
        total = entries(t.get(), db_.records);
    }
    if (!oid || count == 0) return {};

    size_t wanted = total ? (kOverfetch * k * total + count - 1) / count : k;
    wanted = std::max(wanted, k);
    bool exact = count <= exact_cutoff_ || search_cost(wanted) >= count;
    if (!exact) ensure_allow_set(*oid);

    std::shared_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    std::vector<Hit> hits;
    // A filter that a scan of this snapshot evaluated already: its passing
    // records are scanned exactly when that costs less than a search.
    if (!exact && !filter.empty()) {
        auto passing = passing_ids(t.get(), *oid, filter);
        exact = passing && search_cost(wanted) >= passing->size();
    }
    if (!exact) exact = !search_owned(t.get(), *oid, q.data(), k, count, total, wanted, hits, filter);
    std::shared_ptr<const std::vector<uint64_t>> scanned;
    if (exact) hits = scan_owned(t.get(), *oid, q.data(), k, filter, &scanned);
    hits.erase(std::remove_if(hits.begin(), hits.end(), [&](const Hit& h) { return h.score < threshold; }), hits.end());
    return recall_rows(t.get(), *oid, hits, expand, filter, scanned.get());
}

// The owner's allow-set, current to the latest commit.
void Store::ensure_allow_set(uint32_t oid) {
    sync_index();
    {
        // Shared in the common case: an exclusive lock here would wait for
        // every search in flight, and so serialize reader threads.
        std::shared_lock<std::shared_mutex> shared(index_mu_);
        if (allow_.count(oid)) return;
    }
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    if (allow_.count(oid)) return;
    ReadTxn t(*env_);
    catch_up_locked(t.get());
    std::vector<uint64_t> bits;
    for (uint64_t id : owned_ids(t.get(), oid)) set_bit(bits, id);
    allow_.emplace(oid, std::move(bits));
}

// Searches the whole graph, widening from `wanted`, and keeps the owner's
// best k; false when the graph does not reach enough of them (then scan).
// Under a filter, enough is kOverfetch * k that pass (the margin `wanted`
// gives an unfiltered search), and the next width follows the pass share
// seen among the owner's candidates, so that a selective filter goes to the
// scan after one search instead of several. Holds index_mu_ shared; the
// owner's allow-set exists.
bool Store::search_owned(MDB_txn* txn, uint32_t oid, const float* q, size_t k, size_t count, size_t total,
                         size_t wanted, std::vector<Hit>& hits, const RecallFilter& filter, bool trust_bits) {
    const std::vector<uint64_t>& bits = allow_.at(oid);
    const size_t want = std::min(k, count), enough = filter.empty() ? want : std::min(count, kOverfetch * k);
    const size_t asked = wanted;
    // The allow-set is this snapshot's ownership when the index has applied
    // exactly the snapshot's journal (index_mu_ is held, so neither moves):
    // then a candidate's bit needs no confirming lookup in LMDB, and only the
    // hits returned are confirmed below.
    const bool bits_exact = trust_bits && journal_end(txn) == applied_seq_;
    // The walk keeps expansion_search candidates however few are asked
    // for: take them all, more of them may be the owner's.
    wanted = std::max(wanted, expansion_search_);
    // The crowded rule's next width after a search of w.
    auto wider_than = [&, crowded = crowded_width(expansion_search_, total)](size_t w) {
        return std::max(2 * w, crowded);
    };
    // In a store whose neighbourhoods are crowded, start at that wider width
    // (CrowdGauge), as a crowded query would reach it anyway.
    bool widened = filter.empty() && wanted < total && search_cost(wider_than(wanted)) < count &&
                   neighbourhoods_crowded(txn, total);
    if (widened) wanted = wider_than(wanted);
    for (;;) {
        wanted = std::max(wanted, expansion_search_);
        hits = index_->search(q, wanted);
        const float edge = hits.empty() ? 1.0f : hits.back().score;  // the last candidate ranked
        // Keep the owner's; the allow-set may be ahead of this snapshot, so
        // ownership is then confirmed in it.
        size_t owned = 0;
        hits.erase(std::remove_if(hits.begin(), hits.end(),
                                  [&](const Hit& h) {
                                      if (!test_bit(bits, h.id) || (!bits_exact && !owns(txn, oid, h.id))) return true;
                                      ++owned;
                                      return !passes(txn, oid, h.id, filter);
                                  }),
                   hits.end());
        if (hits.size() >= enough) {
            if (widened || hits[want - 1].score - edge >= kCrowded) break;
            // Crowded: once more, wider (or the exact scan when that costs less).
            widened = true;
            const size_t wider = wider_than(wanted);
            if (wanted >= total || search_cost(wider) >= count) return false;
            wanted = wider;
            continue;
        }
        size_t next = wanted * 4;
        if (!filter.empty() && owned > 0)
            next = std::max(next, hits.empty() ? wanted * enough * 4 : (wanted * enough) / hits.size() + 1);
        if (wanted >= total || search_cost(next) >= count) return false;
        wanted = next;
    }
    if (hits.size() > k) hits.resize(k);
    // Invariant: recall shows an owner only records it owns in the reader's
    // snapshot. Trusted bits are confirmed on the hits returned (k lookups,
    // not one per candidate); should one fail, the search runs again with
    // every candidate confirmed.
    if (bits_exact)
        for (const Hit& h : hits)
            if (!owns(txn, oid, h.id)) return search_owned(txn, oid, q, k, count, total, asked, hits, filter, false);
    return true;
}

// The exact best k of the owner's records. Holds index_mu_ shared.
std::vector<Hit> Store::scan_owned(MDB_txn* txn, uint32_t oid, const float* q, size_t k, const RecallFilter& filter,
                                   std::shared_ptr<const std::vector<uint64_t>>* scanned) {
    // Filtered before scoring: the k best scored are the k best that pass.
    std::shared_ptr<const std::vector<uint64_t>> passing = passing_ids(txn, oid, filter);
    if (!passing) {
        std::vector<uint64_t> ids = owned_ids(txn, oid);
        keep_passing(txn, oid, ids, filter);
        passing = std::make_shared<const std::vector<uint64_t>>(std::move(ids));
        remember_passing(txn, oid, filter, passing);
    }
    std::vector<uint64_t> absent;
    std::vector<Hit> hits = index_->scan(q, passing->data(), passing->size(), k, absent);
    // What the index does not hold (yet, or any more) is read from LMDB.
    std::vector<float> buf(dim_);
    for (uint64_t id : absent)
        if (vector_of(txn, id, buf.data())) hits.push_back(Hit{id, similarity(metric_, q, buf.data(), dim_)});
    size_t top = std::min(k, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + top, hits.end(), better);
    hits.resize(top);
    if (scanned) *scanned = std::move(passing);
    return hits;
}

// The hits as rows, then (expand) the owner's records one edge away from
// them, each record once. `members`, when given, is what a scan of this
// snapshot read as the owner's records that pass the filter (ascending): a
// neighbour's membership is then a binary search in it, not an owner lookup
// and a filter check in LMDB.
std::vector<Row> Store::recall_rows(MDB_txn* txn, uint32_t oid, const std::vector<Hit>& hits, bool expand,
                                    const RecallFilter& filter, const std::vector<uint64_t>* members) {
    std::vector<Row> rows;
    std::unordered_set<uint64_t> seen;
    for (const Hit& h : hits) {
        Row r;
        if (!read_row(txn, h.id, r)) continue;
        read_record_meta(txn, h.id, oid, r);
        r.score = h.score;
        r.via = Via::hit;
        seen.insert(h.id);
        rows.push_back(std::move(r));
    }
    if (!expand) return rows;
    size_t nhits = rows.size();
    for (size_t i = 0; i < nhits; ++i) {
        uint64_t id = rows[i].id;
        for (uint64_t nb : neighbors_in(txn, id)) {
            if (seen.count(nb)) continue;
            if (members ? !std::binary_search(members->begin(), members->end(), nb)
                        : !owns(txn, oid, nb) || !passes(txn, oid, nb, filter))
                continue;
            Row r;
            if (!read_row(txn, nb, r)) continue;
            read_record_meta(txn, nb, oid, r);
            r.via = Via::edge;
            seen.insert(nb);
            rows.push_back(std::move(r));
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
        read_record_meta(t.get(), r.id, 0, r);
        out.push_back(std::move(r));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

Row Store::get(uint64_t id, const std::string& owner) {
    check_open();
    ReadTxn t(*env_);
    Row r;
    if (!read_row(t.get(), id, r)) throw NotFound("no record " + std::to_string(id));
    std::optional<uint32_t> oid = owner.empty() ? std::nullopt : owner_id(t.get(), owner);
    read_record_meta(t.get(), id, oid ? *oid : 0, r);
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
    auto oid = owner_id(t.get(), owner);
    if (!oid) return {};
    return owned_ids(t.get(), *oid);
}

Stats Store::stats() {
    check_open();
    ReadTxn t(*env_);
    Stats s;
    s.records = entries(t.get(), db_.records);
    s.deposits = meta_u64(t.get(), kMetaDeposits);
    s.merges = entries(t.get(), db_.merges);
    s.linked = meta_u64(t.get(), kMetaLinked);
    s.owners = entries(t.get(), db_.owners_by_name);
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
        MergeEntry e;
        if (k.mv_size != 8 || !decode_merge(v, e)) throw Corrupt("merge log entry is damaged");
        MergeRow m;
        m.seq = read_be64(k.mv_data);
        m.survivor = e.survivor;
        m.round = e.round;
        m.kept.assign(e.kept);
        m.discarded.assign(e.discarded);
        m.owner = owner_name(t.get(), e.owner);
        out.push_back(std::move(m));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

// ---------------------------------------------------------------- writes

uint32_t Store::ensure_owner(MDB_txn* txn, std::string_view name) {
    if (auto a = owner_id(txn, name)) return *a;
    uint64_t next = meta_u64(txn, kMetaNextOwner, 1);
    if (next > 0xffffffffu) throw Error("too many distinct owners");
    uint32_t id = static_cast<uint32_t>(next);
    put(txn, db_.owners_by_name, val(name), val(&id, 4));
    Be32 k(id);
    put(txn, db_.owner_names, val(k.b, 4), val(name));
    set_meta_u64(txn, kMetaNextOwner, next + 1);
    return id;
}

void Store::journal(MDB_txn* txn, uint8_t op, uint64_t id, uint32_t oid) {
    uint64_t seq = meta_u64(txn, kMetaNextJournal, 1);
    auto e = encode_journal(JournalEntry{op, id, oid});
    Be64 k(seq);
    put(txn, db_.journal, val(k.b, 8), val(e.data(), e.size()), MDB_APPEND);
    set_meta_u64(txn, kMetaNextJournal, seq + 1);
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

bool Store::add_owner(MDB_txn* txn, uint64_t id, uint32_t oid) {
    Be64 k(id);
    if (!put(txn, db_.owners, val(k.b, 8), val(&oid, 4), MDB_NODUPDATA)) return false;
    Be32 ak(oid);
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
    uint64_t linked = meta_u64(txn, kMetaLinked);
    for (int side = 0; side < 2; ++side) {
        uint64_t from = side ? b : a, to = side ? a : b;
        Be64 k(from);
        MDB_val probe;
        bool had = agentsensus::get(txn, db_.edges, val(k.b, 8), probe);
        if (put(txn, db_.edges, val(k.b, 8), val(&to, 8), MDB_NODUPDATA) && !had) ++linked;
    }
    set_meta_u64(txn, kMetaLinked, linked);
}

// The exact-duplicate index entry digest -> id, and its reverse.
void Store::add_digest(MDB_txn* txn, uint64_t id, MDB_val digest) {
    Be64 k(id);
    put(txn, db_.norms, digest, val(k.b, 8));
    put(txn, db_.rnorms, val(k.b, 8), digest);
}

void Store::delete_record(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    uint64_t linked = meta_u64(txn, kMetaLinked);
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
    set_meta_u64(txn, kMetaLinked, linked);

    drop_text_digests(txn, id);
    // The merge log keeps texts: a deleted record takes its entries with it.
    {
        Cursor c(txn, db_.rmerges);
        MDB_val key = val(k.b, 8), v;
        bool more = c.op(key, v, MDB_SET);
        if (more) more = c.op(key, v, MDB_FIRST_DUP);
        while (more) {
            std::string seq(view(v));
            scrub_del(txn, db_.merges, val(seq));
            more = c.op(key, v, MDB_NEXT_DUP);
        }
        del(txn, db_.rmerges, val(k.b, 8));
    }
    delete_said(txn, id, 0);
    {
        MDB_val rv;
        RecordHeader h;
        std::string_view text;
        // Before its scope row goes: the words are kept under the record's scope.
        if (agentsensus::get(txn, db_.records, val(k.b, 8), rv) && decode_record(rv, h, text))
            lexical_->remove(txn, id, text);
    }
    drop_scope(txn, id);
    drop_metadata(txn, id, 0);
    drop_times(txn, id);
    scrub_del(txn, db_.records, val(k.b, 8));
    scrub_del(txn, db_.vectors, val(k.b, 8));
    journal(txn, kDel, id, 0);
}

// Overwrites a value with zeros of its size (LMDB writes a same-size value in
// place on the transaction's copy of the page), then deletes it: a deleted
// node's bytes can otherwise stay in the free middle of a live page, which
// compact copies whole.
void Store::scrub_del(MDB_txn* txn, MDB_dbi dbi, MDB_val key) {
    MDB_val cur;
    if (!agentsensus::get(txn, dbi, key, cur)) return;
    std::string zeros(cur.mv_size, '\0');
    put(txn, dbi, key, val(zeros));
    del(txn, dbi, key);
}

void Store::put_said(MDB_txn* txn, uint64_t id, uint64_t n, uint32_t oid, uint32_t round, const float* vector,
                     std::string_view text) {
    auto k = said_key(id, n);
    std::string_view vec =
        vector ? std::string_view(reinterpret_cast<const char*>(vector), dim_ * sizeof(float)) : std::string_view();
    put(txn, db_.said, val(k.data(), k.size()), val(encode_said(SaidEntry{oid, round, vec, text})));
}

// Rewrites the record's rows for its text becoming `after`: a row that
// leaves its text out (the record's) gets it written out, and one whose
// text is `after` leaves it out.
void Store::retext_said(MDB_txn* txn, uint64_t id, std::string_view after) {
    std::vector<SaidRow> rows = said_rows(txn, id);
    for (const SaidRow& r : rows) {
        auto k = said_key(id, r.n);
        MDB_val cur;
        SaidEntry e;
        if (!agentsensus::get(txn, db_.said, val(k.data(), k.size()), cur) || !decode_said(cur, e))
            throw Corrupt("a statement of record " + std::to_string(id) + " is damaged");
        bool elided = e.text.empty(), elide = r.text == after;
        if (elided == elide) continue;
        uint32_t oid = e.owner;
        scrub_del(txn, db_.said, val(k.data(), k.size()));
        put_said(txn, id, r.n, oid, r.round, r.vector.empty() ? nullptr : r.vector.data(),
                 elide ? std::string_view() : std::string_view(r.text));
    }
}

void Store::delete_said(MDB_txn* txn, uint64_t id, uint32_t oid) {
    if (!has_said_) return;
    std::vector<std::array<unsigned char, 16>> keys;
    {
        Cursor c(txn, db_.said);
        auto from = said_key(id, 0);
        MDB_val k = val(from.data(), from.size()), v;
        bool more = c.op(k, v, MDB_SET_RANGE);
        while (more && k.mv_size == 16 && std::memcmp(k.mv_data, from.data(), 8) == 0) {
            SaidEntry e;
            if (!decode_said(v, e)) throw Corrupt("a statement of record " + std::to_string(id) + " is damaged");
            if (oid == 0 || e.owner == oid) {
                std::array<unsigned char, 16> key{};
                std::memcpy(key.data(), k.mv_data, 16);
                keys.push_back(key);
            }
            more = c.op(k, v, MDB_NEXT);
        }
    }
    for (const auto& key : keys) scrub_del(txn, db_.said, val(key.data(), key.size()));
}

std::vector<SaidRow> Store::said_rows(MDB_txn* txn, uint64_t id) {
    std::vector<SaidRow> out;
    if (!has_said_) return out;
    std::string_view record_text;
    {
        Be64 rk(id);
        MDB_val rv;
        RecordHeader h;
        if (agentsensus::get(txn, db_.records, val(rk.b, 8), rv)) decode_record(rv, h, record_text);
    }
    Cursor c(txn, db_.said);
    auto from = said_key(id, 0);
    MDB_val k = val(from.data(), from.size()), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    while (more && k.mv_size == 16 && std::memcmp(k.mv_data, from.data(), 8) == 0) {
        SaidEntry e;
        if (!decode_said(v, e) || (e.vector.size() != 0 && e.vector.size() != dim_ * sizeof(float)))
            throw Corrupt("a statement of record " + std::to_string(id) + " is damaged");
        SaidRow r;
        r.n = read_be64(static_cast<const unsigned char*>(k.mv_data) + 8);
        r.owner = owner_name(txn, e.owner);
        r.round = e.round;
        r.text.assign(e.text.empty() ? record_text : e.text);
        r.vector.resize(e.vector.size() / sizeof(float));
        std::memcpy(r.vector.data(), e.vector.data(), e.vector.size());
        out.push_back(std::move(r));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

std::pair<std::string, std::vector<SaidRow>> Store::said(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Row r;
    if (!read_row(t.get(), id, r)) throw NotFound("no record " + std::to_string(id));
    return {r.text, said_rows(t.get(), id)};
}

void Store::put_merge(MDB_txn* txn, uint64_t seq, uint64_t survivor, uint32_t oid, uint32_t round,
                      std::string_view kept, std::string_view discarded) {
    Be64 mk(seq), sk(survivor);
    put(txn, db_.merges, val(mk.b, 8), val(encode_merge(MergeEntry{survivor, oid, round, kept, discarded})),
        MDB_APPEND);
    put(txn, db_.rmerges, val(sk.b, 8), val(mk.b, 8));
}

bool Store::forget(const std::string& owner, uint64_t id, const ForgetPlan& plan) {
    check_open();
    bool done = true;
    try {
        env_->write([&](MDB_txn* txn) { forget_in(txn, owner, id, plan); });
    } catch (const CommitAbort&) {
        done = false;
    }
    sync_index();
    return done;
}

// forget's write, inside txn; a conflict throws CommitAbort.
void Store::forget_in(MDB_txn* txn, const std::string& owner, uint64_t id, const ForgetPlan& plan) {
    Be64 k(id);
    MDB_val rv;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv)) throw NotFound("no record " + std::to_string(id));
    auto oid = owner_id(txn, owner);
    MDB_val own = val(oid ? &*oid : nullptr, 4);
    if (!oid || !del(txn, db_.owners, val(k.b, 8), &own))
        throw NotFound("record " + std::to_string(id) + " is not owned by '" + owner + "'");
    Be32 ak(*oid);
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
    journal(txn, kDisown, id, *oid);
    items_->drop_refs(txn, id, *oid);  // the owner's items let go of the record too
    if (left == 0) {
        delete_record(txn, id);
    } else if (!forget_words(txn, id, *oid, plan)) {
        throw CommitAbort{};
    } else {
        drop_metadata(txn, id, *oid);
        stamp_times(txn, id, false);
    }
}

// The refs an item write let go of whose record no other owner holds: the
// owner forgets them in the write's own transaction (no merge policy is
// needed for a record that goes). Returns the others, for the caller's
// forget with its policy.
std::vector<ItemRef> Store::forget_private(MDB_txn* txn, const std::vector<ItemRef>& unused) {
    std::vector<ItemRef> shared;
    for (const ItemRef& r : unused) {
        size_t n = 0;  // owners of the record
        {
            Be64 k(r.record);
            Cursor c(txn, db_.owners);
            MDB_val key = val(k.b, 8), v;
            if (c.op(key, v, MDB_SET)) {
                int rc = mdb_cursor_count(c.get(), &n);
                if (rc) throw_lmdb(rc, "mdb_cursor_count");
            }
        }
        auto oid = owner_id(txn, r.owner);
        if (n == 1 && oid && owns(txn, *oid, r.record))
            forget_in(txn, r.owner, r.record, ForgetPlan{});
        else if (n > 0)
            shared.push_back(r);
    }
    return shared;
}

std::vector<ItemRef> Store::write_items(const std::vector<ItemWrite>& writes) {
    check_open();
    std::vector<ItemRef> shared;
    env_->write([&](MDB_txn* txn) { shared = forget_private(txn, items_->write(txn, writes, {}, {})); });
    sync_index();
    return shared;
}

// The owner's words leave a record that other owners keep: its said rows,
// every merge-log entry it deposited or whose texts are not all words of a
// remaining statement (or the record's text afterwards), its text and vector
// when they are its words (the plan's replacements), and the text digests
// of its statements (the plan's set). Records of schema 1 (no said rows)
// lose the owner's merge-log entries only: whose words their text is, is
// not known.
bool Store::forget_words(MDB_txn* txn, uint64_t id, uint32_t oid, const ForgetPlan& plan) {
    Be64 k(id);
    std::vector<SaidRow> rows = said_rows(txn, id);
    MDB_val rv;
    RecordHeader h;
    std::string_view current;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv) || !decode_record(rv, h, current))
        throw Corrupt("record " + std::to_string(id) + " is damaged");
    const std::string before(current);
    if (rows.empty()) {
        // Schema 1: only the owner's own merge-log entries are known as its.
        scrub_merges(txn, id, oid, nullptr);
        return true;
    }
    if (before != plan.expected_text || rows.size() != plan.expected_rows || rows.back().n != plan.expected_last)
        return false;
    const std::string me = owner_name(txn, oid);
    std::unordered_set<std::string> texts;  // the words that stay
    const SaidRow* source = nullptr;        // the row whose vector the record takes
    bool row0_mine = rows.front().n == 0 && rows.front().owner == me;
    for (const SaidRow& r : rows) {
        if (r.owner == me) continue;
        texts.insert(r.text);
        if (r.n == plan.vector_from) source = &r;
    }
    if (texts.empty()) {
        // Other owners, but no statement of theirs (they joined by import of
        // an export without said rows): the record goes with its words.
        throw InvalidArgument("record " + std::to_string(id) + " keeps no statement of its other owners");
    }
    if (plan.text.empty() || plan.text.size() > kMaxStatementBytes)
        throw InvalidArgument("the text after forget must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
    if (row0_mine && (!source || source->vector.size() != dim_))
        throw InvalidArgument("forget needs another owner's statement to take the vector from");
    texts.insert(plan.text);

    // The rows are written again: the others' (texts written out unless
    // they are the record's), with the source statement as row 0 when the
    // forgetter's row 0 goes (its vector is the record's now).
    delete_said(txn, id, 0);
    if (plan.text != before) {
        scrub_del(txn, db_.records, val(k.b, 8));
        put(txn, db_.records, val(k.b, 8), val(encode_record(h.round, h.deposit, plan.text)));
        lexical_->retext(txn, id, before, plan.text);
    }
    for (const SaidRow& r : rows) {
        if (r.owner == me) continue;
        bool to0 = row0_mine && &r == source;
        put_said(txn, id, to0 ? 0 : r.n, *owner_id(txn, r.owner), r.round,
                 to0 || r.vector.empty() ? nullptr : r.vector.data(),
                 r.text == plan.text ? std::string_view() : std::string_view(r.text));
    }
    if (row0_mine) {
        scrub_del(txn, db_.vectors, val(k.b, 8));
        put(txn, db_.vectors, val(k.b, 8), val(source->vector.data(), dim_ * sizeof(float)));
        // The index learns the new vector as a delete and an add of the id.
        journal(txn, kDel, id, 0);
        journal(txn, kAdd, id, *owner_id(txn, source->owner));
    }
    scrub_merges(txn, id, oid, &texts);
    // The record's digests become the plan's: those of the words that stay.
    {
        drop_text_digests(txn, id);
        for (const std::string& d : plan.digests) {
            if (d.size() != kDigestBytes) throw InvalidArgument("a text digest must be 16 bytes");
            MDB_val cur;
            if (agentsensus::get(txn, db_.norms, val(d), cur)) continue;  // another record's text
            add_digest(txn, id, val(d));
        }
    }
    return true;
}

// Removes the text index entries that point at the record, found through the
// reverse index, and the reverse entries themselves. An entry that another
// record took over (an exact duplicate re-pointed) is left to that record.
void Store::drop_text_digests(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    std::vector<std::string> digests;
    {
        Cursor c(txn, db_.rnorms);
        MDB_val key = val(k.b, 8), v;
        bool more = c.op(key, v, MDB_SET);
        if (more) more = c.op(key, v, MDB_FIRST_DUP);
        while (more) {
            digests.emplace_back(view(v));
            more = c.op(key, v, MDB_NEXT_DUP);
        }
    }
    for (const std::string& d : digests) {
        MDB_val cur;
        if (agentsensus::get(txn, db_.norms, val(d), cur) && cur.mv_size == 8 && read_be64(cur.mv_data) == id)
            del(txn, db_.norms, val(d));
    }
    del(txn, db_.rnorms, val(k.b, 8));
}

// Deletes the record's merge-log entries that the owner deposited or, when
// texts is given, that hold a text not in it.
void Store::scrub_merges(MDB_txn* txn, uint64_t id, uint32_t oid, const std::unordered_set<std::string>* texts) {
    Be64 k(id);
    std::vector<std::string> gone;
    {
        Cursor c(txn, db_.rmerges);
        MDB_val key = val(k.b, 8), v;
        bool more = c.op(key, v, MDB_SET);
        if (more) more = c.op(key, v, MDB_FIRST_DUP);
        while (more) {
            std::string seq(view(v));
            MDB_val mv;
            MergeEntry e;
            if (!agentsensus::get(txn, db_.merges, val(seq), mv) || !decode_merge(mv, e))
                throw Corrupt("merge log entry of record " + std::to_string(id) + " is damaged");
            bool keep = e.owner != oid &&
                        (!texts || (texts->count(std::string(e.kept)) && texts->count(std::string(e.discarded))));
            if (!keep) gone.push_back(seq);
            more = c.op(key, v, MDB_NEXT_DUP);
        }
    }
    for (const std::string& seq : gone) {
        scrub_del(txn, db_.merges, val(seq));
        MDB_val sv = val(seq);
        del(txn, db_.rmerges, val(k.b, 8), &sv);
    }
}

// ---------------------------------------------------------------- the commit
//
// Phase 3 of a deposit, in named steps: validate_plans, then in one write
// transaction added_since, and per deposit commit_deposit (new_record_conflict
// + create_record, or merge_conflict + merge_into, per statement; then
// link_deposit). The first conflict unwinds the transaction.

CommitResult Store::commit(const std::vector<DepositPlan>& plans, uint64_t prepared_seq, float min_similarity,
                           const BatchKey* batch, const std::vector<ItemWrite>* items) {
    check_open();
    if (batch) check_batch_key(*batch);
    const std::vector<std::vector<float>> vecs = validate_plans(plans);
    CommitResult res;
    try {
        env_->write([&](MDB_txn* txn) {
            res = CommitResult{};  // the map may grow and this run again
            // Exactly once: the key is checked and recorded inside this transaction.
            if (batch && batch_recorded(txn, db_.batch_keys, batch->key)) {
                res.conflict = true;
                res.why = "the batch key was committed meanwhile";
                throw CommitAbort{};
            }
            const std::vector<Rival> rivals = added_since(txn, prepared_seq);
            Counters c = read_counters(txn);
            std::vector<uint64_t> staged;  // ids of the new records of this commit, in order
            res.ids.resize(plans.size());
            for (size_t p = 0; p < plans.size(); ++p) {
                std::optional<std::string> why =
                    commit_deposit(txn, plans[p], vecs[p].data(), rivals, min_similarity, c, staged, res.ids[p]);
                if (why) {
                    res.conflict = true;
                    res.why = std::move(*why);
                    throw CommitAbort{};
                }
            }
            write_counters(txn, c);
            if (batch) record_batch(txn, db_.batch_keys, batch->key, batch_result_of(*batch, plans, res.ids));
            if (items) {
                std::vector<std::string> owners;
                for (const DepositPlan& d : plans) owners.push_back(d.owner);
                res.unused = forget_private(txn, items_->write(txn, *items, res.ids, owners));
            }
        });
    } catch (const CommitAbort&) {
        return res;
    }
    sync_index();
    return res;
}

// Checks every plan and normalizes its vectors, before any transaction.
std::vector<std::vector<float>> Store::validate_plans(const std::vector<DepositPlan>& plans) const {
    std::vector<std::vector<float>> vecs(plans.size());
    size_t new_count = 0;
    for (size_t p = 0; p < plans.size(); ++p) {
        const DepositPlan& d = plans[p];
        if (d.owner.empty() || d.owner.size() > kMaxOwnerBytes)
            throw InvalidArgument("owner must be 1 to " + std::to_string(kMaxOwnerBytes) + " bytes");
        if (has_control(d.owner)) throw InvalidArgument("owner has a control character");
        if (!has_visible(d.owner)) throw InvalidArgument("owner has no visible character");
        if (d.statements.empty() || d.statements.size() > kMaxStatementsPerDeposit)
            throw InvalidArgument("a deposit holds 1 to " + std::to_string(kMaxStatementsPerDeposit) + " statements");
        vecs[p].resize(d.statements.size() * dim_);
        for (size_t i = 0; i < d.statements.size(); ++i) {
            const StatementPlan& s = d.statements[i];
            if (s.text.empty() || s.text.size() > kMaxStatementBytes)
                throw InvalidArgument("statement must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
            if (!has_visible(s.text)) throw InvalidArgument("statement has no visible character");
            if (s.target != 0 && !has_visible(s.kept)) throw InvalidArgument("kept text has no visible character");
            prepare_vector(s.vector, vecs[p].data() + i * dim_);
            if (s.target < 0 && static_cast<size_t>(-s.target) > new_count)
                throw InvalidArgument("a merge names a new record that comes later in the commit");
            if (s.target != 0 && s.kept.empty()) throw InvalidArgument("a merge needs the kept text");
            if (s.kept.size() > kMaxStatementBytes) throw InvalidArgument("kept text is too long");
            if (s.target == 0) ++new_count;
            std::string why;
            if (!s.metadata.empty() && !valid_metadata(s.metadata, why)) throw InvalidArgument(why);
        }
    }
    return vecs;
}

// The records other writers added after prepared_seq (and still hold), with
// their vectors: a new record of this commit must not be similar to one.
std::vector<Store::Rival> Store::added_since(MDB_txn* txn, uint64_t prepared_seq) {
    std::vector<Rival> added;
    if (journal_end(txn) <= prepared_seq) return added;
    Cursor c(txn, db_.journal);
    Be64 from(prepared_seq + 1);
    MDB_val k = val(from.b, 8), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    while (more) {
        JournalEntry e;
        if (decode_journal(v, e) && e.op == kAdd) {
            std::vector<float> buf(dim_);
            if (vector_of(txn, e.record, buf.data()))
                added.push_back(Rival{e.record, std::move(buf), record_scope(txn, e.record)});
        }
        more = c.op(k, v, MDB_NEXT);
    }
    return added;
}

// One deposit's statements, in order; ids gets the record each ends in. The
// four conflicts, each a decision prepare saw made stale by another writer:
// a new record whose text (new_record_conflict: identical) or meaning
// (similar) was committed meanwhile, and a merge whose survivor was deleted
// or changed meanwhile (merge_conflict).
std::optional<std::string> Store::commit_deposit(MDB_txn* txn, const DepositPlan& d, const float* vectors,
                                                 const std::vector<Rival>& rivals, float min_similarity, Counters& c,
                                                 std::vector<uint64_t>& staged, std::vector<uint64_t>& ids) {
    uint32_t oid = ensure_owner(txn, d.owner);
    const uint32_t sid = ensure_scope(txn, d.scope);
    ++c.deposits;
    for (size_t i = 0; i < d.statements.size(); ++i) {
        const StatementPlan& s = d.statements[i];
        const float* v = vectors + i * dim_;
        uint64_t id;
        if (s.target == 0) {
            if (auto why = new_record_conflict(txn, s, v, rivals, min_similarity, sid)) return why;
            id = c.next_id++;
            put_scope(txn, id, sid);  // first: the record's words are kept under its scope
            create_record(txn, id, s, v, oid, d.round, c.deposits);
            staged.push_back(id);
        } else {
            id = s.target > 0 ? static_cast<uint64_t>(s.target) : staged[-s.target - 1];
            if (auto why = merge_conflict(txn, id, s)) return why;
            // Enforced here whatever the plan says: no merge across scopes.
            if (record_scope(txn, id) != sid)
                throw InvalidArgument("statement " + std::to_string(i) + " names record " + std::to_string(id) +
                                      ", which is in another scope");
            merge_into(txn, id, s, v, oid, d.round, c.next_merge);
        }
        ids.push_back(id);
    }
    link_deposit(txn, ids);
    return std::nullopt;
}

std::optional<std::string> Store::new_record_conflict(MDB_txn* txn, const StatementPlan& s, const float* v,
                                                      const std::vector<Rival>& rivals, float min_similarity,
                                                      uint32_t scope) {
    MDB_val cur;
    if (agentsensus::get(txn, db_.norms, val(s.digest, kDigestBytes), cur)) {
        // Digests are keyed by scope (normalize.py): one of another scope
        // means the caller gave an unscoped digest.
        if (cur.mv_size == 8 && record_scope(txn, read_be64(cur.mv_data)) != scope)
            throw InvalidArgument("a statement's text digest is another scope's: digests must be keyed by scope");
        return "an identical statement committed meanwhile";
    }
    for (const Rival& r : rivals)
        if (r.scope == scope && similarity(metric_, v, r.vector.data(), dim_) >= min_similarity)
            return "a similar record committed meanwhile";
    return std::nullopt;
}

// A statement becomes record id, owned by its depositor.
void Store::create_record(MDB_txn* txn, uint64_t id, const StatementPlan& s, const float* v, uint32_t oid,
                          uint32_t round, uint64_t deposit) {
    Be64 k(id);
    put(txn, db_.records, val(k.b, 8), val(encode_record(round, deposit, s.text)), MDB_APPEND);
    put(txn, db_.vectors, val(k.b, 8), val(v, dim_ * sizeof(float)), MDB_APPEND);
    add_digest(txn, id, val(s.digest, kDigestBytes));
    add_owner(txn, id, oid);
    put_said(txn, id, 0, oid, round, nullptr, {});  // its text is the record's (see retext_said)
    lexical_->add(txn, id, s.text);
    stamp_times(txn, id, true);
    if (!s.metadata.empty()) put_metadata(txn, id, oid, s.metadata);
    journal(txn, kAdd, id, oid);
}

// A merge into a committed record (target > 0) is stale when the record is
// gone or its text is not the one the caller's policy saw; one into a record
// of this commit (target < 0) cannot be.
std::optional<std::string> Store::merge_conflict(MDB_txn* txn, uint64_t id, const StatementPlan& s) {
    Be64 k(id);
    MDB_val rv;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv))
        return "record " + std::to_string(id) + " was deleted meanwhile";
    RecordHeader h;
    std::string_view current;
    if (!decode_record(rv, h, current)) throw Corrupt("record " + std::to_string(id) + " is damaged");
    if (s.target > 0 && current != s.expected) return "record " + std::to_string(id) + " changed meanwhile";
    return std::nullopt;
}

// The merge: record id takes the kept text, the merge log what was let go
// of, the owner set the depositor, and the text index the statement's digest.
void Store::merge_into(MDB_txn* txn, uint64_t id, const StatementPlan& s, const float* v, uint32_t oid, uint32_t round,
                       uint64_t& next_merge) {
    Be64 k(id);
    MDB_val rv;
    RecordHeader h;
    std::string_view current;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv) || !decode_record(rv, h, current))
        throw Corrupt("record " + std::to_string(id) + " is damaged");
    const std::string before(current);
    auto row0 = said_key(id, 0);
    MDB_val probe;
    const bool rows = agentsensus::get(txn, db_.said, val(row0.data(), row0.size()), probe);
    if (s.kept != before) {
        if (rows) retext_said(txn, id, s.kept);  // reads the text before: first
        put(txn, db_.records, val(k.b, 8), val(encode_record(h.round, h.deposit, s.kept)));
        lexical_->retext(txn, id, before, s.kept);
    }
    // Log what the merge let go of: the statement, the old text, or (a custom
    // policy that wrote new text) both.
    std::vector<std::string_view> dropped;
    if (s.kept == before) {
        dropped.push_back(s.text);
    } else {
        dropped.push_back(before);
        if (s.kept != s.text) dropped.push_back(s.text);
    }
    // The statement itself, with its vector, joins the record's said rows
    // (a schema-1 record, without row 0, stays without rows).
    if (rows) put_said(txn, id, next_merge, oid, round, v, s.text == s.kept ? std::string_view() : s.text);
    for (std::string_view disc : dropped) put_merge(txn, next_merge++, id, oid, round, s.kept, disc);
    if (add_owner(txn, id, oid)) journal(txn, kOwn, id, oid);
    stamp_times(txn, id, false);
    if (!s.metadata.empty()) put_metadata(txn, id, oid, s.metadata);  // the depositor's own row only
    MDB_val cur;
    MDB_val digest = val(s.digest, kDigestBytes);
    if (!agentsensus::get(txn, db_.norms, digest, cur)) add_digest(txn, id, digest);
}

// Affiliation: the records one deposit ended in, pairwise.
void Store::link_deposit(MDB_txn* txn, const std::vector<uint64_t>& ids) {
    std::vector<uint64_t> distinct(ids);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (size_t a = 0; a < distinct.size(); ++a)
        for (size_t b = a + 1; b < distinct.size(); ++b) add_edge(txn, distinct[a], distinct[b]);
}

}  // namespace agentsensus
