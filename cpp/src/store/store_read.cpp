// Store's reads: vectors in the kept form, owner names and sets, a record's
// row, and the plain listings (records, get, neighbors, owned, stats, the
// merge log).
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

// ---------------------------------------------------------------- reads

void StoreImpl::prepare_vector(const float* in, float* out) const {
    if (!finite_all(in, dim_)) throw InvalidArgument("vector has NaN or inf");
    std::memcpy(out, in, dim_ * sizeof(float));
    if (metric_ == Metric::cos && !normalize(out, dim_))
        throw InvalidArgument("vector has zero norm, which metric 'cos' cannot compare");
}

void StoreImpl::prepare_vectors(const float* in, size_t n, float* out) const {
    for (size_t i = 0; i < n; ++i) prepare_vector(in + i * dim_, out + i * dim_);
}

void StoreImpl::similarities(const float* queries, size_t n, const float* kept, size_t m, float* out) const {
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < m; ++j) out[i * m + j] = similarity(metric_, queries + i * dim_, kept + j * dim_, dim_);
}

bool StoreImpl::vector_of(MDB_txn* txn, uint64_t id, float* out) {
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, db_.vectors, val(k.b, 8), v)) return false;
    if (v.mv_size != dim_ * sizeof(float)) throw Corrupt("vector of record " + std::to_string(id) + " is damaged");
    std::memcpy(out, v.mv_data, v.mv_size);
    return true;
}

std::optional<uint32_t> StoreImpl::owner_id(MDB_txn* txn, std::string_view name) {
    MDB_val v;
    if (name.empty() || name.size() > 511) return std::nullopt;
    if (!agentsensus::get(txn, db_.owners_by_name, val(name), v)) return std::nullopt;
    if (v.mv_size != 4) throw Corrupt("oid table is damaged");
    return load<uint32_t>(v.mv_data);
}

std::string StoreImpl::owner_name(MDB_txn* txn, uint32_t oid) {
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

bool StoreImpl::owns(MDB_txn* txn, uint32_t oid, uint64_t id) {
    Be64 k(id);
    MDB_val key = val(k.b, 8), v = val(&oid, 4);
    Cursor c(txn, db_.owners);
    return c.op(key, v, MDB_GET_BOTH);
}

size_t StoreImpl::owned_count(MDB_txn* txn, uint32_t oid) {
    Be32 k(oid);
    MDB_val key = val(k.b, 4), v;
    Cursor c(txn, db_.owned);
    if (!c.op(key, v, MDB_SET)) return 0;
    size_t n = 0;
    int rc = mdb_cursor_count(c.get(), &n);
    if (rc) throw_lmdb(rc, "mdb_cursor_count");
    return n;
}

std::vector<uint64_t> StoreImpl::owned_ids(MDB_txn* txn, uint32_t oid) {
    Be32 k(oid);
    return u64_dups(txn, db_.owned, val(k.b, 4));
}

bool StoreImpl::read_row(MDB_txn* txn, uint64_t id, Row& row) {
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
    read_links(txn, id, row);
    return true;
}

std::vector<uint64_t> StoreImpl::neighbors_in(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    return u64_dups(txn, db_.edges, val(k.b, 8));
}

std::vector<Row> StoreImpl::records(uint64_t after, size_t limit) {
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

Row StoreImpl::get(uint64_t id, const std::string& owner) {
    check_open();
    ReadTxn t(*env_);
    Row r;
    if (!read_row(t.get(), id, r)) throw NotFound("no record " + std::to_string(id));
    std::optional<uint32_t> oid = owner.empty() ? std::nullopt : owner_id(t.get(), owner);
    read_record_meta(t.get(), id, oid ? *oid : 0, r);
    return r;
}

std::vector<uint64_t> StoreImpl::neighbors(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), v)) throw NotFound("no record " + std::to_string(id));
    return neighbors_in(t.get(), id);
}

std::vector<uint64_t> StoreImpl::owned(const std::string& owner) {
    check_open();
    ReadTxn t(*env_);
    auto oid = owner_id(t.get(), owner);
    if (!oid) return {};
    return owned_ids(t.get(), *oid);
}

Stats StoreImpl::stats() {
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

std::vector<MergeRow> StoreImpl::merges(uint64_t after_seq, size_t limit) {
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

}  // namespace agentsensus
