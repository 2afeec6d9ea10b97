// Store's write primitives, each inside the caller's write transaction:
// owners, the journal, owner sets and their histogram, edges, text digests,
// the said table, the merge log, and a record's delete.
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

// ---------------------------------------------------------------- writes

uint32_t StoreImpl::ensure_owner(MDB_txn* txn, std::string_view name) {
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

void StoreImpl::journal(MDB_txn* txn, uint8_t op, uint64_t id, uint32_t oid) {
    uint64_t seq = meta_u64(txn, kMetaNextJournal, 1);
    auto e = encode_journal(JournalEntry{op, id, oid});
    Be64 k(seq);
    put(txn, db_.journal, val(k.b, 8), val(e.data(), e.size()), MDB_APPEND);
    set_meta_u64(txn, kMetaNextJournal, seq + 1);
}

void StoreImpl::hist_add(MDB_txn* txn, uint32_t owners, int64_t delta) {
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

bool StoreImpl::add_owner(MDB_txn* txn, uint64_t id, uint32_t oid) {
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

void StoreImpl::add_edge(MDB_txn* txn, uint64_t a, uint64_t b) {
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
void StoreImpl::add_digest(MDB_txn* txn, uint64_t id, MDB_val digest) {
    Be64 k(id);
    put(txn, db_.norms, digest, val(k.b, 8));
    put(txn, db_.rnorms, val(k.b, 8), digest);
}

void StoreImpl::delete_record(MDB_txn* txn, uint64_t id) {
    unlink_versions(txn, id);  // I21: its chain stays joined around it
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
void StoreImpl::scrub_del(MDB_txn* txn, MDB_dbi dbi, MDB_val key) {
    MDB_val cur;
    if (!agentsensus::get(txn, dbi, key, cur)) return;
    std::string zeros(cur.mv_size, '\0');
    put(txn, dbi, key, val(zeros));
    del(txn, dbi, key);
}

void StoreImpl::put_said(MDB_txn* txn, uint64_t id, uint64_t n, uint32_t oid, uint32_t round, const float* vector,
                         std::string_view text) {
    auto k = said_key(id, n);
    std::string_view vec =
        vector ? std::string_view(reinterpret_cast<const char*>(vector), dim_ * sizeof(float)) : std::string_view();
    put(txn, db_.said, val(k.data(), k.size()), val(encode_said(SaidEntry{oid, round, vec, text})));
}

// Rewrites the record's rows for its text becoming `after`: a row that
// leaves its text out (the record's) gets it written out, and one whose
// text is `after` leaves it out.
void StoreImpl::retext_said(MDB_txn* txn, uint64_t id, std::string_view after) {
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

// Calls fn(key, entry) for each of record id's said rows, n ascending;
// Corrupt on a row that does not decode.
void StoreImpl::each_said(MDB_txn* txn, uint64_t id, const std::function<void(const MDB_val&, const SaidEntry&)>& fn) {
    if (!has_said_) return;
    Cursor c(txn, db_.said);
    auto from = said_key(id, 0);
    MDB_val k = val(from.data(), from.size()), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    while (more && k.mv_size == 16 && std::memcmp(k.mv_data, from.data(), 8) == 0) {
        SaidEntry e;
        if (!decode_said(v, e)) throw Corrupt("a statement of record " + std::to_string(id) + " is damaged");
        fn(k, e);
        more = c.op(k, v, MDB_NEXT);
    }
}

void StoreImpl::delete_said(MDB_txn* txn, uint64_t id, uint32_t oid) {
    std::vector<std::array<unsigned char, 16>> keys;
    each_said(txn, id, [&](const MDB_val& k, const SaidEntry& e) {
        if (oid != 0 && e.owner != oid) return;
        std::array<unsigned char, 16> key{};
        std::memcpy(key.data(), k.mv_data, 16);
        keys.push_back(key);
    });
    for (const auto& key : keys) scrub_del(txn, db_.said, val(key.data(), key.size()));
}

std::vector<SaidRow> StoreImpl::said_rows(MDB_txn* txn, uint64_t id) {
    std::vector<SaidRow> out;
    if (!has_said_) return out;
    std::string_view record_text;
    {
        Be64 rk(id);
        MDB_val rv;
        RecordHeader h;
        if (agentsensus::get(txn, db_.records, val(rk.b, 8), rv)) decode_record(rv, h, record_text);
    }
    each_said(txn, id, [&](const MDB_val& k, const SaidEntry& e) {
        if (e.vector.size() != 0 && e.vector.size() != dim_ * sizeof(float))
            throw Corrupt("a statement of record " + std::to_string(id) + " is damaged");
        SaidRow r;
        r.n = read_be64(static_cast<const unsigned char*>(k.mv_data) + 8);
        r.owner = owner_name(txn, e.owner);
        r.round = e.round;
        r.text.assign(e.text.empty() ? record_text : e.text);
        r.vector.resize(e.vector.size() / sizeof(float));
        std::memcpy(r.vector.data(), e.vector.data(), e.vector.size());
        out.push_back(std::move(r));
    });
    return out;
}

std::pair<std::string, std::vector<SaidRow>> StoreImpl::said(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Row r;
    if (!read_row(t.get(), id, r)) throw NotFound("no record " + std::to_string(id));
    return {r.text, said_rows(t.get(), id)};
}

void StoreImpl::put_merge(MDB_txn* txn, uint64_t seq, uint64_t survivor, uint32_t oid, uint32_t round,
                          std::string_view kept, std::string_view discarded) {
    Be64 mk(seq), sk(survivor);
    put(txn, db_.merges, val(mk.b, 8), val(encode_merge(MergeEntry{survivor, oid, round, kept, discarded})),
        MDB_APPEND);
    put(txn, db_.rmerges, val(sk.b, 8), val(mk.b, 8));
}

}  // namespace agentsensus
