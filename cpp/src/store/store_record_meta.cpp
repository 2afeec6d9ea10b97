// Store's part of times and metadata (format/record_meta.hpp holds their
// codecs): the members that read and write the side tables, update, the
// export and import of both, a record's merge-log entries, and their checks.
#include <set>
#include <string>
#include <vector>

#include "agentsensus/errors.hpp"
#include "agentsensus/limits.hpp"
#include "agentsensus/visible_text.hpp"
#include "format/record_meta.hpp"
#include "store/store_impl.hpp"

// The members that read and write times and metadata; create_record and
// merge_into (store_deposit.cpp), forget (store_forget.cpp) and
// delete_record (store_write.cpp) call them.

namespace agentsensus {

namespace {
// Unwinds update's write transaction on a conflict: nothing is written.
struct CommitAbortSignal {};
}  // namespace

void StoreImpl::read_record_meta(MDB_txn* txn, uint64_t id, uint32_t oid, Row& row) {
    row.has_times = false;
    row.metadata.clear();
    if (!has_record_meta_) return;
    Be64 k(id);
    MDB_val v;
    if (agentsensus::get(txn, db_.times, val(k.b, 8), v)) {
        if (!decode_times(v.mv_data, v.mv_size, row.times))
            throw Corrupt("the times of record " + std::to_string(id) + " are damaged");
        row.has_times = true;
    }
    // Most stores hold no metadata: an empty table is known from its count
    // (no B-tree descent), and every row a recall reads asks.
    if (oid == 0 || entries(txn, db_.metadata) == 0) return;
    auto mk = metadata_key(id, oid);
    if (agentsensus::get(txn, db_.metadata, val(mk.data(), mk.size()), v)) row.metadata.assign(view(v));
}

// created: a new record (both times now); else its updated time moves.
// Monotonic per record: a clock stepped back never makes updated < created.
void StoreImpl::stamp_times(MDB_txn* txn, uint64_t id, bool created) {
    Be64 k(id);
    RecordTimes t;
    uint64_t now = now_micros();
    MDB_val v;
    if (!created && agentsensus::get(txn, db_.times, val(k.b, 8), v)) {
        if (!decode_times(v.mv_data, v.mv_size, t))
            throw Corrupt("the times of record " + std::to_string(id) + " are damaged");
        t.updated = std::max(now, t.created);
    } else if (!created) {
        return;  // a record from before schema 3: its creation time is unknown, and stays so
    } else {
        t.created = t.updated = now;
    }
    auto b = encode_times(t);
    put(txn, db_.times, val(k.b, 8), val(b.data(), b.size()));
}

void StoreImpl::put_metadata(MDB_txn* txn, uint64_t id, uint32_t oid, std::string_view json) {
    std::string why;
    if (!valid_metadata(json, why)) throw InvalidArgument(why);
    auto mk = metadata_key(id, oid);
    put(txn, db_.metadata, val(mk.data(), mk.size()), val(json));
}

void StoreImpl::drop_metadata(MDB_txn* txn, uint64_t id, uint32_t oid) {
    if (oid != 0) {
        auto mk = metadata_key(id, oid);
        scrub_del(txn, db_.metadata, val(mk.data(), mk.size()));
        return;
    }
    std::vector<std::array<unsigned char, 12>> keys;
    {
        Cursor c(txn, db_.metadata);
        auto from = metadata_key(id, 0);
        MDB_val k = val(from.data(), from.size()), v;
        for (bool more = c.op(k, v, MDB_SET_RANGE);
             more && k.mv_size == 12 && std::memcmp(k.mv_data, from.data(), 8) == 0; more = c.op(k, v, MDB_NEXT)) {
            std::array<unsigned char, 12> key{};
            std::memcpy(key.data(), k.mv_data, 12);
            keys.push_back(key);
        }
    }
    for (const auto& key : keys) scrub_del(txn, db_.metadata, val(key.data(), key.size()));
}

void StoreImpl::drop_times(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    del(txn, db_.times, val(k.b, 8));
}

bool StoreImpl::update(const std::string& owner, uint64_t id, std::string_view expected_text, std::string_view text,
                       const unsigned char* digest, const float* vector, uint32_t round, std::string_view metadata) {
    check_open();
    if (env_->readonly()) throw Error("the store at " + dir_ + " is open read-only");
    if (text.empty() || text.size() > kMaxStatementBytes)
        throw InvalidArgument("statement must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
    if (!has_visible(text)) throw InvalidArgument("statement has no visible character");
    std::string why;
    if (!metadata.empty() && !valid_metadata(metadata, why)) throw InvalidArgument(why);
    std::vector<float> v(dim_);
    prepare_vector(vector, v.data());
    bool done = true;
    try {
        env_->write([&](MDB_txn* txn) {
            Be64 k(id);
            MDB_val rv;
            RecordHeader h;
            std::string_view current;
            if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv)) throw NotFound("no record " + std::to_string(id));
            if (!decode_record(rv, h, current)) throw Corrupt("record " + std::to_string(id) + " is damaged");
            auto oid = owner_id(txn, owner);
            if (!oid || !owns(txn, *oid, id))
                throw NotFound("record " + std::to_string(id) + " is not owned by '" + owner + "'");
            {
                Cursor c(txn, db_.owners);
                MDB_val key = val(k.b, 8), ov;
                size_t n = 0;
                if (c.op(key, ov, MDB_SET)) {
                    int rc = mdb_cursor_count(c.get(), &n);
                    if (rc) throw_lmdb(rc, "mdb_cursor_count");
                }
                if (n != 1)
                    throw InvalidArgument("record " + std::to_string(id) +
                                          " has other owners: only a sole owner updates a record in place");
            }
            const std::string before(current);
            if (before != expected_text) throw CommitAbortSignal{};
            // The record's statements become the one update: row 0, its text the record's.
            delete_said(txn, id, 0);
            if (has_said_) put_said(txn, id, 0, *oid, round, nullptr, {});
            if (text != before) {
                scrub_del(txn, db_.records, val(k.b, 8));
                put(txn, db_.records, val(k.b, 8), val(encode_record(h.round, h.deposit, text)));
                lexical_->retext(txn, id, before, text);
                uint64_t next_merge = meta_u64(txn, kMetaNextMerge, 1);
                put_merge(txn, next_merge, id, *oid, round, text, before);  // what the update let go of
                set_meta_u64(txn, kMetaNextMerge, next_merge + 1);
            }
            scrub_del(txn, db_.vectors, val(k.b, 8));
            put(txn, db_.vectors, val(k.b, 8), val(v.data(), dim_ * sizeof(float)));
            // The index learns the new vector as a delete and an add of the id.
            journal(txn, kDel, id, 0);
            journal(txn, kAdd, id, *oid);
            drop_text_digests(txn, id);
            MDB_val cur;
            if (!agentsensus::get(txn, db_.norms, val(digest, kDigestBytes), cur))
                add_digest(txn, id, val(digest, kDigestBytes));
            stamp_times(txn, id, false);
            if (!metadata.empty()) put_metadata(txn, id, *oid, metadata);
        });
    } catch (const CommitAbortSignal&) {
        done = false;
    }
    sync_index();
    return done;
}

}  // namespace agentsensus

