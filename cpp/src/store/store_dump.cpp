// Export and import at the engine level: records read back with everything a
// copy needs, and written again with their ids, so that a store moved
// through JSON Lines (agentsensus export/import) is the same store.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "agentsensus/limits.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

std::vector<DumpRow> StoreImpl::dump(uint64_t after, size_t limit) {
    check_open();
    ReadTxn t(*env_);
    std::vector<DumpRow> out;
    Cursor c(t.get(), db_.records);
    Be64 from(after + 1);
    MDB_val k = val(from.b, 8), v;
    bool more = after < UINT64_MAX && c.op(k, v, MDB_SET_RANGE);
    while (more && out.size() < limit) {
        if (k.mv_size != 8) throw Corrupt("a record key is damaged");
        uint64_t id = read_be64(k.mv_data);
        RecordHeader h;
        std::string_view text;
        if (!decode_record(v, h, text)) throw Corrupt("record " + std::to_string(id) + " is damaged");
        DumpRow d;
        Row r;
        read_row(t.get(), id, r);
        d.id = id;
        d.round = h.round;
        d.deposit = h.deposit;
        d.text.assign(text);
        d.owners = std::move(r.owners);
        d.edges = neighbors_in(t.get(), id);
        std::sort(d.edges.begin(), d.edges.end());
        Cursor dc(t.get(), db_.rnorms);
        MDB_val dk = val(k.mv_data, 8), dv;
        bool dmore = dc.op(dk, dv, MDB_SET);
        if (dmore) dmore = dc.op(dk, dv, MDB_FIRST_DUP);
        while (dmore) {
            if (dv.mv_size != kDigestBytes)
                throw Corrupt("text digest of record " + std::to_string(id) + " is damaged");
            d.digests.emplace_back(view(dv));
            dmore = dc.op(dk, dv, MDB_NEXT_DUP);
        }
        std::sort(d.digests.begin(), d.digests.end());
        d.vector.resize(dim_);
        if (!vector_of(t.get(), id, d.vector.data())) throw Corrupt("record " + std::to_string(id) + " has no vector");
        d.said = said_rows(t.get(), id);
        d.scope = scope_name(t.get(), record_scope(t.get(), id));
        d.supersedes = r.supersedes;
        out.push_back(std::move(d));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

Counters StoreImpl::counters() {
    check_open();
    ReadTxn t(*env_);
    return read_counters(t.get());
}

std::vector<std::string> StoreImpl::owner_names() {
    check_open();
    ReadTxn t(*env_);
    std::vector<std::string> out;
    Cursor c(t.get(), db_.owner_names);  // keyed by big-endian id: first-seen order
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    while (more) {
        out.emplace_back(view(v));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

namespace {

uint64_t last_key(MDB_txn* txn, MDB_dbi dbi) {
    Cursor c(txn, dbi);
    MDB_val k, v;
    if (!c.op(k, v, MDB_LAST)) return 0;
    if (k.mv_size != 8) throw Corrupt("a table key has the wrong size");
    return read_be64(k.mv_data);
}

bool finite_vector(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

void check_owner_name(const std::string& name) {
    if (name.empty() || name.size() > kMaxOwnerBytes)
        throw InvalidArgument("owner must be 1 to " + std::to_string(kMaxOwnerBytes) + " bytes");
}

}  // namespace

void StoreImpl::restore(const LoadBatch& b) {
    check_open();
    // Everything that needs no transaction is checked first.
    for (const std::string& a : b.owners) check_owner_name(a);
    for (const DumpRow& r : b.rows) check_dump_row(r);
    for (const MergeRow& m : b.merges) {
        check_owner_name(m.owner);
        if (m.kept.size() > kMaxStatementBytes || m.discarded.size() > kMaxStatementBytes)
            throw InvalidArgument("merge " + std::to_string(m.seq) + ": a text is too long");
    }

    env_->write([&](MDB_txn* txn) {
        for (const std::string& a : b.owners) ensure_owner(txn, a);
        uint64_t last = last_key(txn, db_.records);
        for (const DumpRow& r : b.rows) {
            if (r.id <= last)
                throw InvalidArgument("record " + std::to_string(r.id) + " comes after record " + std::to_string(last) +
                                      ": ids must ascend");
            last = r.id;
            load_row(txn, r);
        }
        uint64_t last_merge = last_key(txn, db_.merges);
        for (const MergeRow& m : b.merges) {
            if (m.seq <= last_merge)
                throw InvalidArgument("merge " + std::to_string(m.seq) + " comes after merge " +
                                      std::to_string(last_merge) + ": seqs must ascend");
            last_merge = m.seq;
            load_merge(txn, m);
        }
        load_counters(txn, b.counters, last, last_merge);
    });
    sync_index();  // as after a commit: the index serves what was just written
}

// One imported record's fields, checked before any transaction.
void StoreImpl::check_dump_row(const DumpRow& r) const {
    std::string what = "record " + std::to_string(r.id);
    if (r.text.empty() || r.text.size() > kMaxStatementBytes)
        throw InvalidArgument(what + ": text must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
    if (r.owners.empty() || r.owners.size() > kMaxOwnersPerRecord)
        throw InvalidArgument(what + ": a record has 1 to " + std::to_string(kMaxOwnersPerRecord) + " owners");
    for (const std::string& o : r.owners) check_owner_name(o);
    if (r.vector.size() != dim_)
        throw InvalidArgument(what + ": vector has " + std::to_string(r.vector.size()) + " values, not " +
                              std::to_string(dim_));
    double norm = 0;
    for (float x : r.vector) {
        if (!std::isfinite(x)) throw InvalidArgument(what + ": vector has NaN or inf");
        norm += double(x) * x;
    }
    // Stored vectors of a cos store are unit length (the search relies on it).
    if (metric_ == Metric::cos && std::fabs(norm - 1.0) > 1e-3)
        throw InvalidArgument(what + ": vector is not unit length, as a store with metric 'cos' keeps them");
    for (const std::string& d : r.digests)
        if (d.size() != kDigestBytes) throw InvalidArgument(what + ": a text digest must be 16 bytes");
    // I12 as import must meet it: row 0 first (no vector), the others
    // ascending with a vector each, every owner an owner of the record.
    for (size_t i = 0; i < r.said.size(); ++i) {
        const SaidRow& sr = r.said[i];
        std::string sw = what + ": statement " + std::to_string(sr.n);
        if ((i == 0) != (sr.n == 0)) throw InvalidArgument(what + ": its statements must start with row 0 and ascend");
        if (i > 0 && sr.n <= r.said[i - 1].n) throw InvalidArgument(what + ": its statements must ascend");
        if (sr.vector.size() != (sr.n == 0 ? 0 : dim_))
            throw InvalidArgument(sw +
                                  (sr.n == 0 ? " (row 0) has no vector of its own" : " needs a vector of dim floats"));
        if (!finite_vector(sr.vector)) throw InvalidArgument(sw + ": vector has NaN or inf");
        if (sr.text.empty() || sr.text.size() > kMaxStatementBytes)
            throw InvalidArgument(sw + ": text must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
        if (std::find(r.owners.begin(), r.owners.end(), sr.owner) == r.owners.end())
            throw InvalidArgument(sw + " names '" + sr.owner + "', not an owner of the record");
    }
}

// One imported record with its vector, digests, owners, statements and the
// edges to records loaded before it (those to later ones come with them).
void StoreImpl::load_row(MDB_txn* txn, const DumpRow& r) {
    std::string what = "record " + std::to_string(r.id);
    Be64 k(r.id);
    put(txn, db_.records, val(k.b, 8), val(encode_record(r.round, r.deposit, r.text)), MDB_APPEND);
    put(txn, db_.vectors, val(k.b, 8), val(r.vector.data(), dim_ * sizeof(float)), MDB_APPEND);
    for (const std::string& d : r.digests) {
        MDB_val cur;
        if (agentsensus::get(txn, db_.norms, val(d), cur))
            throw InvalidArgument(what + " has a text digest another record already has");
        put(txn, db_.norms, val(d), val(k.b, 8));
        put(txn, db_.rnorms, val(k.b, 8), val(d));
    }
    for (size_t i = 0; i < r.owners.size(); ++i) {
        uint32_t oid = ensure_owner(txn, r.owners[i]);
        if (!add_owner(txn, r.id, oid)) throw InvalidArgument(what + " names owner '" + r.owners[i] + "' twice");
        journal(txn, i == 0 ? kAdd : kOwn, r.id, oid);
    }
    for (const SaidRow& sr : r.said)
        put_said(txn, r.id, sr.n, ensure_owner(txn, sr.owner), sr.round, sr.vector.empty() ? nullptr : sr.vector.data(),
                 sr.text == r.text ? std::string_view() : std::string_view(sr.text));
    const uint32_t sid = ensure_scope(txn, r.scope);
    put_scope(txn, r.id, sid);
    lexical_->add(txn, r.id, r.text);  // derived: an import builds it as it loads, under the record's scope
    for (uint64_t e : r.edges) {
        if (e == r.id) throw InvalidArgument(what + " has an edge to itself");
        if (e > r.id) continue;  // added when record e lists this one
        Be64 ek(e);
        MDB_val ev;
        if (!agentsensus::get(txn, db_.records, val(ek.b, 8), ev))
            throw InvalidArgument(what + " has an edge to record " + std::to_string(e) + ", which is not there");
        if (record_scope(txn, e) != sid)  // I14: a deposit's records are of one scope
            throw InvalidArgument(what + " has an edge to record " + std::to_string(e) + " of another scope");
        add_edge(txn, e, r.id);
    }
    if (r.supersedes != 0) {
        // I21 as import must meet it: the predecessor is loaded before (a
        // lower id), of this scope, and not superseded yet.
        if (r.supersedes >= r.id) throw InvalidArgument(what + " supersedes a record that is not older");
        Be64 pk(r.supersedes);
        MDB_val pv;
        if (!agentsensus::get(txn, db_.records, val(pk.b, 8), pv))
            throw InvalidArgument(what + " supersedes record " + std::to_string(r.supersedes) + ", which is not there");
        if (record_scope(txn, r.supersedes) != sid)
            throw InvalidArgument(what + " supersedes record " + std::to_string(r.supersedes) + " of another scope");
        if (links_of(txn, r.supersedes).superseded_by != 0)
            throw InvalidArgument(what + " supersedes record " + std::to_string(r.supersedes) +
                                  ", which another record supersedes");
        supersede(txn, r.supersedes, r.id);
    }
}

void StoreImpl::load_merge(MDB_txn* txn, const MergeRow& m) {
    std::string what = "merge " + std::to_string(m.seq);
    Be64 sk(m.survivor);
    MDB_val sv;
    if (!agentsensus::get(txn, db_.records, val(sk.b, 8), sv))
        throw InvalidArgument(what + " names record " + std::to_string(m.survivor) + ", which is not there");
    put_merge(txn, m.seq, m.survivor, ensure_owner(txn, m.owner), m.round, m.kept, m.discarded);
}

// The counters the export gave (last batch), or ones above what was loaded.
void StoreImpl::load_counters(MDB_txn* txn, const Counters* given, uint64_t last, uint64_t last_merge) {
    if (given) {
        const Counters& c = *given;
        if (c.next_id <= last_key(txn, db_.records))
            throw InvalidArgument("next_id " + std::to_string(c.next_id) + " is not above every record id");
        if (c.next_merge <= last_key(txn, db_.merges))
            throw InvalidArgument("next_merge " + std::to_string(c.next_merge) + " is not above every merge seq");
        write_counters(txn, c);
    } else {
        set_meta_u64(txn, kMetaNextId, std::max(meta_u64(txn, kMetaNextId, 1), last + 1));
        set_meta_u64(txn, kMetaNextMerge, std::max(meta_u64(txn, kMetaNextMerge, 1), last_merge + 1));
    }
}

}  // namespace agentsensus
