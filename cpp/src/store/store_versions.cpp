// Versions of records: a record that supersedes another (a newer state of
// the same subject, as a judge's Supersedes verdict says), the chain they
// form (the versions table, schema.hpp), and which records are current for
// an owner, now or as of a round.
//
// Validity is each owner's: a record is superseded for an owner once that
// owner holds a later record of its chain, from the round the owner came to
// hold it. So a statement of one owner never retires what another owner
// holds; that owner's view changes only when its own statement ends in the
// newer record.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

namespace {

constexpr size_t kLinksBytes = 16;

std::array<unsigned char, kLinksBytes> encode_links(const StoreImpl::Links& l) {
    std::array<unsigned char, kLinksBytes> b{};
    std::memcpy(b.data(), &l.supersedes, 8);
    std::memcpy(b.data() + 8, &l.superseded_by, 8);
    return b;
}

}  // namespace

bool StoreImpl::has_versions(MDB_txn* txn) { return has_versions_ && entries(txn, db_.versions) > 0; }

StoreImpl::Links StoreImpl::links_of(MDB_txn* txn, uint64_t id) {
    Links l;
    // Most stores never supersede: an empty table is known from its count
    // (no B-tree descent), and every row a recall reads asks.
    if (!has_versions(txn)) return l;
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, db_.versions, val(k.b, 8), v)) return l;
    if (v.mv_size != kLinksBytes) throw Corrupt("the versions of record " + std::to_string(id) + " are damaged");
    std::memcpy(&l.supersedes, v.mv_data, 8);
    std::memcpy(&l.superseded_by, static_cast<const char*>(v.mv_data) + 8, 8);
    return l;
}

void StoreImpl::put_links(MDB_txn* txn, uint64_t id, const Links& l) {
    Be64 k(id);
    if (l.supersedes == 0 && l.superseded_by == 0) {
        del(txn, db_.versions, val(k.b, 8));
        return;
    }
    auto b = encode_links(l);
    put(txn, db_.versions, val(k.b, 8), val(b.data(), b.size()));
}

// Invariant (I21): a chain is a line in id order. The new record follows
// the last record of old's chain, so a second Supersedes of one record
// continues the chain instead of forking it.
void StoreImpl::supersede(MDB_txn* txn, uint64_t old_id, uint64_t new_id) {
    uint64_t last = old_id;
    Links l = links_of(txn, last);
    for (size_t steps = 0; l.superseded_by != 0; ++steps) {
        if (steps > kMaxChainSteps)
            throw Corrupt("the chain of versions of record " + std::to_string(old_id) + " loops");
        last = l.superseded_by;
        l = links_of(txn, last);
    }
    if (last >= new_id) throw Corrupt("a chain of versions ends past a new record");
    l.superseded_by = new_id;
    put_links(txn, last, l);
    Links n = links_of(txn, new_id);
    n.supersedes = last;
    put_links(txn, new_id, n);
}

// A deleted record leaves its chain joined around it, so the records before
// and after it stay one chain.
void StoreImpl::unlink_versions(MDB_txn* txn, uint64_t id) {
    if (!has_versions_) return;
    Links l = links_of(txn, id);
    if (l.supersedes == 0 && l.superseded_by == 0) return;
    if (l.supersedes != 0) {
        Links p = links_of(txn, l.supersedes);
        p.superseded_by = l.superseded_by;
        put_links(txn, l.supersedes, p);
    }
    if (l.superseded_by != 0) {
        Links n = links_of(txn, l.superseded_by);
        n.supersedes = l.supersedes;
        put_links(txn, l.superseded_by, n);
    }
    put_links(txn, id, Links{});
}

// The round owner oid came to hold record id: its earliest statement in it
// (said rows), or the record's own round for a record without rows.
uint32_t StoreImpl::joined_round(MDB_txn* txn, uint32_t oid, uint64_t id) {
    bool found = false;
    uint32_t first = 0;
    each_said(txn, id, [&](const MDB_val&, const SaidEntry& e) {
        if (e.owner == oid && (!found || e.round < first)) {
            first = e.round;
            found = true;
        }
    });
    if (found) return first;
    Be64 rk(id);
    MDB_val rv;
    RecordHeader h;
    std::string_view text;
    if (!agentsensus::get(txn, db_.records, val(rk.b, 8), rv) || !decode_record(rv, h, text)) return 0;
    return h.round;
}