namespace agentsensus {

std::vector<StoreImpl::MetaDump> StoreImpl::meta_dump(uint64_t after, size_t limit) {
    check_open();
    std::vector<MetaDump> out;
    if (!has_record_meta_) return out;
    ReadTxn t(*env_);
    Cursor c(t.get(), db_.records);
    Be64 from(after + 1);
    MDB_val k = val(from.b, 8), v;
    for (bool more = c.op(k, v, MDB_SET_RANGE); more && out.size() < limit; more = c.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 8) throw Corrupt("a record key is damaged");
        MetaDump d;
        d.id = read_be64(k.mv_data);
        Row r;
        read_record_meta(t.get(), d.id, 0, r);
        d.has_times = r.has_times;
        d.times = r.times;
        Cursor mc(t.get(), db_.metadata);
        auto mfrom = metadata_key(d.id, 0);
        MDB_val mk = val(mfrom.data(), mfrom.size()), mv;
        for (bool m = mc.op(mk, mv, MDB_SET_RANGE);
             m && mk.mv_size == 12 && std::memcmp(mk.mv_data, mfrom.data(), 8) == 0; m = mc.op(mk, mv, MDB_NEXT)) {
            uint32_t oid = read_be32(static_cast<const unsigned char*>(mk.mv_data) + 8);
            d.metadata.emplace_back(owner_name(t.get(), oid), std::string(view(mv)));
        }
        if (d.has_times || !d.metadata.empty()) out.push_back(std::move(d));
    }
    return out;
}

