// forget: an owner leaves a record, and its words leave with it (said
// rows, merge-log entries, text, vector and digests); and the item writes
// whose refs let go of records (write_items).
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

bool StoreImpl::forget(const std::string& owner, uint64_t id, const ForgetPlan& plan) {
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
void StoreImpl::forget_in(MDB_txn* txn, const std::string& owner, uint64_t id, const ForgetPlan& plan) {
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
std::vector<ItemRef> StoreImpl::forget_private(MDB_txn* txn, const std::vector<ItemRef>& unused) {
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

std::vector<ItemRef> StoreImpl::write_items(const std::vector<ItemWrite>& writes) {
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
bool StoreImpl::forget_words(MDB_txn* txn, uint64_t id, uint32_t oid, const ForgetPlan& plan) {
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
void StoreImpl::drop_text_digests(MDB_txn* txn, uint64_t id) {
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
void StoreImpl::scrub_merges(MDB_txn* txn, uint64_t id, uint32_t oid, const std::unordered_set<std::string>* texts) {
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

}  // namespace agentsensus