// Whether record id, which oid owns, is one oid holds as current: now (no
// as_of), or at round as_of (oid held it by then, and no later record of its
// chain by then).
bool StoreImpl::current_for(MDB_txn* txn, uint32_t oid, uint64_t id, const RecallFilter& f) {
    if (f.has_as_of() && joined_round(txn, oid, id) > f.as_of()) return false;
    if (!superseded_ids(txn)->count(id)) return true;  // nothing supersedes it
    uint64_t next = links_of(txn, id).superseded_by;
    for (size_t steps = 0; next != 0; ++steps) {
        if (steps > kMaxChainSteps) throw Corrupt("the chain of versions of record " + std::to_string(id) + " loops");
        if (owns(txn, oid, next) && (!f.has_as_of() || joined_round(txn, oid, next) <= f.as_of())) return false;
        next = links_of(txn, next).superseded_by;
    }
    return true;
}

std::shared_ptr<const std::unordered_set<uint64_t>> StoreImpl::superseded_ids(MDB_txn* txn) {
    const size_t snapshot = mdb_txn_id(txn);
    {
        std::lock_guard<std::mutex> g(superseded_mu_);
        if (superseded_.ids && superseded_.snapshot == snapshot) return superseded_.ids;
    }
    auto ids = std::make_shared<std::unordered_set<uint64_t>>();
    if (has_versions_) {
        Cursor c(txn, db_.versions);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            uint64_t next = 0;
            if (k.mv_size == 8 && v.mv_size == kLinksBytes)
                std::memcpy(&next, static_cast<const char*>(v.mv_data) + 8, 8);
            else
                throw Corrupt("a row of the versions table is damaged");
            if (next != 0) ids->insert(read_be64(k.mv_data));
        }
    }
    std::lock_guard<std::mutex> g(superseded_mu_);
    // A newer snapshot's set replaces an older one's (readers of the older
    // one build their own: a commit never changes what a snapshot reads).
    if (snapshot >= superseded_.snapshot) superseded_ = Superseded{snapshot, ids};
    return ids;
}

RecallFilter StoreImpl::versioned(MDB_txn* txn, const RecallFilter& f) {
    return has_versions(txn) ? f.with_versions() : f;
}

void StoreImpl::read_links(MDB_txn* txn, uint64_t id, Row& row) {
    Links l = links_of(txn, id);
    row.supersedes = l.supersedes;
    row.superseded_by = l.superseded_by;
    row.valid_until = 0;
    if (l.superseded_by != 0) {
        Be64 k(l.superseded_by);
        MDB_val v;
        RecordHeader h;
        std::string_view text;
        if (agentsensus::get(txn, db_.records, val(k.b, 8), v) && decode_record(v, h, text)) row.valid_until = h.round;
    }
}

std::vector<uint64_t> StoreImpl::chain(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), v)) throw NotFound("no record " + std::to_string(id));
    uint64_t first = id;
    for (size_t steps = 0;; ++steps) {
        uint64_t prev = links_of(t.get(), first).supersedes;
        if (prev == 0) break;
        if (steps > kMaxChainSteps) throw Corrupt("the chain of versions of record " + std::to_string(id) + " loops");
        first = prev;
    }
    std::vector<uint64_t> out{first};
    for (uint64_t next = links_of(t.get(), first).superseded_by; next != 0;
         next = links_of(t.get(), next).superseded_by) {
        if (out.size() > kMaxChainSteps)
            throw Corrupt("the chain of versions of record " + std::to_string(id) + " loops");
        out.push_back(next);
    }
    return out;
}

std::vector<VersionLinks> StoreImpl::versions_of(const std::vector<uint64_t>& ids) {
    check_open();
    ReadTxn t(*env_);
    std::vector<VersionLinks> out(ids.size());
    Row r;
    for (size_t i = 0; i < ids.size(); ++i) {
        read_links(t.get(), ids[i], r);
        out[i] = VersionLinks{r.supersedes, r.superseded_by, r.valid_until};
    }
    return out;
}