void StoreImpl::load_meta(const std::vector<MetaDump>& rows) {
    check_open();
    if (env_->readonly()) throw Error("the store at " + dir_ + " is open read-only");
    for (const MetaDump& d : rows) {
        if (d.has_times && d.times.created > d.times.updated)
            throw InvalidArgument("record " + std::to_string(d.id) + " was updated before it was created");
        for (const auto& m : d.metadata) {
            std::string why;
            if (!valid_metadata(m.second, why)) throw InvalidArgument("record " + std::to_string(d.id) + ": " + why);
        }
    }
    env_->write([&](MDB_txn* txn) {
        for (const MetaDump& d : rows) {
            Be64 k(d.id);
            MDB_val rv;
            if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv))
                throw InvalidArgument("times or metadata name record " + std::to_string(d.id) + ", which is absent");
            if (d.has_times) {
                auto b = encode_times(d.times);
                put(txn, db_.times, val(k.b, 8), val(b.data(), b.size()));
            }
            for (const auto& m : d.metadata) {
                auto oid = owner_id(txn, m.first);
                if (!oid || !owns(txn, *oid, d.id))
                    throw InvalidArgument("metadata of record " + std::to_string(d.id) + " names '" + m.first +
                                          "', who does not own it");
                put_metadata(txn, d.id, *oid, m.second);
            }
        }
    });
}

}  // namespace agentsensus

namespace agentsensus {

std::vector<MergeRow> StoreImpl::merges_of(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Be64 k(id);
    MDB_val rv;
    if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), rv)) throw NotFound("no record " + std::to_string(id));
    std::vector<MergeRow> out;
    Cursor c(t.get(), db_.rmerges);
    MDB_val key = val(k.b, 8), v;
    bool more = c.op(key, v, MDB_SET);
    if (more) more = c.op(key, v, MDB_FIRST_DUP);
    for (; more; more = c.op(key, v, MDB_NEXT_DUP)) {
        MDB_val mv;
        MergeEntry e;
        if (v.mv_size != 8 || !agentsensus::get(t.get(), db_.merges, v, mv) || !decode_merge(mv, e))
            throw Corrupt("merge log entry of record " + std::to_string(id) + " is damaged");
        out.push_back(MergeRow{read_be64(v.mv_data), e.survivor, std::string(e.kept), std::string(e.discarded),
                               owner_name(t.get(), e.owner), e.round});
    }
    return out;  // rmerges dups are Be64 seqs: byte order is seq order
}

}  // namespace agentsensus

namespace agentsensus {

void StoreImpl::verify_record_meta(MDB_txn* txn, const std::set<uint64_t>& records,
                                   const std::function<void(std::string)>& bad) {
    if (!has_record_meta_) return;
    Cursor c(txn, db_.times);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        RecordTimes t;
        if (k.mv_size != 8 || !decode_times(v.mv_data, v.mv_size, t)) {
            bad("a times row is damaged");
            continue;
        }
        uint64_t id = read_be64(k.mv_data);
        if (!records.count(id)) bad("the times row of record " + std::to_string(id) + " names a missing record");
        if (t.created > t.updated) bad("record " + std::to_string(id) + " was updated before it was created");
    }
    Cursor m(txn, db_.metadata);
    for (bool more = m.op(k, v, MDB_FIRST); more; more = m.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 12) {
            bad("a metadata key is damaged");
            continue;
        }
        uint64_t id = read_be64(k.mv_data);
        uint32_t oid = read_be32(static_cast<const unsigned char*>(k.mv_data) + 8);
        std::string why;
        if (!records.count(id))
            bad("a metadata row names missing record " + std::to_string(id));
        else if (!owns(txn, oid, id))
            bad("the metadata of record " + std::to_string(id) + " names owner id " + std::to_string(oid) +
                ", not an owner of it");
        if (!valid_metadata(view(v), why)) bad("the metadata of record " + std::to_string(id) + ": " + why);
    }
}

void StoreImpl::repair_record_meta(MDB_txn* txn, const std::set<uint64_t>& keep) {
    std::vector<std::string> gone_times, gone_meta;
    {
        Cursor c(txn, db_.times);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            RecordTimes t;
            if (k.mv_size != 8 || !decode_times(v.mv_data, v.mv_size, t) || !keep.count(read_be64(k.mv_data)) ||
                t.created > t.updated)
                gone_times.emplace_back(view(k));
        }
        Cursor m(txn, db_.metadata);
        for (bool more = m.op(k, v, MDB_FIRST); more; more = m.op(k, v, MDB_NEXT)) {
            std::string why;
            if (k.mv_size != 12 || !keep.count(read_be64(k.mv_data)) ||
                !owns(txn, read_be32(static_cast<const unsigned char*>(k.mv_data) + 8), read_be64(k.mv_data)) ||
                !valid_metadata(view(v), why))
                gone_meta.emplace_back(view(k));
        }
    }
    for (const std::string& k : gone_times) scrub_del(txn, db_.times, val(k));
    for (const std::string& k : gone_meta) scrub_del(txn, db_.metadata, val(k));
}

}  // namespace agentsensus
