// Store's lifecycle: the open (create, or check a store's settings), the
// counters in the meta table, the index's load, rebuild and catch-up from
// the journal, the checkpoint and the close.
#include "store/store_impl.hpp"

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

#include "agentsensus/limits.hpp"
#include "agentsensus/visible_text.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "index/parallel.hpp"
#include "store/store_util.hpp"

namespace agentsensus {

// ---------------------------------------------------------------- open/close

StoreImpl::StoreImpl(const std::string& dir, const StoreOptions& o)
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
    try {
        db_.versions = open(kVersionsTable);
    } catch (const Corrupt&) {
        if (!o.readonly) throw;
        has_versions_ = false;  // a schema-1 to 3 store, read only: no record superseded
    }
    items_ = std::make_unique<ItemTable>(*env_);
    settings_ = std::make_unique<SettingsTable>(*env_);
    lexical_ = std::make_unique<LexicalIndex>(*env_, db_.meta, db_.records, o.readonly,
                                              [this](MDB_txn* txn, uint64_t id) { return record_scope(txn, id); });
    // The lexical index remembers word counts across this handle's commits.
    env_->on_begin([this](uint64_t txn) { lexical_->began(txn); });
    env_->on_commit([this](uint64_t txn) { lexical_->committed(txn); });
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

StoreImpl::~StoreImpl() {
    try {
        close();
    } catch (...) {
        // A destructor must not throw; close() explicitly to see errors.
    }
}

void StoreImpl::check_open() const {
    if (!env_) throw Error("store is closed");
}

uint64_t StoreImpl::meta_u64(MDB_txn* txn, const MetaKey& key, uint64_t dflt) {
    MDB_val v;
    if (!agentsensus::get(txn, db_.meta, meta_key(key), v)) return dflt;
    if (v.mv_size != 8) throw Corrupt(std::string("meta '") + key.name + "' has the wrong size");
    return load<uint64_t>(v.mv_data);
}

void StoreImpl::set_meta_u64(MDB_txn* txn, const MetaKey& key, uint64_t x) {
    put(txn, db_.meta, meta_key(key), val(&x, 8));
}

Counters StoreImpl::read_counters(MDB_txn* txn) {
    Counters c;
    c.next_id = meta_u64(txn, kMetaNextId, 1);
    c.next_merge = meta_u64(txn, kMetaNextMerge, 1);
    c.deposits = meta_u64(txn, kMetaDeposits);
    return c;
}

void StoreImpl::write_counters(MDB_txn* txn, const Counters& c) {
    set_meta_u64(txn, kMetaNextId, c.next_id);
    set_meta_u64(txn, kMetaNextMerge, c.next_merge);
    set_meta_u64(txn, kMetaDeposits, c.deposits);
}

void StoreImpl::init_or_check(const StoreOptions& o) {
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

uint64_t StoreImpl::journal_end(MDB_txn* txn) {
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

void StoreImpl::open_index() {
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

void StoreImpl::rebuild_index_locked(MDB_txn* txn) {
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

void StoreImpl::catch_up_locked(MDB_txn* txn) {
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

void StoreImpl::sync_index() {
    {
        std::shared_lock<std::shared_mutex> lock(index_mu_);
        ReadTxn t(*env_);
        if (journal_end(t.get()) <= applied_seq_) return;
    }
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    catch_up_locked(t.get());
}

uint64_t StoreImpl::checkpoint() {
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

void StoreImpl::close() {
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

}  // namespace agentsensus