// I21 (schema.hpp): every row has a link, belongs to a live record, and its
// links are live records of its scope that link back, in id order.
void StoreImpl::verify_versions(MDB_txn* txn, const std::set<uint64_t>& records,
                                const std::function<void(std::string)>& bad) {
    if (!has_versions_) return;
    Cursor c(txn, db_.versions);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 8) {
            bad("I21: a versions key has the wrong size");
            continue;
        }
        const uint64_t id = read_be64(k.mv_data);
        const std::string who = "I21: the versions of record " + std::to_string(id);
        if (v.mv_size != kLinksBytes) {
            bad(who + " are damaged");
            continue;
        }
        Links l;
        std::memcpy(&l.supersedes, v.mv_data, 8);
        std::memcpy(&l.superseded_by, static_cast<const char*>(v.mv_data) + 8, 8);
        if (!records.count(id)) bad(who + " belong to no live record");
        if (l.supersedes == 0 && l.superseded_by == 0) bad(who + " hold no link");
        if (l.supersedes != 0) {
            if (l.supersedes >= id) bad(who + " name a newer record as the one it supersedes");
            if (!records.count(l.supersedes))
                bad(who + " name a deleted record as the one it supersedes");
            else if (links_of(txn, l.supersedes).superseded_by != id)
                bad(who + ": its predecessor does not link back");
            else if (record_scope(txn, l.supersedes) != record_scope(txn, id))
                bad(who + " cross scopes");
        }
        if (l.superseded_by != 0) {
            if (l.superseded_by <= id) bad(who + " name an older record as its successor");
            if (!records.count(l.superseded_by))
                bad(who + " name a deleted record as its successor");
            else if (links_of(txn, l.superseded_by).supersedes != id)
                bad(who + ": its successor does not link back");
        }
    }
}

// repair: rows of records it did not keep go, and each kept record's links
// are rebuilt from what either side of a link says (a link one side lost
// is mended), skipping the records gone (a chain stays joined around them).
void StoreImpl::repair_versions(MDB_txn* txn, const std::set<uint64_t>& keep) {
    if (!has_versions_) return;
    std::map<uint64_t, Links> by_id;
    {
        Cursor c(txn, db_.versions);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 8 || v.mv_size != kLinksBytes) continue;
            Links l;
            std::memcpy(&l.supersedes, v.mv_data, 8);
            std::memcpy(&l.superseded_by, static_cast<const char*>(v.mv_data) + 8, 8);
            by_id[read_be64(k.mv_data)] = l;
        }
    }
    // Each record's predecessor as either side says it (its own row first).
    std::map<uint64_t, uint64_t> pred;
    for (const auto& [id, l] : by_id)
        if (l.superseded_by > id && !pred.count(l.superseded_by)) pred[l.superseded_by] = id;
    for (const auto& [id, l] : by_id)
        if (l.supersedes != 0 && l.supersedes < id) pred[id] = l.supersedes;
    std::map<uint64_t, uint64_t> prev;  // kept record -> the kept record it supersedes
    for (const auto& [id, p0] : pred) {
        if (!keep.count(id)) continue;
        // Walk back over records not kept.
        uint64_t p = p0;
        for (size_t steps = 0; p != 0 && !keep.count(p) && steps <= kMaxChainSteps; ++steps) {
            auto it = pred.find(p);
            p = (it == pred.end() || it->second >= p) ? 0 : it->second;
        }
        if (p != 0 && keep.count(p) && p < id && record_scope(txn, p) == record_scope(txn, id)) prev[id] = p;
    }
    mdb_drop(txn, db_.versions, 0);
    // One successor each: where two kept records name one predecessor, the
    // older keeps the link and the newer starts a chain of its own.
    std::map<uint64_t, Links> out;
    for (const auto& [id, p] : prev) {
        if (out[p].superseded_by != 0) continue;
        out[p].superseded_by = id;
        out[id].supersedes = p;
    }
    for (const auto& [id, l] : out) put_links(txn, id, l);
}

}  // namespace agentsensus
